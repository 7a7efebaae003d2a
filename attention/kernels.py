"""Dense softmax attention with one dispatch: XLA, the blocked CPU path, cuDNN's fused kernel or
a Pallas kernel.

    out = kernels.dot_product_attention(q, k, v, mask=mask, bias=bias, implementation="auto")

Layout `q [B, N, H, Dk]`, `k [B, M, H, Dk]`, `v [B, M, H, Dv]` -> `[B, N, H, Dv]` (the
`jax.nn.dot_product_attention` layout); `mask` boolean (True = attend) broadcastable to
`[B, H, N, M]` or key padding `[B, M]` (`masks.as_4d`); `bias` additive, broadcastable to
`[B, H, N, M]`. Every kernel gives zeros for a query whose every key is masked (the fused ones
are zeroed after the call, from the mask).

Kernels (`implementation`):
  * `"xla"`: two einsums; logits and softmax in float32 (float64 for float64 inputs), masked
    pairs get probability 0, attention dropout. The exact path (bit for bit what the earlier
    releases computed), and what `auto` runs on CPU below `CHUNKED_FROM` tokens.
  * `"chunked"`: `attention.chunked` (the `softmax_chunked` mechanism's computation): blocks of
    256 x 256 scores with a streaming log-sum-exp forward and a FlashAttention-2 backward that
    recomputes each block. The same masks and bias as xla, O(N + M) memory, equal to xla up to
    float rounding; attention dropout per block (the same distribution as xla's, other random
    bits). Runs on any backend. `auto` takes it on CPU when N and M are both at least
    `CHUNKED_FROM` and there is no attention dropout (so a training run with dropout draws the
    same bits as before): there it is faster than XLA's code for the whole `[B, H, N, M]` array
    (measured on a 2-core AMD EPYC at B1 H8 D64 float32, forward + backward, `softmax` against
    `softmax_chunked`: 1k 59 / 42 ms, 4k 801 / 555 ms; `results/bench/dense_cpu.md`).
  * `"cudnn"`: `jax.nn.dot_product_attention(..., implementation="cudnn")`. Needs a CUDA GPU,
    one dtype for q/k/v in {bfloat16, float16}, Dk == Dv (jax.nn's contract), a head dim that
    is a multiple of 8 and at most 128 (256 on compute capability >= 9.0), even N and M when a
    mask or bias is given (cuDNN's backward pass with a bias), no attention dropout. Masks are
    passed as `[B|1, H|1, N, M]`, a bias as `[B|1, H, N, M]`.
  * `"pallas"`: on TPU `jax.experimental.pallas.ops.tpu.flash_attention` (float32 or
    bfloat16, Dk == Dv, head dim <= 128 or a multiple of 128, M a multiple of 128, N at most
    128 or divisible by a multiple of 8 that is at most 128; key masks go in as segment ids,
    other masks and the bias as its `ab` input). On GPU the Triton kernel
    `jax.experimental.pallas.ops.gpu.attention.mha` (float16, bfloat16 or float32, Dk == Dv,
    no bias, key masks only: `[B, M]` or `[B|1, H|1, 1, M]`; N and M multiples of 16 that
    tile into power-of-two blocks of 16..128 with as many query as key blocks, its backward
    pass's requirement). Its segment ids cannot express key padding (one id array serves
    queries and keys, so a padded query would attend only to padded keys); a key mask is
    therefore applied as an extra head channel: q gets a 1, k gets 0 (attend) or a large
    negative number (masked: a logit of -1e4), v a 0, so masked pairs get weight 0 and the extra
    channel is dropped from the output. It costs one head channel (the kernel pads the head
    dim to a power of two anyway).
  * `"auto"` (the default): the fused kernel of the backend when it can take the inputs (GPU:
    cudnn, TPU: pallas); on CPU chunked from `CHUNKED_FROM` tokens without dropout; else xla.
    An explicit `"cudnn"` or `"pallas"` that cannot take them
    raises ValueError saying why (a user error).

The decision is made at trace time and is inspectable:
  * `choose(implementation, backend=..., q=..., k=..., v=..., mask=..., bias=..., dropout=...)`
    is a pure function of shapes, dtypes and the backend name (`"cpu" | "gpu" | "tpu"`;
    anything with `.shape` and `.dtype` works, e.g. `jax.ShapeDtypeStruct`) returning
    `(kernel, reason)`;
  * `record()` collects the decisions made while tracing::

        with kernels.record() as rec:
            jax.jit(step).lower(*args)      # or the first call, or jax.eval_shape(step, *args)
        rec.summary()                       # {"softmax": "cudnn"}

    Each decision is a `Decision` (site, requested, kernel, reason, backend, shapes, dtype);
    `site` names the caller (the mechanism: "softmax", "ssa", "samsa"). A jitted function
    that is already compiled is not traced again, so record around its first trace.

Mechanisms that attend in other layouts (SSA's windows, SAMSA's sampled keys) call `select`
(choose for the running backend, check, record) and then either their own XLA code or `run`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import threading
import warnings
from collections.abc import Iterator

import jax
import jax.numpy as jnp
import numpy as np

from attention import masks

__all__ = [
    "IMPLEMENTATIONS",
    "Decision",
    "Recording",
    "check_implementation",
    "check_qkv",
    "choose",
    "compact_mask",
    "current_backend",
    "dot_product_attention",
    "record",
    "run",
    "select",
    "summary",
]

IMPLEMENTATIONS = ("auto", "xla", "chunked", "cudnn", "pallas")
# `auto` on CPU runs `chunked` when N and M are both at least this (and no dropout): the
# crossover measured on 2 cores at B1 H8 D64 is below 1024 tokens (module docstring).
CHUNKED_FROM = 1024
_FUSED = {"gpu": "cudnn", "tpu": "pallas"}  # what `auto` tries on each backend
_GPU_NAMES = ("gpu", "cuda", "rocm")
_TPU_SEQ_BLOCK = 128  # key block of the TPU kernel (its MIN_BLOCK_SIZE and lane count)
# The scaled logit of a masked pair on the fused paths that mask through an additive term (the
# TPU kernel's `ab`, the GPU kernel's extra channel): exp(-1e4) is 0 in float32 next to any
# realistic logit, and it is moderate on purpose. A fully masked row (zeroed afterwards) must
# stay finite, and where the softmax statistics are recomputed with other rounding (interpret
# mode on CPU), a -1e30 logit differs by ulps of ~1e22 between the two and exp overflows to NaN.
_MASKED_LOGIT = -1e4
_HALF = (np.dtype(jnp.bfloat16), np.dtype(jnp.float16))
_TPU_DTYPES = (np.dtype(jnp.float32), np.dtype(jnp.bfloat16))
_GPU_PALLAS_DTYPES = (np.dtype(jnp.float16), np.dtype(jnp.bfloat16), np.dtype(jnp.float32))


# --------------------------------------------------------------------------------------------
# Checks shared by the mechanisms.


def check_qkv(q, k, v) -> None:
    """Raises ValueError (naming the shapes) unless q/k/v follow the [B, N|M, H, D] layout."""
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ValueError(f"q, k, v must be 4-D [B, N, H, D]; got {q.shape}, {k.shape}, {v.shape}")
    if k.shape[:3] != v.shape[:3]:
        raise ValueError(f"k {k.shape} and v {v.shape} must agree on [B, M, H]")
    if q.shape[0] != k.shape[0] or q.shape[2] != k.shape[2] or q.shape[3] != k.shape[3]:
        raise ValueError(f"q {q.shape} and k {k.shape} must agree on B, H and Dk")


def check_implementation(implementation) -> None:
    """Raises ValueError unless `implementation` is one of `IMPLEMENTATIONS`."""
    if not isinstance(implementation, str) or implementation not in IMPLEMENTATIONS:
        raise ValueError(
            f"implementation={implementation!r} is not one of {', '.join(IMPLEMENTATIONS)}"
        )


# --------------------------------------------------------------------------------------------
# The decision.


@dataclasses.dataclass(frozen=True)
class Decision:
    """One dispatch decision, made while tracing.

    Attributes:
      site: who asked (a mechanism name, or "attention").
      requested: the `implementation` asked for.
      kernel: the kernel that runs: "xla" | "chunked" | "cudnn" | "pallas".
      reason: one line saying why.
      backend: the backend name the decision was made for.
      shapes: `(B, N, M, H, Dk, Dv)` of the call.
      dtype: the dtype of q.
    """

    site: str
    requested: str
    kernel: str
    reason: str
    backend: str
    shapes: tuple[int, ...]
    dtype: str


def _shape(x) -> tuple[int, ...] | None:
    if x is None:
        return None
    shape = getattr(x, "shape", None)
    return tuple(shape) if shape is not None else tuple(np.shape(x))


def _dtype(x):
    dtype = getattr(x, "dtype", None)
    return np.dtype(np.asarray(x).dtype if dtype is None else dtype)


def _mask4_shape(mask_shape, b) -> tuple[int, ...] | None:
    """The mask's shape as 4-D `[B|1, H|1, N|1, M|1]` (a 2-D mask is key padding)."""
    if mask_shape is None:
        return None
    if len(mask_shape) == 2:
        return (mask_shape[0], 1, 1, mask_shape[1])
    return (1,) * (4 - len(mask_shape)) + tuple(mask_shape)


