"""Packed graph datasets, shortest paths and padded batches (numpy only: no RDKit needed)."""

import itertools
import pickle

import numpy as np
import pytest

from attnbench.data import pipeline
from graphs.data import batching


def random_graph(rng, n, *, p=0.3, directed=False):
    """A random graph dict with n nodes, OGB-shaped integer features and a scalar target."""
    pairs = [(i, j) for i, j in itertools.combinations(range(n), 2) if rng.random() < p]
    if directed:
        edges = [(i, j) if rng.random() < 0.5 else (j, i) for i, j in pairs]
    else:
        edges = [e for i, j in pairs for e in ((i, j), (j, i))]
    edge_index = np.array(edges, np.int64).reshape(-1, 2).T
    return {
        "node_feat": rng.integers(0, 119, (n, 9)),
        "edge_index": edge_index,
        "edge_feat": rng.integers(0, 5, (edge_index.shape[1], 3)),
        "target": np.float32(rng.normal()),
    }


def floyd_warshall(n, edge_index):
    """Reference hop distances with explicit loops (-1: unreachable)."""
    inf = float("inf")
    d = [[0 if i == j else inf for j in range(n)] for i in range(n)]
    for i, j in zip(*np.asarray(edge_index).tolist(), strict=True):
        d[i][j] = min(d[i][j], 1)
    for k in range(n):
        for i in range(n):
            for j in range(n):
                if d[i][k] + d[k][j] < d[i][j]:
                    d[i][j] = d[i][k] + d[k][j]
    return np.array([[-1 if x == inf else int(x) for x in row] for row in d])


def test_shortest_paths_of_a_path_and_a_lone_node():
    # 0 - 1 - 2 - 3, and node 4 alone.
    edges = np.array([[0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2]])
    spd = batching.shortest_path_distances(batching.adjacency(edges, 5))
    assert spd.dtype == np.int32
    assert spd.tolist() == [
        [0, 1, 2, 3, -1],
        [1, 0, 1, 2, -1],
        [2, 1, 0, 1, -1],
        [3, 2, 1, 0, -1],
        [-1, -1, -1, -1, 0],
    ]


@pytest.mark.parametrize("directed", [False, True])
def test_shortest_paths_match_floyd_warshall(directed):
    rng = np.random.default_rng(0)
    graphs = [random_graph(rng, int(n), p=0.15, directed=directed) for n in rng.integers(1, 14, 30)]
    for g in graphs:
        n = len(g["node_feat"])
        got = batching.shortest_path_distances(batching.adjacency(g["edge_index"], n))
        np.testing.assert_array_equal(got, floyd_warshall(n, g["edge_index"]))
    # Batched over graphs of one padded size, with the padding masked out.
    size = 13
    adj = np.zeros((len(graphs), size, size), bool)
    mask = np.zeros((len(graphs), size), bool)
    for b, g in enumerate(graphs):
        n = len(g["node_feat"])
        adj[b, :n, :n] = batching.adjacency(g["edge_index"], n)
        mask[b, :n] = True
    batched = batching.shortest_path_distances(adj, mask)
    for b, g in enumerate(graphs):
        n = len(g["node_feat"])
        np.testing.assert_array_equal(batched[b, :n, :n], floyd_warshall(n, g["edge_index"]))
        assert (batched[b, n:, :] == -1).all() and (batched[b, :, n:] == -1).all()


def _dataset(seed=0, count=40, sizes=(3, 20)):
    rng = np.random.default_rng(seed)
    graphs = [random_graph(rng, int(n)) for n in rng.integers(*sizes, count)]
    target = np.array([g.pop("target") for g in graphs], np.float32)
    return graphs, target


def test_pack_round_trip():
    graphs, target = _dataset()
    arrays = batching.pack(graphs, target=target)
    assert arrays["node_feat"].dtype == np.uint8 and arrays["spd"].dtype == np.int8
    ds = batching.PackedGraphs(arrays)
    assert len(ds) == len(graphs)
    np.testing.assert_array_equal(ds.num_nodes, [len(g["node_feat"]) for g in graphs])
    for i, g in enumerate(graphs):
        got = ds[i]
        assert set(got) == {"node_feat", "edge_index", "edge_feat", "spd", "target"}
        for k in ("node_feat", "edge_index", "edge_feat"):
            np.testing.assert_array_equal(got[k], g[k])
        n = len(g["node_feat"])
        np.testing.assert_array_equal(got["spd"], floyd_warshall(n, g["edge_index"]))
        assert got["target"] == target[i]
    assert "spd" not in batching.PackedGraphs(batching.pack(graphs, spd=False))[0]
    # grain's worker processes receive the source and the collate pickled.
    copy = pickle.loads(pickle.dumps(ds))
    np.testing.assert_array_equal(copy[3]["spd"], ds[3]["spd"])
    assert pickle.loads(pickle.dumps(batching.GraphCollate())) == batching.GraphCollate()


