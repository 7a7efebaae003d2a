"""GRF's frozen-walk support bucketed by row width (`grf_walks.support_buckets`): the buckets
hold exactly `walk_support`'s rows, their weights are the same features, and the bucketed scan
(custom VJP) gives the single-width path's and the float64 numpy reference's outputs, and the
same gradients, with key padding and a CLS token."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attention
from attention import grf, grf_walks
from tests.attention.ref_grf import mask_from_walks, masked_linear_reference

HP = dict(grid=(5, 5), n_walks=6, max_walk_len=4, p_halt=0.2, f_decay=0.3)


def _walks(seed=0, heads=2):
    params = attention.get("grf", **HP).init(jax.random.key(seed), num_heads=heads, head_dim=3)
    return (
        params,
        np.asarray(params["buffers"]["walk_nodes"]),
        np.asarray(params["buffers"]["walk_loads"]),
    )


def test_buckets_hold_each_support_row_once_and_the_slots_point_into_them():
    params, nodes, loads = _walks()
    old_slots, old_tokens = grf_walks.walk_support(nodes, loads)
    h, n, width = old_tokens.shape
    slots, buckets = grf_walks.support_buckets(nodes, loads, max_buckets=3)
    assert 2 <= len(buckets) <= 3 and slots.dtype == np.int32 and slots.shape == nodes.shape
    widths = [t.shape[1] for _, t in buckets]
    assert widths == sorted(widths) and widths[-1] == width
    rows = np.concatenate([r for r, _ in buckets])
    np.testing.assert_array_equal(np.sort(rows), np.arange(h * n))  # every row once
    counts = {}
    for h_, i, w, t in np.ndindex(nodes.shape):
        if loads[h_, i, w, t] != 0:
            counts.setdefault(h_ * n + nodes[h_, i, w, t], set()).add(i)
    offsets = np.cumsum([0] + [t.size for _, t in buckets])
    for r, t in buckets:
        for j, row in enumerate(r):
            live = len(counts[row])
            np.testing.assert_array_equal(t[j, :live], sorted(counts[row]))
            assert np.all(t[j, live:] == 0)
    flat = np.concatenate([t.reshape(-1) for _, t in buckets])
    row_of = np.concatenate([np.repeat(r, t.shape[1]) for r, t in buckets])
    for h_, i, w, t in np.ndindex(nodes.shape):
        if loads[h_, i, w, t] == 0:
            assert slots[h_, i, w, t] == offsets[-1]
        else:
            at = slots[h_, i, w, t]
            assert flat[at] == i and row_of[at] == h_ * n + nodes[h_, i, w, t]
    # init stores the default bucketing
    assert params["buffers"]["walk_slots"].shape == nodes.shape
    assert "support_rows_0" in params["buffers"] and "support_tokens" not in params["buffers"]


def test_bucket_widths_minimise_the_squared_widths():
    counts = np.array([1, 1, 2, 5, 5, 9])
    assert grf_walks._bucket_widths(counts, 1) == [9]
    assert grf_walks._bucket_widths(counts, 2) == [5, 9]
    assert grf_walks._bucket_widths(counts, 3) == [2, 5, 9]
    assert grf_walks._bucket_widths(counts, 9) == [1, 2, 5, 9]  # no more buckets than counts


def test_bucket_weights_are_the_single_width_weights():
    _, nodes, loads = _walks(1)
    f = np.random.default_rng(0).normal(size=(2, HP["max_walk_len"] + 1))
    old_slots, old_tokens = grf_walks.walk_support(nodes, loads)
    slots, buckets = grf_walks.support_buckets(nodes, loads)
    with jax.enable_x64(True):
        loads64 = jnp.asarray(loads, jnp.float64)
        old = np.asarray(
            grf_walks.support_weights(jnp.asarray(old_slots), loads64, f, old_tokens.shape[-1])
        )
        new = grf_walks.bucket_weights(
            jnp.asarray(slots), loads64, jnp.asarray(f), [t.shape for _, t in buckets]
        )
    old = old.reshape(-1, old.shape[-1])
    for (rows, tokens), w in zip(buckets, new, strict=True):
        c = tokens.shape[1]
        np.testing.assert_array_equal(np.asarray(w), old[rows, :c])
        assert np.all(old[rows, c:] == 0)


def _path(buffers, f, q, k, v, key_valid, cls_token, dense):
    n_tokens = q.shape[1]
    h, n_nodes = buffers["walk_nodes"].shape[:2]
    walk_shape = (h, n_nodes, HP["n_walks"], HP["max_walk_len"] + 1)
    assert n_tokens == n_nodes + int(cls_token)
    loads = jnp.asarray(buffers["walk_loads"]).astype(q.dtype)
    return grf._frozen_support_attention(
        buffers, q, k, v, loads, f, key_valid, walk_shape, cls_token, 3, dense=dense
    )


@pytest.mark.parametrize(
    "cls_token,other",
    [  # the fast tier: CLS and padding against the explicit estimate; the rest `make test-slow`
        (True, "explicit"),
        pytest.param(True, "single", marks=pytest.mark.slow),
        pytest.param(False, "single", marks=pytest.mark.slow),
    ],
    ids=["cls_explicit", "cls_single", "plain_single"],
)
def test_bucketed_path_equals_single_width_path_and_reference(cls_token, other):
    """The bucketed scan (custom VJP): forward against the float64 numpy reference (mask from
    the walks); forward and gradients (q, k, v, f), under jit, against the same walks' support
    in one width (`walk_support`, the path before bucketing) or against the explicit N x N
    estimate built from the buckets (differentiated by JAX), with key padding."""
    params, nodes, loads = _walks(2)
    old_slots, old_tokens = grf_walks.walk_support(nodes, loads)
    slots, buckets = grf_walks.support_buckets(nodes, loads, max_buckets=2)  # 2: fast compile
    assert len(buckets) == 2
    bucketed = {"walk_nodes": nodes, "walk_loads": loads, "walk_slots": jnp.asarray(slots)}
    for b, (rows, tokens) in enumerate(buckets):
        bucketed[f"support_rows_{b}"] = jnp.asarray(rows)
        bucketed[f"support_tokens_{b}"] = jnp.asarray(tokens)
    single = {
        "walk_nodes": nodes,
        "walk_loads": loads,
        "walk_slots": jnp.asarray(old_slots),
        "support_tokens": jnp.asarray(old_tokens),
    }
    n = nodes.shape[1] + int(cls_token)
    rng = np.random.default_rng(3)
    q, k = (rng.normal(size=(2, n, 2, 3)) for _ in range(2))
    v = rng.normal(size=(2, n, 2, 2))
    pad = np.ones((2, n), bool)
    pad[0, [0, 7]] = False
    pad[1, -2:] = False
    cot = rng.normal(size=v.shape)
    f = rng.normal(size=(2, HP["max_walk_len"] + 1))
    with jax.enable_x64(True):
        args = [jnp.asarray(x) for x in (f, q, k, v)]
        valid = jnp.asarray(pad)

        def run(buffers, dense):
            def loss(f, q, k, v):
                out = _path(buffers, f, q, k, v, valid, cls_token, dense)
                return (out * cot).sum(), out

            return jax.jit(jax.value_and_grad(loss, argnums=(0, 1, 2, 3), has_aux=True))(*args)

        (_, got), got_g = run(bucketed, False)
        (_, want), want_g = run(single, False) if other == "single" else run(bucketed, True)
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-13)
    for a, b in zip(got_g, want_g, strict=True):
        # atol: entries that cancel to ~0 differ by ~1e-12 between summation orders
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10 * max(1.0, np.abs(b).max()))
    graph_mask = mask_from_walks(nodes, loads.astype(np.float64), f)
    mask4d = np.broadcast_to(pad[:, None, None, :], (2, 2, n, n))
    expected = masked_linear_reference(graph_mask, q, k, v, mask4d, cls_token)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-10, atol=1e-12)
    assert np.abs(np.asarray(got_g[0])).min() > 0  # every f_t reaches the output
