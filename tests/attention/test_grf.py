"""GRF topological masking: the paper's properties (unbiased masks, O(N) attention, frozen or
resampled walks, graphs, gradients to f) and error messages. Outputs against the float64
references are in test_table.py (ref_grf.py)."""

import jax
import jax.extend.core as jcore
import jax.numpy as jnp
import numpy as np
import pytest

import attention
from attention import graphs, grf, grf_walks
from tests.attention.ref_grf import (
    grf_dense_reference,
    grf_reference,
    grid_adjacency,
    mask_from_walks,
    masked_linear_reference,
    power_series_mask,
)
from tests.tolerances import assert_close

SMALL = dict(grid=(3, 3), n_walks=4, max_walk_len=3, p_halt=0.25, f_decay=0.5, slot_chunk=5)


def _qkv(seed=0, b=2, n=9, h=2, d=3, dv=3):
    rng = np.random.default_rng(seed)
    return (
        rng.normal(size=(b, n, h, d)),
        rng.normal(size=(b, n, h, d)),
        rng.normal(size=(b, n, h, dv)),
    )


def _f64(params):
    return jax.tree.map(
        lambda x: jnp.asarray(x, jnp.float64) if jnp.issubdtype(x.dtype, jnp.floating) else x,
        params,
    )


# ------------------------------------------------------------------------------------ graphs


def test_grid_graph_neighbours_degrees_and_weights():
    nbrs = graphs.grid_graph(3, 3)
    assert sorted(nbrs[4][nbrs[4] >= 0]) == [1, 3, 5, 7]
    assert sorted(nbrs[0][nbrs[0] >= 0]) == [1, 3]
    np.testing.assert_array_equal(graphs.degrees(nbrs), [2, 3, 2, 3, 4, 3, 2, 3, 2])
    rect = graphs.grid_graph(2, 4)  # non-square: node r * w + c
    assert sorted(rect[1][rect[1] >= 0]) == [0, 2, 5]
    with jax.enable_x64(True):
        w = np.asarray(graphs.dense_adjacency(nbrs, jnp.float64))
    np.testing.assert_allclose(w, grid_adjacency(3, 3), rtol=1e-12)
    np.testing.assert_allclose(w, w.T)


def _knn_brute_force(x, k, valid):
    out = np.full((len(x), k), -1)
    for i in range(len(x)):
        if not valid[i]:
            continue
        cands = sorted(
            (np.sum((x[i] - x[j]) ** 2), j) for j in range(len(x)) if valid[j] and j != i
        )
        for r, (_, j) in enumerate(cands[:k]):
            out[i, r] = j
    return out


def test_knn_graph_numpy_and_batched_jax_match_brute_force():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 11, 3))
    valid = np.ones((2, 11), bool)
    valid[1, -3:] = False
    with jax.enable_x64(True):
        got = np.asarray(graphs.batch_knn_graph(jnp.asarray(x), 3, jnp.asarray(valid), chunk=4))
    for b in range(2):
        expected = _knn_brute_force(x[b], 3, valid[b])
        np.testing.assert_array_equal(graphs.knn_graph(x[b], 3, valid[b]), expected)
        np.testing.assert_array_equal(got[b], expected)
    # fewer valid points than k: the missing slots are empty, not padding points
    few = np.zeros(11, bool)
    few[:3] = True
    assert (graphs.knn_graph(x[0], 3, few)[:3] >= 0).sum(1).tolist() == [2, 2, 2]
    with pytest.raises(ValueError, match="knn_k=11 needs at least"):
        graphs.knn_graph(x[0], 11)


# ------------------------------------------------------------------------- the GRF estimator


