"""GFSA: graph-filter-based self-attention (Choi et al., NeurIPS 2024, arXiv 2312.04234).

Self-attention is the graph filter `Ā` (the row-stochastic softmax matrix). GFSA replaces it by
a polynomial filter (Sec. 3, Eq. 4, 8-10)::

    H = w_0 I + w_1 Ā + w_K Ā^K                                    (Eq. 4, exact; `gfsa_exact`)
    Ā^K ≈ Ā + (K - 1)(Ā² - Ā)                                       (Eq. 8, first-order Taylor)
    GFSA(X) = (w_0 I + w_1 Ā + w_K (Ā + (K - 1)(Ā² - Ā))) X W_val   (Eq. 9-10; `gfsa`)

As in the authors' code (jeongwhanchoi/GFSA: the `NLP/` models learn a zero-initialised `w_K`
per head with `w_1 = 1` and a fixed `--w_0`; `Image/gfsa.py` learns only `lamb`), only the
per-head `w_K` is learned (zero-initialised, so GFSA starts as softmax attention), `w_1 = 1` and
`w_0` is a fixed hyper-parameter; the paper's counts agree (Sec. 5.2: "144 additional learnable
parameters for 12 layers with 12 heads"). `learn_w0_w1=True` gives the paper's Algorithm 1
variant (App. I) where all three are learned per head.

The paper forms Ā² (O(N³) per head). Here the filter is applied to V instead::

    out = w_0 V + w_1 ĀV + w_K (ĀV + (K - 1)(Ā(ĀV) - ĀV))           O(N² d)

`gfsa_exact` computes Ā^K V as K successive products Ā(Ā(...(ĀV))) (O(K N² d); Table 9).
With `talking_heads=True` the filtered matrix is CaiT's talking-heads attention matrix
(`attention.talking_heads`), as the authors' `gfsa_cait.py` (GFSA Tables 3, 12, 14).
`gfsa_linear` is the linear-attention version (Sec. 6, App. U, Table 40) on Efficient Attention
(Shen et al.): Ā = ρ_q(Q) ρ_k(K)^T with ρ_q a softmax over features and ρ_k a softmax over the
sequence, so Ā is row-stochastic without normalisation and ĀX = ρ_q(Q)(ρ_k(K)^T X) costs
O(N d²) (our derivation: Sec. 6 and App. U give no formulas). `gfsa_explicit_apply` is the
authors' formulation with the N x N filter matrix formed explicitly (O(N³)), for speed
comparisons only.

Decisions where the paper is silent (the code is the authors' repository jeongwhanchoi/GFSA):
  * Attention dropout is applied to Ā before the filter, so Ā_drop(Ā_drop V) uses one dropout
    mask, as the code's NLP and Graphormer models do (e.g.
    `NLP/transformers/models/bert/modeling_bert.py`, `Graph/Graph_ZINC/graphormer/model.py`);
    its vision (`Image/gfsa.py`) and speech models apply the filter before the dropout.
  * Masks define the graph: masked pairs get Ā = 0 and Ā² follows 2-hop paths of allowed pairs
    (so causal and key-padding masks are preserved; our reading of Eq. 10, the paper does not
    discuss masks). The identity term is restricted to the mask's diagonal, so a masked key
    never reaches an output through `w_0 I` either and a fully masked query row is zero.
  * Cross-attention (N != M) zero-pads Ā to a square max(N, M) matrix and crops the result, as
    the authors' code does (`Code/modeling/modeling_{roberta,bart,t5}.py`; the paper does not
    mention it); V's rows are read as token positions.
  * `even_layers_only` (GFSA_even, Sec. 6 / App. T) counts layers from 0: layers 0, 2, 4, ... are
    GFSA and odd layers are plain softmax (or plain Efficient Attention) without parameters (our
    choice: the paper does not say whether "even-numbered" counts from 0 or 1).

Memory (`memory` = "quadratic" | "linear" | "auto", for `gfsa` and `gfsa_exact`). ĀV and
Ā(ĀV) use the same Q, K, mask and scale, so each product is one attention pass with other
values. "quadratic" forms Ā `[B, H, N, M]` once and multiplies by it (O(N M) memory).
"linear" never forms it: every product is a full attention pass, through the backend's fused
kernel where `attention.kernels` chooses one for these inputs (cuDNN on GPU, Pallas on TPU),
else through `softmax_chunked` (attention/chunked.py: blocks and a recomputing backward), so
the forward and the gradient take O(N + M) memory; it recomputes Q K^T in every pass (2 passes
for `gfsa`, K for `gfsa_exact`), a time cost the quadratic form does not pay. "auto" (the
default) is "quadratic" below `LINEAR_FROM` tokens (max(N, M)), "linear" from there, and
"quadratic" whatever the length where the linear form cannot compute the same function:
  * attention dropout in training: the quadratic form draws ONE keep mask for the whole Ā and
    uses it in both products (above); the passes would draw other bits per block, so the
    linear form is not the same function of the key. "auto" falls back to "quadratic"; an
    explicit "linear" raises ValueError (and `attention.check` reports it before any model is
    built).
  * `talking_heads=True`: CaiT's maps mix the heads before and after the softmax, which no
    per-head attention pass computes.
"""