def test_pack_and_packed_graphs_reject_bad_input():
    graphs, target = _dataset(count=3)
    with pytest.raises(ValueError, match="field 'target': 2 rows for 3 graphs"):
        batching.pack(graphs, target=target[:2])
    bad = [dict(g) for g in graphs]
    bad[1]["edge_index"] = bad[1]["edge_index"] + 100
    with pytest.raises(ValueError, match=r"graph 1: edge_index has node ids outside"):
        batching.pack(bad)
    arrays = batching.pack(graphs, target=target)
    arrays["node_ptr"] = arrays["node_ptr"][:-1]
    with pytest.raises(ValueError, match="x.npz: inconsistent arrays"):
        batching.PackedGraphs(arrays, name="x.npz")
    with pytest.raises(ValueError, match=r"missing arrays \['edge_ptr'\]"):
        batching.PackedGraphs({k: v for k, v in arrays.items() if k != "edge_ptr"})


def test_collate_pads_to_buckets():
    graphs, target = _dataset()
    ds = batching.PackedGraphs(batching.pack(graphs, target=target))
    collate = batching.GraphCollate(node_buckets=(8, 16, 24), edge_buckets=(64, 128, 512))
    examples = [ds[i] for i in range(10)]
    batch = collate(examples)
    n = np.array([len(e["node_feat"]) for e in examples])
    e = np.array([e["edge_index"].shape[1] for e in examples])
    size_n = pipeline.pad_to_bucket(n.max(), (8, 16, 24))
    size_e = pipeline.pad_to_bucket(e.max(), (64, 128, 512))
    assert batch["nodes"].shape == (10, size_n, 9) and batch["nodes"].dtype == np.int32
    assert batch["edges"].shape == (10, size_e, 3) and batch["edge_index"].shape == (10, size_e, 2)
    assert batch["adjacency"].shape == batch["spd"].shape == (10, size_n, size_n)
    assert batch["target"].dtype == np.float32
    np.testing.assert_array_equal(batch["target"], target[:10])
    np.testing.assert_array_equal(batch["node_mask"].sum(1), n)
    np.testing.assert_array_equal(batch["edge_mask"].sum(1), e)
    for b, ex in enumerate(examples):
        k, m = n[b], e[b]
        np.testing.assert_array_equal(batch["nodes"][b, :k], ex["node_feat"])
        assert (batch["nodes"][b, k:] == 0).all()
        np.testing.assert_array_equal(batch["edge_index"][b, :m], ex["edge_index"].T)
        np.testing.assert_array_equal(batch["edges"][b, :m], ex["edge_feat"])
        assert (batch["edge_index"][b, m:] == 0).all() and (batch["edges"][b, m:] == 0).all()
        adj = np.zeros((size_n, size_n), bool)
        adj[:k, :k] = batching.adjacency(ex["edge_index"], k)
        np.testing.assert_array_equal(batch["adjacency"][b], adj)
        np.testing.assert_array_equal(batch["spd"][b, :k, :k], ex["spd"])
        assert (batch["spd"][b, k:] == -1).all() and (batch["spd"][b, :, k:] == -1).all()
    # The cached distances equal the search run on the padded batch.
    np.testing.assert_array_equal(
        batch["spd"], batching.shortest_path_distances(batch["adjacency"], batch["node_mask"])
    )
    sparse = batching.GraphCollate(dense=False)(examples)
    assert "adjacency" not in sparse and "spd" not in sparse


