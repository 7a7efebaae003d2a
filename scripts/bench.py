"""Efficiency benchmarks.

    python -m scripts.bench attention --mechanisms softmax linear --lengths 1024 4096 16384
    python -m scripts.bench replot results/bench/attention_scaling.json
    python -m scripts.bench pipeline --configs configs/lra/text.py:preset=cpu --compare results/runs

`attention`: time and memory of each mechanism versus sequence length, in three modes:
`forward` (the training forward, `train=True`), `forward_backward` (its gradient w.r.t. q, k, v
and the mechanism's parameters) and `inference` (`train=False`). Times are medians over
repeats after a warm-up; memory is XLA's compiled memory analysis (temp + arguments + outputs).
A configuration whose compiled memory exceeds `--max-memory-gb` is skipped with the reason
recorded. The machine's matmul throughput is measured in the same run, so achieved FLOP/s can
be compared with it. Writes `results/bench/attention_<tag>.{json,md,png}`.

`pipeline`: each config's input pipeline measured alone (the trainer's grain iterator, no
model): data loading time (`first_load_s`: the first call, which builds the on-disk cache only
if it is absent; `cached_load_s`: a second call) and train-batch examples/s. With
`--compare DIR`, the run summaries under DIR give each task's fastest measured training rate at
the same preset, and the table shows the ratio (the target is >= 10x: the pipeline never
starves the model). Writes `results/bench/pipelines.{json,md}`.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import attention
from core import io

MODES = ("forward", "forward_backward", "inference")


def _inputs(mech, key, b, n, h, d, dtype):
    kq, kk, kv, kx = jax.random.split(key, 4)
    q = None if not mech.needs_qk else jax.random.normal(kq, (b, n, h, d), dtype)
    k = None if not mech.needs_qk else jax.random.normal(kk, (b, n, h, d), dtype)
    v = jax.random.normal(kv, (b, n, h, d), dtype)
    extra = {}
    for name in mech.inputs:
        if name == "x":
            extra["x"] = jax.random.normal(kx, (b, n, h * d), dtype)
        elif name == "coords":
            extra["coords"] = jax.random.normal(kx, (b, n, 3), dtype)
    return q, k, v, extra


def _fn(mech, mode):
    """`fn(trainable, buffers, q, k, v, extra, key)`; the backward pass differentiates the
    trainable parameters and q, k, v (never the constant buffers, e.g. integer walks)."""

    def forward(trainable, buffers, q, k, v, extra, key):
        params = dict(trainable, buffers=buffers) if buffers else trainable
        return mech.apply(params, q, k, v, key=key, train=mode != "inference", **extra)

    if mode != "forward_backward":
        return forward

    def loss(trainable, buffers, q, k, v, extra, key):
        return forward(trainable, buffers, q, k, v, extra, key).astype(jnp.float32).sum()

    return jax.grad(loss, argnums=(0, 2, 3, 4))


def _time(compiled, args, repeats):
    jax.block_until_ready(compiled(*args))  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        times.append(time.perf_counter() - t0)
    return statistics.median(times), (max(times) - min(times)) / 2


def matmul_flops(n=2048, dtype=jnp.float32, repeats=5) -> float:
    """This machine's plain matmul throughput (FLOP/s) for an n x n x n product."""
    a = jnp.ones((n, n), dtype)
    f = jax.jit(lambda a, b: a @ b).lower(a, a).compile()
    t, _ = _time(f, (a, a), repeats)
    return 2 * n**3 / t


