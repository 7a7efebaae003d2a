"""The leaderboard: every mechanism run so far, ranked per task and on average, from summaries.

`collect(roots)` reads every `summary.json` below the run roots (the paper tables' runs, the
`--attn` runs of `scripts.reproduce`, single runs), `render(...)` writes markdown: one table per
(task, preset, data source), mechanisms ranked by the task's primary test metric (the best
validation checkpoint's test number, mean over seeds, for the best config of each mechanism,
named beside it; equal numbers share a rank), then per preset the average rank over the tasks
each mechanism has run. Numbers at different presets or on different data are never ranked
together. Summaries are read as the tables read them (`attnbench.papers.summaries`): one that is
not a run summary (malformed JSON, a field absent or of another type) is an `errors.DataError`
naming the file and the field; the summaries of exact cells (`scripts.reproduce`'s computed
numbers, no task) are not runs and are left out; a non-finite metric counts as a failed run.
"""

from __future__ import annotations

import math
import pathlib
import statistics

from attnbench.papers import summaries

__all__ = ["collect", "render", "PRIMARY"]

# (metric in summary["metrics"]["test_best"], higher is better), the first one present is used
PRIMARY = (
    ("accuracy", True),
    ("ap", True),
    ("instance_miou", True),
    ("mae", False),
    ("perplexity", False),
    ("bpb", False),
    ("bpd", False),
)


def _primary(summary: dict, path) -> tuple[str, bool, float] | None:
    """`(metric, higher is better, value)` of the first `PRIMARY` metric the run's
    `metrics.test_best` has (absent or null: it does not have it); None when it has none."""
    best = summaries.required(
        summaries.section(summary, path, "metrics", "test_best"), path, "metrics", "test_best"
    )
    for name, higher in PRIMARY:
        if name in best:
            value = summaries.number(summary, path, "metrics", "test_best", name)
            if value is not None:
                return name, higher, value
    return None


def _config_label(summary: dict, path: pathlib.Path) -> str:
    command = summaries.string(summary, path, "command")
    parts = (command or "").split()
    for i, part in enumerate(parts):
        if part.startswith("--config="):
            return part[len("--config=") :]
        if part == "--config" and i + 1 < len(parts):
            return parts[i + 1]
    return str(path.parent.parent)


def _is_exact(summary: dict, path) -> bool:
    """An exact cell's summary (`attnbench.papers.reproduce.compute_exact`): no run."""
    return "exact" in summary or summaries.string(summary, path, "preset") == "exact"


def collect(roots) -> dict:
    """`{(task, preset, source): {mechanism: {"value", "metric", "higher", "seeds", "config",
    "failed"}}}`, the best config of each mechanism (by mean over seeds)."""
    runs: dict = {}
    for root in map(pathlib.Path, roots):
        for path in sorted(root.rglob("summary.json")):
            s = summaries.read(path)
            if _is_exact(s, path):
                continue
            task = summaries.required(summaries.string(s, path, "task"), path, "task")
            attn = summaries.string(s, path, "attention", "name")
            attn = summaries.required(attn, path, "attention", "name")
            preset = summaries.string(s, path, "preset") or "?"
            source = summaries.string(s, path, "data", "source")
            source = summaries.required(source, path, "data", "source")
            found = _primary(s, path)
            if found is None:
                continue
            name, higher, value = found
            key = (task, preset, source)
            config = _config_label(s, path)
            runs.setdefault(key, {}).setdefault(attn, {}).setdefault(config, []).append(
                (name, higher, value)
            )
    out = {}
    for key, by_mech in runs.items():
        table = {}
        for mech, by_config in by_mech.items():
            best = None
            for config, values in by_config.items():
                finite = [v for _, _, v in values if math.isfinite(v)]
                name, higher = values[0][0], values[0][1]
                entry = {
                    "value": statistics.fmean(finite) if finite else None,
                    "metric": name,
                    "higher": higher,
                    "seeds": len(finite),
                    "failed": len(values) - len(finite),
                    "config": config,
                }
                if entry["value"] is None:
                    best = best or entry
                    continue
                better = (
                    best is None
                    or best["value"] is None
                    or (
                        entry["value"] > best["value"] if higher else entry["value"] < best["value"]
                    )
                )
                if better:
                    best = entry
            table[mech] = best
        out[key] = table
    return out


def _ranked(table: dict) -> list[tuple[str, dict]]:
    scored = [(m, e) for m, e in table.items() if e["value"] is not None]
    higher = scored[0][1]["higher"] if scored else True
    scored.sort(key=lambda me: -me[1]["value"] if higher else me[1]["value"])
    return scored + [(m, e) for m, e in table.items() if e["value"] is None]


def render(results: dict, header: str = "") -> str:
    """The leaderboard page (markdown)."""
    lines = [header, "# Leaderboard", ""] if header else ["# Leaderboard", ""]
    lines += [
        "Every mechanism run so far, per task, preset and data source: the test metric of the "
        "best validation checkpoint (mean over seeds) of each mechanism's best config. Built "
        "by `python -m scripts.tables` from the run summaries; reduced presets (`cpu`, "
        "`smoke`) and stand-in or generated data are not the papers' settings.",
        "",
    ]
    ranks: dict[str, dict[str, list[int]]] = {}
    for (task, preset, source), table in sorted(results.items()):
        ranked = _ranked(table)
        if not ranked:
            continue
        metric = ranked[0][1]["metric"]
        lines += [
            f"## {task} ({preset} preset, {source} data)",
            "",
            f"| rank | attention | test {metric} | seeds | config |",
            "|---|---|---|---|---|",
        ]
        rank_of, previous = {}, None
        for i, (mech, e) in enumerate(ranked, 1):
            if e["value"] is not None:
                rank_of[mech] = (
                    rank_of[previous]
                    if previous and (table[previous]["value"] == e["value"])
                    else i
                )
                previous = mech
        for mech, e in ranked:
            value = "failed (non-finite)" if e["value"] is None else f"{e['value']:.4f}"
            i = rank_of.get(mech)
            rank = str(i) if i is not None else "-"
            seeds = str(e["seeds"]) + (f" ({e['failed']} failed)" if e["failed"] else "")
            lines.append(f"| {rank} | `{mech}` | {value} | {seeds} | `{e['config']}` |")
            if e["value"] is not None:
                ranks.setdefault(preset, {}).setdefault(mech, []).append(i)
        lines.append("")
    for preset, by_mech in sorted(ranks.items()):
        lines += [
            f"## Average rank ({preset} preset, over the tasks above)",
            "",
            "| attention | mean rank | tasks |",
            "|---|---|---|",
        ]
        for mech, rs in sorted(by_mech.items(), key=lambda mr: (statistics.fmean(mr[1]), mr[0])):
            lines.append(f"| `{mech}` | {statistics.fmean(rs):.2f} | {len(rs)} |")
        lines.append("")
    return "\n".join(lines)
