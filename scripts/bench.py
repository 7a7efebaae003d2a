"""Efficiency benchmarks.

    python -m scripts.bench attention --mechanisms softmax linear --lengths 1024 4096 16384
    python -m scripts.bench train --config configs/lra/text.py --set model.dtype=bfloat16
    python -m scripts.bench replot results/bench/attention_scaling.json
    python -m scripts.bench pipeline --configs configs/lra/text.py:preset=cpu --compare results/runs

`attention`: time and memory per mechanism vs length, one process each
(`attnbench.bench.attention`); `train`: whole-model train / inference steps/s and memory
(`attnbench.bench.train`); `pipeline`: the input pipeline alone vs the task's training rate
(`attnbench.bench.pipeline`). Writes results/bench/.
"""

from __future__ import annotations

import argparse
import pathlib
import resource
import sys
import time

import attention
from attnbench import cli, io
from attnbench.bench import attention as bench_attention
from attnbench.bench import pipeline as bench_pipeline
from attnbench.bench import train as bench_train


def _parser():
    parser = cli.ArgumentParser(
        prog=cli.prog("scripts.bench"), description="attnbench efficiency benchmarks"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("attention", help="time and memory vs length per mechanism")
    p.add_argument("--mechanisms", nargs="+", default=None, help="default: all registered")
    p.add_argument("--lengths", nargs="+", type=int, default=[1024, 2048, 4096, 8192, 16384, 32768])
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--head-dim", type=int, default=32)
    p.add_argument("--dtype", default="float32")
    modes = bench_attention.MODES
    p.add_argument("--modes", nargs="+", default=list(modes), choices=modes)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--max-memory-gb", type=float, default=8.0)
    p.add_argument("--out", default="results/bench")
    p.add_argument("--tag", default="scaling")
    p.add_argument(
        "--isolate",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="one process per (mechanism, length): its own peak RSS, and a crash loses one record",
    )
    p.add_argument("--timeout", type=float, default=1800, help="seconds per isolated process")
    p.add_argument("--slope-range", nargs=2, type=int, default=[4096, 32768])
    t = sub.add_parser("train", help="whole-model train/inference steps/s and memory vs length")
    t.add_argument("--config", required=True, help="config path[:args], e.g. configs/lra/text.py")
    t.add_argument("--mechanisms", nargs="+", default=None, help="default: the config's own")
    own = "length= arguments (LRA, language); default or 0: the config's own shapes"
    t.add_argument("--lengths", nargs="+", type=int, default=None, help=own)
    t.add_argument("--batch", type=int, default=2)
    t.add_argument("--modes", nargs="+", default=["train"], choices=["train", "inference"])
    t.add_argument("--steps", type=int, default=3, help="timed steps (median)")
    t.add_argument("--warmup", type=int, default=1, help="untimed steps after compilation")
    t.add_argument("--max-memory-gb", type=float, default=16.0)
    t.add_argument("--baseline", default="softmax", help="mechanism the ratios are taken to")
    t.add_argument("--set", nargs="+", default=[], metavar="FIELD=VALUE", help="model.dtype=...")
    t.add_argument("--out", default="results/bench")
    t.add_argument("--tag", default="train")
    t.add_argument("--isolate", action=argparse.BooleanOptionalAction, default=True)
    t.add_argument("--timeout", type=float, default=1800, help="seconds per isolated process")
    r = sub.add_parser("replot", help="rebuild the markdown table and PNG from a result JSON")
    r.add_argument("json", help="e.g. results/bench/attention_scaling.json")
    q = sub.add_parser("pipeline", help="input-pipeline examples/s vs the training rate")
    q.add_argument("--configs", nargs="+", required=True, help="config specs path:arg")
    q.add_argument("--batches", type=int, default=200)
    q.add_argument("--warmup", type=int, default=10)
    q.add_argument("--compare", default="", help="folder of run summaries (training rates)")
    q.add_argument("--set", nargs="+", default=[], metavar="FIELD=VALUE", help="data.dir=...")
    q.add_argument("--out", default="results/bench")
    q.add_argument("--tag", default="", help="writes pipelines_<tag>.{json,md}")
    return parser


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    parser = _parser()
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    provenance = io.provenance(cli.command_line("scripts.bench", argv))
    if args.command == "replot":
        path = pathlib.Path(args.json)
        tag = path.stem.removeprefix("attention_")
        result = io.read_json(path, what="benchmark record")
        bench_attention.write(result, str(path.parent), tag, write_json=False)
    elif args.command == "pipeline":
        kw = dict(batches=args.batches, warmup=args.warmup, compare=args.compare, sets=args.set)
        result = bench_pipeline.run(args.configs, **kw) | provenance
        print(f"wrote {bench_pipeline.write(result, args.out, args.tag)}.{{json,md}}")
    elif args.command == "train":
        try:  # loads every config: bad input fails before any run
            specs = bench_train.plan(args.config, args.mechanisms, args.lengths)
            overrides = bench_train.parse_overrides(args.config, args.set)
        except (ValueError, TypeError, attention.UnknownAttentionError) as e:
            parser.error(str(e))
        result = bench_train.run(
            args.config,
            specs,
            modes=args.modes,
            batch=args.batch,
            steps=args.steps,
            warmup=args.warmup,
            max_memory_gb=args.max_memory_gb,
            baseline=args.baseline,
            isolated=args.isolate,
            timeout_s=args.timeout,
            overrides=overrides,
        )
        result.update(provenance, wall_time_s=time.perf_counter() - t0)
        bench_train.write(result, args.out, args.tag)
        print(f"wrote {args.out}/train_{args.tag}.{{json,md,png}}")
    else:
        mechanisms = args.mechanisms or attention.names()
        for spec in mechanisms:
            try:
                bench_attention.parse_mechanism(spec)
            except (ValueError, TypeError, attention.UnknownAttentionError) as e:
                parser.error(str(e))
        names = ("batch", "heads", "head_dim", "dtype", "modes", "repeats", "max_memory_gb")
        kw = {name: getattr(args, name) for name in names}
        result = bench_attention.run(
            mechanisms, args.lengths, isolated=args.isolate, timeout_s=args.timeout, **kw
        )
        result.update(
            provenance,
            slope_range=list(args.slope_range),
            peak_rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            wall_time_s=time.perf_counter() - t0,
        )
        bench_attention.write(result, args.out, args.tag)
        print(f"wrote {args.out}/attention_{args.tag}.{{json,md,png}}")


def run() -> None:
    """Console entry point (`attnbench-bench`)."""
    sys.exit(cli.run(main))


if __name__ == "__main__":
    run()
