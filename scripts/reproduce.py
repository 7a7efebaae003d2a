"""Runs the cells of a paper table at a chosen scale.

    python -m scripts.reproduce samsa.table1 --preset cpu --cells listops
    python -m scripts.reproduce samsa.table1 --preset cpu --cells "text/128 hard" --seeds 3 --jobs 2
    python -m scripts.reproduce samsa.table1 --list
    python -m scripts.reproduce samsa.table1 --import ~/mine.py --attn mine --preset cpu
    python -m scripts.reproduce --all --import ~/mine.py --attn mine:temperature=2 --preset cpu

Each (cell, seed) is one `scripts.train` process with its own run directory
`<runs>/<paper>_<table>/<preset>/<row>/<column>/seed<N>/`: a finished cell (its `summary.json`
exists) is skipped, an interrupted one resumes from its last checkpoint (the trainer does that),
and `--jobs N` runs N cells at once. A cell whose config another table's cell shares (SAMSA
Table 2 reprints Table 1's runs) is trained once: a finished run of either serves both.
`--cells` keeps the cells whose row or column contains one of the given words, or with
`row/column` the matching cells (case-insensitive). Cells we cannot run yet (their task or
mechanism does not exist) are listed with what they need, never skipped silently. Seed N > 0
sets `config.seed = N` (seed 0 is the recipe's own seed).

Cells computed exactly (`Cell.exact`: parameter counts, analytic FLOPs, numerical tests) need
no training: they are recomputed in this process on every call, whatever the preset, and written
to `<runs>/<paper>_<table>/exact/<row>/<column>/seed0/summary.json`. Cells reproduced by
another command (`Cell.elsewhere`, the speed tables) are listed with that command.

`--attn NAME[:k=v,...]` runs every selected cell whose model has an attention with NAME in it
instead (`core.substitute`; cells whose configs become identical share one run), under
`<runs>/attn/<NAME>/<preset>/<config digest>/seed<N>/`; `--all` does it for every table, and
`scripts.tables --attn NAME` shows the numbers beside ours. `--import MODULE_OR_FILE` imports a
module that registers your mechanism (also on `scripts.train` and `scripts.tables`). Runs are
child processes that stop with this one (`core.jobs`): Ctrl-C cancels the queue.
"""

from __future__ import annotations

import functools
import json
import pathlib
import re
import sys
import time

from core import cli, io, jobs, paper_tables, plugins, substitute


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def run_dir(root, key: str, preset: str, cell, seed: int) -> pathlib.Path:
    return (
        pathlib.Path(root)
        / key.replace(".", "_")
        / preset
        / _slug(cell.row)
        / _slug(cell.column)
        / f"seed{seed}"
    )


@functools.lru_cache(maxsize=1)
def _by_config() -> dict[str, list]:
    index: dict[str, list] = {}
    for key in paper_tables.names():
        for c in paper_tables.load(key).cells:
            if c.config is not None:
                index.setdefault(c.config, []).append((key, c))
    return index


def run_dirs(root, key: str, preset: str, cell, seed: int) -> list[pathlib.Path]:
    """Where a run of `cell` may be: its own directory first, then those of the cells of other
    tables with the same config (one training run serves every table that prints it)."""
    own = run_dir(root, key, preset, cell, seed)
    twins = [
        run_dir(root, k, preset, c, seed)
        for k, c in _by_config().get(cell.config, [])
        if (k, c.row, c.column) != (key, cell.row, cell.column)
    ]
    return [own] + sorted(set(twins) - {own})


def finished(root, key: str, preset: str, cell, seed: int) -> pathlib.Path | None:
    """The summary of a finished run of `cell` (its own or a twin's), or None."""
    return next(
        (
            d / "summary.json"
            for d in run_dirs(root, key, preset, cell, seed)
            if (d / "summary.json").exists()
        ),
        None,
    )


def select(table, words) -> list:
    """The cells matching any of `words`: `word` matches a row or column containing it,
    `row/column` a cell whose row contains `row` and column contains `column` (case-insensitive)."""
    if not words:
        return list(table.cells)

    def match(c, word):
        row, sep, column = word.lower().partition("/")
        if sep:
            return row.strip() in c.row.lower() and column.strip() in c.column.lower()
        return row in c.row.lower() or row in c.column.lower()

    return [c for c in table.cells if any(match(c, w) for w in words)]


def command(cell, preset: str, seed: int, workdir: pathlib.Path) -> tuple:
    spec = cell.config + ("," if ":" in cell.config else ":") + f"preset={preset}"
    return jobs.train_command(spec, workdir, seed=seed)


