"""Graph positional / structural encodings, computed once per graph in numpy: Laplacian
eigenvector PE and random-walk structural encoding (RWSE).

These are the encodings SAMSA (Table 4) compares Graph-Bridge's random features against, and
the ones GraphGPS (Rampasek et al. 2022) feeds its GPS layers (GFSA Table 6), restated from
`rampasek/GraphGPS`, `graphgps/transform/posenc_stats.py` (`compute_posenc_stats`,
`get_lap_decomp_stats`, `get_rw_landing_probs`) and `graphgps/config/posenc_config.py`:

* LapPE: eigenvectors of the graph Laplacian of the undirected graph, smallest eigenvalues
  first, `eigh` of the dense matrix. GraphGPS's code defaults are the symmetric normalised
  Laplacian (`laplacian_norm: sym`), L2-normalised eigenvectors and `max_freqs: 10`; its
  benchmark configs (`configs/GPS/peptides-func-GPS.yaml`, `zinc-GPS-LapPE+RWSE.yaml`) set
  `laplacian_norm: none` (the combinatorial L = D - A), 10 (Peptides) or 1 (ZINC) frequencies.
  GraphGPS keeps the first `max_freqs` eigenpairs *including* the trivial one (eigenvalue 0)
  and pads graphs with fewer nodes with NaN. Here `laplacian_pe` defaults to the symmetric
  normalised Laplacian and the `k = 10` smallest *non-trivial* eigenpairs, zero-padded;
  `normalization="none"` and `include_trivial=True` give GraphGPS's choices.
* RWSE: the return probabilities diag((D^-1 A)^t), t = 1..20 (`times_func: range(1,21)` in
  GraphGPS's RWSE configs), D the out-degrees; a node without edges gets 0 (GraphGPS fills the
  infinite 1/deg with 0).

Conventions:
* The symmetric normalised Laplacian is Chung's: L = I - D^-1/2 A D^-1/2 on nodes with edges
  and L_ii = 0 on isolated nodes, so every connected component (an isolated node included)
  contributes exactly one eigenvalue 0 (PyG's `get_laplacian`, which GraphGPS calls, puts 1 on
  an isolated node's diagonal instead, giving it eigenvalue 1). The Laplacian is built from the
  undirected, unweighted graph: an edge in either direction connects two nodes, duplicates
  count once, self-loops are dropped (as PyG's `get_laplacian` does).
* "Trivial" eigenpairs are those with eigenvalue < `TRIVIAL_TOL`: one per connected component.
* Sign: an eigenvector is defined up to sign. Each returned vector is flipped so that its first
  entry with |value| > `SIGN_TOL` is positive, a deterministic convention only; models should
  still randomly flip signs during training (as SAN / GraphGPS do). Within a repeated eigenvalue
  (cycles, stars, symmetric molecules) any orthonormal basis of the eigenspace is as valid, and
  which one `eigh` returns is an implementation detail: only the eigenspace is well defined.
* RWSE follows the edges as given (directed, duplicates counted once, self-loops kept as steps).

`encode(graphs, ...)` computes both for a list of graphs (dicts as in `graphs.data.batching`, or a
`PackedGraphs`), grouping graphs of the same size into one batched `eigh` / matrix power, and
times each kind (for "the cost of computing PEs for one epoch" comparisons).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence

import numpy as np

__all__ = [
    "LAP_K",
    "RW_STEPS",
    "TRIVIAL_TOL",
    "SIGN_TOL",
    "laplacian",
    "laplacian_pe",
    "random_walk_se",
    "Encodings",
    "encode",
]

LAP_K = 10  # GraphGPS's posenc_LapPE.eigen.max_freqs default (and its Peptides configs)
RW_STEPS = 20  # GraphGPS's RWSE configs: times_func range(1, 21)
TRIVIAL_TOL = 1e-6  # eigenvalues below this are the Laplacian's null space
SIGN_TOL = 1e-6  # entries of at most this magnitude do not decide an eigenvector's sign
NORMALIZATIONS = ("sym", "none")


def _adjacency(edge_index, num_nodes: int, *, undirected: bool) -> np.ndarray:
    edge_index = np.asarray(edge_index)
    if edge_index.ndim != 2 or edge_index.shape[0] != 2:
        raise ValueError(f"edge_index must be [2, e], got shape {list(edge_index.shape)}")
    if edge_index.size and not (0 <= edge_index.min() and edge_index.max() < num_nodes):
        raise ValueError(f"edge_index has node ids outside [0, {num_nodes})")
    adj = np.zeros((num_nodes, num_nodes), np.float64)
    adj[edge_index[0], edge_index[1]] = 1.0
    if undirected:
        adj = np.maximum(adj, adj.T)
        np.fill_diagonal(adj, 0.0)
    return adj


def _laplacians(adj: np.ndarray, normalization: str) -> np.ndarray:
    """Laplacians `[..., n, n]` of symmetric 0/1 adjacency matrices `[..., n, n]`."""
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"normalization must be one of {NORMALIZATIONS}, got {normalization!r}")
    deg = adj.sum(-1)
    if normalization == "none":
        return deg[..., :, None] * np.eye(adj.shape[-1]) - adj
    inv_sqrt = np.where(deg > 0, 1.0 / np.sqrt(np.maximum(deg, 1e-300)), 0.0)
    has_edges = (deg > 0).astype(np.float64)
    return has_edges[..., :, None] * np.eye(adj.shape[-1]) - (
        inv_sqrt[..., :, None] * adj * inv_sqrt[..., None, :]
    )


def laplacian(edge_index, num_nodes: int, normalization: str = "sym") -> np.ndarray:
    """The dense float64 Laplacian `[n, n]` of one graph's undirected version (module
    docstring): `"sym"` I - D^-1/2 A D^-1/2 (0 rows for isolated nodes), `"none"` D - A."""
    return _laplacians(_adjacency(edge_index, num_nodes, undirected=True), normalization)


def _select_eigenpairs(
    evals: np.ndarray, evecs: np.ndarray, k: int, include_trivial: bool
) -> tuple[np.ndarray, np.ndarray]:
    """From ascending `eigh` output `[m, n]`, `[m, n, n]`: the first `k` eigenpairs after the
    trivial ones (or from the first), zero-padded, signs fixed. -> `[m, n, k]`, `[m, k]`."""
    m, n = evals.shape
    first = np.zeros(m, np.int64) if include_trivial else (evals < TRIVIAL_TOL).sum(-1)
    idx = first[:, None] + np.arange(k)  # [m, k]
    valid = idx < n
    idx = np.minimum(idx, n - 1)
    vals = np.where(valid, np.take_along_axis(evals, idx, axis=1), 0.0)
    vecs = np.take_along_axis(evecs, np.broadcast_to(idx[:, None, :], (m, n, k)), axis=2)
    vecs = np.where(valid[:, None, :], vecs, 0.0)
    # Sign: the first entry (down each column) above SIGN_TOL in magnitude is made positive.
    big = np.abs(vecs) > SIGN_TOL
    lead = np.take_along_axis(vecs, big.argmax(axis=1)[:, None, :], axis=1)[:, 0, :]  # [m, k]
    vecs = vecs * np.where(lead < 0, -1.0, 1.0)[:, None, :]
    vals = np.maximum(vals, 0.0)  # eigh's -1e-16 for a trivial eigenvalue -> 0
    return vecs, vals


def laplacian_pe(
    edge_index,
    num_nodes: int,
    k: int = LAP_K,
    *,
    normalization: str = "sym",
    include_trivial: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Laplacian eigenvector PE of one graph: `(vectors [n, k], eigenvalues [k])`, float64.

    Column j is the unit eigenvector of the j-th smallest non-trivial eigenvalue (with
    `include_trivial`, of the j-th smallest eigenvalue, GraphGPS's selection), sign-fixed as in
    the module docstring; columns (and eigenvalues) beyond the graph's available eigenpairs are
    0, and since non-trivial eigenvalues are > 0, an eigenvalue 0 marks padding."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    lap = laplacian(edge_index, num_nodes, normalization)
    if num_nodes == 0:
        return np.zeros((0, k)), np.zeros(k)
    evals, evecs = np.linalg.eigh(lap)
    vecs, vals = _select_eigenpairs(evals[None], evecs[None], k, include_trivial)
    return vecs[0], vals[0]


def _rw_diagonals(adj: np.ndarray, steps: int) -> np.ndarray:
    """diag(P^t), t = 1..steps, of P = D^-1 A for adjacency matrices `[..., n, n]` ->
    `[..., n, steps]`; rows of nodes without out-edges are 0."""
    deg = adj.sum(-1, keepdims=True)
    walk = np.divide(adj, deg, out=np.zeros_like(adj), where=deg > 0)
    out = np.empty((*adj.shape[:-1], steps))
    power = walk
    for t in range(steps):
        if t:
            power = power @ walk
        out[..., t] = np.diagonal(power, axis1=-2, axis2=-1)
    return out


def _normalized_adjacency(adj: np.ndarray) -> np.ndarray:
    """S = D^-1/2 A D^-1/2 of adjacency matrices `[..., n, n]` (0 rows for isolated nodes)."""
    deg = adj.sum(-1)
    inv_sqrt = np.where(deg > 0, 1.0 / np.sqrt(np.maximum(deg, 1e-300)), 0.0)
    return inv_sqrt[..., :, None] * adj * inv_sqrt[..., None, :]


def _rw_from_spectrum(s: np.ndarray, u: np.ndarray, steps: int) -> np.ndarray:
    """`_rw_diagonals` of symmetric adjacency matrices from S = U diag(s) U^T (`eigh` of
    `_normalized_adjacency`, `[m, n]`, `[m, n, n]`): P = D^-1 A is similar to S (P^t =
    D^-1/2 S^t D^1/2 on nodes with edges; isolated nodes are 0 rows of both), so diag(P^t)_i =
    diag(S^t)_i = sum_j U_ij^2 s_j^t: O(n^2 steps) instead of `steps` n x n products."""
    powers = s[:, None, :] ** np.arange(1, steps + 1)[None, :, None]  # [m, steps, n]
    return np.einsum("mij,mtj->mit", u * u, powers)


def random_walk_se(edge_index, num_nodes: int, steps: int = RW_STEPS) -> np.ndarray:
    """RWSE of one graph: `[n, steps]` float64, column t-1 the probability that a random walk
    from each node (uniform over its out-edges) is back at it after t steps."""
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    return _rw_diagonals(_adjacency(edge_index, num_nodes, undirected=False), steps)


@dataclasses.dataclass
class Encodings:
    """PEs of a list of graphs, node rows concatenated in graph order (as `PackedGraphs` stores
    node features): graph g's nodes are rows `node_ptr[g]:node_ptr[g + 1]`.

    Attributes:
      node_ptr: `[G + 1]` int64.
      lap_vec: `[sum n, k]` float32 Laplacian eigenvectors (None when not computed).
      lap_val: `[G, k]` float32 their eigenvalues (0: padding).
      rwse: `[sum n, steps]` float32 return probabilities (None when not computed).
      seconds: wall-clock seconds spent building adjacency matrices ("adjacency") and on
        each kind ("laplacian", "rwse").
    """

    node_ptr: np.ndarray
    lap_vec: np.ndarray | None
    lap_val: np.ndarray | None
    rwse: np.ndarray | None
    seconds: dict[str, float]

    def __len__(self) -> int:
        return len(self.node_ptr) - 1

    def __getitem__(self, g: int) -> dict[str, np.ndarray]:
        rows = slice(self.node_ptr[g], self.node_ptr[g + 1])
        out = {}
        if self.lap_vec is not None:
            out.update(lap_vec=self.lap_vec[rows], lap_val=self.lap_val[g])
        if self.rwse is not None:
            out["rwse"] = self.rwse[rows]
        return out


def encode(
    graphs: Sequence[Mapping],
    *,
    lap_k: int | None = LAP_K,
    rw_steps: int | None = RW_STEPS,
    normalization: str = "sym",
    include_trivial: bool = False,
    blas_threads: int | None = 1,
) -> Encodings:
    """Laplacian PE (`lap_k` eigenpairs; None: skip) and RWSE (`rw_steps`; None: skip) of
    every graph in `graphs` (dicts with `node_feat` and `edge_index`, or a `PackedGraphs`),
    equal to `laplacian_pe` / `random_walk_se` graph by graph, computed size group by size
    group and timed per kind: one batched `eigh` of the Laplacians per node count, and for
    RWSE one batched `eigh` of S = D^-1/2 A D^-1/2 when the group's graphs are undirected
    (every edge listed both ways, as molecules are), else `rw_steps` batched matrix products.
    With the "sym" Laplacian L = I - S (no isolated nodes, no self-loops) one `eigh` serves
    both (its time counts as "laplacian"). Within a repeated eigenvalue the basis returned may
    then differ from `laplacian_pe`'s (both are valid; see the module docstring).

    BLAS runs on one thread here when `threadpoolctl` is installed (`blas_threads`): these are
    many small matrices, and on a loaded 2-core machine OpenBLAS's threads made a 150 x 150
    `eigh` 10x slower (95 ms against 8 ms)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # optional: only a speed-up
        threadpool_limits = None
    if blas_threads is not None and threadpool_limits is not None:
        with threadpool_limits(limits=blas_threads, user_api="blas"):
            return encode(
                graphs,
                lap_k=lap_k,
                rw_steps=rw_steps,
                normalization=normalization,
                include_trivial=include_trivial,
                blas_threads=None,
            )
    sizes = np.array([len(graphs[i]["node_feat"]) for i in range(len(graphs))], np.int64)
    ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    total = int(ptr[-1])
    lap_vec = np.zeros((total, lap_k), np.float32) if lap_k else None
    lap_val = np.zeros((len(sizes), lap_k), np.float32) if lap_k else None
    rwse = np.zeros((total, rw_steps), np.float32) if rw_steps else None
    seconds = {"adjacency": 0.0, "laplacian": 0.0, "rwse": 0.0}
    for n in np.unique(sizes):
        if n == 0:
            continue
        start = time.perf_counter()
        members = np.flatnonzero(sizes == n)
        adj = np.stack([_adjacency(graphs[g]["edge_index"], n, undirected=False) for g in members])
        rows = (ptr[members][:, None] + np.arange(n)).ravel()  # their node rows, in order
        seconds["adjacency"] += time.perf_counter() - start
        start = time.perf_counter()
        symmetric = np.array_equal(adj, np.swapaxes(adj, -1, -2))
        # One eigh serves both when L = I - S exactly: "sym", undirected, no self-loops, no
        # isolated nodes (L's eigenpairs are (1 - s, u), in reverse order).
        shared = (
            lap_k and rw_steps and normalization == "sym" and symmetric
            and not adj[:, np.arange(n), np.arange(n)].any() and adj.any(-1).all()
        )  # fmt: skip
        if shared:
            s, u = np.linalg.eigh(_normalized_adjacency(adj))
            evals, evecs = 1.0 - s[:, ::-1], u[:, :, ::-1]
        elif lap_k:
            sym = np.maximum(adj, np.swapaxes(adj, -1, -2))
            sym[:, np.arange(n), np.arange(n)] = 0.0
            evals, evecs = np.linalg.eigh(_laplacians(sym, normalization))
        if lap_k:
            vecs, vals = _select_eigenpairs(evals, evecs, lap_k, include_trivial)
            lap_vec[rows] = vecs.reshape(-1, lap_k)
            lap_val[members] = vals
        seconds["laplacian"] += time.perf_counter() - start
        if rw_steps:
            start = time.perf_counter()
            if shared:
                walks = _rw_from_spectrum(s, u, rw_steps)
            elif symmetric:
                walks = _rw_from_spectrum(*np.linalg.eigh(_normalized_adjacency(adj)), rw_steps)
            else:
                walks = _rw_diagonals(adj, rw_steps)
            rwse[rows] = walks.reshape(-1, rw_steps)
            seconds["rwse"] += time.perf_counter() - start
    return Encodings(node_ptr=ptr, lap_vec=lap_vec, lap_val=lap_val, rwse=rwse, seconds=seconds)
