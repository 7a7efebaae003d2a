"""Graph datasets packed in flat arrays, shortest-path distances, and padded, size-bucketed
batches for jit (numpy only).

A graph (one example) is a dict
    node_feat   [n, F]  int    node features (OGB's 9 atom features for molecules)
    edge_index  [2, e]  int    directed edges (row 0 source, row 1 target), node ids in [0, n)
    edge_feat   [e, Fe] int    edge features (OGB's 3 bond features)
    spd         [n, n]  int    optional: hop distances, -1 where unreachable
    <node field> [n, ...] optional per-node arrays (`NODE_FIELDS`: positional encodings
                       such as `lap_vec [n, k]`, `lap_val [n, k]`, `rwse [n, steps]`, which
                       `graphs.backbones.gps.add_encodings` adds; any other name through
                       `node_fields=`)
plus per-graph fields (`target`, ...), as `graphs.data.featurize.smiles_to_graph` returns it (with
its extra `num_nodes`, which packing ignores: it is `len(node_feat)`).

`PackedGraphs` holds a dataset as CSR-style arrays (every graph's nodes, edges and distance
matrices concatenated, with offsets) and serves graphs one at a time: grain's random-access
protocol, so it is a `attnbench.tasks.Data` split. `pack` builds it and computes each graph's
shortest-path distances once (the per-graph cache of the dense structure attention models
need; a dataset stores them with it). Per-node fields are stored like `node_feat` (rows
concatenated, sliced by `node_ptr`); their names are kept in the string array `node_fields`,
so a `PackedGraphs` read back from an `.npz` knows them.

`GraphCollate` turns a list of graphs into one padded batch
(`attnbench.data.pipeline.train_iterator(..., collate=GraphCollate())`,
`attnbench.data.pipeline.eval_batches` likewise). Each batch is padded to the smallest node
bucket >= its largest graph and the smallest edge bucket >= its largest edge count
(`attnbench.data.pipeline.pad_to_bucket`), so jit compiles once per (node, edge) bucket pair that
occurs: on MOSES molecules (13-26 atoms) batches of 128 hit one or two pairs. The batch:
    nodes      [B, N, F]  int32  node features, 0 in padding slots
    node_mask  [B, N]     bool
    edges      [B, E, Fe] int32  edge features, 0 in padding slots
    edge_index [B, E, 2]  int32  (source, target) per edge, (0, 0) in padding slots
    edge_mask  [B, E]     bool
    adjacency  [B, N, N]  bool   adjacency[b, i, j]: an edge i -> j    (dense=True)
    spd        [B, N, N]  int32  hop distance i -> j; -1 where unreachable or padding
                                 (dense=True and the graphs carry `spd`)
    <node field> [B, N, ...]     every per-node field the graphs carry whose name is in the
                                 collate's `node_fields` (default `NODE_FIELDS`), 0 in padding
                                 slots, in the field's own dtype
    <field>    [B, ...]          every other per-graph field, stacked (`target`, ...)

Why both an edge list and dense N x N arrays: message passing and Graph-Bridge's edge tokens
read the list, attention models (Graphormer's spatial bias, EGT's edge channels, GRF/GFSA
masks) read dense per-graph N x N structure; for molecules (N <= ~40) the dense arrays are
small. Everything is built with vectorised numpy per batch: no per-graph Python loop beyond
gathering the examples' arrays, and nothing per graph inside jitted code.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from attnbench.data import pipeline

__all__ = [
    "GRAPH_FIELDS",
    "NODE_FIELDS",
    "NODE_BUCKETS",
    "EDGE_BUCKETS",
    "UNREACHABLE",
    "adjacency",
    "shortest_path_distances",
    "graph_distances",
    "pack",
    "PackedGraphs",
    "GraphCollate",
    "padding_waste",
]

GRAPH_FIELDS = ("node_feat", "edge_index", "edge_feat", "spd", "num_nodes")
# Per-node arrays a graph dict may carry (positional / structural encodings,
# `graphs.backbones.gps`): packed and collated without being named; other per-node names go
# through `node_fields=`.
NODE_FIELDS = ("lap_vec", "lap_val", "rwse")
NODE_FIELDS_KEY = "node_fields"  # the packed array listing a dataset's per-node field names
UNREACHABLE = -1  # spd of a pair with no path between them (and of padding slots in a batch)

# Sizes a batch is padded up to: steps of 4 nodes up to 64 (molecules: <= 15% of a bucket),
# then 16 up to 256 (peptides), 64 up to 1024, 256 up to 4096. Edge buckets are twice the node
# buckets (a molecule has ~1.1 bonds per atom, each bond 2 directed edges).
NODE_BUCKETS = (
    *range(4, 65, 4),
    *range(80, 257, 16),
    *range(320, 1025, 64),
    *range(1280, 4097, 256),
)
EDGE_BUCKETS = tuple(2 * n for n in NODE_BUCKETS)


def adjacency(edge_index: np.ndarray, num_nodes: int) -> np.ndarray:
    """Boolean `[n, n]` adjacency of one graph: `[i, j]` is True for an edge i -> j."""
    adj = np.zeros((num_nodes, num_nodes), bool)
    adj[edge_index[0], edge_index[1]] = True
    return adj


def shortest_path_distances(adj: np.ndarray, node_mask: np.ndarray | None = None) -> np.ndarray:
    """Hop distances `[..., N, N]` (int32) of boolean adjacency matrices `[..., N, N]`, by a
    breadth-first search run on all sources and graphs at once (one matrix product per hop);
    `UNREACHABLE` (-1) where there is no path, and for every pair with a padding node when
    `node_mask` `[..., N]` is given (a padded batch). Edges are followed in their direction."""
    adj = np.asarray(adj, bool)
    n = adj.shape[-1]
    step = adj.astype(np.float32)
    reached = np.broadcast_to(np.eye(n, dtype=bool), adj.shape).copy()
    dist = np.where(reached, 0, UNREACHABLE).astype(np.int32)
    frontier = reached.copy()
    for hops in range(1, n):
        frontier = (np.matmul(frontier.astype(np.float32), step) > 0) & ~reached
        if not frontier.any():
            break
        dist[frontier] = hops
        reached |= frontier
    if node_mask is not None:
        mask = np.asarray(node_mask, bool)
        dist[~(mask[..., :, None] & mask[..., None, :])] = UNREACHABLE
    return dist


def _smallest_int(a: np.ndarray, *, signed: bool = False) -> np.ndarray:
    """`a` in the smallest of uint8 / int16 / int32 (int8 first when `signed` or negative)
    that holds its values: storage only, batches are int32."""
    lo, hi = (int(a.min()), int(a.max())) if a.size else (0, 0)
    first = np.int8 if signed or lo < 0 else np.uint8
    for dtype in (first, np.int16, np.int32):
        info = np.iinfo(dtype)
        if info.min <= lo and hi <= info.max:
            return a.astype(dtype)
    return a.astype(np.int64)


# Graphs above this many nodes get a per-graph breadth-first search in C (scipy) instead of
# the batched matrix products, whose cost grows with n^3 x diameter: on peptides (~150 atoms,
# diameters near 100) the difference between seconds and hours.
SCIPY_FROM = 64


def graph_distances(edge_index: np.ndarray, num_nodes: int) -> np.ndarray:
    """Hop distances `[n, n]` (int32) of one graph by scipy's breadth-first search from every
    source (edges followed in their direction, `UNREACHABLE` where there is no path): the same
    result as `shortest_path_distances`, for large graphs."""
    from scipy.sparse import csgraph, csr_matrix  # scipy ships with jax

    src, dst = np.asarray(edge_index)
    adj = csr_matrix((np.ones(len(src), np.int8), (src, dst)), shape=(num_nodes, num_nodes))
    dist = csgraph.shortest_path(adj, method="D", directed=True, unweighted=True)
    out = np.full((num_nodes, num_nodes), UNREACHABLE, np.int32)
    finite = np.isfinite(dist)
    out[finite] = dist[finite].astype(np.int32)
    return out


def _spd_by_size(graphs: Sequence[Mapping]) -> list[np.ndarray]:
    """Every graph's `[n, n]` hop distances: graphs of one size up to `SCIPY_FROM` nodes share
    one batched search (a handful of calls per molecule dataset), larger ones go one by one
    through `graph_distances`."""
    sizes = np.array([len(g["node_feat"]) for g in graphs])
    out: list[np.ndarray] = [None] * len(graphs)
    for n in np.unique(sizes[sizes <= SCIPY_FROM]):
        idx = np.flatnonzero(sizes == n)
        adj = np.zeros((len(idx), n, n), bool)
        for k, i in enumerate(idx):
            src, dst = np.asarray(graphs[i]["edge_index"])
            adj[k, src, dst] = True
        for k, d in zip(idx, shortest_path_distances(adj), strict=True):
            out[k] = d
    for i in np.flatnonzero(sizes > SCIPY_FROM):
        out[i] = graph_distances(graphs[i]["edge_index"], int(sizes[i]))
    return out


def pack(
    graphs: Sequence[Mapping],
    *,
    spd: bool = True,
    node_fields: Sequence[str] | Mapping[str, np.ndarray] | None = None,
    **fields: np.ndarray,
) -> dict:
    """The arrays of a `PackedGraphs` holding `graphs` (dicts as in the module docstring),
    with their shortest-path distances when `spd` (computed here, once per graph), their
    per-node fields and the per-graph `fields` (`target=[G, ...]`, ...), each with one row per
    graph. Only the graph arrays and per-node fields are read from the dicts; per-graph values
    come in through `fields`.

    `node_fields`: None (the `NODE_FIELDS` names the first graph carries), names of per-node
    arrays `[n, ...]` every graph dict carries, or a mapping name -> `[sum n, ...]` (rows
    concatenated in graph order, e.g. `graphs.data.positional.Encodings.rwse`)."""
    if not graphs:
        raise ValueError("pack needs at least one graph")
    for name, values in fields.items():
        if name in GRAPH_FIELDS or name in PackedGraphs.REQUIRED or name == NODE_FIELDS_KEY:
            raise ValueError(f"field {name!r} is a graph array, not a per-graph field")
        if len(values) != len(graphs):
            raise ValueError(f"field {name!r}: {len(values)} rows for {len(graphs)} graphs")
    for i, g in enumerate(graphs):
        n, e = len(g["node_feat"]), np.shape(g["edge_index"])
        if len(e) != 2 or e[0] != 2 or len(g["edge_feat"]) != e[1]:
            raise ValueError(
                f"graph {i}: edge_index must be [2, e] with e rows of edge_feat, got "
                f"{list(e)} and {len(g['edge_feat'])} rows"
            )
        if e[1] and not (0 <= np.min(g["edge_index"]) and np.max(g["edge_index"]) < n):
            raise ValueError(f"graph {i}: edge_index has node ids outside [0, {n})")
    node_counts = np.array([len(g["node_feat"]) for g in graphs])
    edge_counts = np.array([np.shape(g["edge_index"])[1] for g in graphs])
    feat_width = {np.shape(g["node_feat"])[1:] for g in graphs}
    edge_width = {np.shape(g["edge_feat"])[1:] for g in graphs}
    if len(feat_width) > 1 or len(edge_width) > 1:
        raise ValueError(
            f"graphs disagree on feature shapes: nodes {feat_width}, edges {edge_width} "
            "(a graph without edges needs edge_feat of shape [0, Fe])"
        )
    per_node = _node_fields(graphs, node_counts, node_fields)
    clash = sorted(set(per_node) & (set(fields) | set(GRAPH_FIELDS) | set(PackedGraphs.REQUIRED)))
    if clash:
        raise ValueError(f"node fields {clash} clash with graph arrays or per-graph fields")
    arrays = {
        "node_feat": _smallest_int(np.concatenate([g["node_feat"] for g in graphs])),
        "node_ptr": np.concatenate([[0], np.cumsum(node_counts)]).astype(np.int64),
        "edge_index": _smallest_int(np.concatenate([g["edge_index"] for g in graphs], axis=1)),
        "edge_feat": _smallest_int(np.concatenate([g["edge_feat"] for g in graphs])),
        "edge_ptr": np.concatenate([[0], np.cumsum(edge_counts)]).astype(np.int64),
    }
    if spd:
        arrays["spd"] = _smallest_int(
            np.concatenate([d.ravel() for d in _spd_by_size(graphs)]), signed=True
        )
    if per_node:
        arrays.update(per_node)
        arrays[NODE_FIELDS_KEY] = np.array(list(per_node), dtype=str)
    for name, values in fields.items():
        arrays[name] = np.asarray(values)
    return arrays


def _node_fields(graphs, node_counts: np.ndarray, node_fields) -> dict[str, np.ndarray]:
    """`pack`'s per-node fields, name -> `[sum n, ...]`, checked against the node counts."""
    total = int(node_counts.sum())
    if isinstance(node_fields, Mapping):
        out = {name: np.asarray(values) for name, values in node_fields.items()}
        for name, values in out.items():
            if len(values) != total:
                raise ValueError(
                    f"node field {name!r}: {len(values)} rows for {total} nodes "
                    f"of {len(graphs)} graphs"
                )
        return out
    names = [k for k in NODE_FIELDS if k in graphs[0]] if node_fields is None else node_fields
    out = {}
    for name in names:
        rows = []
        for i, (g, n) in enumerate(zip(graphs, node_counts, strict=True)):
            if name not in g:
                raise ValueError(f"graph {i} has no node field {name!r} (graph 0 has it)")
            value = np.asarray(g[name])
            if value.ndim == 0 or len(value) != n:
                raise ValueError(
                    f"graph {i}: node field {name!r} has shape {list(value.shape)}, "
                    f"not [{n}, ...] (one row per node)"
                )
            rows.append(value)
        shapes = {r.shape[1:] for r in rows}
        if len(shapes) > 1:
            raise ValueError(f"graphs disagree on node field {name!r}'s row shape: {shapes}")
        out[name] = np.concatenate(rows)
    return out


