"""Laplacian PE and RWSE against float64 references: closed-form spectra of paths, cycles and
stars, dense numpy eigendecompositions, and random-walk return probabilities by hand."""

import numpy as np
import pytest

from graphs.data import batching, positional


def undirected(pairs):
    """edge_index with both directions of each pair (as OGB lists bonds)."""
    pairs = np.asarray(pairs, np.int64).reshape(-1, 2)
    return np.concatenate([pairs.T, pairs[:, ::-1].T], axis=1)


def path(n):
    return undirected([(i, i + 1) for i in range(n - 1)])


def cycle(n):
    return undirected([(i, (i + 1) % n) for i in range(n)])


def star(leaves):
    return undirected([(0, i) for i in range(1, leaves + 1)])


def dense_sym_laplacian(edge_index, n):
    """Reference: I - D^-1/2 A D^-1/2 with explicit loops (0 rows for isolated nodes)."""
    a = np.zeros((n, n))
    for s, t in np.asarray(edge_index).T:
        if s != t:
            a[s, t] = a[t, s] = 1.0
    deg = a.sum(1)
    lap = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if deg[i] > 0 and deg[j] > 0:
                lap[i, j] = (1.0 if i == j else 0.0) - a[i, j] / np.sqrt(deg[i] * deg[j])
    return lap


def check_eigenpairs(lap, vecs, vals, expected_vals):
    """Columns are orthonormal eigenvectors of `lap` with the expected eigenvalues."""
    k = len(expected_vals)
    np.testing.assert_allclose(vals[:k], expected_vals, atol=1e-10)
    np.testing.assert_allclose(lap @ vecs[:, :k], vecs[:, :k] * vals[:k], atol=1e-10)
    np.testing.assert_allclose(vecs[:, :k].T @ vecs[:, :k], np.eye(k), atol=1e-10)


def test_laplacian_matches_the_dense_reference():
    rng = np.random.default_rng(0)
    pairs = rng.integers(0, 7, size=(9, 2))
    edge_index = undirected(pairs)  # may contain self-loops and duplicates
    np.testing.assert_allclose(
        positional.laplacian(edge_index, 8), dense_sym_laplacian(edge_index, 8), atol=1e-12
    )
    lap = positional.laplacian(path(3), 3, "none")
    np.testing.assert_array_equal(lap, [[1, -1, 0], [-1, 2, -1], [0, -1, 1]])
    with pytest.raises(ValueError, match="normalization must be one of"):
        positional.laplacian(path(3), 3, "rw")


def test_path_spectrum_in_closed_form():
    # Normalised Laplacian of the path P_n: eigenvalues 1 - cos(pi j / (n - 1)), j = 0..n-1.
    n, k = 6, 3
    vecs, vals = positional.laplacian_pe(path(n), n, k)
    assert vecs.shape == (n, k) and vals.shape == (k,)
    expected = 1 - np.cos(np.pi * np.arange(1, k + 1) / (n - 1))
    check_eigenpairs(dense_sym_laplacian(path(n), n), vecs, vals, expected)
    # Simple eigenvalues: the vectors are unique up to sign, and the sign convention makes the
    # first entry positive. Eigenvector j of P_n's normalised Laplacian: D^1/2-weighted cosines.
    d = np.array([1, 2, 2, 2, 2, 1.0])
    for j in range(1, k + 1):
        ref = np.sqrt(d) * np.cos(np.pi * j * np.arange(n) / (n - 1))
        ref /= np.linalg.norm(ref)
        np.testing.assert_allclose(vecs[:, j - 1], ref * np.sign(ref[0]), atol=1e-10)


def test_cycle_and_star_spectra_and_eigenspaces():
    # C_6 (2-regular): eigenvalues 1 - cos(2 pi j / 6) = 0, 1/2, 1/2, 3/2, 3/2, 2.
    vecs, vals = positional.laplacian_pe(cycle(6), 6, 5)
    check_eigenpairs(dense_sym_laplacian(cycle(6), 6), vecs, vals, [0.5, 0.5, 1.5, 1.5, 2.0])
    # Star with 4 leaves: normalised spectrum 0, 1 (x3), 2.
    vecs, vals = positional.laplacian_pe(star(4), 5, 4)
    check_eigenpairs(dense_sym_laplacian(star(4), 5), vecs, vals, [1, 1, 1, 2])
    # Combinatorial Laplacian of the star: 0, 1 (x3), 5; GraphGPS's selection keeps the 0.
    vecs, vals = positional.laplacian_pe(star(4), 5, 5, normalization="none", include_trivial=True)
    check_eigenpairs(positional.laplacian(star(4), 5, "none"), vecs, vals, [0, 1, 1, 1, 5])
    np.testing.assert_allclose(vecs[:, 0], np.full(5, 1 / np.sqrt(5)), atol=1e-10)


def test_small_graphs_are_zero_padded_and_isolated_nodes_trivial():
    # n <= k: a path of 3 has 2 non-trivial eigenpairs (1, 2); columns 2..4 are padding.
    vecs, vals = positional.laplacian_pe(path(3), 3, 5)
    assert vecs.shape == (3, 5)
    np.testing.assert_allclose(vals, [1, 2, 0, 0, 0], atol=1e-12)
    np.testing.assert_array_equal(vecs[:, 2:], 0)
    # An isolated node is a component of its own: eigenvalue 0, trivial. Nodes 0-1 joined,
    # node 2 alone: the only non-trivial eigenpair is 2 with (1, -1, 0)/sqrt(2).
    vecs, vals = positional.laplacian_pe(undirected([(0, 1)]), 3, 2)
    np.testing.assert_allclose(vals, [2, 0], atol=1e-12)
    np.testing.assert_allclose(vecs[:, 0], [2**-0.5, -(2**-0.5), 0], atol=1e-12)
    # A single atom (methane's graph) and an edgeless graph: all padding.
    vecs, vals = positional.laplacian_pe(np.zeros((2, 0), np.int64), 1, 3)
    np.testing.assert_array_equal(vecs, np.zeros((1, 3)))
    np.testing.assert_array_equal(vals, np.zeros(3))


