"""SSA's relative compute, memory and speed (arXiv 2306.01705, Tables 1-2): attention with a
fraction of the sources kept, and a whole training step at 4K tokens."""

from __future__ import annotations

from attnbench.papers import speed, tables
from attnbench.papers.speed_tables import common


def table(session: speed.Session) -> dict:
    """Attention alone with a fraction of the sources kept, and the dense and SSA training steps
    that the M and S cells of SSA Tables 1-2 name (their C cells are computed exactly)."""
    sc = session.sc
    rows = []
    for n in sc["ssa_lengths"]:
        kw = dict(heads=4, head_dim=32, modes=["forward_backward"], repeats=sc["repeats"])
        dense = session.attn("softmax", n, **kw)["forward_backward"]
        for sampling in ("unbiased", "local_1d"):
            for keep in sc["ssa_keeps"]:
                spec = f"ssa:keep={keep},sampling='{sampling}'"
                r = session.attn(spec, n, **kw)["forward_backward"]
                rows.append(
                    dict(
                        length=n,
                        sampling=sampling,
                        keep=keep,
                        time_s=r["time_s"],
                        memory_bytes=r["memory_bytes"],
                        time_ratio=common.ratio(r["time_s"], dense["time_s"]),
                        memory_ratio=common.ratio(r["memory_bytes"], dense["memory_bytes"]),
                    )
                )
                print(f"  ssa n={n} {sampling} keep={keep}: x{rows[-1]['time_ratio']}", flush=True)
    cells = common.measured_cells("ssa")
    steps, n = {}, None
    for _, c in cells:
        args = session.scaled("ssa", c.measure_args)
        steps[args["attn"]] = session.step(c.measure, **args)
        n = args["length"]
    dense_step, ssa_step = steps["softmax"], steps["ssa"]
    spec = speed.with_args(sc["text_config"], f"attn=ssa,length={n}")
    keep = next(c.measure_args["keep"] for _, c in cells if c.measure_args["attn"] == "ssa")
    compute = _ssa_compute(sc["text_config"], n, keep)
    s_ratio = common.ratio(ssa_step["steps_per_s"], dense_step["steps_per_s"])
    m_ratio = common.ratio(ssa_step["peak_memory_bytes"], dense_step["peak_memory_bytes"])
    quarter = [r for r in rows if r["keep"] == 0.25]
    worst = max((r["time_ratio"] for r in quarter if r["time_ratio"]), default=None)
    targets = [
        common.target(
            "attention fwd+bwd with 1/4 of sources: <= 0.35x dense (worst sampler/length)",
            worst,
            lambda x: x <= 0.35,
        ),
        common.target(
            f"training step at {n} with keep 1/4: >= 1.3x faster than dense",
            s_ratio,
            lambda x: x >= 1.3,
        ),
        common.target(
            f"training step at {n} with keep 1/4: lower peak memory (ratio < 1)",
            m_ratio,
            lambda x: x < 1.0,
        ),
    ]
    md = [
        "Paper: SSA's normalised Compute / Memory / Speed (C / M / S) of training with SSA "
        "against the dense model (rows with a quarter of the sources kept; 4 windows = L4). "
        "Hardware: the authors' GPUs (not named per table).",
        "",
        "| setting | C | M | S | source |",
        "|---|---|---|---|---|",
    ]
    quoted = {}  # (table, row, dataset) -> {"C": cell, "M": cell, "S": cell}
    for key, c in cells:
        if c.measure_args["attn"] != "ssa":
            continue  # S0 = 1 by definition
        dataset, _, what = c.column.rpartition(" ")
        table = tables.load(key)
        got = quoted.setdefault((key, c.row, dataset), {"C": table.cell(c.row, f"{dataset} C")})
        got[what] = c
    for (key, row, dataset), got in quoted.items():
        numbers = " | ".join(common.fmt(got[w].paper) for w in ("C", "M", "S"))
        md.append(f"| {dataset} {row} | {numbers} | {common.source(key)} |")
    md += [
        "",
        "Ours, attention alone (forward+backward, batch 1, 4 heads of dim 32), time and compiled "
        "memory as a fraction of dense softmax attention at the same length:",
        "",
        "| n | sampler | keep | time (ms) | time / dense | memory / dense |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        md.append(
            f"| {r['length']} | {r['sampling']} | {r['keep']} | "
            f"{common.fmt(r['time_s'] and r['time_s'] * 1e3)} | {common.fmt(r['time_ratio'])} | "
            f"{common.fmt(r['memory_ratio'])} |"
        )
    md += [
        "",
        f"Ours, whole training step of `{spec}` (LRA Text model, batch 2, SSA's default "
        "`local_1d` sampler in every layer, keep 0.25) vs the same model with dense softmax "
        f"attention (`attn=softmax`): C = {common.fmt(compute)} (analytic forward FLOPs, "
        f"attnbench.nn.flops), M = {common.fmt(m_ratio)} (compiled memory), "
        f"S = {common.fmt(s_ratio)} (steps/s).",
    ]
    return dict(
        title="SSA relative compute, memory and speed",
        rows=rows,
        steps={"dense": dense_step, "ssa": ssa_step},
        targets=targets,
        md=md,
    )


def _ssa_compute(text_config, n, keep):
    """Forward FLOPs ratio, SSA keeping `keep` of the sources vs dense, of the LRA Text model at
    length n (attnbench.nn.flops)."""
    from attnbench import config as config_lib
    from attnbench.nn import flops

    dense = config_lib.load(speed.with_args(text_config, f"attn=softmax,length={n}"))
    dense = flops.count(dense, train=True)
    c = config_lib.load(speed.with_args(text_config, f"attn=ssa,length={n}"))
    c.attention.keep = keep
    return flops.count(c, train=True).flops / dense.flops