@pytest.mark.parametrize("antithetic", [False, True], ids=["iid", "antithetic"])
def test_grf_mask_is_unbiased_off_the_diagonal(antithetic):
    """Mean of phi_i . phi_j over 2000 independent walk samples vs sum_k alpha_k W^k (4x4 grid).

    Off the diagonal every entry is within 4 standard errors; on the diagonal the same walks
    serve both sides, so the estimate is biased up by sum_v Var(phi_i[v]) (our observation:
    arXiv:2410.03462 Sec. 3.3 states unbiasedness without this caveat).
    """
    nbrs = graphs.grid_graph(4, 4)
    f = np.array([1.0, 0.7, -0.3, 0.5, 0.2])
    n_walks, seeds = 4, 2000
    exact = power_series_mask(grid_adjacency(4, 4), f[None])[0]
    with jax.enable_x64(True):
        nodes, loads = graphs.random_walks(
            jax.random.key(0),
            nbrs,
            n_walks=n_walks,
            max_len=4,
            p_halt=0.3,
            antithetic=antithetic,
            sample_shape=(seeds,),
            dtype=jnp.float64,
        )  # [seeds, N, walks, 5]
        val = (loads * jnp.asarray(f) / n_walks).reshape(seeds, 16, -1)
        phi = jnp.einsum("bis,bisv->biv", val, jax.nn.one_hot(nodes.reshape(seeds, 16, -1), 16))
        m = jnp.einsum("biv,bjv->bij", phi, phi)
        mean, std = np.asarray(m.mean(0)), np.asarray(m.std(0))
    off = ~np.eye(16, dtype=bool)
    stderr = std / np.sqrt(seeds)
    z = np.abs(mean - exact)[off] / (stderr[off] + 1e-12)
    assert z.max() < 4.0, f"max |z| = {z.max():.2f} off the diagonal"
    assert np.all(mean.diagonal() > exact.diagonal() + 4 * stderr.diagonal())
    if antithetic:  # paired walkers (w, w + 2) never halt at the same hop (p_halt < 1/2)
        hops = (np.asarray(loads[0]) != 0).sum(-1) - 1  # [N, walks]
        both = (hops[:, :2] < 4) & (hops[:, 2:] < 4)
        assert both.sum() > 5 and np.all(hops[:, :2][both] != hops[:, 2:][both])


def test_walk_loads_are_edge_weight_products_over_prefix_probabilities():
    params = attention.get("grf", **SMALL).init(jax.random.key(0), num_heads=2, head_dim=3)
    nodes = np.asarray(params["buffers"]["walk_nodes"][0])
    loads = np.asarray(params["buffers"]["walk_loads"][0])
    w = grid_adjacency(3, 3)
    deg = (w > 0).sum(1)
    assert np.all(nodes[:, :, 0] == np.arange(9)[:, None]) and np.all(loads[:, :, 0] == 1)
    for i in range(9):
        for walk in range(4):
            load = 1.0
            for t in range(1, 4):
                if loads[i, walk, t] == 0:
                    assert np.all(loads[i, walk, t:] == 0)  # halted for good
                    break
                u, v = nodes[i, walk, t - 1], nodes[i, walk, t]
                assert w[u, v] > 0  # a real edge
                load *= w[u, v] / ((1 - SMALL["p_halt"]) / deg[u])  # omega~ / p(prefix)
                np.testing.assert_allclose(loads[i, walk, t], load, rtol=1e-6)


# --------------------------------------------------------------------- the O(N) attention path


@pytest.mark.parametrize("cls_token,padding", [(False, False), (True, True)])
def test_sparse_path_with_exact_features_equals_brute_force(cls_token, padding):
    """Exact features Phi = sum_t f_t W^t fed as dense 'sparse' rows through the O(N) code path
    equal explicit N x N masked linear attention with M = sum_k alpha_k W^k."""
    f = np.array([[1.0, 0.6, 0.3, 0.1], [0.5, -0.2, 0.4, 0.3]])
    w = grid_adjacency(3, 3)
    phi = np.stack([sum(fh[t] * np.linalg.matrix_power(w, t) for t in range(4)) for fh in f])
    c = int(cls_token)
    n = 9 + c
    q, k, v = _qkv(1, n=n, dv=2)
    idx = np.broadcast_to(np.arange(9) + c, (2, 9, 9))
    if cls_token:  # token 0 has no features
        idx = np.pad(idx, ((0, 0), (1, 0), (0, 0)))
        phi = np.pad(phi, ((0, 0), (1, 0), (0, 0)))
    pad = np.ones((2, n), bool)
    if padding:
        pad[1, [c, 5]] = False
    ref_mask = np.broadcast_to(pad[:, None, None, :], (2, 2, n, n))
    expected = masked_linear_reference(power_series_mask(w, f), q, k, v, ref_mask, cls_token)
    with jax.enable_x64(True):
        got = grf.sparse_masked_linear_attention(
            *(jnp.asarray(x) for x in (q, k, v)),
            jnp.asarray(idx),
            jnp.asarray(phi),
            key_valid=jnp.asarray(pad),
            cls_token=cls_token,
            slot_chunk=4,
        )
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name,ref", [("grf", grf_reference), ("grf_dense", grf_dense_reference)])
def test_cls_token_matches_reference(name, ref):
    hp = SMALL if name == "grf" else dict(grid=(3, 3), max_walk_len=3, f_decay=0.5)
    mech = attention.get(name, cls_token=True, **hp)
    q, k, v = _qkv(2, n=10)
    pad = np.ones((2, 10), bool)
    pad[0, [0, 7]] = False  # the CLS token itself may be padding
    ref_mask = np.broadcast_to(pad[:, None, None, :], (2, 2, 10, 10))
    with jax.enable_x64(True):
        params = _f64(mech.init(jax.random.key(0), num_heads=2, head_dim=3, max_len=10))
        got = mech.apply(params, *(jnp.asarray(x) for x in (q, k, v)), mask=jnp.asarray(pad))
    expected = ref(jax.tree.map(np.asarray, params), q, k, v, ref_mask, cls_token=True)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-9, atol=1e-12)