class PackedGraphs:
    """A graph dataset in flat arrays (`pack`'s output, or the same arrays read back from an `.npz`
    with `attnbench.data.cache.load_arrays`): `len(ds)` graphs, `ds[i]` -> the graph dict of graph
    `i` (views into the arrays) with its per-node fields (those `arrays["node_fields"]` names) and
    per-graph fields. Picklable (grain workers)."""

    REQUIRED = ("node_feat", "node_ptr", "edge_index", "edge_feat", "edge_ptr")

    def __init__(self, arrays: Mapping[str, np.ndarray], *, name: str = "graphs"):
        missing = [k for k in self.REQUIRED if k not in arrays]
        if missing:
            raise ValueError(f"{name}: missing arrays {missing}")
        self.arrays = dict(arrays)
        self.node_ptr, self.edge_ptr = arrays["node_ptr"], arrays["edge_ptr"]
        count = len(self.node_ptr) - 1
        nodes = np.diff(self.node_ptr)
        self.node_fields = [str(k) for k in np.asarray(arrays.get(NODE_FIELDS_KEY, [])).ravel()]
        special = {*self.REQUIRED, *self.node_fields, "spd", NODE_FIELDS_KEY}
        self.fields = [k for k in arrays if k not in special]
        problems = [
            f"{k} has {len(arrays[k])} rows for {count} graphs"
            for k in self.fields
            if len(arrays[k]) != count
        ]
        if len(self.edge_ptr) != count + 1:
            problems.append(f"edge_ptr has {len(self.edge_ptr)} entries for {count} graphs")
        if self.node_ptr[-1] != len(arrays["node_feat"]):
            problems.append(f"node_ptr ends at {self.node_ptr[-1]}, not {len(arrays['node_feat'])}")
        if self.edge_ptr[-1] != arrays["edge_index"].shape[-1]:
            problems.append("edge_ptr does not end at the number of edges")
        for k in self.node_fields:
            if k not in arrays:
                problems.append(f"node field {k} is listed but missing")
            elif len(arrays[k]) != self.node_ptr[-1]:
                rows = len(arrays[k])
                problems.append(f"node field {k} has {rows} rows, not {self.node_ptr[-1]}")
        if "spd" in arrays:
            self.spd_ptr = np.concatenate([[0], np.cumsum(nodes.astype(np.int64) ** 2)])
            if self.spd_ptr[-1] != len(arrays["spd"]):
                problems.append(f"spd has {len(arrays['spd'])} entries, not {self.spd_ptr[-1]}")
        if problems:
            raise ValueError(f"{name}: inconsistent arrays: {'; '.join(problems)}")

    def __len__(self) -> int:
        return len(self.node_ptr) - 1

    @property
    def num_nodes(self) -> np.ndarray:
        return np.diff(self.node_ptr)

    @property
    def num_edges(self) -> np.ndarray:
        return np.diff(self.edge_ptr)

    def __getitem__(self, i: int) -> dict[str, np.ndarray]:
        a = self.arrays
        n0, n1 = self.node_ptr[i], self.node_ptr[i + 1]
        e0, e1 = self.edge_ptr[i], self.edge_ptr[i + 1]
        graph = {
            "node_feat": a["node_feat"][n0:n1],
            "edge_index": a["edge_index"][:, e0:e1],
            "edge_feat": a["edge_feat"][e0:e1],
        }
        if "spd" in a:
            n = n1 - n0
            graph["spd"] = a["spd"][self.spd_ptr[i] : self.spd_ptr[i + 1]].reshape(n, n)
        for k in self.node_fields:
            graph[k] = a[k][n0:n1]
        for k in self.fields:
            graph[k] = a[k][i]
        return graph


