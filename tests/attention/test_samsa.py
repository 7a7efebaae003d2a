"""SAMSA's properties (§4.2, §4.4): the hard forward is the gather of the noisy top-k, the soft
sample is a convex mixture of the two tiers, gradients reach the importance scores, padding is
never sampled, the hard evaluation path does no k x k work, and randomness is keyed."""

import math
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attention
from attention import samsa
from tests.attention import ref_samsa
from tests.tolerances import assert_close

B, N, H, D, MODEL_DIM, K = 2, 7, 2, 4, 6, 3


def _params(rng, *, k=K, support=True):
    """Parameters shaped as `samsa.init` makes them (checked with `jax.eval_shape` below), drawn
    with numpy: every eager `jax.random` call would cost a compilation."""
    d = MODEL_DIM
    params = {
        "scorer": {
            "w1": rng.normal(size=(d, d)) / math.sqrt(d),
            "b1": rng.normal(size=d) * 0.1,
            "w2": rng.normal(size=(d, d)) / math.sqrt(d),
            "b2": rng.normal(size=d) * 0.1,
            "norm": 1.0 + 0.1 * rng.normal(size=d),
            "w3": rng.normal(size=(d, H)) / math.sqrt(d),
            "b3": rng.normal(size=H) * 0.1,
        }
    }
    if support:
        params["support_scores"] = rng.normal(size=(H, 2 * k))
        params["support_keys"] = rng.normal(size=(2 * k, H, D))
        params["support_values"] = rng.normal(size=(2 * k, H, D))
    return params


def _setup(seed=0, *, support=True, k=K, n=N, padding=True):
    rng = np.random.default_rng(seed)
    params = _params(rng, k=k, support=support)
    q, keys, values = (rng.normal(size=(B, n, H, D)) for _ in range(3))
    x = rng.normal(size=(B, n, MODEL_DIM))
    valid = np.ones((B, n), bool)
    if padding:
        valid[0, n - 3 :] = False
        x[0, n - 3 :] = 50.0  # padded tokens would win the selection if the mask were ignored
    return params, q, keys, values, x, valid


def _key(seed):
    # "rbg" keys compile far faster than threefry on CPU; the mechanism accepts any key.
    return jax.random.key(seed, impl="rbg")


def _noise(key, k=K, n=N, support=True):
    return np.asarray(jax.random.gumbel(key, (B, H, n + 2 * k * support), jnp.float64))


def numpy_samsa(params, q, keys, values, x, valid, *, k, mode, noise=None, tau=0.1, support=True):
    """The sampler and attention with loops, for any noise draw; returns (out, weights, top)."""
    n = keys.shape[1]
    out = np.zeros(q.shape[:3] + (values.shape[-1],))
    weights = np.zeros((B, H, k, 2 * k))  # mixture weights of (top tier, second tier) per slot
    chosen = np.zeros((B, H, k), int)
    for bi in range(B):
        for hi in range(H):
            z = np.array([ref_samsa.token_scores(params["scorer"], x[bi, j])[hi] for j in range(n)])
            kk, vv = keys[bi, :, hi], values[bi, :, hi]
            if support:
                z = np.concatenate([z, params["support_scores"][hi]])
                kk = np.concatenate([kk, params["support_keys"][:, hi]])
                vv = np.concatenate([vv, params["support_values"][:, hi]])
            if noise is not None:
                z = z + noise[bi, hi]
            real = np.concatenate([valid[bi], np.ones(len(z) - n, bool)])
            z = np.where(real, z, -1e9)
            order = np.argsort(-z, kind="stable")
            top, second = order[:k], order[k : 2 * k]
            chosen[bi, hi] = top
            if mode == "hard":
                weights[bi, hi, :, :k] = np.eye(k)
            else:
                p = 1.0 / (1.0 + np.exp(-(z[top][:, None] - z[second][None, :]) / tau))
                weights[bi, hi, np.arange(k), np.arange(k)] = p.mean(axis=1)
                weights[bi, hi, :, k:] = (1.0 - p) / k
            tiers = np.concatenate([top, second])
            ks = weights[bi, hi] @ kk[tiers]
            vs = weights[bi, hi] @ vv[tiers]
            for ni in range(q.shape[1]):
                out[bi, ni, hi] = ref_samsa.attend(q[bi, ni, hi], list(ks), list(vs))
    return out, weights, chosen