def _all_avals(jaxpr):
    for eqn in jaxpr.eqns:
        yield from (v.aval for v in eqn.outvars)
        for sub in jcore.jaxprs_in_params(eqn.params):
            yield from _all_avals(sub)


def _loss_jaxpr(name, n, key=None, **hp):
    mech = attention.get(name, **hp)
    params = mech.init(jax.random.key(0), num_heads=2, head_dim=4, max_len=n)
    q, k, v = (jnp.ones((1, n, 2, 4)) for _ in range(3))

    def loss(f, q, k, v):
        return mech.apply({**params, "f": f}, q, k, v, key=key).sum()

    return jax.make_jaxpr(jax.grad(loss, argnums=(0, 1, 2, 3)))(params["f"], q, k, v).jaxpr


@pytest.mark.parametrize("resample", [False, True], ids=["frozen_support", "resampled"])
def test_no_quadratic_intermediate_in_forward_and_backward(resample):
    n, walks, steps, chunk = 256, 4, 4, 2
    hp = dict(grid=(16, 16), n_walks=walks, max_walk_len=steps - 1, slot_chunk=chunk)
    key = jax.random.key(1) if resample else None
    shapes = [
        a.shape
        for a in _all_avals(_loss_jaxpr("grf", n, key, resample=resample, **hp))
        if hasattr(a, "shape")
    ]
    assert not [s for s in shapes if sum(d >= n for d in s) >= 2], "an N x N intermediate"
    largest = max(int(np.prod(s)) for s in shapes)
    if resample:
        # largest: B * H * N * slot_chunk * Dk * (Dv + 1), O(N) and here below N^2, so even a
        # flattened N x N array would fail; the features hold N * walks * steps nonzeros per head
        assert largest <= 2 * n * chunk * 4 * 5 < n * n
    else:
        # largest: the walks themselves (H * N * walks * steps scalars) or one scan step's
        # gathered rows, B * node_chunk * C * (2 Dk + Dv + Dv + 1) ([q, k, v] and the output's
        # cotangent, one gather in the backward; independent of N); the support (C < walks *
        # steps here) is smaller
        step_rows = 64 * walks * steps * (2 * 4 + 4 + 4 + 1)
        assert largest <= max(2 * n * walks * steps, step_rows) and step_rows < n * n
    assert max(int(np.prod(s)) for s in shapes if len(s) == 4) >= 2 * n * walks * steps
    # the detector does see the dense baseline's N x N mask
    dense = [
        a.shape for a in _all_avals(_loss_jaxpr("grf_dense", n, grid=(16, 16), max_walk_len=2))
    ]
    assert any(sum(d >= n for d in s) >= 2 for s in dense)


# ------------------------------------------------------- frozen walks: the node-major support