from __future__ import annotations

import numbers

import jax
import jax.numpy as jnp

from attention import chunked, cost, kernels, masks, registry, softmax
from attention import talking_heads as talking_heads_lib
from attention.softmax import check_qkv

__all__ = [
    "init",
    "apply",
    "apply_exact",
    "apply_linear",
    "flops",
    "flops_exact",
    "flops_linear",
    "gfsa_explicit_apply",
    "PLAIN_LAYER",
]

# Key under params["buffers"] marking a layer that GFSA_even leaves as plain attention. Its
# presence (static pytree structure) decides, so the layer skips the Ā(ĀV) work under jit too.
PLAIN_LAYER = "plain_attention_layer"


def init(
    key,
    *,
    num_heads: int,
    head_dim: int,
    model_dim=None,
    max_len=None,
    layer_index: int = 0,
    num_layers: int = 1,
    w0: float = 0.0,
    init_wk: float = 0.0,
    even_layers_only: bool = False,
    learn_w0_w1: bool = False,
    talking_heads: bool = False,
):
    """Creates the per-head filter coefficients of one layer.

    Args:
      key: draws the talking-heads maps (the filter coefficients are deterministic).
      num_heads: H.
      head_dim, model_dim, max_len, num_layers: unused.
      layer_index: 0-based depth of the layer; with `even_layers_only`, odd layers get no
        coefficients.
      w0: the fixed identity coefficient (initial value of `w_0` when `learn_w0_w1`).
      init_wk: initial value of w_K (the paper uses 0, making GFSA start as softmax attention).
      even_layers_only: GFSA on layers 0, 2, 4, ... only (GFSA_even).
      learn_w0_w1: also learn per-head `w_0` (init `w0`) and `w_1` (init 1), as Algorithm 1.
      talking_heads: filter CaiT's talking-heads attention matrix instead of the softmax
        (`attention.talking_heads`; the GFSA authors' `gfsa_cait.py` applies the filter after
        the post-softmax mixing); adds the mixing maps under `talking_heads.PARAMS`.

    Returns:
      `{"w_k": [H]}` (plus `"w_0"`, `"w_1"`: `[H]` when `learn_w0_w1`), float32; for an odd layer
      under `even_layers_only`, `{"buffers": {PLAIN_LAYER: True}}` and no filter coefficients;
      plus the talking-heads maps when `talking_heads`.
    """
    del head_dim, model_dim, max_len, num_layers
    if isinstance(num_heads, bool) or not isinstance(num_heads, numbers.Integral) or num_heads < 1:
        raise ValueError(f"gfsa: num_heads must be a positive int, got {num_heads!r}")
    if (
        isinstance(layer_index, bool)
        or not isinstance(layer_index, numbers.Integral)
        or layer_index < 0
    ):
        raise ValueError(f"gfsa: layer_index must be a non-negative int, got {layer_index!r}")
    params = {}
    if talking_heads:
        params[talking_heads_lib.PARAMS] = talking_heads_lib.init_mixing(key, num_heads)
    if even_layers_only and layer_index % 2 == 1:
        return {**params, "buffers": {PLAIN_LAYER: jnp.asarray(True)}}
    params["w_k"] = jnp.full((num_heads,), init_wk, jnp.float32)
    if learn_w0_w1:
        params["w_0"] = jnp.full((num_heads,), w0, jnp.float32)
        params["w_1"] = jnp.ones((num_heads,), jnp.float32)
    return params


