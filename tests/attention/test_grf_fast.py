"""The frozen-walk support path of GRF (node-major blocks, custom VJP): both row forms (C x C
scores and `[Dk, Dv + 1]` state), both scan layouts (one head or every head per step) and the
gradients against an explicit dense formulation differentiated by JAX, in float64; bfloat16
inputs. The end-to-end outputs against the float64 references are in test_grf.py/test_table.py.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attention import grf


@pytest.fixture(autouse=True)
def _float64():
    with jax.enable_x64(True):
        yield


def _support(rng, bt, h, u, c, n, cls_token):
    """Random node-major features: distinct tokens per row (some padding with weight 0)."""
    lo = int(cls_token)
    tokens = np.zeros((bt, h, u, c), np.int32)
    weights = np.zeros((bt, h, u, c))
    for idx in np.ndindex(bt, h, u):
        live = rng.integers(1, c + 1)
        tokens[idx][:live] = np.sort(rng.choice(np.arange(lo, n), live, replace=False))
        weights[idx][:live] = rng.normal(size=live)
    return tokens, weights


def _dense(q, k, v, tokens, weights, key_valid, cls_token):
    """The same attention with the mask `M = Phi Phi^T` built densely (one-hot features)."""
    b, n, h, _ = q.shape
    onehot = jax.nn.one_hot(tokens, n, dtype=weights.dtype)  # [Bt, H, U, C, N]
    phi = jnp.einsum("zhuc,zhucj->zhju", weights, onehot)
    if cls_token:
        phi = phi.at[:, :, 0].set(0.0)
    m = jnp.einsum("zhiu,zhju->zhij", phi, phi)
    if cls_token:
        m = m.at[:, :, 0, :].set(1.0).at[:, :, :, 0].set(1.0)
    qf, kf = jax.nn.relu(q), jax.nn.relu(k)
    a = jnp.einsum("bihd,bjhd->bhij", qf, kf) * m
    if key_valid is not None:
        a = a * key_valid[:, None, None, :]
    num = jnp.einsum("bhij,bjhe->bihe", a, v)
    den = jnp.moveaxis(a.sum(-1), 1, 2)[..., None]
    out = jnp.where(den != 0, num / jnp.where(den != 0, den, 1.0), 0.0)
    if key_valid is not None:
        out = out * key_valid[:, :, None, None]
    return out


def _inputs(seed, b=2, n=13, h=3, d=4, dv=5, u=7, c=6, bt=1, cls_token=False, padding=False):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.normal(size=(b, n, h, x)) for x in (d, d, dv))
    tokens, weights = _support(rng, bt, h, u, c, n, cls_token)
    key_valid = None
    if padding:
        key_valid = np.ones((b, n), bool)
        key_valid[0, [1, 4]] = False
        key_valid[-1, -3:] = False
    return q, k, v, tokens, weights, key_valid


CASES = [
    dict(),
    dict(padding=True),
    dict(bt=2, padding=True),
    dict(cls_token=True, padding=True),
    dict(b=1, h=1, u=1, c=1, n=3),
]


# `make test` checks every case at a chunk that does not divide the rows (3); chunks of 1 and
# 64 rows are the slow tier.
CHUNKS = [pytest.param(1, marks=pytest.mark.slow), 3, pytest.param(64, marks=pytest.mark.slow)]


# The support path in either row form, and the explicit N x N estimate it takes at small N.
FORMS = {"scores": (True, False), "state": (False, False), "explicit": (None, True)}


@pytest.mark.parametrize("case", CASES, ids=["plain", "padding", "per_batch", "cls", "tiny"])
@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("node_chunk", CHUNKS)
def test_support_path_equals_dense_mask_forward_and_gradients(case, form, node_chunk):
    quadratic, explicit = FORMS[form]
    q, k, v, tokens, weights, key_valid = _inputs(0, **case)
    cls_token = case.get("cls_token", False)
    tokens_in = tokens[0] if tokens.shape[0] == 1 else tokens  # shared: [H, U, C]
    valid = None if key_valid is None else jnp.asarray(key_valid)
    cot = np.random.default_rng(1).normal(size=v.shape)

    def fast(q, k, v, w):
        w_in = w[0] if tokens.shape[0] == 1 else w
        out = grf.support_masked_linear_attention(
            q,
            k,
            v,
            jnp.asarray(tokens_in),
            w_in,
            key_valid=valid,
            cls_token=cls_token,
            node_chunk=node_chunk,
            quadratic=quadratic,
            dense=explicit,
        )
        return (out * cot).sum(), out

    def dense(q, k, v, w):
        out = _dense(q, k, v, jnp.asarray(tokens), w, valid, cls_token)
        return (out * cot).sum(), out

    args = [jnp.asarray(x) for x in (q, k, v, weights)]
    (_, got), got_g = jax.value_and_grad(fast, argnums=(0, 1, 2, 3), has_aux=True)(*args)
    (_, want), want_g = jax.value_and_grad(dense, argnums=(0, 1, 2, 3), has_aux=True)(*args)
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-12)
    for a, b in zip(got_g, want_g, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("quadratic", [True, pytest.param(False, marks=pytest.mark.slow)])
def test_one_head_and_every_head_per_step_give_the_same_sums_and_gradients(quadratic):
    """The CPU layout (one head per scan step) and the accelerator layout (every head)."""
    q, k, v, tokens, weights, _ = _inputs(2, b=2, h=3, u=10, bt=2)
    b, n, h, d = q.shape
    flat = [
        jnp.asarray(x).reshape(-1, x.shape[-1]) for x in (np.maximum(q, 0), np.maximum(k, 0), v)
    ]
    tok, w = jnp.asarray(tokens), jnp.asarray(weights)
    cot = jnp.asarray(np.random.default_rng(3).normal(size=(b * n * h, v.shape[-1] + 1)))
    results = []
    for step in [(1, 1), (4, 1), (3, 3), (10, 3), (64, 3)]:
        step = (min(step[0], tok.shape[2]), step[1])

        def loss(qf, kf, vf, w, step=step):
            return (grf._support_sums(qf, kf, vf, tok, w, step, (b, n, h), quadratic) * cot).sum()

        results.append(jax.value_and_grad(loss, argnums=(0, 1, 2, 3))(*flat, w))
    for value, grads in results[1:]:
        np.testing.assert_allclose(value, results[0][0], rtol=1e-12)
        for a, b_ in zip(grads, results[0][1], strict=True):
            np.testing.assert_allclose(a, b_, rtol=1e-11, atol=1e-13)


def test_quadratic_form_is_picked_by_flops():
    assert grf._quadratic_form(50, 64, 64)  # the defaults: C ~ 45-53
    assert not grf._quadratic_form(140, 64, 64)  # n_walks = 100: C ~ 140
    assert grf._quadratic_form(3, 3, 3) and not grf._quadratic_form(4, 3, 3)


def test_bfloat16_inputs_gather_and_return_bfloat16():
    q, k, v, tokens, weights, key_valid = _inputs(4, padding=True)
    with jax.enable_x64(False):
        args32 = [jnp.asarray(x, jnp.float32) for x in (q, k, v)]
        args16 = [x.astype(jnp.bfloat16) for x in args32]
        run = lambda q, k, v: grf.support_masked_linear_attention(  # noqa: E731
            q,
            k,
            v,
            jnp.asarray(tokens[0]),
            jnp.asarray(weights[0], jnp.float32),
            key_valid=jnp.asarray(key_valid),
            dense=False,  # the gathers of the support path (the explicit one has none)
        )
        out16, out32 = run(*args16), run(*(x.astype(jnp.float32) for x in args16))
        grads = jax.grad(lambda *a: run(*a).astype(jnp.float32).sum(), argnums=(0, 1, 2))(*args16)
    assert out16.dtype == jnp.bfloat16
    assert all(g.dtype == jnp.bfloat16 for g in grads)
    np.testing.assert_allclose(np.asarray(out16, np.float32), out32, rtol=2e-2, atol=2e-2)
