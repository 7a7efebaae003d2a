"""Trainer overhead: `train_and_evaluate`'s steps/s against a bare loop over the same jitted step
on the same batches, measured side by side (alternating) in one process.

    python -m scripts.bench_trainer --config configs/lra/listops.py:preset=cpu --steps 60

Writes `results/bench/trainer_overhead.{json,md}` (`attnbench.bench.trainer` says how each rate is
taken).
"""

from __future__ import annotations

import sys

from attnbench import cli, io
from attnbench.bench import trainer as bench_trainer


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    parser = cli.ArgumentParser(prog="scripts.bench_trainer", description=__doc__.split("\n")[0])
    parser.add_argument("--config", default="lra/listops.py:preset=cpu")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", default="results/bench")
    args = parser.parse_args(argv)
    result = bench_trainer.run(args.config, steps=args.steps, repeats=args.repeats)
    result.update(
        device=io.device_info(),
        versions=io.versions(),
        git_revision=io.git_revision(),
        command="python -m scripts.bench_trainer " + " ".join(argv),
    )
    bench_trainer.write(result, args.out)
    print(f"trainer / bare = {result['trainer_over_bare']:.3f}")


if __name__ == "__main__":
    sys.exit(cli.run(main))