def _is_plain(params) -> bool:
    return PLAIN_LAYER in (params.get("buffers") or {})


def _coefficients(params, num_heads: int, w0: float, dtype, name: str):
    """(w_0, w_1, w_K), each `[1, 1, H, 1]` to broadcast over `[B, N, H, D]`."""
    if "w_k" not in params:
        raise ValueError(
            f"{name}: params lack 'w_k' (per-head [H] coefficients); create them with "
            f"attention.get({name!r}).init(key, num_heads=H, head_dim=D)"
        )
    coeffs = {"w_k": None, "w_0": jnp.full((num_heads,), w0), "w_1": jnp.ones((num_heads,))}
    for label in coeffs:
        if label in params:
            coeffs[label] = jnp.asarray(params[label])
        if coeffs[label].shape != (num_heads,):
            raise ValueError(
                f"{name}: params[{label!r}] has shape {coeffs[label].shape}; expected "
                f"[H] = ({num_heads},)"
            )
    return tuple(coeffs[lb].astype(dtype)[None, None, :, None] for lb in ("w_0", "w_1", "w_k"))


def _check_order(order, name: str) -> None:
    if isinstance(order, bool) or not isinstance(order, numbers.Integral) or order < 1:
        raise ValueError(f"{name}: order K must be an int >= 1, got {order!r}")


def _check_dropout(dropout_rate, train, key, name: str) -> None:
    if not 0.0 <= dropout_rate < 1.0:
        raise ValueError(f"{name}: dropout_rate must be in [0, 1), got {dropout_rate}")
    if train and dropout_rate > 0.0 and key is None:
        raise ValueError(f"{name}: train=True with dropout_rate > 0 needs `key`")


def _resize_rows(x, length: int):
    """Crops or zero-pads axis 1 of `[B, L, H, D]` to `length` (the code's square padding)."""
    have = x.shape[1]
    if have >= length:
        return x[:, :length]
    return jnp.pad(x, ((0, 0), (0, length - have), (0, 0), (0, 0)))


def _diagonal(mask4, b: int, h: int, n: int, m: int, dtype):
    """The identity term's support `[B, N, H, 1]`: the mask's diagonal (zero past min(N, M))."""
    p = min(n, m)
    if mask4 is None:
        diag = jnp.ones((b, h, p), dtype)
    else:
        # `mask4` is `[B|1, H|1, N|1, M|1]`: a broadcast axis is read at index 0.
        rows = jnp.arange(p) if mask4.shape[2] > 1 else jnp.zeros(p, jnp.int32)
        cols = jnp.arange(p) if mask4.shape[3] > 1 else jnp.zeros(p, jnp.int32)
        diag = jnp.broadcast_to(mask4[:, :, rows, cols], (b, h, p)).astype(dtype)
    diag = jnp.pad(diag, ((0, 0), (0, 0), (0, n - p)))
    return diag.transpose(0, 2, 1)[..., None]


MEMORY = ("auto", "quadratic", "linear")
# `memory="auto"` takes the linear-memory passes from this many tokens (max(N, M)) on. Measured
# on a (loaded) 2-core CPU at B1 H8 D64 float32, forward + backward, linear / quadratic time:
# 0.85-1.3x at 1k, 0.9-1.2x at 2k (break-even), 0.8-1.05x at 4k; past 2k the quadratic form's
# Ā costs 128 MiB per 8 heads and sequence (512 MiB at 4k) in the forward alone.
LINEAR_FROM = 2048


def _check_memory(memory, name: str) -> None:
    if not isinstance(memory, str) or memory not in MEMORY:
        raise ValueError(f"{name}: memory={memory!r} is not one of {', '.join(MEMORY)}")


