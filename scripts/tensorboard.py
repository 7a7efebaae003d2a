"""TensorBoard event files of finished (or older) runs, from their metrics.jsonl.

    attnbench-tensorboard runs/listops-cpu runs/text-*     # writes <run>/tensorboard/
    tensorboard --logdir runs                               # then watch them side by side

(or `python -m scripts.tensorboard ...`). Each run's `<run>/tensorboard/` is written anew from
its `metrics.jsonl`: every record's numbers as scalars `<split>/<name>` at its step
(`attnbench.writers.export`). A new run writes them as it goes with
`--config.writers=tensorboard`.
"""

from __future__ import annotations

import sys

from attnbench import cli, writers


def main(argv=None) -> int:
    parser = cli.ArgumentParser(
        prog=cli.prog("scripts.tensorboard"), description=__doc__.split("\n")[0]
    )
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run directories (workdirs)")
    args = parser.parse_args(argv)
    for run in args.runs:
        print(f"{run}: {writers.export(run)}")
    return 0


def run() -> None:
    """Console entry point (`attnbench-tensorboard`)."""
    sys.exit(cli.run(main))


if __name__ == "__main__":
    run()
