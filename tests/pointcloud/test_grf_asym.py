"""Asymmetric GRF attention (`attention.grf_asym`) against float64 references written with loops:
the k-NN graph by brute force, every walk by recursion, Alg. 2 of the GRF paper (App. D) without
its extra 1/n; and the identity it must satisfy with enumerated walks: linear attention with the
dense mask `M = sum_{t<=hops} f_t W^t`."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attention.grf_asym as ga
from attention import registry


def knn_loops(x, k, valid):
    """Directed k-NN by loops (self excluded, ties to the lower index), padded points skipped."""
    n = len(x)
    nbrs = np.full((n, k), -1)
    for i in range(n):
        if not valid[i]:
            continue
        cand = sorted(
            (float(((x[i] - x[j]) ** 2).sum()), j) for j in range(n) if j != i and valid[j]
        )
        for r, (_, j) in enumerate(cand[:k]):
            nbrs[i, r] = j
    return nbrs


def weights_loops(nbrs):
    """W[u, v] = 1 / sqrt(d_u d_v) for listed edges (a node without out-edges counts d = 1)."""
    n = len(nbrs)
    deg = np.array([max((row >= 0).sum(), 1) for row in nbrs], float)
    w = np.zeros((n, n))
    for u in range(n):
        for v in nbrs[u]:
            if v >= 0:
                w[u, v] += 1.0 / np.sqrt(deg[u] * deg[v])
    return w


def walks_loops(nbrs, w, start, hops):
    """Every walk of <= hops steps from `start` as (end node, length, edge-weight product)."""
    out = [(start, 0, 1.0)]
    frontier = [(start, 1.0)]
    for t in range(1, hops + 1):
        nxt = []
        for node, load in frontier:
            for v in nbrs[node]:
                if v >= 0:
                    nxt.append((v, load * w[node, v]))
        out += [(v, t, ld) for v, ld in nxt]
        frontier = nxt
    return out


def alg2_reference(q, k, v, x, f, hops, knn_k, valid=None):
    """GRF Alg. 2 per batch element and head, float64 loops (no 1/n: Alg. 2's extra 1/n is a
    typo, our reading of App. D)."""
    b, n, h, _ = q.shape
    out = np.zeros(v.shape)
    relu = lambda a: np.maximum(a, 0.0)  # noqa: E731
    for bi in range(b):
        ok = np.ones(n, bool) if valid is None else valid[bi]
        nbrs = knn_loops(x[bi], knn_k, ok)
        w = weights_loops(nbrs)
        for i in range(n):
            if not ok[i]:
                continue
            walks = walks_loops(nbrs, w, i, hops)
            for hh in range(h):
                num, den = np.zeros(v.shape[-1]), 0.0
                for node, t, load in walks:
                    a = relu(q[bi, i, hh]) @ relu(k[bi, node, hh]) * f[hh, t] * load
                    num += a * v[bi, node, hh]
                    den += a
                out[bi, i, hh] = num / den if den != 0 else 0.0
    return out


def _case(b=2, n=11, h=2, d=3, seed=0):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.normal(size=(b, n, h, d)) for _ in range(3))
    x = rng.uniform(size=(b, n, 3))
    f = rng.normal(size=(h, 4))
    return q, k, v, x, f


def test_enumerated_walks_match_alg2_loops_and_the_dense_power_series_mask():
    q, k, v, x, f = _case()
    valid = np.ones((2, 11), bool)
    valid[1, [2, 7, 8]] = False  # padded points: nobody's neighbour, zero output
    with jax.enable_x64(True):
        qkv = tuple(map(jnp.asarray, (q, k, v)))
        kw = dict(coords=jnp.asarray(x), mask=jnp.asarray(valid), node_chunk=4)
        got = np.asarray(ga.apply({"f": jnp.asarray(f)}, *qkv, **kw))
        zero = ga.apply({"f": jnp.zeros_like(jnp.asarray(f))}, *qkv, **kw)
    np.testing.assert_allclose(got, alg2_reference(q, k, v, x, f, 3, 3, valid), atol=1e-10)
    assert np.all(got[1, [2, 7, 8]] == 0)
    assert np.all(np.asarray(zero) == 0)  # every denominator 0: zeros, not NaN
    # With every walk enumerated, Phi^(1) = sum_t f_t W^t exactly: dense masked linear attention.
    relu = lambda a: np.maximum(a, 0.0)  # noqa: E731
    for bi in range(2):
        nbrs = knn_loops(x[bi], 3, valid[bi])
        w = weights_loops(nbrs)
        for hh in range(2):
            m = sum(f[hh, t] * np.linalg.matrix_power(w, t) for t in range(4))
            a = relu(q[bi, :, hh]) @ relu(k[bi, :, hh]).T * m * valid[bi][None, :]
            den = a.sum(1, keepdims=True)
            ref = np.where(den != 0, a @ v[bi, :, hh] / np.where(den != 0, den, 1), 0.0)
            ref = ref * valid[bi][:, None]
            np.testing.assert_allclose(got[bi, :, hh], ref, atol=1e-10)


def test_walk_enumeration_counts_levels_and_loads():
    nbrs = jnp.asarray([[[1, 2], [0, 2], [0, -1]]])  # node 2 has one out-edge
    idx, load = jax.jit(ga.enumerate_walks, static_argnums=1)(nbrs, 2)
    assert idx.shape == load.shape == (1, 3, 1 + 2 + 4)
    np.testing.assert_array_equal(ga.slot_levels(2, 2), [0, 1, 1, 2, 2, 2, 2])
    # node 0 -> 1 (w = 1/2) -> {0, 2}; node 0 -> 2 (w = 1/sqrt(2)) -> {0, empty}
    np.testing.assert_array_equal(idx[0, 0], [0, 1, 2, 0, 2, 0, 0])
    w02 = 1 / np.sqrt(2)
    np.testing.assert_allclose(load[0, 0], [1, 0.5, w02, 0.25, 0.5 * w02, w02 * w02, 0], rtol=1e-6)


@pytest.mark.slow  # ~3 s: compiles the backward pass
def test_zero_denominator_gives_zero_output_and_finite_gradients():
    q, k, v, x, f = _case(b=1, n=6, h=1, d=2, seed=1)
    args = tuple(jnp.asarray(a, jnp.float32) for a in (q, k, v))
    params = {"f": jnp.zeros((1, 4))}
    out = ga.apply(params, *args, coords=jnp.asarray(x, jnp.float32))
    assert np.all(np.asarray(out) == 0)
    grads = jax.grad(lambda p, q: ga.apply(p, q, *args[1:], coords=x).sum(), argnums=(0, 1))(
        params, args[0]
    )
    assert all(np.all(np.isfinite(g)) for g in jax.tree.leaves(grads))


@pytest.mark.slow  # ~3 s: compiles forward and backward in float64
def test_gradients_match_finite_differences():
    from jax.test_util import check_grads

    q, k, v, x, f = _case(b=1, n=7, h=1, d=2, seed=2)
    with jax.enable_x64(True):
        fn = lambda f, q, k, v: ga.apply({"f": f}, q, k, v, coords=jnp.asarray(x), node_chunk=3)  # noqa: E731
        check_grads(fn, tuple(map(jnp.asarray, (f, q, k, v))), order=1, modes=("rev",),
                    atol=1e-5, rtol=1e-5)  # fmt: skip


@pytest.mark.slow  # ~2 s
def test_prebuilt_neighbors_equal_the_graph_built_from_coords():
    from attention import graphs

    q, k, v, x, f = (jnp.asarray(a, jnp.float32) for a in _case(b=2, n=9, h=2, d=3, seed=4))
    valid = jnp.asarray(np.arange(9)[None] < np.array([[9], [6]]))
    nbrs = graphs.batch_knn_graph(x, 3, valid)
    a = ga.apply({"f": f}, q, k, v, coords=x, mask=valid)
    b = ga.apply({"f": f}, q, k, v, neighbors=nbrs, mask=valid)
    np.testing.assert_allclose(a, b, atol=1e-6)
    with pytest.raises(ValueError, match="neighbors must be an int k-NN list"):
        ga.apply({"f": f}, q, k, v, neighbors=nbrs[..., :2])


@pytest.mark.slow  # ~2 s
def test_random_walks_need_a_key_and_resample_per_key():
    q, k, v, x, f = (jnp.asarray(a, jnp.float32) for a in _case(b=1, n=9, h=1, d=2))
    mech = registry.get("grf_asym", walks="random", n_walks=8, p_halt=0.3)
    params = {"f": f[:1]}
    with pytest.raises(ValueError, match="needs a key"):
        mech.apply(params, q[:, :, :1], k[:, :, :1], v[:, :, :1], coords=x)
    one = lambda s: mech.apply(params, q[:, :, :1], k[:, :, :1], v[:, :, :1], coords=x,  # noqa: E731
                               key=jax.random.key(s))  # fmt: skip
    a, b = one(0), one(1)
    assert a.shape == (1, 9, 1, 2) and np.all(np.isfinite(a))
    np.testing.assert_array_equal(a, one(0))
    assert not np.allclose(a, b)


def _sizes(jaxpr, out):
    """Element counts of every intermediate of `jaxpr` and of the jaxprs nested in it."""
    for eqn in jaxpr.eqns:
        out.extend(int(np.prod(o.aval.shape)) for o in eqn.outvars if hasattr(o.aval, "shape"))
        for p in eqn.params.values():
            for sub in p if isinstance(p, tuple | list) else (p,):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    _sizes(inner, out)
    return out


@pytest.mark.slow  # ~1 s of tracing
def test_no_quadratic_intermediate_forward_and_backward():
    n, d = 1024, 4
    rng = np.random.default_rng(0)
    q, k, v = (jnp.asarray(rng.normal(size=(1, n, 1, d)), jnp.float32) for _ in range(3))
    nbrs = jnp.asarray(rng.integers(0, n, size=(1, n, 3)), jnp.int32)
    params = ga.init(None, num_heads=1, head_dim=d)
    loss = lambda p, q, k, v: ga.apply_on_graph(p, q, k, v, nbrs, node_chunk=64).sum()  # noqa: E731
    jaxpr = jax.make_jaxpr(jax.grad(loss, argnums=(0, 1, 2, 3)))(params, q, k, v)
    sizes = _sizes(jaxpr.jaxpr, [])
    # O(N L) walk slots (40 N) at most, far below N^2 / 8
    assert max(sizes) <= n * 40 < n * n // 8, max(sizes)


def test_registry_flops_and_errors():
    mech = registry.get("grf_asym")
    assert mech.inputs == ("coords", "neighbors") and mech.hparams["knn_k"] == 3
    assert ga.num_slots(mech.hparams) == 40  # 1 + 3 + 9 + 27
    from attention import cost

    mm, ew = mech.flops(cost.Call(n=100, m=100, h=1, dk=8, dv=8, d_model=8))
    assert mm == 100 * 40 * (2 * 8 + 2 * 8 + 2) and ew > 0
    assert registry.check("grf_asym", {"walks": "sampled"}) and registry.check(
        "grf_asym", {}, num_tokens=3
    )
    q = jnp.zeros((1, 5, 1, 2))
    params = ga.init(None, num_heads=1, head_dim=2)
    with pytest.raises(ValueError, match="coords"):
        ga.apply(params, q, q, q)
    with pytest.raises(ValueError, match="knn_k=3 needs at least 4 points"):
        ga.apply(params, q[:, :3], q[:, :3], q[:, :3], coords=jnp.zeros((1, 3, 3)))
    with pytest.raises(ValueError, match="key-padding masks only"):
        ga.apply(params, q, q, q, coords=jnp.zeros((1, 5, 3)), mask=jnp.ones((1, 1, 5, 5), bool))


@pytest.mark.slow  # ~1.5 s (tests/attention/test_grf.py checks the default chunk in the fast tier)
def test_blocked_knn_equals_brute_force_loops():
    """The k-NN the GRF blocks and the scaling benchmark use, in blocks smaller than the cloud
    (`chunk`), against loops; padded points are nobody's neighbour."""
    from attention import graphs

    x = np.random.default_rng(7).uniform(size=(2, 50, 3))
    valid = np.arange(50)[None] < np.array([[50], [41]])
    got = np.asarray(graphs.batch_knn_graph(jnp.asarray(x), 16, jnp.asarray(valid), chunk=8))
    for b in range(2):
        np.testing.assert_array_equal(got[b], knn_loops(x[b], 16, valid[b]))


def test_loglog_slope():
    from pointcloud import scaling

    n = np.array([4096, 8192, 16384, 32768])
    assert scaling.loglog_slope(n, 3e-6 * n**1.1) == pytest.approx(1.1)