def _linear_blocker(talking_heads: bool, dropout: bool) -> str | None:
    """Why the linear-memory passes cannot compute this call (None when they can)."""
    if talking_heads:
        return (
            "talking_heads=True (CaiT's maps mix the heads before and after the softmax; no "
            "per-head attention pass computes that)"
        )
    if dropout:
        return (
            "attention dropout in training (the quadratic form uses ONE keep mask of the whole "
            "N x M matrix in both products; attention passes would draw other bits per block)"
        )
    return None


def memory_path(memory: str, *, n: int, m: int, talking_heads=False, dropout=False, name="gfsa"):
    """The form ("quadratic" or "linear") `memory` selects for a call of N queries, M keys.

    Raises:
      ValueError: an unknown `memory`, or "linear" where it cannot compute the same function
        (`_linear_blocker`), naming why and the alternatives.
    """
    _check_memory(memory, name)
    blocker = _linear_blocker(talking_heads, dropout)
    if memory == "linear" and blocker is not None:
        raise ValueError(
            f"{name}: memory='linear' cannot run with {blocker}; use memory='auto' (which "
            "falls back to the quadratic form there) or memory='quadratic'"
        )
    if memory == "auto":
        return "linear" if blocker is None and max(n, m) >= LINEAR_FROM else "quadratic"
    return memory


def _passes(q, k, v, *, mask4, bias, scale, name, query_chunk, key_chunk):
    """`attend(X) = Ā X` (X `[B, L, H, D]`, rows read as key positions), one attention pass
    per call, never forming Ā: the backend's fused kernel where `kernels.choose` takes these
    inputs, else `softmax_chunked`. Returns float32 (float64 for float64 inputs)."""
    m, v_dtype = k.shape[1], v.dtype
    acc = jnp.promote_types(q.dtype, jnp.float32)
    kernel, _ = kernels.choose(
        "auto", backend=kernels.current_backend(), q=q, k=k, v=v, mask=mask4, bias=bias
    )
    if kernel != "xla":

        def attend_fused(x):
            x = _resize_rows(x, m).astype(v_dtype)
            out = kernels.dot_product_attention(
                q, k, x, bias=bias, mask=mask4, scale=scale, implementation=kernel, site=name
            )
            return out.astype(acc)

        return attend_fused

    def attend_chunked(x):
        x = _resize_rows(x, m).astype(acc)
        return chunked.apply(
            {},
            q,
            k,
            x,
            mask=mask4,
            bias=bias,
            scale=scale,
            query_chunk=query_chunk,
            key_chunk=key_chunk,
        )

    return attend_chunked


def _probs(params, q, k, mask, bias, scale, dropout_rate, train, key, name):
    """The attention matrix `[B, H, N, M]` (with CaiT's talking heads when `params` holds
    them; after dropout when training) and the 4-D mask (`attention.talking_heads`)."""
    return talking_heads_lib.probabilities(
        q,
        k,
        mask=mask,
        bias=bias,
        scale=scale,
        dropout_rate=dropout_rate,
        train=train,
        key=key,
        mixing=params.get(talking_heads_lib.PARAMS),
        name=name,
    )