def test_walk_support_lists_each_live_start_node_once_per_visited_node():
    hp = {**SMALL, "grid": (4, 4), "max_walk_len": 5, "p_halt": 0.15}
    params = attention.get("grf", **hp).init(jax.random.key(3), num_heads=2, head_dim=3)
    buf = jax.tree.map(np.asarray, params["buffers"])
    nodes, loads = buf["walk_nodes"], buf["walk_loads"]
    slots, tokens = grf_walks.walk_support(nodes, loads)  # init buckets them: test_grf_buckets
    heads, n, walks, steps = nodes.shape
    width = tokens.shape[-1]
    assert slots.shape == nodes.shape and tokens.shape[:2] == (heads, n)
    assert slots.dtype == tokens.dtype == np.int32
    visitors = [[set() for _ in range(n)] for _ in range(heads)]
    for h, i, w, t in np.ndindex(nodes.shape):
        if loads[h, i, w, t] != 0:
            visitors[h][nodes[h, i, w, t]].add(i)
    assert width == max(len(row) for rows in visitors for row in rows)
    assert (loads == 0).sum() > 0 and width < walks * steps  # dead slots and repeats are gone
    for h in range(heads):
        for v in range(n):
            row = sorted(visitors[h][v])
            np.testing.assert_array_equal(tokens[h, v, : len(row)], row)
            assert np.all(tokens[h, v, len(row) :] == 0)
    for h, i, w, t in np.ndindex(nodes.shape):
        if loads[h, i, w, t] == 0:
            assert slots[h, i, w, t] == n * width
        else:
            v, c = divmod(int(slots[h, i, w, t]), width)
            assert v == nodes[h, i, w, t] and tokens[h, v, c] == i


def test_support_features_are_the_walk_features():
    """The node-major weights give exactly the features (hence the mask estimate M_hat) that the
    walk slots give, for any f: the same nonzeros, the same values."""
    hp = {**SMALL, "grid": (4, 4), "max_walk_len": 5, "p_halt": 0.15}
    params = attention.get("grf", **hp).init(jax.random.key(3), num_heads=2, head_dim=3)
    buf = jax.tree.map(np.asarray, params["buffers"])
    buf["walk_slots"], buf["support_tokens"] = grf_walks.walk_support(
        buf["walk_nodes"], buf["walk_loads"]
    )
    f = np.random.default_rng(0).normal(size=(2, 6))
    heads, n = buf["support_tokens"].shape[:2]
    with jax.enable_x64(True):
        w = np.asarray(
            grf_walks.support_weights(
                jnp.asarray(buf["walk_slots"]),
                jnp.asarray(buf["walk_loads"], jnp.float64),
                jnp.asarray(f),
                buf["support_tokens"].shape[-1],
            )
        )
        idx, val = map(
            np.asarray,
            grf_walks.walk_features(
                jnp.asarray(buf["walk_nodes"]), jnp.asarray(buf["walk_loads"], jnp.float64), f
            ),
        )
    from_support = np.zeros((heads, n, n))
    from_walks = np.zeros((heads, n, n))
    for h, v, c in np.ndindex(w.shape):
        from_support[h, buf["support_tokens"][h, v, c], v] += w[h, v, c]
    for h, i, s in np.ndindex(idx.shape):
        from_walks[h, i, idx[h, i, s]] += val[h, i, s]
    np.testing.assert_array_equal(from_support != 0, from_walks != 0)
    np.testing.assert_allclose(from_support, from_walks, rtol=1e-14, atol=0)
    m_support = np.einsum("hiv,hjv->hij", from_support, from_support)
    m_walks = mask_from_walks(buf["walk_nodes"], buf["walk_loads"].astype(np.float64), f)
    np.testing.assert_allclose(m_support, m_walks, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize(
    "cls_token,padding,node_chunk",
    [  # the fast tier checks the hardest case; the other two are `make test-slow`'s
        pytest.param(False, False, 64, marks=pytest.mark.slow),
        pytest.param(False, True, 1, marks=pytest.mark.slow),
        (True, True, 5),
    ],
    ids=["plain", "padding_chunk1", "cls_padding_chunk5"],
)
def test_support_path_equals_the_general_path_forward_and_gradients(cls_token, padding, node_chunk):
    """Frozen walks with their support (the fast path) against the same walks without it (the
    general walk-slot path): outputs and gradients w.r.t. q, k, v and f, under jit."""
    hp = {**SMALL, "grid": (4, 4), "max_walk_len": 5, "p_halt": 0.15, "cls_token": cls_token}
    mech = attention.get("grf", node_chunk=node_chunk, **hp)
    n = 16 + int(cls_token)
    q, k, v = _qkv(9, n=n, dv=2)
    pad = np.ones((2, n), bool)
    if padding:
        pad[0, [0, 5]] = False
        pad[1, 9] = False
    mask = jnp.asarray(pad) if padding else None
    w = np.random.default_rng(10).normal(size=(2, n, 2, 2))
    with jax.enable_x64(True):
        params = _f64(mech.init(jax.random.key(4), num_heads=2, head_dim=3, max_len=n))
        walks_only = {
            "f": params["f"],
            "buffers": {key: params["buffers"][key] for key in ("walk_nodes", "walk_loads")},
        }
        qkv = [jnp.asarray(x) for x in (q, k, v)]

        def loss(p, f, q, k, v):
            return (mech.apply({**p, "f": f}, q, k, v, mask=mask) * w).sum()

        grads = jax.jit(jax.value_and_grad(loss, argnums=(1, 2, 3, 4)))
        fast, fast_grads = grads(params, params["f"], *qkv)
        general, general_grads = grads(walks_only, params["f"], *qkv)
        out = mech.apply(params, *qkv, mask=mask)
    np.testing.assert_allclose(fast, general, rtol=1e-12)
    for a, b in zip(fast_grads, general_grads, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13)
    assert np.abs(np.asarray(fast_grads[0])).min() > 0  # every f_t reaches the output
    expected = grf_reference(jax.tree.map(np.asarray, params), q, k, v, None, cls_token=cls_token)
    if not padding:
        np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-9, atol=1e-12)


