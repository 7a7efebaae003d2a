"""What `scripts.reproduce --all` reached: one line per cell of every selected table, read back
from the run directories after the runs (so a resumed or partly earlier sweep reports the same).

    rows = coverage.rows(tables, cells_of, root="runs/tables", preset="smoke", seconds=timing)
    coverage.write(rows, "results/coverage/smoke", preset="smoke", command=...)

A cell is one of:
- `ok`: its run (or the run of a cell with the same config, `runs.finished`) has a summary whose
  cell metric is a finite number; `seconds` is the run's wall time from its summary;
- `failed`: no summary, or a summary without a finite metric; `reason` is the trainer's last
  `error: ...` line of the run's log (`reproduce.log`), else the log's last line, else "not run";
- `exact`: computed in-process (`reproduce.compute_exact`), no training;
- `not runnable` (with what the cell needs) and `elsewhere` (with the command that reproduces it).

`write` puts the rows in `<stem>.json` and `<stem>.md`, each atomically.
"""

from __future__ import annotations

import math
import os
import pathlib

from attnbench import io
from attnbench.papers import runs, summaries

__all__ = ["rows", "write", "STATUSES"]

STATUSES = ("ok", "failed", "exact", "not runnable", "elsewhere")


def _reason(workdir: pathlib.Path) -> str:
    """One line on why the run in `workdir` has no usable summary."""
    log = workdir / "reproduce.log"
    try:
        lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "not run"
    error = next((ln[7:] for ln in reversed(lines) if ln.startswith("error: ")), "")
    return (error or (lines[-1] if lines else "empty log"))[:300]


def _trained(table, cell, root, preset: str) -> dict:
    path = runs.finished(root, table.key, preset, cell, 0)
    if path is None:
        return {
            "status": "failed",
            "reason": _reason(runs.run_dir(root, table.key, preset, cell, 0)),
        }
    summary = summaries.read(path)
    section, _, name = cell.metric.partition(".")  # e.g. test_best.accuracy
    value = summaries.number(summary, path, "metrics", section, name)
    out = {
        "run": os.path.relpath(path.parent, root),  # under the run root: no machine's path
        "seconds": summaries.number(summary, path, "wall_time_s"),
        "data": summaries.string(summary, path, "data", "source"),
        "device": summaries.device(summary, path),
        "revision": summaries.revision(summary, path),
    }
    if value is None or not math.isfinite(value):
        return {**out, "status": "failed", "reason": f"{cell.metric} is missing or not finite"}
    return {**out, "status": "ok", "value": value}


def rows(tables_and_cells, *, root, preset: str) -> list[dict]:
    """One dict per cell (`table`, `row`, `column`, `status`, and `reason` / `value` /
    `seconds` / `data` / `run` where they apply) for `[(table, cells), ...]`."""
    out = []
    for table, cells in tables_and_cells:
        for cell in cells:
            entry = {"table": table.key, "row": cell.row, "column": cell.column}
            if cell.exact is not None:
                entry["status"] = "exact"
            elif cell.elsewhere:
                entry.update(status="elsewhere", reason=cell.elsewhere)
            elif cell.config is not None:
                entry.update(config=cell.config, **_trained(table, cell, root, preset))
            elif cell.mean_of:
                continue  # an average of other cells of its row, each listed on its own
            else:
                entry.update(status="not runnable", reason=f"needs {cell.needs}")
            out.append(entry)
    return out


def _cell_md(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def write(entries: list[dict], stem, *, preset: str, command: str) -> tuple[pathlib.Path, ...]:
    """Writes `<stem>.json` and `<stem>.md`; returns their paths."""
    stem = pathlib.Path(stem)
    counts = {s: sum(e["status"] == s for e in entries) for s in STATUSES}
    trained = counts["ok"] + counts["failed"]
    seconds = sum(e.get("seconds") or 0.0 for e in entries if e["status"] == "ok")
    meta = {
        "preset": preset,
        "command": command,
        "counts": counts,
        "devices": sorted({e["device"] for e in entries if e.get("device")}),
        "revisions": sorted({e["revision"] for e in entries if e.get("revision")}),
        "git_revision": io.git_revision(),
    }
    json_path = stem.with_suffix(".json")
    io.write_json(json_path, {"schema_version": 1, **meta, "cells": entries})
    lines = [
        f"# Coverage of the paper tables at the `{preset}` preset",
        "",
        f"Written by `{command}` at revision {meta['git_revision'][:7]}; runs on "
        f"{'; '.join(meta['devices']) or 'no device'} at revision(s) "
        f"{', '.join(meta['revisions']) or '-'} (a sweep resumed after a change keeps the runs "
        "it had finished). Each trainable cell ran once (seed 0; "
        "cells with the same config share one run) and is `ok` when its run's summary has a "
        "finite value of the cell's metric. `seconds`: the run's wall time from its summary. "
        "Data: `official`, `standin` (offline substitute) or `generated`.",
        "",
        f"{counts['ok']} of {trained} trainable cells ok, {counts['failed']} failed; "
        f"{counts['exact']} computed exactly, {counts['not runnable']} not runnable yet, "
        f"{counts['elsewhere']} reproduced by another command; {seconds / 60:.1f} min of runs.",
        "",
        "| table | row | column | status | data | seconds | value or reason |",
        "|---|---|---|---|---|---|---|",
    ]
    for e in entries:
        if "value" in e:
            detail = f"{e['value']:.4g}"
        else:
            detail = e.get("reason", "")
        secs = "" if e.get("seconds") is None else f"{e['seconds']:.0f}"
        cells = (e["table"], e["row"], e["column"], e["status"], e.get("data") or "", secs, detail)
        lines.append("| " + " | ".join(_cell_md(c) for c in cells) + " |")
    md_path = stem.with_suffix(".md")
    io.write_text(md_path, "\n".join(lines) + "\n")
    return json_path, md_path