def _filtered(
    params,
    q,
    k,
    v,
    *,
    mask,
    key,
    train,
    order,
    w0,
    dropout_rate,
    scale,
    bias,
    exact,
    name,
    memory="quadratic",
    query_chunk=chunked.QUERY_CHUNK,
    key_chunk=chunked.KEY_CHUNK,
):
    check_qkv(q, k, v)
    _check_order(order, name)
    _check_dropout(dropout_rate, train, key, name)
    b, n, h, _ = q.shape
    m = k.shape[1]
    path = memory_path(
        memory,
        n=n,
        m=m,
        talking_heads=talking_heads_lib.PARAMS in params,
        dropout=train and dropout_rate > 0.0,
        name=name,
    )
    if path == "linear":
        acc = jnp.promote_types(q.dtype, jnp.float32)
        mask4 = kernels.compact_mask(mask, b, h, n, m)  # validated, broadcast axes kept
        attend = _passes(
            q,
            k,
            v,
            mask4=mask4,
            bias=bias,
            scale=scale,
            name=name,
            query_chunk=query_chunk,
            key_chunk=key_chunk,
        )
    else:
        probs, mask4 = _probs(params, q, k, mask, bias, scale, dropout_rate, train, key, name)
        acc = probs.dtype

        def attend(x):  # Ā X, with X's rows read as key positions
            return jnp.einsum("bhnm,bmhd->bnhd", probs, _resize_rows(x, m))

    vals = v.astype(acc)
    av = attend(vals)
    if _is_plain(params):
        return av.astype(v.dtype)
    c0, c1, ck = _coefficients(params, h, w0, acc, name)
    if exact:
        ak_v = av
        for _ in range(int(order) - 1):
            ak_v = attend(ak_v)
    else:
        ak_v = av + (order - 1) * (attend(av) - av)
    identity = c0 * _diagonal(mask4, b, h, n, m, acc) * _resize_rows(vals, n)
    return (identity + c1 * av + ck * ak_v).astype(v.dtype)


def apply(
    params,
    q,
    k,
    v,
    *,
    mask=None,
    key=None,
    train: bool = False,
    order: int = 3,
    w0: float = 0.0,
    dropout_rate: float = 0.0,
    scale: float | None = None,
    bias=None,
    memory: str = "auto",
    query_chunk: int = chunked.QUERY_CHUNK,
    key_chunk: int = chunked.KEY_CHUNK,
):
    """GFSA (Eq. 10): `(w_0 I + w_1 Ā + w_K (Ā + (K-1)(Ā² - Ā))) V`, in O(N² d) time.

    Args:
      params: `init` output: `{"w_k": [H]}` (optionally `"w_0"`, `"w_1"`: `[H]`, which override
        the fixed `w0` and 1), or a GFSA_even odd layer's `{"buffers": {PLAIN_LAYER: ...}}`.
      q: `[B, N, H, Dk]`; k: `[B, M, H, Dk]`; v: `[B, M, H, Dv]`.
      mask: boolean, broadcastable to `[B, H, N, M]`, or key padding `[B, M]`; True = attend.
      key: PRNG key for attention dropout (needed when `train` and `dropout_rate > 0`).
      train: enables attention dropout (applied to Ā before the filter).
      order: K >= 1 of the approximated Ā^K (K = 2 is exact).
      w0: the identity coefficient when `params` has no learned `"w_0"`.
      dropout_rate: dropout on the attention probabilities during training.
      scale: logit scale; default `Dk ** -0.5`.
      bias: optional additive logit bias broadcastable to `[B, H, N, M]` (e.g. Graphormer's).
      memory: "quadratic" forms Ā (O(N M) memory), "linear" runs ĀV and Ā(ĀV) as two attention
        passes that never form it (O(N + M) memory, also in the gradient), "auto" picks by
        length (`memory_path`; the module docstring says when "linear" cannot run).
      query_chunk, key_chunk: block sizes of the linear form on `softmax_chunked`.

    Returns:
      `[B, N, H, Dv]` in the dtype of `v`, computed in float32 (float64 for float64 inputs).
    """
    hp = dict(order=order, w0=w0, dropout_rate=dropout_rate, scale=scale, bias=bias)
    chunks = dict(memory=memory, query_chunk=query_chunk, key_chunk=key_chunk)
    return _filtered(
        params, q, k, v, mask=mask, key=key, train=train, exact=False, name="gfsa", **hp, **chunks
    )


def apply_exact(
    params,
    q,
    k,
    v,
    *,
    mask=None,
    key=None,
    train: bool = False,
    order: int = 3,
    w0: float = 0.0,
    dropout_rate: float = 0.0,
    scale: float | None = None,
    bias=None,
    memory: str = "auto",
    query_chunk: int = chunked.QUERY_CHUNK,
    key_chunk: int = chunked.KEY_CHUNK,
):
    """Exact-power GFSA (Eq. 4, Table 9): `(w_0 I + w_1 Ā + w_K Ā^K) V`.

    Ā^K V is computed as Ā(Ā(...(ĀV))), K products of cost O(N² d) each (with
    `memory="linear"`, K attention passes). Arguments, shapes and return value as `apply`.
    """
    hp = dict(order=order, w0=w0, dropout_rate=dropout_rate, scale=scale, bias=bias)
    chunks = dict(memory=memory, query_chunk=query_chunk, key_chunk=key_chunk)
    name = "gfsa_exact"
    return _filtered(
        params, q, k, v, mask=mask, key=key, train=train, exact=True, name=name, **hp, **chunks
    )


