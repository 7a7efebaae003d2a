"""Runs the cells of a paper table at a chosen scale.

    python -m scripts.reproduce samsa.table1 --preset cpu --cells listops
    python -m scripts.reproduce samsa.table1 --preset cpu --cells "text/128 hard" --seeds 3 --jobs 2
    python -m scripts.reproduce samsa.table1 --list
    python -m scripts.reproduce samsa.table1 --import ~/mine.py --attn mine --preset cpu
    python -m scripts.reproduce --all --import ~/mine.py --attn mine:temperature=2 --preset cpu
    python -m scripts.reproduce --all --preset smoke --jobs 2 --report results/coverage/smoke

Each (cell, seed) is one `scripts.train` process with its own run directory
`<runs>/<paper>_<table>/<preset>/<row>/<column>/seed<N>/`: a finished cell (its `summary.json`
exists) is skipped, an interrupted one resumes from its last checkpoint (the trainer does that),
and `--jobs N` runs N cells at once. A cell whose config another table's cell shares (SAMSA
Table 2 reprints Table 1's runs) is trained once: a finished run of either serves both.
`--cells` keeps the cells whose row or column contains one of the given words, or with
`row/column` the matching cells (case-insensitive). Cells we cannot run yet (their task or
mechanism does not exist) are listed with what they need, never skipped silently. Seed N > 0
sets `config.seed = N` (seed 0 is the recipe's own seed).

`--all` alone runs every trainable cell of every table and writes a coverage report
(`attnbench.papers.coverage`: each cell ok with its value, or failed with the one-line reason, and
the seconds it took) to `--report STEM` (`STEM.md` and `STEM.json`; default
`<runs>/coverage_<preset>`); `--report` also works for one table.

Cells computed exactly (`Cell.exact`: parameter counts, analytic FLOPs, numerical tests) need
no training: they are recomputed in this process on every call, whatever the preset, and written
to `<runs>/<paper>_<table>/exact/<row>/<column>/seed0/summary.json`. Cells reproduced by
another command (`Cell.elsewhere`, the speed tables) are listed with that command.

`--attn NAME[:k=v,...]` runs every selected cell whose model has an attention with NAME in it
instead (`attnbench.papers.substitute`; cells whose configs become identical share one run), under
`<runs>/attn/<NAME>/<preset>/<config digest>/seed<N>/`; `--all --attn` does it for every table, and
`scripts.tables --attn NAME` shows the numbers beside ours. `--import MODULE_OR_FILE` imports a
module that registers your mechanism (also on `scripts.train` and `scripts.tables`). Runs are child
processes that stop with this one (`attnbench.launch.jobs`): Ctrl-C cancels the queue. The planning
is `attnbench.papers.reproduce`'s, the run directories `attnbench.papers.runs`'s.
"""

from __future__ import annotations

import sys

from attnbench import cli, plugins
from attnbench.launch import jobs
from attnbench.papers import coverage, reproduce, runs, substitute
from attnbench.papers import tables as paper_tables


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = cli.ArgumentParser(
        prog=cli.prog("scripts.reproduce"), description=__doc__.split("\n")[0]
    )
    parser.add_argument("table", nargs="?", help=f"one of: {', '.join(paper_tables.names())}")
    parser.add_argument("--all", action="store_true", help="every table")
    parser.add_argument(
        "--report", default=None, metavar="STEM", help="write the coverage report STEM.{md,json}"
    )
    parser.add_argument("--preset", default="cpu", choices=list(runs.PRESETS))
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
    if args.attn and args.report:
        parser.error("--report covers the papers' own cells; leave out --attn")
    report = args.report or (f"{args.runs}/coverage_{args.preset}" if args.all else None)
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
    todo, selected = [], []
    plan = dict(root=args.runs, preset=args.preset, seeds=args.seeds, listing=args.list)
    for table in tables:
        cells = reproduce.select(table, args.cells)
        if not cells and not args.all:
            parser.error(f"no cell of {table.key} matches {args.cells}")
        selected.append((table, cells))
        if sub is not None:
            todo += reproduce.substituted_jobs(table, cells, sub, imports=imports, **plan)
        else:
            todo += reproduce.table_jobs(table, cells, **plan)
    if args.list:
        return 0
    status = jobs.run(_once(todo), args.jobs)
    if report and status < 128:  # a stopped sweep reports when it is run again to its end
        entries = coverage.rows(selected, root=args.runs, preset=args.preset)
        for path in coverage.write(entries, report, preset=args.preset, command=_command(argv)):
            print(f"coverage report: {path}", flush=True)
    return status


def _once(todo: list) -> list:
    """One job per distinct command: a cell of another table with the same config and seed
    (SAMSA Table 2 reprints Table 1) reads that job's run as its twin's (`runs.run_dirs`)."""
    seen, out = set(), []
    for job in todo:
        key = tuple(a for a in job.cmd if not a.startswith("--workdir="))
        if key not in seen:
            seen.add(key)
            out.append(job)
    if len(out) < len(todo):
        print(f"{len(todo) - len(out)} run(s) shared with a cell of another table", flush=True)
    return out


def _command(argv) -> str:
    import shlex

    return "python -m scripts.reproduce " + " ".join(shlex.quote(a) for a in argv)


def _substitution(parser, spec):
    if spec is None:
        return None
    try:
        return substitute.parse(spec)
    except (TypeError, ValueError) as e:
        parser.error(f"--attn {spec}: {e}")


def run() -> None:
    """Console entry point (`attnbench-reproduce`)."""
    sys.exit(cli.run(main))


if __name__ == "__main__":
    run()