def test_collate_takes_unpacked_graphs():
    # Graph dicts straight from a featuriser (with its `num_nodes`, which is not stacked),
    # including one without edges.
    rng = np.random.default_rng(1)
    graphs = [dict(random_graph(rng, n), num_nodes=n) for n in (1, 4, 6)]
    graphs[0]["edge_index"], graphs[0]["edge_feat"] = np.zeros((2, 0), int), np.zeros((0, 3), int)
    batch = batching.GraphCollate(node_buckets=(8,), edge_buckets=(32,))(graphs)
    assert "num_nodes" not in batch and "spd" not in batch
    assert batch["nodes"].shape == (3, 8, 9) and batch["edge_mask"][0].sum() == 0
    assert batch["target"].shape == (3,)
    packed = batching.PackedGraphs(batching.pack(graphs))
    np.testing.assert_array_equal(packed[0]["spd"], [[0]])
    with pytest.raises(ValueError, match="graphs disagree on feature shapes"):
        batching.pack([graphs[1], dict(graphs[2], edge_feat=graphs[2]["edge_feat"][:, :2])])


def test_collate_names_a_graph_above_the_largest_bucket():
    graphs, target = _dataset(count=4, sizes=(30, 31))
    ds = batching.PackedGraphs(batching.pack(graphs, target=target))
    with pytest.raises(ValueError, match="a graph with 30 nodes: .*pass larger nodes buckets"):
        batching.GraphCollate(node_buckets=(8, 16))([ds[0]])


def test_train_and_eval_iterators_with_bounded_shapes():
    import jax
    import jax.numpy as jnp

    graphs, target = _dataset(count=50, sizes=(5, 16))
    ds = batching.PackedGraphs(batching.pack(graphs, target=target))
    collate = batching.GraphCollate(node_buckets=(8, 16), edge_buckets=(64, 128, 256))
    traces = []

    @jax.jit
    def masked_mean(batch):
        traces.append(batch["nodes"].shape)  # runs once per compilation
        w = batch["node_mask"][..., None].astype(jnp.float32)
        return (batch["nodes"] * w).sum((1, 2)) / jnp.maximum(w.sum((1, 2)), 1.0)

    it = pipeline.train_iterator(ds, batch_size=8, seed=0, collate=collate, prefetch=0)
    shapes = set()
    for _ in range(12):
        batch = next(it)
        shapes.add((batch["nodes"].shape, batch["edges"].shape))
        assert batch["weight"].shape == (8,)
        masked_mean({k: batch[k] for k in ("nodes", "node_mask")})
    assert len(traces) == len({s[0] for s in shapes}) <= 2
    seen = 0
    for batch in pipeline.eval_batches(ds, batch_size=16, collate=collate):
        seen += int(batch["weight"].sum())
        assert 0.0 <= batching.padding_waste(batch) < 1.0
    assert seen == len(ds)


def test_padding_waste():
    batch = {"node_mask": np.array([[1, 1, 0, 0], [1, 1, 1, 1]], bool)}
    assert batching.padding_waste(batch) == 0.25
    batch["weight"] = np.array([1.0, 0.0])  # an eval filler row counts as padding
    assert batching.padding_waste(batch) == 0.75


def test_large_graphs_use_scipy_search_with_the_same_distances():
    """Graphs above `SCIPY_FROM` nodes get scipy's breadth-first search: the same distances as
    the batched matrix-product search, one-way edges and disconnected parts included."""
    rng = np.random.default_rng(0)
    n = batching.SCIPY_FROM + 6
    chain = np.stack([np.arange(n - 1), np.arange(1, n)])  # one-way path
    extra = rng.integers(0, n - 10, (2, 12))  # random one-way chords, last 10 nodes apart
    edges = np.concatenate([chain[:, : n - 11], extra], axis=1)
    ours = batching.graph_distances(edges, n)
    adj = np.zeros((n, n), bool)
    adj[edges[0], edges[1]] = True
    np.testing.assert_array_equal(ours, batching.shortest_path_distances(adj))
    # the last 10 nodes have no edge: unreachable both ways, 0 to themselves
    assert (ours[: n - 10, n - 10 :] == batching.UNREACHABLE).all()
    assert (ours[n - 10 :, : n - 10] == batching.UNREACHABLE).all()
    assert (np.diag(ours) == 0).all() and ours.max() >= 10  # long one-way paths
    graph = {"node_feat": np.zeros((n, 1), int), "edge_index": edges,
             "edge_feat": np.zeros((edges.shape[1], 1), int)}  # fmt: skip
    packed = batching.PackedGraphs(batching.pack([graph]))
    np.testing.assert_array_equal(packed[0]["spd"], ours)