def gfsa_explicit_apply(
    params,
    q,
    k,
    v,
    *,
    mask=None,
    key=None,
    train: bool = False,
    order: int = 3,
    w0: float = 0.0,
    dropout_rate: float = 0.0,
    scale: float | None = None,
    bias=None,
    exact: bool = False,
):
    """The authors' formulation: forms the `[B, H, P, P]` filter matrix (P = max(N, M)), O(N³).

    Same result as `apply` (`apply_exact` with `exact=True`, via `matrix_power`) up to rounding;
    kept only as the baseline for speed comparisons. Arguments, shapes and return value as
    `apply`.
    """
    name = "gfsa_explicit_apply"
    check_qkv(q, k, v)
    _check_order(order, name)
    _check_dropout(dropout_rate, train, key, name)
    b, n, h, _ = q.shape
    m = k.shape[1]
    p = max(n, m)
    probs, mask4 = _probs(params, q, k, mask, bias, scale, dropout_rate, train, key, name)
    acc = probs.dtype
    a = jnp.pad(probs, ((0, 0), (0, 0), (0, p - n), (0, p - m)))
    if _is_plain(params):
        filt = a
    else:
        c0, c1, ck = (
            c[0, 0, :, 0][None, :, None, None] for c in _coefficients(params, h, w0, acc, name)
        )
        if exact:
            a_k = jnp.linalg.matrix_power(a, int(order))
        else:
            a_k = a + (order - 1) * (a @ a - a)
        diag = _resize_rows(_diagonal(mask4, b, h, n, m, acc), p)[..., 0].transpose(0, 2, 1)
        filt = c0 * (diag[..., None] * jnp.eye(p, dtype=acc)) + c1 * a + ck * a_k
    out = jnp.einsum("bhnm,bmhd->bnhd", filt, _resize_rows(v.astype(acc), p))
    return out[:, :n].astype(v.dtype)


def _key_padding(mask, b: int, m: int):
    """The `[B, M]` key-padding mask of `mask` (None, `[B, M]` or `[B, 1, 1, M]`), or None."""
    if mask is None:
        return None
    mask = jnp.asarray(mask)
    if mask.ndim == 4 and (mask.shape[1] != 1 or mask.shape[2] != 1):
        raise ValueError(
            "gfsa_linear supports key-padding masks only ([B, M] or [B, 1, 1, M]): linear "
            f"attention never forms the N x M matrix a general mask acts on; got {mask.shape}"
        )
    return masks.as_4d(mask, b, 1, 1, m)[:, 0, 0, :]