def test_abstract_init_has_the_walks_only():
    """Under jax.eval_shape the support's width is unknown: the walks alone, the general path."""
    mech = attention.get("grf", **SMALL)
    abstract = jax.eval_shape(
        lambda: mech.init(jax.random.key(0), num_heads=2, head_dim=3, max_len=9)
    )
    assert set(abstract["buffers"]) == {"walk_nodes", "walk_loads"}
    concrete = mech.init(jax.random.key(0), num_heads=2, head_dim=3, max_len=9)
    support = {key for key in concrete["buffers"] if key.startswith("support_")}
    assert set(concrete["buffers"]) == {"walk_nodes", "walk_loads", "walk_slots"} | support
    buckets = len(support) // 2
    assert buckets >= 1 and support == {
        f"support_{kind}_{b}" for kind in ("rows", "tokens") for b in range(buckets)
    }


# ------------------------------------------------------------------- frozen / resampled walks


def test_walks_frozen_when_resample_false():
    mech = attention.get("grf", **SMALL)
    params = mech.init(jax.random.key(0), num_heads=2, head_dim=3, max_len=9)
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _qkv())
    a = mech.apply(params, q, k, v, key=jax.random.key(1), train=True)
    b = mech.apply(params, q, k, v, key=jax.random.key(2), train=True)
    c = jax.jit(mech.apply)(params, q, k, v)
    # The key is not used: the same computation twice (deterministic ops on a GPU).
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert_close(a, c, rtol=1e-6, atol=0, what="eager vs jit")
    assert a.dtype == jnp.float32 and a.shape == (2, 9, 2, 3)
    # another init key gives other walks (per head/layer independent samples)
    other = mech.init(jax.random.key(5), num_heads=2, head_dim=3, max_len=9)
    assert not np.array_equal(params["buffers"]["walk_nodes"], other["buffers"]["walk_nodes"])


def test_walks_resampled_per_key_when_resample_true():
    mech = attention.get("grf", **{**SMALL, "resample": True})
    params = mech.init(jax.random.key(0), num_heads=2, head_dim=3)
    assert set(params) == {"f"}
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _qkv())
    run = lambda key: mech.apply(params, q, k, v, key=key, train=True)
    a, a2, b = run(jax.random.key(1)), run(jax.random.key(1)), run(jax.random.key(2))
    np.testing.assert_array_equal(np.asarray(a), np.asarray(a2))  # the same key, twice
    assert np.abs(np.asarray(a) - np.asarray(b)).max() > 1e-3
    jitted = jax.jit(mech.apply, static_argnames="train")(
        params, q, k, v, key=jax.random.key(1), train=True
    )
    assert_close(jitted, a, rtol=1e-5, atol=1e-6, what="jit vs eager")
    with pytest.raises(ValueError, match="resample=True .* needs `key`"):
        mech.apply(params, q, k, v)