_STATIC = (
    "train",
    "k",
    "mode",
    "support",
    "noise_at_eval",
    "grad_cap",
    "temperature",
    "implementation",
)
# One compilation per configuration: eager dispatch of every small op is far slower.
_jit_apply = jax.jit(samsa.apply, static_argnames=_STATIC)


def _apply(params, q, keys, values, x, valid, **kw):
    # Every static argument spelled out, so that equal configurations share one compilation.
    kw = {**attention.defaults("samsa"), "train": False, **kw}
    kw.pop("dropout_rate")
    with jax.enable_x64(True):
        jparams = jax.tree.map(jnp.asarray, params)
        return np.asarray(
            _jit_apply(
                jparams,
                jnp.asarray(q),
                jnp.asarray(keys),
                jnp.asarray(values),
                x=jnp.asarray(x),
                mask=None if valid is None else jnp.asarray(valid),
                **kw,
            )
        )


def test_hard_train_forward_is_the_exact_gather_of_the_noisy_top_k():
    params, q, keys, values, x, valid = _setup()
    key = _key(3)
    with jax.enable_x64(True):
        noise = _noise(key)
    got = _apply(params, q, keys, values, x, valid, k=K, mode="hard", train=True, key=key)
    expected, _, chosen = numpy_samsa(
        params, q, keys, values, x, valid, k=K, mode="hard", noise=noise
    )
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    # The noise must matter: without it the selection differs somewhere.
    _, _, clean = numpy_samsa(params, q, keys, values, x, valid, k=K, mode="hard")
    assert (np.sort(chosen, -1) != np.sort(clean, -1)).any()
    assert not np.isin(chosen[0], [N - 3, N - 2, N - 1]).any()  # padding never sampled


@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
def test_soft_sample_is_a_convex_mixture_of_the_two_tiers(train):
    params, q, keys, values, x, valid = _setup(1)
    key = _key(4)
    with jax.enable_x64(True):
        noise = _noise(key) if train else None
    got = _apply(params, q, keys, values, x, valid, k=K, mode="soft", train=train, key=key)
    expected, weights, _ = numpy_samsa(
        params, q, keys, values, x, valid, k=K, mode="soft", noise=noise
    )
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    assert (weights >= 0).all() and (weights <= 1).all()
    np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-12)
    # The module's own weights, from sorted scores, are in [0, 1] and sum to 1 too.
    top = jnp.asarray([[3.0, 1.0, 0.5]])
    w_top, w_second = samsa.mixture_weights(top, top - 0.7, temperature=0.1)
    assert ((w_top >= 0) & (w_top <= 1)).all() and ((w_second >= 0) & (w_second <= 1)).all()
    np.testing.assert_allclose(w_top + w_second.sum(-1), 1.0, rtol=1e-6)