def apply_linear(
    params,
    q,
    k,
    v,
    *,
    mask=None,
    key=None,
    train: bool = False,
    order: int = 3,
    w0: float = 0.0,
):
    """GFSA on Efficient Attention (Sec. 6, Table 40), O(N d²): Ā = ρ_q(Q) ρ_k(K)^T.

    ρ_q: softmax of each query over its Dk features; ρ_k: softmax of each key feature over the
    M (unmasked) positions. Ā is row-stochastic and never formed: ĀX = ρ_q (ρ_k^T X).

    Args:
      params: as `apply`.
      q: `[B, N, H, Dk]`; k: `[B, M, H, Dk]`; v: `[B, M, H, Dv]`.
      mask: None or key padding `[B, M]` (or `[B, 1, 1, M]`); True = attend. Other 4-D masks
        raise ValueError.
      key, train: unused (no attention matrix to drop out).
      order: K >= 1 of the approximated Ā^K.
      w0: the identity coefficient when `params` has no learned `"w_0"`.

    Returns:
      `[B, N, H, Dv]` in the dtype of `v`, computed in float32 (float64 for float64 inputs).
    """
    del key, train
    name = "gfsa_linear"
    check_qkv(q, k, v)
    _check_order(order, name)
    b, n, h, _ = q.shape
    m = k.shape[1]
    pad = _key_padding(mask, b, m)
    acc = jnp.promote_types(jnp.promote_types(q.dtype, k.dtype), jnp.float32)
    rho_q = jax.nn.softmax(q.astype(acc), axis=-1)
    k_logits = k.astype(acc)
    if pad is not None:
        k_logits = jnp.where(pad[:, :, None, None], k_logits, jnp.finfo(acc).min)
    rho_k = jax.nn.softmax(k_logits, axis=1)
    if pad is not None:
        # All keys masked: the all-min softmax is uniform, not zero.
        rho_k = jnp.where(pad[:, :, None, None], rho_k, 0.0)
    vals = v.astype(acc)

    def attend(x):  # ρ_q (ρ_k^T X): a [Dk, Dv] summary per head instead of the N x M matrix
        summary = jnp.einsum("bmhd,bmhe->bhde", rho_k, _resize_rows(x, m))
        return jnp.einsum("bnhd,bhde->bnhe", rho_q, summary)

    av = attend(vals)
    if _is_plain(params):
        return av.astype(v.dtype)
    c0, c1, ck = _coefficients(params, h, w0, acc, name)
    ak_v = av + (order - 1) * (attend(av) - av)
    p = min(n, m)
    if pad is None:
        diag = jnp.ones((b, p), acc)
    else:
        diag = pad[:, :p].astype(acc)
    diag = jnp.pad(diag, ((0, 0), (0, n - p)))[:, :, None, None]
    identity = c0 * diag * _resize_rows(vals, n)
    return (identity + c1 * av + ck * ak_v).astype(v.dtype)


_INIT_DEFAULTS = {"init_wk": 0.0, "even_layers_only": False, "learn_w0_w1": False}
# The quadratic forms can also filter CaiT's talking-heads matrix (the linear one has no matrix).
_QUADRATIC_DEFAULTS = {**_INIT_DEFAULTS, "talking_heads": False}
# The softmax-attention forms choose their memory (module docstring).
_SOFTMAX_DEFAULTS = {
    "order": 3,
    "w0": 0.0,
    "dropout_rate": 0.0,
    "scale": None,
    "memory": "auto",
    **_QUADRATIC_DEFAULTS,
}
# `apply`'s block sizes for `softmax_chunked` (its defaults), for the FLOP count.
_CHUNKS = {"query_chunk": chunked.QUERY_CHUNK, "key_chunk": chunked.KEY_CHUNK}


_check = registry.int_at_least(order=1)


def _check_softmax_forms(hp, num_tokens) -> None:
    """`check` of gfsa / gfsa_exact: `order`, and a `memory` that can run with the rest."""
    _check(hp, num_tokens)
    memory = hp["memory"]
    if not isinstance(memory, str) or memory not in MEMORY:
        raise ValueError(f"memory={memory!r} is not one of {', '.join(MEMORY)}")
    blocker = _linear_blocker(bool(hp["talking_heads"]), hp["dropout_rate"] > 0.0)
    if memory == "linear" and blocker is not None:
        raise ValueError(
            f"memory='linear' cannot run with {blocker}; use memory='auto' (which falls back "
            "to the quadratic form there) or memory='quadratic'"
        )


def _plain_layer(c: cost.Call, hp) -> bool:
    return bool(hp.get("even_layers_only")) and c.layer_index % 2 == 1


def _linear_memory(c: cost.Call, hp) -> bool:
    """Whether this call runs the linear-memory passes (`memory_path` for its shapes)."""
    memory = hp.get("memory", "quadratic")
    dropout = c.train and hp.get("dropout_rate", 0.0) > 0.0
    blocked = _linear_blocker(bool(hp.get("talking_heads")), dropout) is not None
    if memory == "auto":
        return not blocked and max(c.n, c.m) >= LINEAR_FROM
    return memory == "linear"