def test_gradients_reach_f_and_match_the_reference():
    mech = attention.get("grf", **SMALL)
    q, k, v = _qkv(4)
    w = np.random.default_rng(5).normal(size=(2, 9, 2, 3))
    with jax.enable_x64(True):
        params = _f64(mech.init(jax.random.key(0), num_heads=2, head_dim=3, max_len=9))
        qkv = [jnp.asarray(x) for x in (q, k, v)]
        g = jax.grad(lambda f: (mech.apply({**params, "f": f}, *qkv) * w).sum())(params["f"])
    np_params = jax.tree.map(np.asarray, params)
    assert np.all(np.isfinite(g)) and np.abs(g).min() > 0
    for h, t in [(0, 0), (1, 2), (0, 3)]:
        vals = []
        for eps in (1e-6, -1e-6):
            p = jax.tree.map(np.copy, np_params)
            p["f"][h, t] += eps
            vals.append((grf_reference(p, q, k, v, None) * w).sum())
        np.testing.assert_allclose(g[h, t], (vals[0] - vals[1]) / 2e-6, rtol=1e-5)


# ------------------------------------------------------------------ k-NN and input graphs


def _knn_dense_mask(x, k, f, valid):
    """`[H, N, N]` = Phi Phi^T, Phi = sum_t f_t W^t for the directed k-NN graph (numpy)."""
    nbrs = _knn_brute_force(x, k, valid)
    deg = (nbrs >= 0).sum(1)
    w = np.zeros((len(x), len(x)))
    for i, row in enumerate(nbrs):
        for j in row[row >= 0]:
            w[i, j] = 1 / np.sqrt(deg[i] * max(deg[j], 1))
    out = []
    for fh in f:
        phi = sum(fh[t] * np.linalg.matrix_power(w, t) for t in range(len(fh)))
        out.append(phi @ phi.T)
    return np.stack(out)


def test_knn_graph_dense_matches_reference_and_ignores_padded_points():
    rng = np.random.default_rng(6)
    x = rng.normal(size=(2, 10, 3))
    q, k, v = _qkv(6, n=10)
    pad = np.ones((2, 10), bool)
    pad[1, 7:] = False
    mech = attention.get("grf_dense", graph="knn", knn_k=3, max_walk_len=2, f_decay=0.3)
    with jax.enable_x64(True):
        params = _f64(mech.init(jax.random.key(0), num_heads=2, head_dim=3))
        run = lambda x, k, v: np.asarray(
            mech.apply(
                params,
                jnp.asarray(q),
                jnp.asarray(k),
                jnp.asarray(v),
                mask=jnp.asarray(pad),
                coords=jnp.asarray(x),
            )
        )
        got = run(x, k, v)
        x2, k2, v2 = x.copy(), k.copy(), v.copy()
        x2[1, 7:], k2[1, 7:], v2[1, 7:] = 0.01, 5.0, -7.0  # padded points moved next to others
        np.testing.assert_allclose(run(x2, k2, v2), got, rtol=1e-12)
    f = np.asarray(params["f"])
    for b in range(2):
        m = _knn_dense_mask(x[b], 3, f, pad[b])
        ref_mask = np.broadcast_to(pad[b][None, None, None, :], (1, 2, 10, 10))
        expected = masked_linear_reference(m, q[b : b + 1], k[b : b + 1], v[b : b + 1], ref_mask)
        np.testing.assert_allclose(got[b : b + 1], expected, rtol=1e-9, atol=1e-12)


def test_knn_grf_runs_and_is_unbiased_towards_the_dense_mask():
    """grf on a k-NN graph (resampled walks) averages to grf_dense over keys."""
    rng = np.random.default_rng(7)
    x = jnp.asarray(rng.normal(size=(1, 12, 3)), jnp.float32)
    q, k, v = (jnp.asarray(a, jnp.float32) for a in _qkv(7, b=1, n=12, h=1))
    hp = dict(graph="knn", knn_k=3, max_walk_len=2, f_decay=0.3)
    mech = attention.get("grf", resample=True, n_walks=8, p_halt=0.4, **hp)
    dense = attention.get("grf_dense", **hp)
    params = mech.init(jax.random.key(0), num_heads=1, head_dim=3)
    keys = jax.random.split(jax.random.key(1), 64)
    outs = jax.jit(jax.vmap(lambda kk: mech.apply(params, q, k, v, key=kk, coords=x)))(keys)
    exact = dense.apply(params, q, k, v, coords=x)
    assert np.all(np.isfinite(outs))
    # a ratio estimator is biased only at O(1/n); its error shrinks when averaging over keys
    err_one = np.abs(np.asarray(outs[0] - exact)).mean()
    err_mean = np.abs(np.asarray(outs.mean(0) - exact)).mean()
    assert err_mean < 0.5 * err_one