@pytest.mark.parametrize("mode", ["hard", "soft"])
def test_gradients_reach_the_importance_scores(mode):
    params, q, keys, values, x, valid = _setup(2)
    with jax.enable_x64(True):
        jp = jax.tree.map(jnp.asarray, params)
        args = tuple(jnp.asarray(a) for a in (q, keys, values))
        w = jnp.asarray(np.random.default_rng(0).normal(size=(B, N, H, D)))

        def loss(p, values):
            out = samsa.apply(
                p, args[0], args[1], values, x=jnp.asarray(x), mask=jnp.asarray(valid),
                train=True, key=_key(5), k=K, mode=mode,
            )  # fmt: skip
            return (out * w).sum()

        g_params, g_values = jax.jit(jax.grad(loss, (0, 1)))(jp, args[2])
    for name in ("w1", "b1", "w2", "b2", "norm", "w3", "b3"):
        assert np.abs(np.asarray(g_params["scorer"][name])).max() > 0, name
    assert np.abs(np.asarray(g_params["support_scores"])).max() > 0
    # Straight-through: in hard mode only the top-k tokens receive value gradients; soft mode
    # also reaches the second tier.
    with jax.enable_x64(True):
        noise = _noise(_key(5))
    _, _, chosen = numpy_samsa(params, q, keys, values, x, valid, k=K, mode="hard", noise=noise)
    beyond_top = False
    for bi in range(B):
        for hi in range(H):
            touched = np.flatnonzero(np.abs(np.asarray(g_values[bi, :, hi])).sum(-1) > 0)
            top_real = sorted(j for j in chosen[bi, hi] if j < N)
            if mode == "hard":
                assert touched.tolist() == top_real
            else:
                assert set(top_real) <= set(touched.tolist())
                beyond_top |= len(touched) > len(top_real)
    assert beyond_top == (mode == "soft")
    assert np.all(np.asarray(g_values[0, N - 3 :]) == 0)  # padding gets nothing


def test_soft_score_gradients_match_finite_differences_and_the_cap_rescales_per_head():
    params, q, keys, values, x, valid = _setup(3)
    w = np.random.default_rng(1).normal(size=(B, N, H, D))

    def ref_loss(support_scores):
        p = dict(params, support_scores=support_scores)
        out, _, _ = numpy_samsa(p, q, keys, values, x, valid, k=K, mode="soft", tau=0.5)
        return float((out * w).sum())

    with jax.enable_x64(True):

        def grad(cap):
            def loss(s):
                p = jax.tree.map(jnp.asarray, dict(params, support_scores=s))
                out = samsa.apply(
                    p, *(jnp.asarray(a) for a in (q, keys, values)), x=jnp.asarray(x),
                    mask=jnp.asarray(valid), k=K, mode="soft", temperature=0.5, grad_cap=cap,
                )  # fmt: skip
                return (out * jnp.asarray(w)).sum()

            return np.asarray(jax.jit(jax.grad(loss))(jnp.asarray(params["support_scores"])))

        free, capped = grad(False), grad(True)
    s0, eps = params["support_scores"], 1e-6
    for idx in [(0, 0), (1, 2), (0, 5), (1, 4)]:
        plus, minus = s0.copy(), s0.copy()
        plus[idx] += eps
        minus[idx] -= eps
        fd = (ref_loss(plus) - ref_loss(minus)) / (2 * eps)
        np.testing.assert_allclose(free[idx], fd, rtol=1e-5, atol=1e-8)
    assert np.abs(free).max() > 0
    # The cap scales each head's score gradient by min(1, 0.25 / max sigmoid slope of the head).
    for hi in range(H):
        slopes = []
        for bi in range(B):
            z = [ref_samsa.token_scores(params["scorer"], x[bi, j])[hi] for j in range(N)]
            z = np.where(np.arange(N) < N - 3 * (bi == 0), z, -1e9)
            z = np.sort(np.concatenate([z, s0[hi]]))[::-1]
            p = 1 / (1 + np.exp(-(z[:K, None] - z[None, K : 2 * K]) / 0.5))
            slopes.append((p * (1 - p) / 0.5).max())
        factor = min(1.0, 0.25 / max(slopes))
        np.testing.assert_allclose(capped[hi], factor * free[hi], rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("mode", ["hard", "soft"])
def test_padding_is_never_sampled_and_cannot_leak(mode):
    params, q, keys, values, x, valid = _setup(4)
    keys2, values2 = keys.copy(), values.copy()
    keys2[0, N - 3 :], values2[0, N - 3 :] = 1e6, -1e6
    for kw in [dict(train=True, key=_key(6)), dict(train=False)]:
        a = _apply(params, q, keys, values, x, valid, k=K, mode=mode, **kw)
        b = _apply(params, q, keys2, values2, x, valid, k=K, mode=mode, **kw)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_without_support_fewer_real_tokens_than_k_attend_to_the_real_ones_only():
    params, q, keys, values, x, valid = _setup(5, support=False)
    valid[0] = False
    valid[0, :2] = True  # 2 real tokens, k = 3
    got = _apply(params, q, keys, values, x, valid, k=K, mode="hard", support=False)
    expected, _, _ = numpy_samsa(params, q, keys, values, x, valid, k=2, mode="hard", support=False)
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-10, atol=1e-12)
    out = _apply(
        params, q, keys, values, x, valid, k=K, support=False, mode="soft", train=True, key=_key(0)
    )
    assert np.isfinite(out).all()


