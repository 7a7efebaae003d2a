"""SAMSA Table 1, speed row (arXiv 2408.05391): whole-model inference of SAMSA hard and soft
at k = 128/256/512 against the same model with full softmax attention, at 1,024 tokens and the
scale's extra lengths."""

from __future__ import annotations

import math

from attnbench.papers import speed
from attnbench.papers.speed_tables import common


def table(session: speed.Session) -> dict:
    """Whole-model inference of SAMSA at each k and mode against the same model with full
    softmax attention: the cells of samsa.table1's speed row (at the paper's 1,024 tokens) and
    the same measurements at the scale's extra lengths."""
    sc = session.sc
    cells = [c for _, c in common.measured_cells("samsa")]
    full_cell = next(c for c in cells if "attn" in c.measure_args)
    samsa_cells = sorted(
        (c for c in cells if c is not full_cell),
        key=lambda c: (c.measure_args["k"], c.measure_args["mode"] != "hard"),
    )
    paper_n = full_cell.measure_args["length"]
    rows = []
    for n in [paper_n, *sc["samsa_extra_lengths"]]:
        full_args = session.scaled("samsa", dict(full_cell.measure_args, length=n))
        if full_args is None:
            continue
        full = session.step(full_cell.measure, **full_args)
        rows.append(
            dict(
                length=full_args["length"],
                variant="full attention",
                k=None,
                rec=full,
                speedup=1.0,
                paper=full_cell.paper if n == paper_n else None,
                at=(n, None, None),
            )
        )
        for c in samsa_cells:
            args = session.scaled("samsa", dict(c.measure_args, length=n))
            if args is None or args["k"] > args["length"]:
                continue
            rec = session.step(c.measure, **args)
            rows.append(
                dict(
                    length=args["length"],
                    variant=args["mode"],
                    k=args["k"],
                    rec=rec,
                    speedup=common.ratio(rec["steps_per_s"], full["steps_per_s"]),
                    paper=c.paper if n == paper_n else None,
                    at=(n, c.measure_args["mode"], c.measure_args["k"]),
                )
            )

    def get(n, mode, k):  # our speed-up at the paper's (length, mode, k)
        return next((r["speedup"] for r in rows if r["at"] == (n, mode, k)), None)

    def paper(mode, k):
        return next(
            c.paper
            for c in samsa_cells
            if (c.measure_args["mode"], c.measure_args["k"]) == (mode, k)
        )

    hard, soft = paper("hard", 128), paper("soft", 128)
    extra = sc["samsa_extra_lengths"][-1] if sc["samsa_extra_lengths"] else 4096
    targets = [
        common.target(
            f"hard k=128 at {paper_n}: >= {hard:.2f}x full",
            get(paper_n, "hard", 128),
            lambda x: x >= hard,
        ),
        common.target(
            f"soft k=128 at {paper_n}: >= {soft:.2f}x full",
            get(paper_n, "soft", 128),
            lambda x: x >= soft,
        ),
        common.target(
            f"hard k=128 at {extra}: > the {paper_n} speed-up",
            get(extra, "hard", 128),
            lambda x: x > (get(paper_n, "hard", 128) or math.inf),
        ),
    ]
    md = [
        "Paper: SAMSA Table 1, last row, 'Inference Speed (1024 tokens)' relative to full "
        "self-attention (FlashAttention v2) on an A100; the model is not specified (our FLOP "
        "count: the soft numbers match the ratios of a d=128 model): "
        + ", ".join(
            f"{c.measure_args['mode']} k={c.measure_args['k']} {c.paper:.2f}x"
            for c in cells
            if c is not full_cell
        )
        + ".",
        "",
        f"Ours: the SAMSA encoder of `{sc['samsa_config']}` (at full scale: 4 layers, d 128, "
        "FFN 512, 8 heads) with `length=` set, inference (jitted evaluation forward) at batch "
        f"{sc['samsa_batch']}, synthetic tokens; full attention = the same model with "
        "`attn=softmax` (XLA's dense attention on CPU, no flash kernel).",
        "",
        "| length | sampler | k | steps/s | memory MiB | speed-up vs full (ours) | paper (A100) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        mem = r["rec"].get("peak_memory_bytes")
        md.append(
            f"| {r['length']} | {r['variant']} | {r['k'] or ''} | "
            f"{common.fmt(r['rec']['steps_per_s'], '{:.3f}', 'skip')} | "
            f"{common.fmt(mem and mem / 2**20, '{:.0f}')} | "
            f"{common.fmt(r['speedup'], '{:.2f}x')} | "
            f"{common.fmt(r.get('paper'), '{:.2f}x', '')} |"
        )
    for r in rows:
        r.pop("at")
    return dict(title="SAMSA Table 1: inference speed row", rows=rows, targets=targets, md=md)