def _with_node_fields(graphs, rng):
    """Copies of `graphs` with per-node fields: a [n, 3] float `lap_vec`, a [n] int `tag`."""
    return [
        dict(
            g,
            lap_vec=rng.normal(size=(len(g["node_feat"]), 3)).astype(np.float32),
            tag=np.arange(len(g["node_feat"])) * 10 + i,
        )
        for i, g in enumerate(graphs)
    ]


def test_node_fields_pack_serve_and_collate(tmp_path):
    from attnbench.data import cache

    graphs, target = _dataset(count=12, sizes=(2, 15))
    graphs = _with_node_fields(graphs, np.random.default_rng(3))
    # `lap_vec` is a known NODE_FIELDS name (read without asking); `tag` is named explicitly.
    auto = batching.pack(graphs, target=target)
    assert "lap_vec" in auto and "tag" not in auto
    arrays = batching.pack(graphs, node_fields=("lap_vec", "tag"), target=target)
    assert arrays["lap_vec"].shape == (sum(len(g["node_feat"]) for g in graphs), 3)
    cache.save_arrays(tmp_path / "d.npz", arrays)  # survives the .npz round trip
    ds = batching.PackedGraphs(cache.load_arrays(tmp_path / "d.npz"))
    assert ds.node_fields == ["lap_vec", "tag"] and ds.fields == ["target"]
    for i, g in enumerate(graphs):
        np.testing.assert_array_equal(ds[i]["lap_vec"], g["lap_vec"])
        np.testing.assert_array_equal(ds[i]["tag"], g["tag"])
        assert ds[i]["target"] == target[i]
    # The same arrays given concatenated, as `positional.Encodings` holds them.
    flat = batching.pack(graphs, node_fields={"lap_vec": arrays["lap_vec"]})
    np.testing.assert_array_equal(batching.PackedGraphs(flat)[5]["lap_vec"], graphs[5]["lap_vec"])

    collate = batching.GraphCollate(node_buckets=(8, 16), edge_buckets=(64, 256),
                                    node_fields=("lap_vec", "tag"))  # fmt: skip
    examples = [ds[i] for i in range(6)]
    batch = collate(examples)
    size_n = batch["nodes"].shape[1]
    assert batch["lap_vec"].shape == (6, size_n, 3) and batch["lap_vec"].dtype == np.float32
    assert batch["tag"].shape == (6, size_n) and batch["target"].shape == (6,)
    for b, ex in enumerate(examples):
        n = len(ex["node_feat"])
        for b_row, node in itertools.product([b], range(size_n)):
            want = ex["lap_vec"][node] if node < n else np.zeros(3, np.float32)
            np.testing.assert_array_equal(batch["lap_vec"][b_row, node], want)
            assert batch["tag"][b_row, node] == (ex["tag"][node] if node < n else 0)
    # A collate not told about `tag` stacks it as a per-graph field: fails on ragged rows.
    with pytest.raises(ValueError):
        batching.GraphCollate(node_buckets=(8, 16), edge_buckets=(64, 256))(examples)


def test_node_fields_reject_bad_input():
    graphs, _ = _dataset(count=3, sizes=(3, 6))
    graphs = _with_node_fields(graphs, np.random.default_rng(0))
    short = [dict(g) for g in graphs]
    short[2]["lap_vec"] = short[2]["lap_vec"][:-1]
    with pytest.raises(ValueError, match=r"graph 2: node field 'lap_vec' has shape"):
        batching.pack(short)
    missing = [dict(g) for g in graphs]
    del missing[1]["lap_vec"]
    with pytest.raises(ValueError, match="graph 1 has no node field 'lap_vec'"):
        batching.pack(missing)
    wide = [dict(g) for g in graphs]
    wide[0]["lap_vec"] = np.zeros((len(wide[0]["node_feat"]), 4), np.float32)
    with pytest.raises(ValueError, match="disagree on node field 'lap_vec'"):
        batching.pack(wide)
    with pytest.raises(ValueError, match="node field 'rwse': 2 rows for"):
        batching.pack(graphs, node_fields={"rwse": np.zeros((2, 5))})
    arrays = batching.pack(graphs)
    arrays["lap_vec"] = arrays["lap_vec"][:-1]
    with pytest.raises(ValueError, match="node field lap_vec has"):
        batching.PackedGraphs(arrays)