def bench_attention(args) -> dict:
    dtype = jnp.dtype(args.dtype)
    records = []
    peak = matmul_flops(dtype=dtype)
    print(f"matmul throughput: {peak / 1e9:.1f} GFLOP/s ({args.dtype})", flush=True)
    for name in args.mechanisms:
        for n in args.lengths:
            mech = attention.get(name)
            key = jax.random.key(0)
            params = mech.init(
                key,
                num_heads=args.heads,
                head_dim=args.head_dim,
                model_dim=args.heads * args.head_dim,
                max_len=n,
            )
            q, k, v, extra = _inputs(mech, key, args.batch, n, args.heads, args.head_dim, dtype)
            for mode in args.modes:
                rec = {
                    "mechanism": name,
                    "hparams": dict(mech.hparams),
                    "length": n,
                    "batch": args.batch,
                    "heads": args.heads,
                    "head_dim": args.head_dim,
                    "dtype": args.dtype,
                    "mode": mode,
                    "time_s": None,
                    "time_spread_s": None,
                    "memory_bytes": None,
                    "flops": None,
                    "achieved_flops_per_s": None,
                    "skipped": None,
                }
                trainable = {n: x for n, x in params.items() if n != "buffers"}
                fargs = (trainable, params.get("buffers", {}), q, k, v, extra, key)
                try:
                    compiled = jax.jit(_fn(mech, mode)).lower(*fargs).compile()
                except Exception as e:  # noqa: BLE001 (recorded, not hidden)
                    rec["skipped"] = f"does not compile: {type(e).__name__}: {str(e)[:200]}"
                    records.append(rec)
                    print(f"{name:18s} N={n:6d} {mode:17s} skipped: {rec['skipped']}")
                    continue
                mem = compiled.memory_analysis()
                if mem is not None:
                    rec["memory_bytes"] = int(
                        mem.temp_size_in_bytes
                        + mem.argument_size_in_bytes
                        + mem.output_size_in_bytes
                    )
                if rec["memory_bytes"] and rec["memory_bytes"] > args.max_memory_gb * 2**30:
                    rec["skipped"] = (
                        f"needs {rec['memory_bytes'] / 2**30:.1f} GiB > "
                        f"--max-memory-gb {args.max_memory_gb}"
                    )
                else:
                    rec["time_s"], rec["time_spread_s"] = _time(compiled, fargs, args.repeats)
                    cost = compiled.cost_analysis()
                    cost = cost[0] if isinstance(cost, list) else cost
                    if cost and cost.get("flops"):
                        rec["flops"] = float(cost["flops"])
                        rec["achieved_flops_per_s"] = rec["flops"] / rec["time_s"]
                records.append(rec)
                shown = (
                    f"{rec['time_s'] * 1e3:9.2f} ms"
                    if rec["time_s"] is not None
                    else f"skipped: {rec['skipped']}"
                )
                print(f"{name:18s} N={n:6d} {mode:17s} {shown}", flush=True)
    return {"matmul_flops_per_s": peak, "records": records}


def slopes(records, mode="forward_backward", lo=None, hi=None) -> dict:
    """Fitted log-log slope of time vs length per mechanism (lengths within [lo, hi])."""
    out = {}
    for name in sorted({r["mechanism"] for r in records}):
        pts = [
            (r["length"], r["time_s"])
            for r in records
            if r["mechanism"] == name
            and r["mode"] == mode
            and r["time_s"]
            and (lo is None or r["length"] >= lo)
            and (hi is None or r["length"] <= hi)
        ]
        if len(pts) >= 2:
            x, y = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
            out[name] = float(np.polyfit(x, y, 1)[0])
    return out