def test_input_adjacency_equals_the_grid_graph():
    nbrs = graphs.grid_graph(3, 3)
    shuffled = np.random.default_rng(0).permuted(nbrs, axis=1)  # slot order does not matter
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _qkv(8))
    dense = dict(max_walk_len=3, f_decay=0.5)
    p = attention.get("grf_dense", **dense).init(jax.random.key(0), num_heads=2, head_dim=3)
    on_grid = attention.get("grf_dense", grid=(3, 3), **dense).apply(p, q, k, v)
    on_input = attention.get("grf_dense", graph="input", **dense).apply(
        p, q, k, v, adjacency=jnp.asarray(shuffled)
    )
    assert_close(on_input, on_grid, rtol=1e-5, atol=0)
    sampled = {**SMALL, "resample": True}
    key = jax.random.key(4)
    p = attention.get("grf", **sampled).init(jax.random.key(0), num_heads=2, head_dim=3)
    a = attention.get("grf", **sampled).apply(p, q, k, v, key=key)
    b = attention.get("grf", **{**sampled, "graph": "input"}).apply(
        p, q, k, v, key=key, adjacency=jnp.asarray(nbrs)[None].repeat(2, 0)
    )
    assert_close(a, b, rtol=1e-6, atol=0)


# ------------------------------------------------------------------------ defaults and masks


@pytest.mark.parametrize("name", ["grf", "grf_dense"])
def test_defaults_work_and_fully_padded_rows_are_zero(name):
    mech = attention.get(name)
    params = mech.init(jax.random.key(0), num_heads=2, head_dim=4, max_len=16)
    assert params["f"].shape == (2, 11)
    np.testing.assert_allclose(params["f"][0, :3], np.exp(-0.01 * np.arange(3)), rtol=1e-6)
    rng = np.random.default_rng(0)
    q, k, v = (jnp.asarray(rng.normal(size=(2, 16, 2, 4)), jnp.float32) for _ in range(3))
    pad = np.ones((2, 16), bool)
    pad[1] = False
    pad4 = jnp.asarray(pad)[:, None, None, :]  # [B, 1, 1, M] is key padding too

    def loss(q):
        out = mech.apply(params, q, k, v, mask=pad4)
        return out.sum(), out

    grads, out = jax.grad(loss, has_aux=True)(q)
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(grads))
    assert np.all(np.asarray(out[1]) == 0)


# ------------------------------------------------------------------------------------ errors


def _apply(name, hp=None, n=9, init_kw=None, **kw):
    mech = attention.get(name, **(hp or {}))
    params = mech.init(jax.random.key(0), num_heads=2, head_dim=3, **(init_kw or {"max_len": n}))
    q, k, v = (jnp.asarray(x, jnp.float32) for x in _qkv(n=n))
    return mech.apply(params, q, k, v, **kw)


@pytest.mark.parametrize(
    "name,hp,kw,match",
    [
        ("grf", SMALL, dict(mask=np.ones((2, 2, 9, 9), bool)), "key-padding masks only"),
        ("grf_dense", {}, dict(mask=np.ones((2, 2, 9, 9), bool)), "key-padding masks only"),
        ("grf", SMALL, dict(mask=np.ones((2, 9))), "must be boolean"),
        ("grf", SMALL, dict(mask=np.ones((2, 7), bool)), "key padding"),
        (
            "grf",
            {**SMALL, "graph": "knn", "resample": True},
            dict(key=jax.random.key(0)),
            "needs the `coords` input",
        ),
        (
            "grf_dense",
            {"graph": "knn", "knn_k": 9},
            dict(coords=np.zeros((2, 9, 3))),
            r"knn_k must be in \[1, 8\]",
        ),
        ("grf_dense", {"graph": "knn"}, dict(coords=np.zeros((2, 8, 3))), "coords must be"),
        ("grf_dense", {"graph": "input"}, {}, "needs the `adjacency` input"),
        ("grf_dense", {"graph": "input"}, dict(adjacency=np.zeros((9, 4))), "integer neighbour"),
        ("grf_dense", {"graph": "mesh"}, {}, "graph must be one of"),
        ("grf_dense", {"grid": (2, 5)}, {}, r"grid=\(2, 5\) does not have 9"),
    ],
)
def test_apply_errors(name, hp, kw, match):
    with pytest.raises(ValueError, match=match):
        _apply(name, hp, **kw)