def test_rwse_of_a_four_cycle_and_a_star_by_hand():
    rw = positional.random_walk_se(cycle(4), 4, 6)
    # On C_4 a walk is back after t steps with probability 0 (t odd), 1/2 (t even: it is at
    # distance 0 or 2, each with 1/2, for every even t >= 2).
    np.testing.assert_allclose(rw, np.tile([0, 0.5, 0, 0.5, 0, 0.5], (4, 1)), atol=1e-12)
    # Star with 3 leaves: from the centre, back after every even step (prob 1); from a leaf,
    # back after 2 steps with prob 1/3, after 4 steps 1/3 (even t: 1/3 for t >= 2).
    rw = positional.random_walk_se(star(3), 4, 4)
    np.testing.assert_allclose(rw[0], [0, 1, 0, 1], atol=1e-12)
    np.testing.assert_allclose(rw[1:], np.tile([0, 1 / 3, 0, 1 / 3], (3, 1)), atol=1e-12)
    # Isolated nodes have no walk: 0 (GraphGPS's convention).
    rw = positional.random_walk_se(undirected([(0, 1)]), 3, 3)
    np.testing.assert_allclose(rw, [[0, 1, 0], [0, 1, 0], [0, 0, 0]], atol=1e-12)
    assert positional.random_walk_se(path(5), 5).shape == (5, positional.RW_STEPS)


def test_rwse_matches_explicit_matrix_powers():
    rng = np.random.default_rng(1)
    n = 7
    edge_index = rng.integers(0, n, size=(2, 15))  # directed, duplicates, maybe self-loops
    a = np.zeros((n, n))
    for s, t in edge_index.T:
        a[s, t] = 1.0
    p = np.zeros((n, n))
    for i in range(n):
        if a[i].sum():
            p[i] = a[i] / a[i].sum()
    ref = np.stack([np.diag(np.linalg.matrix_power(p, t)) for t in range(1, 9)], axis=1)
    np.testing.assert_allclose(positional.random_walk_se(edge_index, n, 8), ref, atol=1e-12)


def test_encode_equals_the_per_graph_functions():
    graphs = []
    isolated = undirected([(0, 1), (1, 2)])  # node 3 has no edges
    directed = np.array([[0, 1, 2, 2], [1, 2, 0, 1]])  # a directed 3-cycle plus 2 -> 1
    cases = (
        (path(5), 5), (cycle(5), 5), (star(4), 5), (cycle(4), 4), (path(2), 2),
        (isolated, 4), (directed, 3), (np.zeros((2, 0), np.int64), 1),
    )  # fmt: skip
    for edges, n in cases:
        graphs.append(
            {"node_feat": np.zeros((n, 1), np.int64), "edge_index": edges,
             "edge_feat": np.zeros((edges.shape[1], 1), np.int64)}
        )  # fmt: skip
    packed = batching.PackedGraphs(batching.pack(graphs, spd=False))
    enc = positional.encode(packed, lap_k=3, rw_steps=4)
    assert len(enc) == 8 and enc.lap_vec.shape == (29, 3) and enc.rwse.shape == (29, 4)
    assert enc.lap_vec.dtype == np.float32 and set(enc.seconds) >= {"laplacian", "rwse"}
    for g, graph in enumerate(graphs):
        n = len(graph["node_feat"])
        vecs, vals = positional.laplacian_pe(graph["edge_index"], n, 3)
        np.testing.assert_allclose(enc[g]["lap_val"], vals, atol=1e-6)
        # Orthonormal eigenvectors of the dense reference Laplacian, zero padding; columns of
        # simple eigenvalues equal laplacian_pe's (sign convention included). Within repeated
        # eigenvalues (C_5's pairs, the star's triple) the basis may differ.
        got = enc[g]["lap_vec"].astype(np.float64)
        used = int((vals > 0).sum())
        lap = dense_sym_laplacian(graph["edge_index"], n)
        np.testing.assert_allclose(lap @ got, got * enc[g]["lap_val"], atol=1e-5)
        np.testing.assert_allclose(got[:, :used].T @ got[:, :used], np.eye(used), atol=1e-5)
        np.testing.assert_array_equal(got[:, used:], 0)
        spectrum = np.linalg.eigvalsh(lap)
        for j in range(used):
            if np.sum(np.abs(spectrum - vals[j]) < 1e-8) == 1:
                np.testing.assert_allclose(got[:, j], vecs[:, j], atol=1e-5)
        # Undirected graphs go through the spectral route, the directed one through powers;
        # random_walk_se always multiplies matrices: an independent check of the former.
        rw = positional.random_walk_se(graph["edge_index"], n, 4)
        np.testing.assert_allclose(enc[g]["rwse"], rw, atol=1e-6)
    only_rw = positional.encode(graphs, lap_k=None, rw_steps=2)
    assert only_rw.lap_vec is None and set(only_rw[0]) == {"rwse"}


def test_bad_input_is_named():
    with pytest.raises(ValueError, match=r"node ids outside \[0, 3\)"):
        positional.laplacian_pe(np.array([[0], [3]]), 3)
    with pytest.raises(ValueError, match=r"edge_index must be \[2, e\]"):
        positional.random_walk_se(np.zeros((3, 2), np.int64), 3)
    with pytest.raises(ValueError, match="k must be >= 1"):
        positional.laplacian_pe(path(3), 3, 0)
