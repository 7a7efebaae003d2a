"""Builds every paper table from the run summaries: `<out>/<paper>_<table>.{md,csv}`.

    python -m scripts.tables                                  # all, into runs/rendered-tables
    python -m scripts.tables --out results/tables             # rebuild the committed tables
    python -m scripts.tables --tables samsa.table1 --latex    # one table, plus a LaTeX file
    python -m scripts.tables --preset smoke --runs runs/mine  # your smoke runs of every table
    python -m scripts.tables --readme README.md               # also refresh the README's list

Each cell shows ours (mean +/- std over seeds, the number of seeds when more than one) beside the
paper's number, with markers for how ours was made: `*` reduced scale (preset `cpu` or `smoke`), `+`
offline stand-in or generated data instead of the paper's dataset, `=` computed exactly (no
training); a quoted paper number (the authors copied it from another paper) is marked `q`.

A table shows one scale: `--preset`, or else the largest with runs of the table (paper, then cpu,
then smoke), and its header names it and each other preset with runs with the flag that shows it;
exact cells are the same at every preset. Summaries are read from the `--runs` roots in order
(default: your runs under `runs/tables`, then the committed ones under `results/tables/runs`;
roots you give replace both): each cell shows the runs of the first root that has any of it at the
shown preset, and a later root's runs of that cell are ignored (and listed as such). Each file says
which runs its numbers come from (preset, data, device, revision, root). Output is a pure function
of the summaries and options: running it twice writes the same bytes. `leaderboard.md` ranks every
mechanism run so far per task and on average (`attnbench.papers.leaderboard`), including the runs
of `scripts.reproduce --attn NAME`. The summaries are read by `attnbench.papers.runs` and the files
rendered by `attnbench.papers.render`. A `summary.json` under a run root that is not a run summary
(cut short, not JSON, a field of another type: `metrics.test_best.accuracy` a string, `device` a
list) stops it with one line naming the file and the field, exit status 2, before any file is
written (`attnbench.papers.summaries`); a missing or `null` metric is one the run does not have, a
`NaN` one a failed run.
"""

from __future__ import annotations

import pathlib
import sys

from attnbench import cli, errors, io, plugins
from attnbench.papers import leaderboard, render, runs, substitute, tables

RUNS = ("runs/tables", "results/tables/runs")
OUT = "runs/rendered-tables"  # under runs/ (git ignores it): no tracked file changes by default


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = cli.ArgumentParser(prog=cli.prog("scripts.tables"), description=__doc__.split("\n")[0])
    parser.add_argument("--tables", nargs="*", default=None, help="default: every table")
    parser.add_argument(
        "--runs",
        nargs="+",
        default=list(RUNS),
        metavar="DIR",
        help=f"run roots, in order (default: {' '.join(RUNS)}; given ones replace these): "
        + runs.RULE,
    )
    parser.add_argument(
        "--preset",
        choices=runs.PRESETS,
        default=None,
        help="the scale shown (default: per table, the largest with runs: paper, cpu, smoke)",
    )
    parser.add_argument(
        "--out",
        default=OUT,
        help=f"where the tables go (default {OUT}, untracked; the committed tables are "
        "rebuilt with --out results/tables)",
    )
    parser.add_argument("--latex", action="store_true", help="also write <table>.tex")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNGs")
    parser.add_argument("--readme", default=None, help="refresh this README's table list")
    parser.add_argument(
        "--attn",
        default=None,
        metavar="NAME[:k=v,...]",
        help="add this mechanism's runs (scripts.reproduce --attn) beside ours in every cell",
    )
    cli.add_import_argument(parser)
    args = parser.parse_args(argv)
    given = args.runs != list(RUNS)
    missing = [r for r in args.runs if not pathlib.Path(r).is_dir()]
    if (given and missing) or len(missing) == len(args.runs):
        raise errors.DataError(
            f"run folder(s) not found: {', '.join(missing)}; "
            + (
                "pass existing run roots to --runs"
                if given
                else "run from the repository root, or pass --runs"
            )
        )
    plugins.import_modules(args.imports)
    try:
        sub = substitute.parse(args.attn) if args.attn else None
    except (TypeError, ValueError) as e:
        parser.error(f"--attn {args.attn}: {e}")
    known = tables.names()
    for key in args.tables or []:
        if key not in known:
            parser.error(f"unknown table {key!r}; known: {', '.join(known)}")
    # Every summary is read (and a bad one reported) before the first file is written.
    todo = []
    for key in args.tables or known:
        table = tables.load(key)
        shown, results, theirs = runs.select(table, args.runs, args.preset, sub)
        todo.append((table, shown, results, (sub.label, theirs) if sub else None))
    index_page = render.index_page(args.runs)
    board = leaderboard.collect(runs.roots(args.runs))
    for table, shown, results, extra in todo:
        written = render.write(
            table,
            results,
            args.out,
            extra=extra,
            shown=shown,
            latex=args.latex,
            plots=not args.no_plots,
        )
        print(f"wrote {args.out}/{render.stem(table.key)}.{{{','.join(written)}}}")
    io.write_text(f"{args.out}/index.md", index_page)
    print(f"wrote {args.out}/index.md")
    io.write_text(
        f"{args.out}/leaderboard.md",
        leaderboard.render(board, header=render.HEADER_MD) + "\n",
    )
    print(f"wrote {args.out}/leaderboard.md")
    if args.readme:
        changed = render.update_readme(args.readme, render.index(args.runs))
        print(f"{args.readme}: table list {'updated' if changed else 'unchanged'}")
    return 0


def run() -> None:
    """Console entry point (`attnbench-tables`)."""
    sys.exit(cli.run(main))


if __name__ == "__main__":
    run()
