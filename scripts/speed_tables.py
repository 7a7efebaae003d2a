"""The papers' speed and cost tables, regenerated on this machine beside the published numbers.

    python -m scripts.speed_tables                          # every table, full scale
    python -m scripts.speed_tables --tables samsa gfsa      # a subset
    python -m scripts.speed_tables --scale smoke --out /tmp/x   # tiny sizes (the test suite)

Tables: samsa (SAMSA Table 1, speed row), sliceformer (Sliceformer Table 3), gfsa (GFSA's
runtime overhead, Tables 12 and 24-26), ssa (SSA's relative compute / memory / speed, Tables
1-2), grf (GRF Figure 3), and the timing groups timing_gfsa_vision (GFSA Tables 12, 25, 31, 39,
Figure 3), timing_gfsa_graphs (Tables 26, 32) and timing_gfsa_lra (Table 40): every timing cell
on its own recipe, on whatever device this runs on (`--max-batch 8` on a small machine). Each
is written to `<out>/paper_<name>.{json,md}` as soon as it is measured, plus a PNG where a
picture helps, then `<out>/targets.md` lists every target.

The paper's numbers come from the table configs (`configs/tables/`), whose speed and memory cells
name the function that measures them; `attnbench.papers.speed_tables` holds the measurements and the
rendering. Every measurement runs in its own process (`attnbench.launch.isolate`); the paper's
numbers are quoted with their hardware, ours say the device, batch and sizes.
"""

from __future__ import annotations

import argparse
import sys

from attnbench import cli, io
from attnbench.papers import speed, speed_tables


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    parser = cli.ArgumentParser(prog="scripts.speed_tables", description=__doc__.split("\n")[0])
    names = speed_tables.TABLES
    parser.add_argument("--tables", nargs="+", default=list(names), choices=names)
    parser.add_argument("--scale", default="full", choices=sorted(speed.SCALES))
    parser.add_argument("--out", default="results/bench")
    parser.add_argument(
        "--max-batch",
        type=cli.positive_int,
        default=None,
        help="timing groups: at most this many examples per step (a small machine); per-epoch "
        "times then assume the time per example does not depend on the batch",
    )
    parser.add_argument(
        "--isolate",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="one process per measurement (per-configuration peak RSS, crash isolation)",
    )
    parser.add_argument(
        "--summary-only",
        action="store_true",
        help="only rebuild <out>/targets.md from the JSON files already there",
    )
    args = parser.parse_args(argv)
    if args.summary_only:
        io.write_text(f"{args.out}/targets.md", "\n".join(speed_tables.summary(args.out)) + "\n")
        print(f"wrote {args.out}/targets.md")
        return
    speed_tables.run(
        args.tables,
        scale=args.scale,
        isolated=args.isolate,
        out=args.out,
        command="python -m scripts.speed_tables " + " ".join(argv),
        max_batch=args.max_batch,
    )


if __name__ == "__main__":
    sys.exit(cli.run(main))