def test_support_vectors_allow_fewer_tokens_than_k_and_empty_sequences_give_zeros():
    params, q, keys, values, x, valid = _setup(6, k=5, n=3, padding=False)
    valid[1] = False
    for kw in [dict(mode="hard"), dict(mode="soft", train=True, key=_key(1))]:
        out = _apply(params, q, keys, values, x, valid, k=5, **kw)
        assert out.shape == (B, 3, H, D) and np.isfinite(out).all()
        assert np.all(out[1] == 0.0)
        assert np.abs(out[0]).max() > 0


def _kk_shapes(jaxpr, k):
    return re.findall(rf"\[(?:\d+,)*{k},{k}\]", str(jaxpr))


def test_hard_evaluation_is_sparse():
    params, q, keys, values, x, valid = _setup(7)
    args = [jnp.asarray(a, jnp.float32) for a in (q, keys, values)]
    p = jax.tree.map(lambda a: jnp.asarray(a, jnp.float32), params)
    kw = dict(x=jnp.asarray(x, jnp.float32), mask=jnp.asarray(valid), k=K)

    def jaxpr(**more):
        return jax.make_jaxpr(lambda *a: samsa.apply(p, *a, **kw, **more))(*args)

    sparse = jaxpr(mode="hard", train=False)
    assert not _kk_shapes(sparse, K)
    assert f"k={2 * K}" not in str(sparse)  # no top-2k either
    assert _kk_shapes(jaxpr(mode="hard", train=True, key=_key(0)), K)
    assert _kk_shapes(jaxpr(mode="soft", train=False), K)


@pytest.mark.parametrize("mode", ["hard", "soft"])
def test_train_mode_is_deterministic_per_key_and_jit_matches_eager(mode):
    params, q, keys, values, x, valid = _setup(8)
    mech = attention.get("samsa", k=K, mode=mode, dropout_rate=0.2)
    p = jax.tree.map(lambda a: jnp.asarray(a, jnp.float32), params)
    args = [jnp.asarray(a, jnp.float32) for a in (q, keys, values)]
    kw = dict(x=jnp.asarray(x, jnp.float32), mask=jnp.asarray(valid), train=True)
    run = lambda fn, seed: np.asarray(fn(p, *args, key=_key(seed), **kw))
    jit_apply = jax.jit(mech.apply, static_argnames=("train",))
    jitted = run(jit_apply, 0)
    if mode == "hard":  # eager dispatch compiles every op: once is enough
        assert_close(run(mech.apply, 0), jitted, rtol=1e-5, atol=1e-6, what="eager vs jit")
    # The same program and key twice: identical (deterministic ops on a GPU, see tolerances).
    np.testing.assert_array_equal(jitted, run(jit_apply, 0))
    assert not np.allclose(jitted, run(jit_apply, 1))
    # Evaluation ignores the key (no noise, no dropout) unless noise_at_eval; float32 is close
    # to the float64 loops.
    kw["train"] = False
    ev = run(jit_apply, 0)
    np.testing.assert_array_equal(ev, run(jit_apply, 1))
    assert ev.dtype == np.float32
    expected, _, _ = numpy_samsa(params, q, keys, values, x, valid, k=K, mode=mode)
    assert_close(ev, expected, rtol=1e-4, atol=1e-5, what="float32 vs float64 loops")


