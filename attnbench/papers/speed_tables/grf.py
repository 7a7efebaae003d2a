"""GRF topological masking Figure 3 (arXiv 2410.03462): FLOPs of softmax, linear and
GRF-masked linear attention vs the nodes of a path graph, and the time of GRF-masked linear
attention against the dense sum_k alpha_k W^k mask."""

from __future__ import annotations

import numpy as np

from attnbench import io
from attnbench.papers import speed
from attnbench.papers.speed_tables import common

GRF_HP = dict(n_walks=4, p_halt=0.5, max_walk_len=10)  # Figure 3 setting (max_walk_len: ours)


def grf_flops(length, seeds=10, d=8):
    """Analytic forward FLOPs of one attention evaluation on a path graph of `length` nodes:
    softmax 4 N^2 d (+ N^2 for the normalisation), linear attention 4 N m d, and GRF-masked
    linear attention 4 nnz(Phi) m d (the feature contraction over the walk support), nnz
    averaged over `seeds` walk samples. Also XLA's count of our GRF implementation."""
    import jax

    from attention import graphs

    nbrs = np.full((length, 2), -1, np.int32)
    nbrs[1:, 0] = np.arange(length - 1)
    nbrs[:-1, 1] = np.arange(1, length)
    nnz = []
    for seed in range(seeds):
        nodes, loads = graphs.random_walks(
            jax.random.key(seed),
            jax.numpy.asarray(nbrs),
            n_walks=GRF_HP["n_walks"],
            max_len=GRF_HP["max_walk_len"],
            p_halt=GRF_HP["p_halt"],
            antithetic=False,
            sample_shape=(),
            dtype=jax.numpy.float32,
        )
        nodes, loads = np.asarray(nodes), np.asarray(loads)
        live = loads != 0
        per_row = [len(set(nodes[i][live[i]].tolist())) for i in range(length)]
        nnz.append(sum(per_row))
    m = d  # ReLU features: m = d
    return dict(
        length=length,
        softmax=4.0 * length * length * d + 2.0 * length * length,
        linear=4.0 * length * m * d,
        grf=4.0 * float(np.mean(nnz)) * m * d,
        grf_nnz_mean=float(np.mean(nnz)),
    )


def table(session: speed.Session) -> dict:
    """GRF Figure 3: analytic FLOPs vs N, and the time of GRF-masked linear attention against
    the dense masked form (the paper prints no numbers: no cells)."""
    sc = session.sc
    flops_rows = []
    for n in sc["grf_flop_lengths"]:
        got = grf_flops(n)
        flops_rows.append(got)
        print(f"  grf flops N={n}: {got.get('grf')}", flush=True)
    time_rows = []
    kw = dict(heads=1, head_dim=8, modes=["inference"], repeats=1)
    for n in sc["grf_time_lengths"]:
        hp = ",".join(f"{k}={v}" for k, v in GRF_HP.items()) + f",grid=(1,{n})"
        row = {"length": n}
        for name in ("linear", "grf", "grf_dense"):
            if name == "grf_dense" and n > sc["grf_dense_max"]:
                row[name] = None
                continue
            spec = name if name == "linear" else f"{name}:{hp}"
            if name == "grf_dense":
                spec = f"grf_dense:max_walk_len={GRF_HP['max_walk_len']},grid=(1,{n})"
            rec = session.attn(spec, n, **kw)["inference"]
            row[name] = rec["time_s"]
            row[name + "_skipped"] = rec.get("skipped")
        time_rows.append(row)
        print(f"  grf time N={n}: {row}", flush=True)
    big = [r for r in time_rows if r.get("grf_dense")]
    last = big[-1] if big else {}
    speedup = common.ratio(last.get("grf_dense"), last.get("grf"))
    largest = max((r["length"] for r in time_rows if r.get("grf")), default=None)
    targets = [
        common.target(
            f"grf at {last.get('length')}: >= 10x faster than dense masked attention",
            speedup,
            lambda x: x >= 10,
        ),
        common.target(
            "grf runs at 64k+ tokens (value: largest length run)", largest, lambda x: x >= 65536
        ),
    ]
    fl = [r for r in flops_rows if "grf" in r]
    slope = {}
    for key in ("softmax", "linear", "grf"):
        pts = [(r["length"], r[key]) for r in fl if r["length"] >= 16]
        if len(pts) >= 2:
            slope[key] = float(np.polyfit(*np.log(np.array(pts)).T, 1)[0])
    md = [
        "Paper: GRF Figure 3, FLOPs of one attention evaluation vs the number of graph nodes N "
        "(1-D path graphs, N = 2^0..2^12, n = 4 walks, p_halt = 0.5, d = m = 8, mean over 10 "
        "seeds; log-log): softmax quadratic, linear and linear + GRFs linear with a constant "
        "factor between them. The paper gives only the plot (no numbers), so there is no cell "
        "to compare; the claim is the slope.",
        "",
        "Ours: analytic FLOPs (`grf_flops`: softmax 4N^2 d + 2N^2, linear 4Nmd, GRF-masked "
        "4 nnz(Phi) m d with nnz the distinct nodes each feature's walks visit, mean over 10 "
        f"seeds; max walk length {GRF_HP['max_walk_len']}, our choice). Fitted slopes over "
        "N >= 16: " + ", ".join(f"{k} {v:.2f}" for k, v in slope.items()) + ".",
        "",
        "| N | softmax | linear | linear + GRF | mean nnz per feature |",
        "|---|---|---|---|---|",
    ]
    for r in fl:
        md.append(
            f"| {r['length']} | {r['softmax']:.3g} | {r['linear']:.3g} | {r['grf']:.3g} | "
            f"{r['grf_nnz_mean'] / r['length']:.2f} |"
        )
    md += [
        "",
        "Time (inference forward, batch 1, 1 head, d = 8, path graph, Figure 3 walk "
        "settings), ms; `grf_dense` materialises sum_k alpha_k W^k as N x N:",
        "",
        "| N | linear | grf (O(N)) | grf_dense | dense / grf |",
        "|---|---|---|---|---|",
    ]
    for r in time_rows:
        dense_why = r.get("grf_dense_skipped") or "not run"
        md.append(
            f"| {r['length']} | {common.fmt(r['linear'] and r['linear'] * 1e3)} | "
            f"{common.fmt(r['grf'] and r['grf'] * 1e3, none=r.get('grf_skipped') or 'n/a')} | "
            f"{common.fmt(r.get('grf_dense') and r['grf_dense'] * 1e3, none=dense_why)} | "
            f"{common.fmt(common.ratio(r.get('grf_dense'), r['grf']), '{:.1f}x', '')} |"
        )
    return dict(
        title="GRF Figure 3: FLOPs and time vs N",
        flops=flops_rows,
        time=time_rows,
        slopes=slope,
        targets=targets,
        md=md,
    )


def plot(result, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fl = [r for r in result["flops"] if "grf" in r]
    fig, ax = plt.subplots(figsize=(6, 4.5))
    for key, label in (("softmax", "Softmax"), ("linear", "Linear"), ("grf", "Linear + GRFs")):
        ax.loglog([r["length"] for r in fl], [r[key] / 1e6 for r in fl], "o-", label=label)
    ax.set(xlabel="number of graph nodes N", ylabel="MFLOPs", title="GRF Fig. 3 (ours)")
    ax.grid(alpha=0.3, which="both")
    ax.legend()
    fig.tight_layout()
    io.save_figure(fig, path, dpi=100)
