"""Two sets of `scripts.bench attention` records side by side: new / old time per cell.

    python -m scripts.bench_compare --old OLD/attention_*.json --new NEW/attention_*.json \\
        --out results/bench/attention_ab --title "HEAD vs 600cf43"

Take both sides on the same machine, interleaved (one mechanism of each side in turn), with the
same bench arguments; `attnbench.bench.compare` says what is compared. Prints the markdown table.
"""

from __future__ import annotations

import sys

from attnbench import cli, errors
from attnbench.bench import compare as bench_compare


def _parser():
    p = cli.ArgumentParser(prog="scripts.bench_compare", description=__doc__.splitlines()[0])
    p.add_argument("--old", nargs="+", required=True, help="attention bench JSON files")
    p.add_argument("--new", nargs="+", required=True, help="attention bench JSON files")
    p.add_argument("--out", required=True, help="output prefix: writes PREFIX.json, PREFIX.md")
    p.add_argument("--threshold", type=float, default=1.05, help="flag ratios above this")
    p.add_argument("--title", default="Attention time: new / old")
    return p


def main(argv=None):
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    old, new = bench_compare.load(args.old), bench_compare.load(args.new)
    result = bench_compare.compare(old, new, threshold=args.threshold)
    if not result["cells"]:
        raise errors.ConfigError(
            "no (mechanism, mode, length) was measured on both sides; compare runs of the same "
            "mechanisms and lengths"
        )
    print(bench_compare.write(result, args.out, title=args.title), end="")


if __name__ == "__main__":
    sys.exit(cli.run(main))