@dataclasses.dataclass(frozen=True)
class GraphCollate:
    """`collate(graphs) -> batch` padding to size buckets (see the module docstring).

    Attributes:
      node_buckets, edge_buckets: ascending sizes a batch's node / edge dimension is padded to
        (`attnbench.data.pipeline.pad_to_bucket`); a graph above the largest is an error naming it.
      dense: also build `adjacency` and, for graphs that carry `spd`, `spd` ([B, N, N]).
      node_fields: names of per-node fields (`[n, ...]` per graph) padded to `[B, N, ...]`
        with zeros when the graphs carry them; other non-graph keys are stacked per graph.
    """

    node_buckets: Sequence[int] = NODE_BUCKETS
    edge_buckets: Sequence[int] = EDGE_BUCKETS
    dense: bool = True
    node_fields: Sequence[str] = NODE_FIELDS

    def __call__(self, graphs: Sequence[Mapping]) -> dict:
        b = len(graphs)
        n = np.array([len(g["node_feat"]) for g in graphs])
        e = np.array([np.shape(g["edge_index"])[1] for g in graphs])
        size_n = _bucket(int(n.max()), self.node_buckets, "nodes")
        size_e = _bucket(int(e.max()), self.edge_buckets, "edges")
        node_graph, node_slot = _slots(n)
        edge_graph, edge_slot = _slots(e)

        feat = np.concatenate([g["node_feat"] for g in graphs])
        nodes = np.zeros((b, size_n, *feat.shape[1:]), np.int32)
        nodes[node_graph, node_slot] = feat
        ends = np.concatenate([g["edge_index"] for g in graphs], axis=1).T  # [sum e, 2]
        edge_index = np.zeros((b, size_e, 2), np.int32)
        edge_index[edge_graph, edge_slot] = ends
        efeat = np.concatenate([g["edge_feat"] for g in graphs])
        edges = np.zeros((b, size_e, *efeat.shape[1:]), np.int32)
        edges[edge_graph, edge_slot] = efeat
        batch = {
            "nodes": nodes,
            "node_mask": np.arange(size_n) < n[:, None],
            "edges": edges,
            "edge_index": edge_index,
            "edge_mask": np.arange(size_e) < e[:, None],
        }
        if self.dense:
            adj = np.zeros((b, size_n, size_n), bool)
            adj[edge_graph, ends[:, 0], ends[:, 1]] = True
            batch["adjacency"] = adj
            if "spd" in graphs[0]:
                batch["spd"] = self._spd(graphs, n, size_n)
        for k in (k for k in self.node_fields if k in graphs[0]):
            rows = np.concatenate([np.asarray(g[k]) for g in graphs])
            if len(rows) != len(feat):
                raise ValueError(f"node field {k!r}: {len(rows)} rows for {len(feat)} nodes")
            padded = np.zeros((b, size_n, *rows.shape[1:]), rows.dtype)
            padded[node_graph, node_slot] = rows
            batch[k] = padded
        others = [k for k in graphs[0] if k not in GRAPH_FIELDS and k not in self.node_fields]
        batch.update(pipeline.stack([{k: g[k] for k in others} for g in graphs]))
        return batch

    @staticmethod
    def _spd(graphs, n: np.ndarray, size_n: int) -> np.ndarray:
        # Scatter every graph's flattened [n_g, n_g] block into [B, N, N] in one assignment.
        pair_graph, k = _slots(n * n)
        rows, cols = np.divmod(k, n[pair_graph])
        out = np.full((len(graphs), size_n, size_n), UNREACHABLE, np.int32)
        out[pair_graph, rows, cols] = np.concatenate([np.ravel(g["spd"]) for g in graphs])
        return out


def _bucket(size: int, buckets: Sequence[int], what: str) -> int:
    try:
        return pipeline.pad_to_bucket(size, buckets)
    except ValueError as e:
        raise ValueError(f"a graph with {size} {what}: {e}; pass larger {what} buckets") from None


def _slots(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For items grouped `counts[g]` per graph: each item's graph and its slot in that graph."""
    graph = np.repeat(np.arange(len(counts)), counts)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    return graph, np.arange(int(counts.sum())) - starts[graph]


def padding_waste(batch: Mapping[str, np.ndarray]) -> float:
    """The fraction of a batch's node slots that are padding (over real examples: rows with
    weight 0, eval's filler copies, count as padding too when the batch has `weight`)."""
    mask = np.asarray(batch["node_mask"])
    if "weight" in batch:
        mask = mask & (np.asarray(batch["weight"]) > 0)[:, None]
    return float(1.0 - mask.sum() / mask.size)