def test_init_and_shape_errors():
    with pytest.raises(ValueError, match="square number of graph nodes"):
        _apply("grf_dense", {}, n=8)
    with pytest.raises(ValueError, match="resample=True"):
        attention.get("grf", graph="knn").init(jax.random.key(0), num_heads=2, head_dim=3)
    with pytest.raises(ValueError, match="grid=\\(h, w\\) or init's max_len"):
        attention.get("grf").init(jax.random.key(0), num_heads=2, head_dim=3)
    with pytest.raises(ValueError, match="p_halt must be in"):
        attention.get("grf", p_halt=1.0).init(jax.random.key(0), num_heads=1, head_dim=3, max_len=9)
    with pytest.raises(ValueError, match="n_walks must be a positive"):
        attention.get("grf", n_walks=0).init(jax.random.key(0), num_heads=1, head_dim=3, max_len=9)
    mech = attention.get("grf", **SMALL)
    params = mech.init(jax.random.key(0), num_heads=2, head_dim=3, max_len=9)
    q, k, v = (jnp.ones((1, 16, 2, 3)) for _ in range(3))
    with pytest.raises(ValueError, match="walks were made for another"):
        attention.get("grf", **{**SMALL, "grid": (4, 4)}).apply(params, q, k, v)
    bad = {**params["buffers"], "support_tokens_0": params["buffers"]["support_tokens_0"][:1]}
    with pytest.raises(ValueError, match="frozen walks' support has"):
        mech.apply({**params, "buffers": bad}, *(jnp.ones((1, 9, 2, 3)) for _ in range(3)))
    with pytest.raises(ValueError, match="node_chunk must be a positive"):
        attention.get("grf", **{**SMALL, "node_chunk": 0}).apply(
            params, *(jnp.ones((1, 9, 2, 3)) for _ in range(3))
        )
    with pytest.raises(ValueError, match=r"params\['f'\] must have shape"):
        mech.apply({"buffers": params["buffers"]}, *(jnp.ones((1, 9, 2, 3)) for _ in range(3)))
    with pytest.raises(ValueError, match="same N nodes"):
        mech.apply(params, jnp.ones((1, 9, 2, 3)), q[:, :10], v[:, :10])


@pytest.mark.parametrize("name", ["grf", "grf_dense"])
def test_check_refuses_a_knn_k_the_graph_cannot_have(name):
    """The config check's rule (attention.check), before any trace: knn_k an integer >= 1,
    below the graph's nodes (the tokens less a CLS token); grid mode ignores knn_k."""
    knn = {"graph": "knn", "resample": True} if name == "grf" else {"graph": "knn"}
    assert attention.check(name, {**knn, "knn_k": 8}, num_tokens=9) == []
    assert attention.check(name, {**knn, "knn_k": 8}, num_tokens=None) == []
    for k in (9, 10):
        assert attention.check(name, {**knn, "knn_k": k}, num_tokens=9) == [
            f"{name}: knn_k={k} must be below the 9 graph nodes (each node links to its knn_k "
            "nearest others)"
        ]
    found = attention.check(name, {**knn, "knn_k": 8, "cls_token": True}, num_tokens=9)
    assert found == [f"{name}: knn_k=8 must be below the 8 graph nodes (each node links to its "
                     "knn_k nearest others)"]  # fmt: skip
    for k in (0, -1, 2.5, True):
        found = attention.check(name, {**knn, "knn_k": k}, num_tokens=None)
        assert found == [f"{name}: knn_k={k!r} must be an integer >= 1"]
    assert attention.check(name, {"graph": "grid", "knn_k": 0}, num_tokens=9) == []
