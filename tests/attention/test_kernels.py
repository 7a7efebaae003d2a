"""The attention dispatch (`attention.kernels`): which kernel each backend and input gets, the
errors of impossible explicit requests, recording, and the Pallas kernels in interpret mode on
CPU against the float64 reference (masks, fully masked rows, gradients, jit).

Both Pallas kernels run on CPU in interpret mode: the GPU Triton kernel with
`mha(..., interpret=True)` (forward and backward), the TPU flash attention kernel under
`jax.experimental.pallas.tpu.force_tpu_interpret_mode()` (its backward kernels are traced when
differentiating, so gradients are taken inside that context). cuDNN cannot run without a GPU:
its decisions are tested here, its numerics by the tests marked `gpu` (run by `make test-gpu`).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attention
from attention import kernels
from tests.attention.ref_softmax import softmax_reference

ON_GPU = jax.default_backend() == "gpu"
gpu_only = pytest.mark.skipif(not ON_GPU, reason="needs a GPU (jax.default_backend() == 'gpu')")


def _spec(shape, dtype=jnp.float32):
    return jax.ShapeDtypeStruct(shape, dtype)


def _decide(implementation, backend, *, dtype="bfloat16", n=64, m=64, dk=64, dv=None, **kw):
    b, h = 2, 4
    return kernels.choose(
        implementation,
        backend=backend,
        q=_spec((b, n, h, dk), dtype),
        k=_spec((b, m, h, dk), dtype),
        v=_spec((b, m, h, dk if dv is None else dv), dtype),
        **kw,
    )


KEY_PADDING = _spec((2, 64), bool)
FULL_MASK = _spec((2, 4, 64, 64), bool)
BIAS = _spec((1, 4, 64, 64))

# (implementation, backend, inputs, expected kernel, a phrase of the reason)
DECISIONS = [
    ("auto", "cpu", {}, "xla", "no fused attention kernel is chosen on cpu"),
    ("auto", "cpu", {"dtype": "float32"}, "xla", "on cpu"),
    # from CHUNKED_FROM tokens on CPU, the blocked path; not with dropout, nor one short side
    ("auto", "cpu", {"n": 1024, "m": 1024, "mask": KEY_PADDING}, "chunked", "N, M >= 1024"),
    ("auto", "cpu", {"n": 4096, "m": 2048, "dtype": "float32"}, "chunked", "on cpu"),
    ("auto", "cpu", {"n": 1024, "m": 1024, "dropout": True}, "xla", "no fused"),
    ("auto", "cpu", {"n": 1023, "m": 4096}, "xla", "no fused"),
    ("auto", "gpu", {"n": 2048, "m": 2048, "dtype": "float32"}, "xla", "needs bfloat16"),
    ("chunked", "gpu", {"dropout": True}, "chunked", "requested"),
    ("chunked", "cpu", {}, "chunked", "requested"),
    ("auto", "gpu", {}, "cudnn", "cudnn takes these inputs"),
    ("auto", "cuda", {"dtype": "float16"}, "cudnn", "takes these inputs"),
    ("auto", "gpu", {"dtype": "float32"}, "xla", "needs bfloat16 or float16 inputs, got float32"),
    ("auto", "gpu", {"dropout": True}, "xla", "no attention dropout"),
    ("auto", "gpu", {"dk": 12}, "xla", "multiple of 8"),
    ("auto", "gpu", {"dk": 192}, "xla", "at most 128"),
    ("auto", "gpu", {"dk": 192, "compute_capability": (9, 0)}, "cudnn", "takes"),
    ("auto", "gpu", {"dk": 320, "compute_capability": (9, 0)}, "xla", "at most 256"),
    ("auto", "gpu", {"compute_capability": (7, 5)}, "xla", "compute capability 8.0"),
    ("auto", "gpu", {"dv": 32}, "xla", "equal key and value head dims"),
    ("auto", "gpu", {"mask": KEY_PADDING}, "cudnn", "takes"),
    ("auto", "gpu", {"mask": FULL_MASK, "bias": BIAS}, "cudnn", "takes"),
    ("auto", "gpu", {"n": 63, "mask": _spec((2, 4, 63, 64), bool)}, "xla", "even sequence"),
    ("auto", "gpu", {"n": 63}, "cudnn", "takes"),
    ("auto", "rocm", {}, "xla", "no fused attention kernel is chosen on rocm"),
    ("auto", "tpu", {"m": 128}, "pallas", "pallas takes these inputs on tpu"),
    ("auto", "tpu", {"m": 128, "dtype": "float32"}, "pallas", "takes"),
    ("auto", "tpu", {"m": 128, "mask": FULL_MASK, "bias": BIAS}, "pallas", "takes"),
    ("auto", "tpu", {"m": 64}, "xla", "multiple of 128"),
    ("auto", "tpu", {"m": 128, "dtype": "float16"}, "xla", "float32 or bfloat16"),
    ("auto", "tpu", {"m": 128, "dk": 192}, "xla", "head dim"),
    ("auto", "tpu", {"m": 128, "dk": 256}, "pallas", "takes"),
    ("auto", "tpu", {"m": 128, "n": 200}, "pallas", "takes"),
    ("auto", "tpu", {"m": 128, "n": 201}, "xla", "query length"),
    ("auto", "tpu", {"m": 128, "dropout": True}, "xla", "no attention dropout"),
    ("auto", "tpu", {"m": 128, "dv": 32}, "xla", "equal key and value head dims"),
    ("xla", "gpu", {}, "xla", "requested"),
    ("xla", "tpu", {"m": 128}, "xla", "requested"),
    ("cudnn", "gpu", {"mask": KEY_PADDING}, "cudnn", "requested"),
    ("pallas", "gpu", {"dtype": "float32"}, "pallas", "requested"),
    ("pallas", "gpu", {"mask": KEY_PADDING}, "pallas", "requested"),
    ("pallas", "gpu", {"mask": _spec((2, 4, 1, 64), bool)}, "pallas", "requested"),
    ("pallas", "gpu", {"n": 48, "m": 48}, "pallas", "requested"),
    ("pallas", "gpu", {"n": 32, "m": 128}, "pallas", "requested"),
    ("pallas", "tpu", {"m": 256, "mask": KEY_PADDING}, "pallas", "requested"),
]


@pytest.mark.parametrize("implementation,backend,inputs,kernel,phrase", DECISIONS)
def test_choose_picks_the_kernel_each_backend_and_input_allows(
    implementation, backend, inputs, kernel, phrase
):
    got, reason = _decide(implementation, backend, **inputs)
    assert got == kernel, reason
    assert phrase in reason


# (implementation, backend, inputs, a phrase of the error)
IMPOSSIBLE = [
    ("cudnn", "cpu", {}, "needs a CUDA GPU, the backend is 'cpu'"),
    ("cudnn", "rocm", {}, "needs a CUDA GPU"),
    ("cudnn", "tpu", {"m": 128}, "needs a CUDA GPU"),
    ("cudnn", "gpu", {"dropout": True}, "no attention dropout"),
    ("cudnn", "gpu", {"dk": 100}, "multiple of 8"),
    ("cudnn", "gpu", {"dv": 32}, "equal key and value head dims"),
    ("cudnn", "gpu", {"n": 63, "bias": _spec((1, 4, 63, 64))}, "even sequence lengths"),
    ("pallas", "cpu", {}, "needs a GPU or TPU backend, the backend is 'cpu'"),
    ("pallas", "gpu", {"bias": BIAS}, "takes no bias on GPU"),
    ("pallas", "gpu", {"mask": FULL_MASK}, "takes only key masks on GPU"),
    ("pallas", "gpu", {"dropout": True}, "no attention dropout"),
    ("pallas", "gpu", {"n": 24, "m": 24}, "multiples of 16"),
    ("pallas", "gpu", {"n": 16, "m": 256}, "same number of power-of-two blocks"),
    ("pallas", "gpu", {"dk": 4}, "pads to a power of two in 16..256"),
    ("pallas", "gpu", {"dk": 256, "mask": KEY_PADDING}, "plus 1 for the mask channel"),
    ("pallas", "gpu", {"dtype": "float64"}, "float16, bfloat16 or float32"),
    ("pallas", "tpu", {"m": 100}, "multiple of 128"),
    ("pallas", "tpu", {"m": 128, "dropout": True}, "no attention dropout"),
]


@pytest.mark.parametrize("implementation,backend,inputs,phrase", IMPOSSIBLE)
def test_explicit_fused_kernel_that_cannot_take_the_inputs_raises(
    implementation, backend, inputs, phrase
):
    with pytest.raises(ValueError, match="use implementation='auto' or 'xla'") as err:
        _decide(implementation, backend, **inputs)
    assert str(err.value).startswith(f"implementation={implementation!r} ")
    assert phrase in str(err.value)


def test_the_dtype_error_reads_as_documented():
    with pytest.raises(ValueError) as err:
        _decide("cudnn", "gpu", dtype="float32")
    assert str(err.value) == (
        "implementation='cudnn' needs bfloat16 or float16 inputs, got float32; "
        "use implementation='auto' or 'xla'"
    )


def test_unknown_implementation_lists_the_choices():
    with pytest.raises(ValueError, match="not one of auto, xla, chunked, cudnn, pallas"):
        _decide("flash", "gpu")
    for name in ("softmax", "ssa", "samsa"):
        problems = attention.check(name, {"implementation": "flash"})
        assert problems == [
            f"{name}: implementation='flash' is not one of auto, xla, chunked, cudnn, pallas"
        ]
        assert attention.check(name, {"implementation": "cudnn"}) == []
        assert attention.defaults(name)["implementation"] == "auto"


def test_explicit_cudnn_on_cpu_is_a_user_error_at_trace_time():
    q = jnp.zeros((1, 4, 1, 8), jnp.bfloat16)
    mech = attention.get("softmax", implementation="cudnn")
    with pytest.raises(ValueError, match="implementation='cudnn' needs a CUDA GPU"):
        mech.apply({}, q, q, q)


# ---------------------------------------------------------------------------------------------
# Recording the decisions.


def test_record_collects_the_decisions_made_while_tracing():
    q = _spec((2, 8, 2, 4))
    mask = np.ones((2, 8), bool)
    soft = attention.get("softmax")
    with kernels.record() as outer:
        with kernels.record() as inner:
            jax.eval_shape(lambda q: soft.apply({}, q, q, q, mask=mask), q)
        jax.jit(lambda q: kernels.dot_product_attention(q, q, q, implementation="xla")).lower(q)
    assert inner.summary() == {"softmax": "xla"}
    assert outer.summary() == {"softmax": "xla", "attention": "xla"}
    (first, second) = outer
    assert first.requested == "auto" and first.backend == jax.default_backend()
    assert first.shapes == (2, 8, 8, 2, 4, 4) and first.dtype == "float32"
    assert "auto" in first.reason and second.reason == "requested"
    with kernels.record() as rec:
        pass
    assert rec.summary() == {}
    jax.eval_shape(lambda q: soft.apply({}, q, q, q), q)  # no recording active: nothing kept
    assert len(outer) == 2


def test_summary_lists_every_kernel_a_site_ran():
    d = functools.partial(kernels.Decision, requested="auto", reason="", backend="gpu")
    decisions = [
        d(site="ssa", kernel="cudnn", shapes=(), dtype="bfloat16"),
        d(site="ssa", kernel="xla", shapes=(), dtype="bfloat16"),
        d(site="ssa", kernel="cudnn", shapes=(), dtype="bfloat16"),
    ]
    assert kernels.summary(decisions) == {"ssa": "cudnn+xla"}


def test_ssa_and_samsa_record_their_site():
    b, n, h, d = 1, 8, 2, 4
    q = jnp.zeros((b, n, h, d))
    ssa = attention.get("ssa", keep=0.5, sampling="unbiased")
    ssa_params = ssa.init(jax.random.key(0), num_heads=h, head_dim=d)
    samsa = attention.get("samsa", k=2)
    samsa_params = jax.eval_shape(
        lambda: samsa.init(jax.random.key(0), num_heads=h, head_dim=d, model_dim=3)
    )
    samsa_params = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), samsa_params)
    x = jnp.zeros((b, n, 3))
    with kernels.record() as rec:
        jax.eval_shape(lambda q: ssa.apply(ssa_params, q, q, q), q)  # dense evaluation
        jax.eval_shape(
            lambda q: ssa.apply(ssa_params, q, q, q, train=True, key=jax.random.key(1)), q
        )
        jax.eval_shape(lambda q: samsa.apply(samsa_params, q, q, q, x=x), q)
    assert rec.summary() == {"ssa": "xla", "samsa": "xla"}
    assert [r.shapes for r in rec] == [(1, 8, 8, 2, 4, 4), (1, 8, 4, 2, 4, 4), (1, 8, 2, 2, 4, 4)]


def test_auto_on_cpu_is_the_xla_path_bit_for_bit():
    rng = np.random.default_rng(0)
    q, k, v = (jnp.asarray(rng.normal(size=(2, 5, 2, 4)), jnp.float32) for _ in range(3))
    mask = np.ones((2, 5), bool)
    mask[0, 3:] = False
    auto = kernels.dot_product_attention(q, k, v, mask=mask)
    xla = kernels.run("xla", q, k, v, mask=mask)
    np.testing.assert_array_equal(auto, xla)


def test_chunked_kernel_matches_the_float64_reference_with_masks_bias_and_gradients():
    """The `chunked` kernel (what `auto` runs on CPU from CHUNKED_FROM tokens) against the
    explicit float64 softmax: a general mask with a fully masked row, a per-head bias, lengths
    that are not multiples of its 256-wide blocks; values and (against the xla path's)
    gradients under jit."""
    with jax.enable_x64(True):
        b, n, m, h, d = 2, 300, 520, 2, 8
        rng = np.random.default_rng(3)
        q, k, v = (jnp.asarray(x) for x in _inputs(b, n, m, h, d, seed=3))
        mask = rng.random((b, h, n, m)) > 0.3
        mask[1, 0, 7] = False  # a query that sees no key: zeros, zero gradient
        bias = jnp.asarray(rng.normal(size=(1, h, n, m)))
        # the explicit float64 matrices (tests/attention/ref_softmax.py loops: too slow here)
        logits = np.einsum("bnhd,bmhd->bhnm", q, k) * d**-0.5 + np.asarray(bias)
        logits = np.where(mask, logits, -np.inf)
        top = np.max(logits, axis=-1, keepdims=True)
        e = np.where(mask, np.exp(logits - np.where(np.isfinite(top), top, 0.0)), 0.0)
        p = e / np.maximum(e.sum(-1, keepdims=True), 1e-300)
        ref = np.einsum("bhnm,bmhd->bnhd", p, v)
        run = jax.jit(lambda q, k, v, bias: kernels.run("chunked", q, k, v, mask=mask, bias=bias))
        np.testing.assert_allclose(run(q, k, v, bias), ref, rtol=1e-10, atol=1e-12)
        assert not np.any(np.asarray(run(q, k, v, bias))[1, 7, 0])
        w = jnp.asarray(rng.normal(size=(b, n, h, d)))
        loss = lambda f: lambda *a: jnp.sum(f(*a) * w)
        got = jax.grad(loss(run), argnums=(0, 1, 2, 3))(q, k, v, bias)
        # gradients: against the xla path in float64 (itself checked against the reference)
        want = jax.grad(
            loss(lambda q, k, v, bias: kernels.run("xla", q, k, v, mask=mask, bias=bias)),
            argnums=(0, 1, 2, 3),
        )(q, k, v, bias)
        for g, r in zip(got, want, strict=True):
            np.testing.assert_allclose(g, r, rtol=1e-9, atol=1e-11)


def test_auto_on_cpu_from_chunked_from_tokens_runs_the_blocked_path_and_says_so():
    rng = np.random.default_rng(1)
    n = kernels.CHUNKED_FROM
    q, k, v = (jnp.asarray(rng.normal(size=(1, n, 1, 4)), jnp.float32) for _ in range(3))
    mask = np.ones((1, n), bool)
    mask[0, n // 2 :] = False
    with kernels.record() as rec:
        auto = attention.get("softmax").apply({}, q, k, v, mask=mask)
    assert rec.summary() == {"softmax": "chunked"}
    np.testing.assert_array_equal(auto, kernels.run("chunked", q, k, v, mask=mask))
    np.testing.assert_allclose(auto, kernels.run("xla", q, k, v, mask=mask), atol=2e-6)
    key = jax.random.key(0)
    with kernels.record() as rec:  # attention dropout in training: the xla path, as before
        attention.get("softmax", dropout_rate=0.1).apply({}, q, k, v, key=key, train=True)
    assert rec.summary() == {"softmax": "xla"}


# ---------------------------------------------------------------------------------------------
# Pallas kernels in interpret mode on CPU against the float64 reference.


def _inputs(b, n, m, h, d, seed=0):
    rng = np.random.default_rng(seed)
    return (
        rng.normal(size=(b, n, h, d)),
        rng.normal(size=(b, m, h, d)),
        rng.normal(size=(b, m, h, d)),
    )


def _full(mask, b, h, n, m):
    if mask is None:
        return None
    mask = mask[:, None, None, :] if mask.ndim == 2 else mask
    return np.broadcast_to(mask, (b, h, n, m))


def _check_against_reference(attend, q, k, v, mask, bias=None, *, tol=2e-5):
    """Forward against `softmax_reference`, and the gradient of a weighted sum along a random
    direction against central differences of the reference (float64, so exact to ~1e-9)."""
    b, n, h, _ = q.shape
    m = k.shape[1]
    full_mask = _full(mask, b, h, n, m)
    full_bias = None if bias is None else np.broadcast_to(bias, (b, h, n, m))
    expected = softmax_reference(None, q, k, v, full_mask, full_bias)
    args = [jnp.asarray(x, jnp.float32) for x in (q, k, v)]
    got = attend(*args)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=tol, atol=tol)
    if full_mask is not None:
        dead = ~full_mask.any(-1)  # [B, H, N]
        assert dead.any(), "the cases include a fully masked query row"
        assert np.all(np.asarray(got).transpose(0, 2, 1, 3)[dead] == 0.0)

    rng = np.random.default_rng(9)
    w = rng.normal(size=expected.shape)
    grads = jax.grad(lambda q, k, v: (attend(q, k, v) * w).sum(), (0, 1, 2))(*args)
    dirs = [rng.normal(size=x.shape) for x in (q, k, v)]
    eps = 1e-6

    def loss(sign):
        moved = [x + sign * eps * d for x, d in zip((q, k, v), dirs, strict=True)]
        return (softmax_reference(None, *moved, full_mask, full_bias) * w).sum()

    numeric = (loss(1) - loss(-1)) / (2 * eps)
    analytic = sum(float((np.asarray(g) * d).sum()) for g, d in zip(grads, dirs, strict=True))
    np.testing.assert_allclose(analytic, numeric, rtol=1e-4, atol=1e-4)
    for g in grads:
        assert np.all(np.isfinite(np.asarray(g)))


def _gpu_pallas(mask=None, **kw):
    return functools.partial(
        kernels.dot_product_attention,
        mask=mask,
        implementation="pallas",
        backend="gpu",
        interpret=True,
        **kw,
    )


def _key_padding(b, m):
    mask = np.ones((b, m), bool)
    mask[0, m - 5 :] = False
    mask[-1] = False  # the last example has no key at all: its rows must be zeros
    return mask


def test_gpu_pallas_interpret_without_mask():
    q, k, v = _inputs(1, 16, 32, 2, 16)
    _check_against_reference(_gpu_pallas(), q, k, v, None)


def test_gpu_pallas_interpret_key_padding_and_empty_rows():
    b, n, m, h, d = 2, 16, 16, 2, 16
    q, k, v = _inputs(b, n, m, h, d, seed=1)
    mask = _key_padding(b, m)
    _check_against_reference(_gpu_pallas(mask), q, k, v, mask)


def test_gpu_pallas_interpret_per_head_key_mask_under_jit():
    b, n, m, h, d = 1, 16, 16, 2, 16
    q, k, v = _inputs(b, n, m, h, d, seed=2)
    mask = np.random.default_rng(3).random((b, h, 1, m)) > 0.4
    mask[0, 1] = False  # head 1 sees no key
    attend = jax.jit(_gpu_pallas(mask))
    _check_against_reference(attend, q, k, v, mask)


def _tpu_pallas(mask=None, bias=None):
    return functools.partial(
        kernels.dot_product_attention,
        mask=mask,
        bias=bias,
        implementation="pallas",
        backend="tpu",
        interpret=True,
    )


@pytest.mark.slow  # the TPU kernel in interpret mode, ~8 s; `make test-slow`
def test_tpu_pallas_interpret_key_padding_as_segment_ids_with_bias():
    from jax.experimental.pallas import tpu as pltpu

    b, n, m, h, d = 2, 8, 128, 1, 8
    q, k, v = _inputs(b, n, m, h, d, seed=4)
    mask = _key_padding(b, m)
    bias = np.random.default_rng(5).normal(size=(1, h, n, m))
    with pltpu.force_tpu_interpret_mode():  # the backward kernels are traced by jax.grad
        attend = _tpu_pallas(mask, jnp.asarray(bias, jnp.float32))
        _check_against_reference(attend, q, k, v, mask, bias)


@pytest.mark.slow  # the TPU kernel in interpret mode, ~8 s; `make test-slow`
def test_tpu_pallas_interpret_general_mask_under_jit():
    from jax.experimental.pallas import tpu as pltpu

    b, n, m, h, d = 1, 8, 128, 2, 8
    q, k, v = _inputs(b, n, m, h, d, seed=6)
    mask = np.random.default_rng(7).random((b, h, n, m)) > 0.5
    mask[0, 1, 3] = False  # one fully masked query row
    with pltpu.force_tpu_interpret_mode():
        _check_against_reference(jax.jit(_tpu_pallas(mask)), q, k, v, mask)


def test_ssa_and_samsa_through_a_fused_kernel_match_their_xla_path(monkeypatch):
    # Pretend to be on a GPU and run its Pallas kernel in interpret mode: SSA's windows folded
    # into the batch and SAMSA's sampled keys must give what their own XLA code gives.
    monkeypatch.setattr(kernels, "current_backend", lambda: "gpu")
    monkeypatch.setattr(kernels, "run", functools.partial(kernels.run, interpret=True))
    b, n, h, d = 2, 32, 2, 16
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _inputs(b, n, n, h, d, seed=8))
    pad = np.ones((b, n), bool)
    pad[0, 20:] = False
    key = jax.random.key(2)
    rng = np.random.default_rng(0)
    # SAMSA's parameters drawn with numpy (eager jax.random would cost compilations).
    shapes = jax.eval_shape(
        lambda: attention.get("samsa", k=16).init(
            jax.random.key(1), num_heads=h, head_dim=d, model_dim=4
        )
    )
    p = jax.tree.map(lambda s: jnp.asarray(rng.normal(size=s.shape), s.dtype), shapes)
    x = jnp.asarray(rng.normal(size=(b, n, 4)), jnp.float32)
    outs = {}
    for impl in ("xla", "pallas"):
        ssa = attention.get("ssa", keep=0.5, sampling="local_1d", implementation=impl)
        params = ssa.init(jax.random.key(0), num_heads=h, head_dim=d)
        samsa = attention.get("samsa", k=16, implementation=impl)

        def both(q, k, v, ssa=ssa, params=params, samsa=samsa):
            sampled = ssa.apply(params, q, k, v, mask=pad, train=True, key=key)
            return sampled, samsa.apply(p, q, k, v, mask=pad, x=x)

        with kernels.record() as rec:
            outs[impl] = jax.jit(both)(q, k, v)
        assert rec.summary() == {"ssa": impl, "samsa": impl}
    for fused, exact in zip(outs["pallas"], outs["xla"], strict=True):
        np.testing.assert_allclose(np.asarray(fused), np.asarray(exact), rtol=2e-5, atol=2e-5)


# ---------------------------------------------------------------------------------------------
# On a GPU (`make test-gpu`): the fused kernels at bfloat16.
#
# bfloat16 tolerance: 3e-2 absolute + relative on O(1) outputs. bfloat16 keeps 8 significant
# bits (one rounding costs up to 2^-9 ~ 2e-3 relative); the kernels round the probabilities
# before the PV product and round the output, and a sum of M terms of such errors stays within
# a few 1e-3 for these sizes, so 3e-2 leaves a margin of ~10x. The reference is computed in
# float64 from the same bfloat16-rounded inputs.
BF16_TOL = 3e-2


def _bf16_inputs(b, n, m, h, d, seed=0):
    rounded = [
        np.asarray(jnp.asarray(x, jnp.bfloat16).astype(jnp.float32), np.float64)
        for x in _inputs(b, n, m, h, d, seed)
    ]
    return rounded, [jnp.asarray(x, jnp.bfloat16) for x in rounded]


@pytest.mark.gpu
@gpu_only
@pytest.mark.parametrize("implementation", ["cudnn", "pallas"])
@pytest.mark.parametrize("masked", [False, True])
def test_fused_kernels_at_bf16_match_the_float64_reference(implementation, masked):
    b, n, m, h, d = 2, 128, 128, 4, 64
    (q, k, v), args = _bf16_inputs(b, n, m, h, d)
    mask = _key_padding(b, m) if masked else None
    with kernels.record() as rec:
        got = jax.jit(
            functools.partial(
                kernels.dot_product_attention, mask=mask, implementation=implementation
            )
        )(*args)
    assert rec.summary() == {"attention": implementation}
    assert got.dtype == jnp.bfloat16
    expected = softmax_reference(None, q, k, v, _full(mask, b, h, n, m))
    got = np.asarray(got.astype(jnp.float32))
    np.testing.assert_allclose(got, expected, rtol=BF16_TOL, atol=BF16_TOL)
    if masked:
        assert np.all(got[-1] == 0.0)


@pytest.mark.gpu
@gpu_only
def test_cudnn_with_bias_and_gradients_at_bf16():
    b, n, m, h, d = 2, 64, 64, 2, 64
    (q, k, v), args = _bf16_inputs(b, n, m, h, d, seed=1)
    bias = np.random.default_rng(2).normal(size=(1, h, n, m))
    w = np.random.default_rng(3).normal(size=(b, n, h, d))

    def loss(impl, dtype, q, k, v):
        out = kernels.dot_product_attention(
            q, k, v, bias=jnp.asarray(bias, dtype), implementation=impl
        )
        return (out.astype(jnp.float32) * w).sum()

    got = jax.jit(jax.grad(functools.partial(loss, "cudnn", jnp.bfloat16), (0, 1, 2)))(*args)
    with jax.enable_x64(True):
        want = jax.grad(functools.partial(loss, "xla", jnp.float64), (0, 1, 2))(
            *(jnp.asarray(x) for x in (q, k, v))
        )
        out = kernels.run("xla", *(jnp.asarray(x) for x in (q, k, v)), bias=jnp.asarray(bias))
    full_bias = np.broadcast_to(bias, (b, h, n, m))
    np.testing.assert_allclose(out, softmax_reference(None, q, k, v, None, full_bias), atol=1e-10)
    for g, ref in zip(got, want, strict=True):
        g = np.asarray(g.astype(jnp.float32))
        scale = np.abs(np.asarray(ref)).max()
        np.testing.assert_allclose(g, np.asarray(ref), atol=BF16_TOL * scale, rtol=BF16_TOL)


@pytest.mark.gpu
@gpu_only
def test_auto_chooses_cudnn_on_a_gpu_for_bf16():
    _, args = _bf16_inputs(2, 128, 128, 4, 64)
    mech = attention.get("softmax")
    with kernels.record() as rec:
        jax.jit(lambda q, k, v: mech.apply({}, q, k, v))(*args)
        jax.jit(lambda q, k, v: mech.apply({}, q, k, v))(*(x.astype(jnp.float32) for x in args))
    assert [r.kernel for r in rec] == ["cudnn", "xla"]
    assert "needs bfloat16 or float16" in rec[1].reason