def write(result: dict, out: str, tag: str, *, write_json: bool = True) -> None:
    if write_json:
        io.write_json(f"{out}/attention_{tag}.json", result)
    recs = result["records"]
    lengths = sorted({r["length"] for r in recs})
    lines = [
        "<!-- generated by scripts/bench.py; do not edit -->",
        f"# Attention time vs length ({result['device']['kind']}, "
        f"{result['device']['cpu_count']} CPUs)",
        "",
        f"Command: `{result['command']}`",
        "",
        f"Matmul throughput: {result['matmul_flops_per_s'] / 1e9:.1f} GFLOP/s",
        "",
    ]
    for mode in sorted({r["mode"] for r in recs}, key=MODES.index):
        lines += [
            f"## {mode} (ms, median)",
            "",
            "| mechanism | " + " | ".join(str(n) for n in lengths) + " | slope |",
            "|---|" + "---|" * (len(lengths) + 1),
        ]
        sl = slopes(recs, mode)
        for name in dict.fromkeys(r["mechanism"] for r in recs):
            cells = []
            for n in lengths:
                r = next(
                    (
                        r
                        for r in recs
                        if r["mechanism"] == name and r["length"] == n and r["mode"] == mode
                    ),
                    None,
                )
                cells.append(
                    ""
                    if r is None
                    else "skip"
                    if r["time_s"] is None
                    else f"{r['time_s'] * 1e3:.2f}"
                )
            slope = f"{sl[name]:.2f}" if name in sl else ""
            lines.append(f"| {name} | " + " | ".join(cells) + f" | {slope} |")
        lines.append("")
    io.write_text(f"{out}/attention_{tag}.md", "\n".join(lines))
    _plot(result, f"{out}/attention_{tag}.png")


