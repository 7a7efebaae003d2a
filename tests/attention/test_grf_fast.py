"""The frozen-walk support path of GRF (node-major blocks, custom VJP): both row forms (C x C
scores and `[Dk, Dv + 1]` state), any rows per scan step, any bucketing of the rows, and the
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
def test_rows_per_step_and_buckets_give_the_same_sums_and_gradients(quadratic):
    """Any rows per scan step (one head's nodes on CPU, every head's on an accelerator, steps
    across head boundaries) and any split of the rows into buckets, in any order and padded to
    any width (each row carries its head): the same sums and gradients."""
    q, k, v, tokens, weights, _ = _inputs(2, b=2, h=3, u=10, bt=2)
    b, n, h, d = q.shape
    x = jnp.asarray(np.concatenate([np.maximum(q, 0), np.maximum(k, 0), v], -1))
    x = x.reshape(-1, x.shape[-1])
    c = tokens.shape[-1]
    tok = jnp.asarray(tokens.reshape(2, h * 10, c))
    w = jnp.asarray(weights.reshape(2, h * 10, c))
    heads = jnp.repeat(jnp.arange(h, dtype=jnp.int32), 10)
    cot = jnp.asarray(np.random.default_rng(3).normal(size=(b * n * h, v.shape[-1] + 1)))
    order = np.random.default_rng(4).permutation(h * 10)
    first, second = order[:13], order[13:]
    layouts = [((heads,), (tok,), (w,), (step,)) for step in (10, 4, 64)]
    pad = ((0, 0), (0, 0), (0, 2))  # the second bucket two columns wider (zero weights)
    layouts.append(
        (
            (heads[first], heads[second]),
            (tok[:, first], jnp.pad(tok[:, second], pad)),
            (w[:, first], jnp.pad(w[:, second], pad)),
            (4, 7),
        )
    )
    results = []
    for hd, tk, wt, step in layouts:

        def loss(x, wt, hd=hd, tk=tk, step=step):
            z = grf._support_sums(x, hd, tk, wt, step, (b, n, h, d), (quadratic,) * len(hd))
            return (z * cot).sum()

        value, (dx, dw) = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))(x, wt)
        if len(dw) == 2:  # back to the one-bucket layout
            full = jnp.zeros_like(w).at[:, first].set(dw[0]).at[:, second].set(dw[1][..., :c])
            dw = (full,)
        results.append((value, dx, dw[0]))
    for value, dx, dw in results[1:]:
        np.testing.assert_allclose(value, results[0][0], rtol=1e-12)
        np.testing.assert_allclose(dx, results[0][1], rtol=1e-11, atol=1e-13)
        np.testing.assert_allclose(dw, results[0][2], rtol=1e-11, atol=1e-13)


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