def _pow2(x: int) -> bool:
    return x > 0 and x & (x - 1) == 0


def _next_pow2(x: int) -> int:
    return 1 << max(0, (x - 1).bit_length())


def _gpu_blocks(n: int, m: int) -> tuple[int, ...] | str:
    """Block sizes `(q, k, q_backward, k_backward)` for the GPU Triton kernel, or a reason
    string when N and M cannot be tiled."""
    fwd = []
    for length in (n, m):
        block = math.gcd(length, 128)  # the largest power-of-two divisor up to 128
        fwd.append(block if _pow2(block) and block >= 16 else None)
    why = (
        f"needs N and M that are multiples of 16 (power-of-two blocks of 16..128, Triton's "
        f"smallest dot tile is 16), got N={n}, M={m}"
    )
    if None in fwd:
        return why
    # The backward kernel walks query blocks and key blocks with one grid axis: both lengths
    # must split into the same number of power-of-two blocks of 16..128.
    options = []
    for blocks in range(1, min(n, m) // 16 + 1):
        if n % blocks or m % blocks:
            continue
        bq, bk = n // blocks, m // blocks
        if _pow2(bq) and _pow2(bk) and 16 <= min(bq, bk) and max(bq, bk) <= 128:
            options.append((bq, bk))
    if not options:
        return (
            f"needs N and M that split into the same number of power-of-two blocks of 16..128 "
            f"(its backward pass), got N={n}, M={m}"
        )
    small = [o for o in options if max(o) <= 64]
    bq, bk = (small or options)[0]
    return fwd[0], fwd[1], bq, bk


def _tpu_q_block(n: int) -> int | None:
    if n <= _TPU_SEQ_BLOCK:
        return n
    for block in range(_TPU_SEQ_BLOCK, 7, -8):
        if n % block == 0:
            return block
    return None


def _problems(kind, backend, shapes, dtypes, mask, bias, dropout, compute_capability):
    """Why `kind` cannot take the inputs (one line, phrased after "implementation='kind' "),
    or None when it can."""
    (b, n, h, dk), (_, m, _, _), (_, _, _, dv) = shapes
    qd, kd, vd = dtypes
    mask4 = _mask4_shape(mask, b)
    if kind == "cudnn":
        if backend not in ("gpu", "cuda"):
            return f"needs a CUDA GPU, the backend is {backend!r}"
        if dropout:
            return "has no attention dropout (dropout_rate > 0 while training); use 'xla'"
        if not qd == kd == vd:
            return f"needs q, k and v of one dtype, got {qd}, {kd}, {vd}"
        if qd not in _HALF:
            return f"needs bfloat16 or float16 inputs, got {qd}"
        if dk != dv:
            return f"needs equal key and value head dims (jax.nn's contract), got {dk} and {dv}"
        cc = compute_capability
        if cc is not None and tuple(cc) < (8, 0):
            return f"needs a GPU of compute capability 8.0 or newer, got {cc[0]}.{cc[1]}"
        top = 256 if cc is not None and tuple(cc) >= (9, 0) else 128
        if dk % 8 or dk > top:
            more = "" if top == 256 else " (256 on compute capability 9.0 and newer)"
            return f"needs a head dim that is a multiple of 8 and at most {top}{more}, got {dk}"
        if (mask is not None or bias is not None) and (n % 2 or m % 2):
            return (
                f"needs even sequence lengths with a mask or bias (cuDNN's backward pass), "
                f"got N={n}, M={m}"
            )
        return None
    # pallas
    if dropout:
        return "has no attention dropout (dropout_rate > 0 while training); use 'xla'"
    if not qd == kd == vd:
        return f"needs q, k and v of one dtype, got {qd}, {kd}, {vd}"
    if dk != dv:
        return f"needs equal key and value head dims, got {dk} and {dv}"
    if backend == "tpu":
        if qd not in _TPU_DTYPES:
            return f"needs float32 or bfloat16 inputs on TPU, got {qd}"
        if dk > 128 and dk % 128:
            return f"needs a head dim of at most 128 or a multiple of 128 on TPU, got {dk}"
        if m % _TPU_SEQ_BLOCK:
            return f"needs a key length M that is a multiple of 128 on TPU, got M={m}"
        if _tpu_q_block(n) is None:
            return (
                f"needs a query length N of at most 128 or divisible by a multiple of 8 that "
                f"is at most 128 on TPU, got N={n}"
            )
        return None
    if backend in _GPU_NAMES:
        if qd not in _GPU_PALLAS_DTYPES:
            return f"needs float16, bfloat16 or float32 inputs on GPU, got {qd}"
        if bias is not None:
            return "takes no bias on GPU (jax.experimental.pallas.ops.gpu.attention.mha)"
        if mask4 is not None and mask4[2] != 1:
            return (
                f"takes only key masks on GPU ([B, M] key padding or [B|1, H|1, 1, M]), got a "
                f"mask of shape {tuple(mask)}"
            )
        width = _next_pow2(dk + (mask is not None))
        if not 16 <= width <= 256:
            extra = " plus 1 for the mask channel" if mask is not None else ""
            return f"needs a head dim ({dk}{extra}) that pads to a power of two in 16..256 on GPU"
        blocks = _gpu_blocks(n, m)
        if isinstance(blocks, str):
            return blocks
        return None
    return f"needs a GPU or TPU backend, the backend is {backend!r}"


def choose(
    implementation: str,
    *,
    backend: str,
    q,
    k,
    v,
    mask=None,
    bias=None,
    dropout: bool = False,
    compute_capability: tuple[int, int] | None = None,
) -> tuple[str, str]:
    """The kernel that computes this call, and why: `(kernel, reason)`.

    A pure function of the backend name, shapes and dtypes; nothing is computed or recorded.

    Args:
      implementation: "auto" | "xla" | "chunked" | "cudnn" | "pallas".
      backend: "cpu" | "gpu" (= "cuda") | "rocm" | "tpu" (any other name: xla only).
      q, k, v: arrays or anything with `.shape` and `.dtype` (`jax.ShapeDtypeStruct`), in the
        `[B, N|M, H, D]` layout.
      mask: None, or anything with `.shape`: the mask as passed (2-D = key padding).
      bias: None, or anything with `.shape`.
      dropout: True when attention dropout will be applied (training with dropout_rate > 0).
      compute_capability: the GPU's `(major, minor)`; None (unknown) assumes the limits of
        compute capability 8.x (head dims up to 128).

    Raises:
      ValueError: an unknown `implementation`, or an explicit "cudnn"/"pallas" that cannot take
        the inputs (the message says why).
    """
    check_implementation(implementation)
    backend = "gpu" if backend == "cuda" else str(backend).lower()
    if implementation in ("xla", "chunked"):
        return implementation, "requested"
    shapes = (_shape(q), _shape(k), _shape(v))
    dtypes = (_dtype(q), _dtype(k), _dtype(v))
    mask, bias = _shape(mask), _shape(bias)
    if implementation == "auto":
        fused = _FUSED.get(backend)
        if fused is None:
            n, m = shapes[0][1], shapes[1][1]
            if backend == "cpu" and not dropout and min(n, m) >= CHUNKED_FROM:
                return "chunked", f"auto: blocked softmax for N, M >= {CHUNKED_FROM} on cpu"
            return "xla", f"auto: no fused attention kernel is chosen on {backend}"
        why = _problems(fused, backend, shapes, dtypes, mask, bias, dropout, compute_capability)
        if why is None:
            return fused, f"auto: {fused} takes these inputs on {backend}"
        return "xla", f"auto: {fused} {why}"
    why = _problems(
        implementation, backend, shapes, dtypes, mask, bias, dropout, compute_capability
    )
    if why is not None:
        raise ValueError(
            f"implementation={implementation!r} {why}; use implementation='auto' or 'xla'"
        )
    return implementation, "requested"


def current_backend() -> str:
    """The running backend's name for `choose`: "cpu", "gpu" (CUDA), "rocm" or "tpu"."""
    backend = jax.default_backend()
    if backend == "gpu":
        try:
            from jax.extend import backend as jex_backend

            if "rocm" in jex_backend.get_backend().platform_version.lower():
                return "rocm"
        except Exception:  # noqa: BLE001 - the platform string is informative only
            pass
    return backend


def _compute_capability(backend: str) -> tuple[int, int] | None:
    if backend != "gpu" or jax.default_backend() != "gpu":
        return None
    try:
        major, minor = str(jax.devices()[0].compute_capability).split(".")[:2]
        return int(major), int(minor)
    except Exception:  # noqa: BLE001 - unknown: choose assumes the conservative limits
        return None


# --------------------------------------------------------------------------------------------
# Recording the decisions.


class Recording(list):
    """The `Decision`s made while a `record()` block was active, in order."""

    def summary(self) -> dict[str, str]:
        """`{site: kernel}`; a site that ran several kernels lists them joined by "+"."""
        return summary(self)


def summary(decisions) -> dict[str, str]:
    """`{site: kernel}` of `decisions` (several kernels at one site: "cudnn+xla")."""
    out: dict[str, list[str]] = {}
    for d in decisions:
        kernels = out.setdefault(d.site, [])
        if d.kernel not in kernels:
            kernels.append(d.kernel)
    return {site: "+".join(ks) for site, ks in out.items()}


_ACTIVE = threading.local()


@contextlib.contextmanager
def record() -> Iterator[Recording]:
    """Collects the dispatch decisions made (at trace time) inside the block; nests."""
    rec = Recording()
    stack = getattr(_ACTIVE, "stack", None)
    if stack is None:
        stack = _ACTIVE.stack = []
    stack.append(rec)
    try:
        yield rec
    finally:
        # By identity: recordings are lists, and two with the same decisions compare equal.
        del stack[next(i for i, r in enumerate(stack) if r is rec)]


def select(
    implementation: str,
    q,
    k,
    v,
    *,
    mask=None,
    bias=None,
    dropout: bool = False,
    site: str = "attention",
    backend: str | None = None,
) -> str:
    """`choose` for the running backend (or `backend`), recorded; returns the kernel name.

    Raises:
      ValueError: as `choose`.
    """
    backend = current_backend() if backend is None else backend
    kernel, reason = choose(
        implementation,
        backend=backend,
        q=q,
        k=k,
        v=v,
        mask=mask,
        bias=bias,
        dropout=dropout,
        compute_capability=_compute_capability(backend),
    )
    stack = getattr(_ACTIVE, "stack", None)
    if stack:
        (b, n, h, dk), m, dv = _shape(q), _shape(k)[1], _shape(v)[3]
        decision = Decision(
            site=site,
            requested=implementation,
            kernel=kernel,
            reason=reason,
            backend=backend,
            shapes=(b, n, m, h, dk, dv),
            dtype=str(_dtype(q)),
        )
        for rec in stack:
            rec.append(decision)
    return kernel


# --------------------------------------------------------------------------------------------
# The kernels.


def _xla(q, k, v, *, bias, mask, scale, dropout_rate, dropout_key):
    """The exact path: float32 (float64) logits and softmax, masked pairs get 0, dropout."""
    b, n, h, _ = q.shape
    m = k.shape[1]
    acc = jnp.promote_types(q.dtype, jnp.float32)
    logits = jnp.einsum("bnhd,bmhd->bhnm", q, k, preferred_element_type=acc) * scale
    if bias is not None:
        logits = logits + bias.astype(acc)
    mask4 = masks.as_4d(mask, b, h, n, m)
    if mask4 is not None:
        logits = jnp.where(mask4, logits, jnp.finfo(acc).min)
    probs = jax.nn.softmax(logits, axis=-1)
    if mask4 is not None:
        # Zeroes fully masked rows (softmax of an all-min row is uniform, not zero).
        probs = jnp.where(mask4, probs, 0.0)
    if dropout_rate > 0.0:
        keep = jax.random.bernoulli(dropout_key, 1.0 - dropout_rate, probs.shape)
        probs = jnp.where(keep, probs / (1.0 - dropout_rate), 0.0)
    return jnp.einsum("bhnm,bmhd->bnhd", probs.astype(v.dtype), v)


def compact_mask(mask, b: int, h: int, n: int, m: int):
    """`mask` validated (as `masks.as_4d`) and made 4-D with its broadcast axes kept,
    `[B|1, H|1, N|1, M|1]` (key padding `[B, M]` -> `[B, 1, 1, M]`), or None.

    What the fused kernels take: a compact mask keeps the bias they build from it small."""
    if mask is None:
        return None
    mask = jnp.asarray(mask)
    spec = jax.ShapeDtypeStruct(mask.shape, mask.dtype)
    jax.eval_shape(lambda x: masks.as_4d(x, b, h, n, m), spec)  # raises naming the problem
    return mask.reshape(_mask4_shape(mask.shape, b))


def _bias4(bias):
    bias = jnp.asarray(bias)
    if bias.ndim > 4:
        raise ValueError(f"attention bias must broadcast to [B, H, N, M], got {bias.shape}")
    return bias.reshape((1,) * (4 - bias.ndim) + bias.shape)


def _zero_empty_rows(out, mask4):
    """Zeroes the queries whose every key is masked: `out [B, N, H, D]`, mask `[B|1,H|1,N|1,M]`."""
    if mask4 is None:
        return out
    b, n, h, _ = out.shape
    live = jnp.broadcast_to(jnp.any(mask4, axis=-1), (b, h, n)).transpose(0, 2, 1)
    return jnp.where(live[..., None], out, jnp.zeros((), out.dtype))


def _cudnn(q, k, v, *, bias, mask4, scale):
    b, n, h, _ = q.shape
    m = k.shape[1]
    if bias is not None:
        bias = _bias4(bias)
        bias = jnp.broadcast_to(bias, (bias.shape[0], h, n, m)).astype(q.dtype)
    if mask4 is not None:
        mask4 = jnp.broadcast_to(mask4, mask4.shape[:2] + (n, m))
    return jax.nn.dot_product_attention(q, k, v, bias, mask4, scale=scale, implementation="cudnn")


def _masked_input(scale: float, dtype) -> float:
    """The pre-scale value that makes a masked logit `_MASKED_LOGIT` (finite in `dtype`)."""
    return max(_MASKED_LOGIT / scale, -float(jnp.finfo(dtype).max) / 2)


def _pallas_gpu(q, k, v, *, mask4, scale, interpret):
    with warnings.catch_warnings():  # the module warns that it moves to tokamax
        warnings.simplefilter("ignore", DeprecationWarning)
        from jax.experimental.pallas.ops.gpu import attention as gpu_attention
    b, n, h, dv = v.shape[0], q.shape[1], q.shape[2], v.shape[3]
    m = k.shape[1]
    if mask4 is not None:
        # One extra head channel carries the key mask: q . k gains 1 * (0 or a large negative).
        keys = jnp.broadcast_to(mask4[:, :, 0, :], (b, h, m)).transpose(0, 2, 1)[..., None]
        column = jnp.where(keys, 0.0, _masked_input(scale, k.dtype)).astype(k.dtype)
        q = jnp.concatenate([q, jnp.ones((b, n, h, 1), q.dtype)], axis=-1)
        k = jnp.concatenate([k, column], axis=-1)
        v = jnp.concatenate([v, jnp.zeros((b, m, h, 1), v.dtype)], axis=-1)
    fq, fk, bq, bk = _gpu_blocks(n, m)
    blocks = gpu_attention.BlockSizes(
        block_q=fq, block_k=fk, block_q_dkv=bq, block_kv_dkv=bk, block_q_dq=bq, block_kv_dq=bk
    )
    out = gpu_attention.mha(
        q, k, v, None, sm_scale=float(scale), block_sizes=blocks, interpret=interpret
    )
    return out[..., :dv]


def _pallas_tpu(q, k, v, *, bias, mask4, scale, interpret):
    from jax.experimental.pallas import tpu as pltpu
    from jax.experimental.pallas.ops.tpu import flash_attention as tpu_attention

    b, n, h, _ = q.shape
    m = k.shape[1]
    segment_ids, ab = None, None
    if mask4 is not None and mask4.shape[1] == 1 and mask4.shape[2] == 1:
        # A key mask shared by the heads: segment ids, queries 1, keys 1 (attend) or 0.
        kv = jnp.broadcast_to(mask4[:, 0, 0, :], (b, m)).astype(jnp.int32)
        segment_ids = tpu_attention.SegmentIds(q=jnp.ones((b, n), jnp.int32), kv=kv)
        mask4 = None
    if bias is not None:
        # The kernel scales after adding `ab`: (q.k + ab) * scale.
        ab = jnp.broadcast_to(_bias4(bias), (b, h, n, m)).astype(jnp.float32) / scale
    if mask4 is not None:
        full = jnp.broadcast_to(mask4, (b, h, n, m))
        ab = jnp.where(full, 0.0 if ab is None else ab, _masked_input(scale, jnp.float32))
    bq, bk = _tpu_q_block(n), _TPU_SEQ_BLOCK
    blocks = tpu_attention.BlockSizes(
        block_q=bq,
        block_k_major=bk,
        block_k=bk,
        block_b=1,
        block_q_major_dkv=bq,
        block_k_major_dkv=bk,
        block_k_dkv=bk,
        block_q_dkv=bq,
        block_k_major_dq=bk,
        block_k_dq=bk,
        block_q_dq=bq,
    )
    tr = lambda x: x.transpose(0, 2, 1, 3)
    ctx = pltpu.force_tpu_interpret_mode() if interpret else contextlib.nullcontext()
    with ctx:
        out = tpu_attention.flash_attention(
            tr(q), tr(k), tr(v), ab, segment_ids, sm_scale=float(scale), block_sizes=blocks
        )
    return tr(out)


def run(
    kernel: str,
    q,
    k,
    v,
    *,
    bias=None,
    mask=None,
    scale: float | None = None,
    dropout_rate: float = 0.0,
    dropout_key=None,
    backend: str | None = None,
    interpret: bool = False,
):
    """Runs `kernel` ("xla" | "chunked" | "cudnn" | "pallas", as `select` returned it) without
    deciding or recording. Arguments as `dot_product_attention`; fused kernels take no
    dropout."""
    check_qkv(q, k, v)
    b, n, h, dk = q.shape
    m = k.shape[1]
    scale = dk**-0.5 if scale is None else scale
    if kernel == "xla":
        if dropout_rate > 0.0 and dropout_key is None:
            raise ValueError("attention dropout (dropout_rate > 0) needs `dropout_key`")
        return _xla(
            q,
            k,
            v,
            bias=bias,
            mask=mask,
            scale=scale,
            dropout_rate=dropout_rate,
            dropout_key=dropout_key,
        )
    if kernel == "chunked":
        if dropout_rate > 0.0 and dropout_key is None:
            raise ValueError("attention dropout (dropout_rate > 0) needs `dropout_key`")
        from attention import chunked  # imports attention.softmax, which imports this module

        return chunked.apply(
            {},
            q,
            k,
            v,
            mask=mask,
            bias=bias,
            scale=scale,
            key=dropout_key,
            train=dropout_rate > 0.0,
            dropout_rate=dropout_rate,
        )
    if dropout_rate > 0.0:
        raise ValueError(f"kernel {kernel!r} has no attention dropout; use 'xla' or 'chunked'")
    mask4 = compact_mask(mask, b, h, n, m)
    if kernel == "cudnn":
        out = _cudnn(q, k, v, bias=bias, mask4=mask4, scale=scale)
    elif kernel == "pallas":
        backend = current_backend() if backend is None else backend
        if backend == "tpu":
            out = _pallas_tpu(q, k, v, bias=bias, mask4=mask4, scale=scale, interpret=interpret)
        else:
            if bias is not None:
                raise ValueError("the GPU Pallas kernel takes no bias")
            out = _pallas_gpu(q, k, v, mask4=mask4, scale=scale, interpret=interpret)
    else:
        raise ValueError(f"unknown kernel {kernel!r}; known: xla, chunked, cudnn, pallas")
    return _zero_empty_rows(out, mask4).astype(v.dtype)


def dot_product_attention(
    q,
    k,
    v,
    *,
    bias=None,
    mask=None,
    scale: float | None = None,
    implementation: str = "auto",
    dropout_rate: float = 0.0,
    dropout_key=None,
    site: str = "attention",
    backend: str | None = None,
    interpret: bool = False,
):
    """Softmax attention through the kernel `implementation` selects (module docstring).

    Args:
      q: `[B, N, H, Dk]`; k: `[B, M, H, Dk]`; v: `[B, M, H, Dv]`.
      bias: optional additive logit bias broadcastable to `[B, H, N, M]`.
      mask: boolean, broadcastable to `[B, H, N, M]`, or key padding `[B, M]`; True = attend.
      scale: logit scale; default `Dk ** -0.5`.
      implementation: "auto" | "xla" | "chunked" | "cudnn" | "pallas".
      dropout_rate: attention dropout on the probabilities (pass 0 at evaluation); `auto` then
        takes xla.
      dropout_key: PRNG key for the dropout (needed when `dropout_rate > 0`).
      site: the caller's name in `record()`'s decisions.
      backend: decide (and run Pallas) for this backend instead of the running one; with
        `interpret=True` the GPU/TPU Pallas kernels run on CPU (tests).
      interpret: run the Pallas kernel in interpret mode (GPU: `mha(interpret=True)`; TPU:
        under `force_tpu_interpret_mode()`, forward only: differentiate inside that context).

    Returns:
      `[B, N, H, Dv]` in the dtype of `v`; zeros for fully masked queries.

    Raises:
      ValueError: bad shapes or masks, an unknown `implementation`, or an explicit fused
        kernel that cannot take the inputs.
    """
    check_qkv(q, k, v)
    if dropout_rate > 0.0 and dropout_key is None:
        raise ValueError("attention dropout (dropout_rate > 0) needs `dropout_key`")
    kernel = select(
        implementation,
        q,
        k,
        v,
        mask=mask,
        bias=bias,
        dropout=dropout_rate > 0.0,
        site=site,
        backend=backend,
    )
    return run(
        kernel,
        q,
        k,
        v,
        bias=bias,
        mask=mask,
        scale=scale,
        dropout_rate=dropout_rate,
        dropout_key=dropout_key,
        backend=backend,
        interpret=interpret,
    )