def compute_exact(table, cell, root) -> float:
    """Computes an exact cell and writes its summary (atomically); returns the value."""
    t0 = time.perf_counter()
    value = paper_tables.compute(cell)
    workdir = run_dir(root, table.key, "exact", cell, 0)
    io.write_json(
        workdir / "summary.json",
        {
            "schema_version": 1,
            "preset": "exact",
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


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = cli.ArgumentParser(prog="scripts.reproduce", description=__doc__.split("\n")[0])
    parser.add_argument("table", nargs="?", help=f"one of: {', '.join(paper_tables.names())}")
    parser.add_argument("--all", action="store_true", help="every table (with --attn)")
    parser.add_argument("--preset", default="cpu", choices=["paper", "cpu", "smoke"])
    parser.add_argument("--cells", nargs="*", default=[], help="words matching rows or columns")
    parser.add_argument("--seeds", type=cli.positive_int, default=1, help="seeds 0..N-1 per cell")
    parser.add_argument(
        "--jobs", type=cli.positive_int, default=1, help="cells run at once (processes)"
    )
    parser.add_argument("--runs", default="runs/tables", help="root of the run directories")
    parser.add_argument("--list", action="store_true", help="list the cells and stop")
    parser.add_argument(
        "--attn", default=None, metavar="NAME[:k=v,...]", help="run the cells with this attention"
    )
    cli.add_import_argument(parser)
    args = parser.parse_args(argv)
    if not args.runs.strip():
        parser.error("--runs is empty; name the root of the run directories")
    if bool(args.table) == args.all:
        parser.error("name one table, or --all (with --attn)")
    if args.all and not args.attn:
        parser.error("--all needs --attn NAME: the papers' own cells are run one table at a time")
    imports = plugins.import_modules(args.imports)
    sub = _substitution(parser, args.attn)
    keys = paper_tables.names() if args.all else [args.table]
    tables = []
    for key in keys:
        try:
            table = paper_tables.load(key)
            paper_tables.validate(table)
        except paper_tables.TableError as e:
            parser.error(str(e))
        tables.append(table)
    todo = []
    for table in tables:
        cells = select(table, args.cells)
        if not cells and not args.all:
            parser.error(f"no cell of {table.key} matches {args.cells}")
        if sub is not None:
            todo += _substituted_jobs(table, cells, sub, args, imports)
        else:
            todo += _table_jobs(table, cells, args)
    if args.list:
        return 0
    return jobs.run(todo, args.jobs)


def _substitution(parser, spec):
    if spec is None:
        return None
    try:
        return substitute.parse(spec)
    except (TypeError, ValueError) as e:
        parser.error(f"--attn {spec}: {e}")


def _table_jobs(table, cells, args) -> list:
    not_runnable = [c for c in cells if not (c.runnable or c.elsewhere or c.mean_of)]
    elsewhere = [c for c in cells if c.elsewhere]
    exact = [c for c in cells if c.exact is not None]
    runs = [(c, s) for c in cells if c.config is not None for s in range(args.seeds)]
    todo = [(c, s) for c, s in runs if finished(args.runs, table.key, args.preset, c, s) is None]
    print(
        f"{table.key}: {len(cells)} cells selected, {len(runs)} runs ({len(runs) - len(todo)} "
        f"finished), {len(exact)} computed exactly, {len(elsewhere)} reproduced elsewhere, "
        f"{len(not_runnable)} not runnable yet",
        flush=True,
    )
    for c in not_runnable:
        print(f"  not runnable: [{c.row} / {c.column}] needs {c.needs}", flush=True)
    for c in elsewhere:
        print(f"  elsewhere: [{c.row} / {c.column}] {c.elsewhere}", flush=True)
    if args.list:
        for c in exact:
            print(f"  exact: [{c.row} / {c.column}] {c.exact}({c.exact_args})")
        for c, s in runs:
            done = finished(args.runs, table.key, args.preset, c, s)
            where = "" if done is None else f" ({done.parent})"
            state = "done" if done else "todo"
            print(f"  {state}: [{c.row} / {c.column}] seed {s}: {c.config}{where}")
        return []
    for c in exact:
        paper = "-" if c.paper is None else f"{c.paper:g}"
        value = compute_exact(table, c, args.runs)
        print(f"  exact: [{c.row} / {c.column}] {value:.6g} (paper {paper})", flush=True)
    out = []
    for c, s in todo:
        workdir = run_dir(args.runs, table.key, args.preset, c, s)
        label = f"{c.row} / {c.column} seed {s}"
        out.append(jobs.Job(label, workdir, command(c, args.preset, s, workdir)))
    return out


def _substituted_jobs(table, cells, sub, args, imports) -> list:
    """One job per distinct substituted config and seed (cells with equal configs share it)."""
    by_digest: dict[str, list] = {}
    for c in cells:
        if not c.runnable or c.config is None:
            continue
        digest = sub.digest(c.config, args.preset)
        if digest is not None:
            by_digest.setdefault(digest, []).append(c)
    out, done = [], 0
    for digest, group in by_digest.items():
        for s in range(args.seeds):
            workdir = substitute.run_dir(args.runs, sub, args.preset, digest, s)
            names = ", ".join(f"{c.row} / {c.column}" for c in group)
            if (workdir / "summary.json").exists():
                done += 1
                if args.list:
                    print(f"  done: [{names}] seed {s} ({workdir})")
                continue
            spec = sub.config_spec(group[0].config, args.preset)
            cmd = jobs.train_command(
                spec, workdir, seed=s, overrides=sub.overrides(), imports=imports
            )
            if args.list:
                print(f"  todo: [{names}] seed {s}: {spec}")
            out.append(jobs.Job(f"{sub.label} in {table.key} [{names}] seed {s}", workdir, cmd))
    print(
        f"{table.key} with {sub.label}: {len(by_digest)} distinct configs x {args.seeds} seed(s), "
        f"{done} finished, {len(out)} to run",
        flush=True,
    )
    return [] if args.list else out


if __name__ == "__main__":
    sys.exit(cli.run(main))