def _passes_flops(c: cost.Call, passes: int) -> tuple[float, float]:
    """`passes` attention passes of `softmax_chunked` (the CPU form of memory="linear")."""
    mm, ew = chunked.flops(c, _CHUNKS)
    return passes * mm, passes * ew


def flops(c: cost.Call, hp) -> tuple[float, float]:
    """Forward FLOPs `(matmul, elementwise)` of one call on one sequence (`attention.cost`)."""
    # Softmax's 4·n·m·h·d plus the second-order term A(AV), 2·n·m·h·dv (never A², which would
    # be 2·n·m·n·h); a GFSA_even odd layer is plain softmax. Linear memory: two full passes
    # (one on a plain layer), each recomputing Q K^T.
    plain = _plain_layer(c, hp)
    if _linear_memory(c, hp):
        mm, ew = _passes_flops(c, 1 if plain else 2)
    else:
        mm, ew = _matrix_flops(c, hp)
        if not plain:
            mm += 2 * c.n * c.m * c.h * c.dv
    return mm, ew if plain else ew + 9 * c.n * c.h * c.dv


def _matrix_flops(c: cost.Call, hp) -> tuple[float, float]:
    """Softmax attention's FLOPs, plus the talking-heads maps when on."""
    mm, ew = softmax.flops(c, hp)
    if hp.get("talking_heads"):
        mm_th, ew_th = talking_heads_lib.mixing_flops(c)
        mm, ew = mm + mm_th, ew + ew_th
    return mm, ew


def flops_exact(c: cost.Call, hp) -> tuple[float, float]:
    """Forward FLOPs `(matmul, elementwise)` of one call on one sequence (`attention.cost`)."""
    # QK^T 2·n·m·h·dk and K successive products A(A(...(AV))), K·2·n·m·h·dv. Linear memory:
    # K full passes (one on a plain layer).
    plain = _plain_layer(c, hp)
    if _linear_memory(c, hp):
        mm, ew = _passes_flops(c, 1 if plain else hp["order"])
    else:
        mm, ew = _matrix_flops(c, hp)
        if not plain:
            mm += (hp["order"] - 1) * 2 * c.n * c.m * c.h * c.dv
    return mm, ew if plain else ew + 6 * c.n * c.h * c.dv


def flops_linear(c: cost.Call, hp) -> tuple[float, float]:
    """Forward FLOPs `(matmul, elementwise)` of one call on one sequence (`attention.cost`)."""
    # One Efficient-Attention product A X = rho_q (rho_k^T X) costs 2·(m + n)·h·dk·dv; GFSA
    # needs AV and A(AV) (a plain GFSA_even layer only AV).
    one = 2 * (c.m + c.n) * c.h * c.dk * c.dv
    products = 1 if _plain_layer(c, hp) else 2
    ew = (c.n + c.m) * c.h * c.dk * (cost.SOFTMAX - 1) + c.masked * 2 * c.m * c.h * c.dk
    if products == 2:
        ew += 9 * c.n * c.h * c.dv
    return products * one, ew


registry.register(
    "gfsa",
    check=_check_softmax_forms,
    apply=apply,
    init=init,
    flops=flops,
    defaults=_SOFTMAX_DEFAULTS,
    doc="graph-filter self-attention: w0 I + A + wK (A + (K-1)(A^2 - A)), O(N^2 d) time, "
    "O(N^2) or O(N) memory",
    inputs=("bias",),
)
registry.register(
    "gfsa_exact",
    check=_check_softmax_forms,
    apply=apply_exact,
    init=init,
    flops=flops_exact,
    defaults=_SOFTMAX_DEFAULTS,
    doc="graph-filter self-attention with the exact power: w0 I + A + wK A^K (Table 9)",
    inputs=("bias",),
)
registry.register(
    "gfsa_linear",
    check=_check,
    apply=apply_linear,
    init=init,
    flops=flops_linear,
    defaults={"order": 3, "w0": 0.0, **_INIT_DEFAULTS},
    doc="GFSA on Efficient Attention (linear, key padding only; Table 40), O(N d^2)",
)