def _plot(result, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    recs = result["records"]
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
    names = list(dict.fromkeys(r["mechanism"] for r in recs))
    colors = plt.cm.tab20(np.linspace(0, 1, max(len(names), 2)))
    for i, name in enumerate(names):
        pts = [
            (r["length"], r["time_s"], r["memory_bytes"])
            for r in recs
            if r["mechanism"] == name and r["mode"] == "forward_backward" and r["time_s"]
        ]
        if pts:
            n, t, m = zip(*pts, strict=True)
            style = dict(color=colors[i], marker="osD^v<>"[i % 7], label=name)
            axes[0].loglog(n, t, "-", **style)
            axes[1].loglog(n, m, "-", **style)
    axes[0].set(xlabel="length", ylabel="forward+backward time (s)")
    axes[1].set(xlabel="length", ylabel="compiled memory (bytes)")
    for ax in axes:
        ax.grid(alpha=0.3, which="both")
    if axes[1].lines:
        axes[1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def bench_pipeline(args) -> dict:
    import pathlib

    from core import config as config_lib
    from core import data, tasks

    train_rates: dict[tuple[str, str], tuple[float, str]] = {}
    for path in sorted(pathlib.Path(args.compare).glob("**/summary.json")) if args.compare else []:
        import json

        s = json.loads(path.read_text())
        rate = s.get("throughput", {}).get("examples_per_s")
        key = (s.get("task"), s.get("preset"))
        if rate and (key not in train_rates or rate > train_rates[key][0]):
            train_rates[key] = (rate, str(path.parent.name))
    records = []
    for spec in args.configs:
        config = config_lib.load(spec)
        task = tasks.get(config.task)
        t0 = time.perf_counter()
        ds = task.load_data(config)  # builds the cache on the first call
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        ds = task.load_data(config)
        cached = time.perf_counter() - t0
        it = data.train_iterator(ds.train, batch_size=config.batch_size, seed=0)
        for _ in range(args.warmup):
            next(it)
        t0 = time.perf_counter()
        for _ in range(args.batches):
            batch = next(it)
        elapsed = time.perf_counter() - t0
        rate = args.batches * config.batch_size / elapsed
        train = train_rates.get((config.task, config.preset))
        records.append(
            dict(
                config=spec,
                task=config.task,
                preset=config.preset,
                source=ds.source,
                batch_size=config.batch_size,
                batch_bytes=int(sum(np.asarray(v).nbytes for v in batch.values())),
                train_examples=len(ds.train),
                first_load_s=first,
                cached_load_s=cached,
                pipeline_examples_per_s=rate,
                train_examples_per_s=None if train is None else train[0],
                train_run=None if train is None else train[1],
                ratio=None if train is None else rate / train[0],
            )
        )
        print(f"{spec}: {rate:,.0f} examples/s (load {cached:.2f}s cached, {first:.2f}s first)")
    return {"records": records}


def write_pipeline(result: dict, out: str) -> None:
    io.write_json(f"{out}/pipelines.json", result)
    lines = [
        "<!-- generated by scripts/bench.py pipeline; do not edit -->",
        f"# Input pipelines measured alone ({result['device']['kind']}, "
        f"{result['device']['cpu_count']} CPUs)",
        "",
        f"Command: `{result['command']}`",
        "",
        "Pipeline rate: the trainer's grain train iterator alone (batches gathered from the "
        "in-memory splits). Training rate: the fastest `cpu`-preset run of the task among the "
        "committed summaries (timed steps, excluding compile and evaluation). Target: ratio >= 10.",
        "",
        "| config | data | load (cached) s | pipeline ex/s | fastest training ex/s (run) | ratio |",
        "|---|---|---|---|---|---|",
    ]
    for r in result["records"]:
        train = (
            ""
            if r["train_examples_per_s"] is None
            else f"{r['train_examples_per_s']:.1f} ({r['train_run']})"
        )
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.0f}x"
        lines.append(
            f"| `{r['config']}` | {r['source']} | {r['cached_load_s']:.2f} | "
            f"{r['pipeline_examples_per_s']:,.0f} | {train} | {ratio} |"
        )
    io.write_text(f"{out}/pipelines.md", "\n".join(lines) + "\n")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description="attnbench efficiency benchmarks")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("attention", help="time and memory vs length per mechanism")
    p.add_argument("--mechanisms", nargs="+", default=None, help="default: all registered")
    p.add_argument("--lengths", nargs="+", type=int, default=[1024, 2048, 4096, 8192, 16384, 32768])
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--head-dim", type=int, default=32)
    p.add_argument("--dtype", default="float32")
    p.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--max-memory-gb", type=float, default=8.0)
    p.add_argument("--out", default="results/bench")
    p.add_argument("--tag", default="scaling")
    r = sub.add_parser("replot", help="rebuild the markdown table and PNG from a result JSON")
    r.add_argument("json", help="e.g. results/bench/attention_scaling.json")
    q = sub.add_parser("pipeline", help="input-pipeline examples/s vs the training rate")
    q.add_argument("--configs", nargs="+", required=True, help="config specs path:arg")
    q.add_argument("--batches", type=int, default=200)
    q.add_argument("--warmup", type=int, default=10)
    q.add_argument("--compare", default="", help="folder of run summaries (training rates)")
    q.add_argument("--out", default="results/bench")
    args = parser.parse_args(argv)
    if args.command == "pipeline":
        result = bench_pipeline(args)
        result.update(
            device=io.device_info(),
            versions=io.versions(),
            git_revision=io.git_revision(),
            command="python -m scripts.bench " + " ".join(argv),
        )
        write_pipeline(result, args.out)
        print(f"wrote {args.out}/pipelines.{{json,md}}")
        return
    if args.command == "replot":
        import json
        import pathlib

        path = pathlib.Path(args.json)
        write(
            json.loads(path.read_text()),
            str(path.parent),
            path.stem.removeprefix("attention_"),
            write_json=False,
        )
        return
    args.mechanisms = args.mechanisms or attention.names()
    unknown = [m for m in args.mechanisms if m not in attention.names()]
    if unknown:
        parser.error(f"unknown mechanism(s) {unknown}; known: {', '.join(attention.names())}")
    t0 = time.perf_counter()
    result = bench_attention(args)
    result.update(
        device=io.device_info(),
        versions=io.versions(),
        git_revision=io.git_revision(),
        command="python -m scripts.bench " + " ".join(argv),
        peak_rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        wall_time_s=time.perf_counter() - t0,
    )
    write(result, args.out, args.tag)
    print(f"wrote {args.out}/attention_{args.tag}.{{json,md,png}}")


if __name__ == "__main__":
    main()