def test_noise_at_eval_is_the_training_selection_on_the_sparse_path():
    params, q, keys, values, x, valid = _setup(9)
    key = _key(2)
    train = _apply(params, q, keys, values, x, valid, k=K, train=True, key=key)
    noisy_eval = _apply(params, q, keys, values, x, valid, k=K, noise_at_eval=True, key=key)
    np.testing.assert_allclose(noisy_eval, train, rtol=1e-10, atol=1e-12)
    clean = _apply(params, q, keys, values, x, valid, k=K)
    assert not np.allclose(clean, noisy_eval)
    with pytest.raises(ValueError, match="needs `key`"):
        _apply(params, q, keys, values, x, valid, k=K, noise_at_eval=True)


def test_bad_input_names_the_problem():
    params, q, keys, values, x, valid = _setup(11, support=False, k=4)
    call = lambda **kw: _apply(params, q, keys, values, x, valid, **{"support": False, **kw})
    with pytest.raises(ValueError, match=r"k=4 needs 2k=8 tokens.*N=7"):
        call(k=4)
    with pytest.raises(ValueError, match="positive int"):
        call(k=0)
    with pytest.raises(ValueError, match="unknown mode 'sparse'"):
        call(k=2, mode="sparse")
    with pytest.raises(ValueError, match="needs `key`"):
        call(k=2, train=True)
    with pytest.raises(ValueError, match="per-query mask"):
        _apply(params, q, keys, values, x, np.ones((B, H, N, N), bool), k=2, support=False)
    with pytest.raises(ValueError, match=r"x must be \[B, M, model_dim\]"):
        _apply(params, q, keys, values, x[..., :3], valid, k=2, support=False)
    with pytest.raises(ValueError, match="needs the layer input `x`"):
        samsa.apply(params, q, keys, values, k=2, support=False)
    with pytest.raises(ValueError, match="support=True but params have no support"):
        _apply(params, q, keys, values, x, valid, k=2)
    with pytest.raises(ValueError, match="needs model_dim"):
        samsa.init(_key(0), num_heads=H, head_dim=D)
    # A key mask given in 4-D ([B, 1, 1, M]) is fine.
    out = _apply(params, q, keys, values, x, valid[:, None, None, :], k=K, support=False)
    np.testing.assert_allclose(out, _apply(params, q, keys, values, x, valid, k=K, support=False))


def test_registered_with_documented_defaults():
    defaults = attention.defaults("samsa")
    assert defaults == {
        "k": 8,
        "mode": "hard",
        "temperature": 0.1,
        "support": True,
        "noise_at_eval": False,
        "grad_cap": True,
        "dropout_rate": 0.0,
        "implementation": "auto",
    }
    mech = attention.get("samsa")
    assert mech.inputs == ("x",)
    shapes = jax.eval_shape(
        lambda key: mech.init(key, num_heads=H, head_dim=D, model_dim=MODEL_DIM), _key(0)
    )
    params = _params(np.random.default_rng(0), k=8)
    assert jax.tree.structure(shapes) == jax.tree.structure(params)
    for got, want in zip(jax.tree.leaves(shapes), jax.tree.leaves(params), strict=True):
        assert got.shape == want.shape
    q = jnp.ones((1, 5, H, D))
    params = jax.tree.map(lambda a: jnp.asarray(a, jnp.float32), params)
    out = jax.jit(mech.apply)(params, q, q, q, x=jnp.ones((1, 5, MODEL_DIM)))
    assert out.shape == (1, 5, H, D) and np.isfinite(np.asarray(out)).all()
