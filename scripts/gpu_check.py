"""The accelerator targets in one run on a GPU (`make gpu-check` runs the GPU tests first).

    python -m scripts.gpu_check                       # writes results/bench/gpu/
    python -m scripts.gpu_check --out /tmp/g --lengths 1024 4096
    python -m scripts.gpu_check --allow-cpu --out /tmp/g --lengths 256 --repeats 1 \
        --train-steps 1 --train-batch 2 --listops-length 128 --text-length 256  # try it

Measures attention alone (bf16, batch 4, 8 heads of 64) for every mechanism against cuDNN's fused
kernel, and whole LRA training steps (ListOps paper recipe f32 vs bf16, Text at 4,096 tokens
with softmax and SSA), then states each target of the accelerator issue and whether it holds
(`attnbench.bench.gpu_check`). Refuses to run on a CPU: the figures would answer nothing.
"""

from __future__ import annotations

import sys
import time

from attnbench import cli, errors, io
from attnbench.bench import gpu_check


def _parser():
    p = cli.ArgumentParser(prog="scripts.gpu_check", description=__doc__.splitlines()[0])
    p.add_argument("--out", default="results/bench/gpu")
    p.add_argument("--lengths", nargs="+", type=int, default=gpu_check.LENGTHS)
    p.add_argument("--mechanisms", nargs="+", default=gpu_check.MECHANISMS)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--train-steps", type=int, default=10)
    p.add_argument("--train-batch", type=int, default=32)
    p.add_argument("--listops-length", type=int, default=None, help="default: the recipe's")
    p.add_argument("--text-length", type=int, default=4096)
    p.add_argument(
        "--accuracy",
        type=int,
        default=0,
        metavar="SEEDS",
        help="also train the ListOps paper recipe in float32 and bf16, SEEDS seeds each "
        "(about 30 min on an H100 at 2)",
    )
    p.add_argument("--runs", default="runs/gpu_check", help="workdirs of the --accuracy runs")
    p.add_argument("--allow-cpu", action="store_true", help="run anyway (to try the script)")
    return p


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = _parser().parse_args(argv)
    if args.accuracy < 0:
        raise errors.ConfigError(f"--accuracy {args.accuracy}: seeds per dtype, 0 or more")
    import jax

    if jax.default_backend() != "gpu" and not args.allow_cpu:
        raise errors.ConfigError(
            f"scripts.gpu_check needs a GPU; jax's backend here is {jax.default_backend()!r} "
            "(install the cuda extra: make venv EXTRAS=test,cuda), or pass --allow-cpu"
        )
    t0 = time.perf_counter()
    provenance = io.provenance("python -m scripts.gpu_check " + " ".join(argv))
    result = gpu_check.run(
        lengths=args.lengths,
        mechanisms=args.mechanisms,
        repeats=args.repeats,
        train_steps=args.train_steps,
        train_batch=args.train_batch,
        listops_length=args.listops_length,
        text_length=args.text_length,
        out=args.out,  # written as it goes: a run cut short keeps what it measured
        provenance=provenance,
    )
    if args.accuracy:
        result["accuracy"] = gpu_check.accuracy(args.runs, seeds=args.accuracy)
    targets = gpu_check.write(result, args.out)
    held = sum(t["holds"] for t in targets)
    print(
        f"{held}/{len(targets)} targets hold ({time.perf_counter() - t0:.0f}s); "
        f"wrote {args.out}/targets.md"
    )


if __name__ == "__main__":
    sys.exit(cli.run(main))
