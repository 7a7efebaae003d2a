"""The papers' timing cells measured on the recipes they report (`timing_gfsa_vision`,
`timing_gfsa_graphs`, `timing_gfsa_lra`): every runtime, throughput, inference-time and memory
cell of the group's tables names `attnbench.papers.speed:recipe_step` with its row's recipe
(`configs/tables/_gfsa_timing.py`). Each distinct (recipe, step, batch) is measured once, on
synthetic inputs of the recipe's shapes, on the device this runs on; the cell's value is derived
from it in the cell's unit (`speed.recipe_value`: e.g. seconds per epoch = the official training
split's size / examples per second) and printed beside the paper's number, with GFSA's overhead
(GFSA row / vanilla row) in both. Absolute times depend on the device (the paper's are RTX 3090
GPUs, ours are named in the header); the overhead ratios are what compares."""

from __future__ import annotations

from attnbench.papers import speed
from attnbench.papers.speed_tables import common

GFSA_SUFFIXES = (" + GFSA_even", " + GFSA")


def _base_row(row: str) -> str | None:
    """`DeiT-S + GFSA (12L)` -> `DeiT-S (12L)`: the vanilla row a GFSA row compares to."""
    for suffix in GFSA_SUFFIXES:
        if suffix in row:
            return row.replace(suffix, "")
    return None


def step_args(session: speed.Session, args: dict) -> dict:
    """A cell's `measure_args` without its reading (`unit`, `examples`), with the batch
    resolved (the recipe's own where the cell names none) and capped at `session.max_batch`."""
    out = {k: v for k, v in args.items() if k not in ("unit", "examples")}
    if session.sc["recipe_batch"] is None:
        batch = out.get("batch") or speed.recipe_batch(out["config"], out["mode"])
        if session.max_batch:
            batch = min(batch, session.max_batch)
        out["batch"] = batch
    else:
        out.pop("batch", None)  # the scale's own batch (smoke)
    return out


def table(session: speed.Session, group: str) -> dict:
    """Every timing cell of `group`'s tables (`common.SOURCES[group]`), measured and derived."""
    rows = []
    for key, c in common.measured_cells(group):
        args = step_args(session, c.measure_args)
        rec = session.step(c.measure, **args)
        unit, examples = c.measure_args["unit"], c.measure_args.get("examples")
        rows.append(
            dict(
                table=key,
                row=c.row,
                column=c.column,
                paper=c.paper,
                ours=speed.recipe_value(rec, unit, examples),
                unit=unit,
                examples=examples,
                examples_n=speed.split_size(examples) if examples else None,
                config=args["config"],
                mode=args["mode"],
                batch=rec.get("batch"),
                batch_asked=rec.get("batch_asked"),
                steps_per_s=rec.get("steps_per_s"),
                peak_memory_bytes=rec.get("peak_memory_bytes"),
                timed_steps=rec.get("timed_steps"),
                step_time_spread_s=rec.get("step_time_spread_s"),
                dtype=rec.get("dtype"),
                skipped=rec.get("skipped"),
            )
        )
    measured = sum(r["ours"] is not None for r in rows)
    targets = [
        common.target(
            f"{group}: every timing cell measured (value: the fraction of {len(rows)})",
            measured / len(rows) if rows else None,
            lambda x: x == 1.0,
        )
    ]
    by_cell = {(r["table"], r["row"], r["column"]): r for r in rows}
    overheads = []
    for r in rows:
        base = by_cell.get((r["table"], _base_row(r["row"]) or "", r["column"]))
        if base is None:
            continue
        overheads.append(
            dict(
                table=r["table"],
                column=r["column"],
                row=r["row"],
                base=base["row"],
                paper=common.ratio(r["paper"], base["paper"]),
                ours=common.ratio(r["ours"], base["ours"]),
            )
        )
    return dict(
        title=f"Timing cells on their recipes: {group}",
        rows=rows,
        overheads=overheads,
        targets=targets,
        md=_md(session, group, rows, overheads),
    )


def _md(session, group, rows, overheads) -> list[str]:
    capped = session.max_batch and session.sc["recipe_batch"] is None
    md = [
        "Paper: the authors' GPU timings (RTX 3090s, their counts in each table's notes). Ours: "
        "each cell's recipe (its row's, the one its accuracy cell trains) at the recipe's own "
        "model and input shapes, synthetic inputs, the median step after compilation and a "
        "warm-up (at least the scale's steps, and at full scale as many as add up to 3 s), on "
        "the one device named above. Units:",
        "",
        *[f"- `{unit}`: {what}" for unit, (what, _) in speed.UNITS.items()],
        "",
        "dtype is the recipe's `model.dtype` (`auto`: bfloat16 on a GPU or TPU, float32 on a "
        "CPU). Absolute values depend on the device; the GFSA / vanilla ratios at the end "
        "compare. "
        "A step that does not fit the device's memory is timed at half the batch, halved again "
        "until it fits (`(of N: memory)`); its GB cell is then the memory at that batch.",
    ]
    if capped:
        md += [
            "",
            f"Batch capped at {session.max_batch} examples per step (`--max-batch`): per-epoch "
            "and per-split times assume the time per example does not depend on the batch.",
        ]
    md += [
        "",
        "| table | row | column | paper | ours | unit | split (size) | batch | steps/s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        split = f"{r['examples']} ({r['examples_n']:,})" if r["examples"] else ""
        spec = "{:,.0f}" if r["ours"] is not None and r["ours"] >= 100 else "{:.4g}"
        ours = common.fmt(r["ours"], spec, none=f"not measured: {r['skipped']}")
        batch = r["batch"]
        if r["batch_asked"] and r["batch_asked"] != batch:
            batch = f"{batch} (of {r['batch_asked']}: memory)"
        md.append(
            f"| {common.source(r['table'])} | {r['row']} | {r['column']} | "
            f"{common.fmt(r['paper'], '{:g}')} | {ours} | {r['unit']} | {split} | "
            f"{batch} | {common.fmt(r['steps_per_s'], '{:.3f}')} |"
        )
    md += [
        "",
        "Recipes measured (each once):",
        "",
        "| config | step | batch | dtype | steps/s | timed steps | spread (ms) | "
        "peak memory (GiB) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    seen = set()
    for r in rows:
        key = (r["config"], r["mode"], r["batch"])
        if key in seen:
            continue
        seen.add(key)
        mem = r["peak_memory_bytes"] and r["peak_memory_bytes"] / 2**30
        spread = r["step_time_spread_s"] and r["step_time_spread_s"] * 1e3
        md.append(
            f"| `{r['config']}` | {r['mode']} | {r['batch']} | {r['dtype']} | "
            f"{common.fmt(r['steps_per_s'], '{:.3f}')} | {r['timed_steps'] or 'n/a'} | "
            f"+/-{common.fmt(spread, '{:.1f}')} | {common.fmt(mem, '{:.2f}')} |"
        )
    if overheads:
        md += [
            "",
            "GFSA's overhead, GFSA row / vanilla row (above 1: slower, more memory, or higher "
            "throughput for img/s):",
            "",
            "| table | column | rows | paper | ours |",
            "|---|---|---|---|---|",
        ]
        for o in overheads:
            md.append(
                f"| {common.source(o['table'])} | {o['column']} | {o['row']} / {o['base']} | "
                f"{common.fmt(o['paper'], '{:.2f}x')} | {common.fmt(o['ours'], '{:.2f}x')} |"
            )
    return md
