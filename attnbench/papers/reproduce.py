"""What `scripts.reproduce` does for a paper table: selects cells, computes the exact ones in
this process and plans one `scripts.train` job per (cell, seed) not finished yet.

    cells = reproduce.select(table, ["listops/128 hard"])
    todo = reproduce.table_jobs(table, cells, root="runs/tables", preset="cpu", seeds=1)
    jobs.run(todo, parallel=2)

Run directories are `attnbench.papers.runs`'s; a cell whose finished run exists (its own or a twin's
in another table) gets no job. `substituted_jobs` plans the same cells with another attention
(`attnbench.papers.substitute`): one job per distinct substituted config and seed. Both print what
they selected, and with `listing` print every run and plan nothing.
"""

from __future__ import annotations

import json
import pathlib
import time

from attnbench import io
from attnbench.launch import jobs
from attnbench.papers import runs, substitute, tables

__all__ = ["select", "command", "compute_exact", "table_jobs", "substituted_jobs"]


def select(table, words) -> list:
    """The cells matching any of `words`: `word` matches a row or column containing it,
    `row/column` a cell whose row contains `row` and column contains `column` (case-insensitive).
    A part that names a row or column exactly matches that one only ("CIFAR-10" is not
    "CIFAR-100")."""
    if not words:
        return list(table.cells)
    rows = {c.row.lower() for c in table.cells}
    columns = {c.column.lower() for c in table.cells}

    def part(word: str, label: str, labels: set) -> bool:
        return word == label if word in labels else word in label

    def match(c, word):
        row, sep, column = word.lower().partition("/")
        row, column = row.strip(), column.strip()
        if sep:
            return part(row, c.row.lower(), rows) and part(column, c.column.lower(), columns)
        if row in rows or row in columns:
            return row in (c.row.lower(), c.column.lower())
        return row in c.row.lower() or row in c.column.lower()

    return [c for c in table.cells if any(match(c, w) for w in words)]


def command(cell, preset: str, seed: int, workdir: pathlib.Path) -> tuple:
    """The `scripts.train` command of one run of `cell`."""
    spec = cell.config + ("," if ":" in cell.config else ":") + f"preset={preset}"
    return jobs.train_command(spec, workdir, seed=seed)


def compute_exact(table, cell, root) -> float:
    """Computes an exact cell and writes its summary (atomically); returns the value."""
    t0 = time.perf_counter()
    value = tables.compute(cell)
    workdir = runs.run_dir(root, table.key, runs.EXACT, cell, 0)
    io.write_json(
        workdir / "summary.json",
        {
            "schema_version": 1,
            "preset": runs.EXACT,
            "metrics": {"exact": {"value": value}},
            "exact": {"function": cell.exact, "args": dict(sorted(cell.exact_args.items()))},
            "data": {"source": "computed"},
            "command": f"python -m scripts.reproduce {table.key} --cells "
            + json.dumps(f"{cell.row}/{cell.column}"),
            "device": io.device_info(),
            "git_revision": io.git_revision(),
            "versions": io.versions(),
            "wall_time_s": round(time.perf_counter() - t0, 3),
        },
    )
    return value


def table_jobs(
    table, cells, *, root, preset: str, seeds: int, listing: bool = False
) -> list[jobs.Job]:
    """The jobs of `cells` (seeds 0..seeds-1) under run root `root`; computes the exact cells
    first. With `listing`, prints every run and its state instead, computing and planning
    nothing."""
    not_runnable = [c for c in cells if not (c.runnable or c.elsewhere or c.mean_of)]
    elsewhere = [c for c in cells if c.elsewhere]
    exact = [c for c in cells if c.exact is not None]
    planned = [(c, s) for c in cells if c.config is not None for s in range(seeds)]
    todo = [(c, s) for c, s in planned if runs.finished(root, table.key, preset, c, s) is None]
    # Cells of one table with the same config (e.g. a top-1 and a top-5 column) share one run:
    # the first gets the job, the others read its directory as a twin's (`runs.run_dirs`).
    first = {}
    for c, s in todo:
        first.setdefault((c.config, s), (c, s))
    shared = len(todo) - len(first)
    todo = list(first.values())
    print(
        f"{table.key}: {len(cells)} cells selected, {len(planned)} runs "
        f"({len(planned) - len(todo) - shared} finished"
        + (f", {shared} shared with another selected cell" if shared else "")
        + f"), {len(exact)} computed exactly, "
        f"{len(elsewhere)} reproduced elsewhere, {len(not_runnable)} not runnable yet",
        flush=True,
    )
    for c in not_runnable:
        print(f"  not runnable: [{c.row} / {c.column}] needs {c.needs}", flush=True)
    for c in elsewhere:
        print(f"  elsewhere: [{c.row} / {c.column}] {c.elsewhere}", flush=True)
    if listing:
        for c in exact:
            print(f"  exact: [{c.row} / {c.column}] {c.exact}({c.exact_args})")
        for c, s in planned:
            done = runs.finished(root, table.key, preset, c, s)
            where = "" if done is None else f" ({done.parent})"
            state = "done" if done else "todo"
            print(f"  {state}: [{c.row} / {c.column}] seed {s}: {c.config}{where}")
        return []
    for c in exact:
        paper = "-" if c.paper is None else f"{c.paper:g}"
        value = compute_exact(table, c, root)
        print(f"  exact: [{c.row} / {c.column}] {value:.6g} (paper {paper})", flush=True)
    out = []
    for c, s in todo:
        workdir = runs.run_dir(root, table.key, preset, c, s)
        label = f"{c.row} / {c.column} seed {s}"
        out.append(jobs.Job(label, workdir, command(c, preset, s, workdir)))
    return out


def substituted_jobs(
    table, cells, sub, *, root, preset: str, seeds: int, imports=(), listing: bool = False
) -> list[jobs.Job]:
    """One job per distinct substituted config and seed (cells with equal configs share it);
    `imports` go on each command so the child registers the same mechanisms."""
    by_digest: dict[str, list] = {}
    for c in cells:
        if not c.runnable or c.config is None:
            continue
        digest = sub.digest(c.config, preset)
        if digest is not None:
            by_digest.setdefault(digest, []).append(c)
    out, done = [], 0
    for digest, group in by_digest.items():
        for s in range(seeds):
            workdir = substitute.run_dir(root, sub, preset, digest, s)
            names = ", ".join(f"{c.row} / {c.column}" for c in group)
            if (workdir / "summary.json").exists():
                done += 1
                if listing:
                    print(f"  done: [{names}] seed {s} ({workdir})")
                continue
            spec = sub.config_spec(group[0].config, preset)
            cmd = jobs.train_command(
                spec, workdir, seed=s, overrides=sub.overrides(), imports=imports
            )
            if listing:
                print(f"  todo: [{names}] seed {s}: {spec}")
            out.append(jobs.Job(f"{sub.label} in {table.key} [{names}] seed {s}", workdir, cmd))
    print(
        f"{table.key} with {sub.label}: {len(by_digest)} distinct configs x {seeds} seed(s), "
        f"{done} finished, {len(out)} to run",
        flush=True,
    )
    return [] if listing else out
