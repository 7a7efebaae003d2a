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
be compared with it. Each (mechanism, length) runs in its own process (`--no-isolate` to
share one), recording that configuration's peak RSS. Mechanisms on a grid graph (GRF) get the
most square grid of the length unless the spec gives `grid=`. Writes
`results/bench/attention_<tag>.{json,md,png}`.

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
from core import cli, io

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


def parse_mechanism(spec: str) -> tuple[str, dict]:
    """`name` or `name:key=value,...` (`attention.parse`)."""
    return attention.parse(spec)


def grid_for(n: int) -> tuple[int, int]:
    """The most square `h x w = n` grid (h <= w): 1024 -> (32, 32), 32768 -> (128, 256)."""
    h = max(d for d in range(1, int(n**0.5) + 1) if n % d == 0)
    return (h, n // h)


def measure_attention(spec: str, length: int, **kw) -> dict:
    """`{"records": [...]}`: one record per mode for mechanism `spec` (`name[:key=value,...]`)
    at `length` tokens; keyword arguments as `measure_mechanism`."""
    name, hp = parse_mechanism(spec)
    defaults = attention.defaults(name)
    if defaults.get("graph") == "grid" and "grid" in defaults and hp.get("grid") is None:
        hp["grid"] = grid_for(length)  # grid mechanisms (GRF): the most square h x w grid
    return measure_mechanism(attention.get(name, **hp), name, spec, length, **kw)


def measure_mechanism(
    mech,
    name: str,
    spec: str,
    length: int,
    *,
    batch: int,
    heads: int,
    head_dim: int,
    dtype: str,
    modes,
    repeats: int,
    max_memory_gb: float,
    matmul_flops_per_s: float | None = None,
) -> dict:
    """`measure_attention` for a mechanism object (anything with the registry's `init`, `apply`,
    `hparams`, `inputs` and `needs_qk`), e.g. an unregistered baseline formulation."""
    n = length
    key = jax.random.key(0)
    params = mech.init(
        key, num_heads=heads, head_dim=head_dim, model_dim=heads * head_dim, max_len=n
    )
    q, k, v, extra = _inputs(mech, key, batch, n, heads, head_dim, jnp.dtype(dtype))
    trainable = {p: x for p, x in params.items() if p != "buffers"}
    fargs = (trainable, params.get("buffers", {}), q, k, v, extra, key)
    records = []
    for mode in modes:
        rec = {
            "mechanism": name,
            "label": spec,
            "hparams": dict(mech.hparams),
            "length": n,
            "batch": batch,
            "heads": heads,
            "head_dim": head_dim,
            "dtype": dtype,
            "mode": mode,
            "time_s": None,
            "time_spread_s": None,
            "memory_bytes": None,
            "flops": None,
            "achieved_flops_per_s": None,
            "fraction_of_matmul": None,
            "skipped": None,
        }
        records.append(rec)
        try:
            compiled = jax.jit(_fn(mech, mode)).lower(*fargs).compile()
        except Exception as e:  # noqa: BLE001 (recorded, not hidden)
            rec["skipped"] = f"does not compile: {type(e).__name__}: {str(e)[:200]}"
            print(f"{spec:18s} N={n:6d} {mode:17s} skipped: {rec['skipped']}", flush=True)
            continue
        mem = compiled.memory_analysis()
        if mem is not None:
            rec["memory_bytes"] = int(
                mem.temp_size_in_bytes + mem.argument_size_in_bytes + mem.output_size_in_bytes
            )
        if rec["memory_bytes"] and rec["memory_bytes"] > max_memory_gb * 2**30:
            rec["skipped"] = (
                f"needs {rec['memory_bytes'] / 2**30:.1f} GiB > --max-memory-gb {max_memory_gb}"
            )
        else:
            rec["time_s"], rec["time_spread_s"] = _time(compiled, fargs, repeats)
            cost = compiled.cost_analysis()
            cost = cost[0] if isinstance(cost, list) else cost
            if cost and cost.get("flops"):
                rec["flops"] = float(cost["flops"])
                rec["achieved_flops_per_s"] = rec["flops"] / rec["time_s"]
                if matmul_flops_per_s:
                    rec["fraction_of_matmul"] = rec["achieved_flops_per_s"] / matmul_flops_per_s
        shown = (
            f"{rec['time_s'] * 1e3:9.2f} ms"
            if rec["time_s"] is not None
            else f"skipped: {rec['skipped']}"
        )
        print(f"{spec:18s} N={n:6d} {mode:17s} {shown}", flush=True)
    return {"records": records}


def bench_attention(args) -> dict:
    """Every (mechanism, length), each in its own process unless `--no-isolate` (then
    `peak_rss_bytes` is the whole run's peak so far, not the configuration's)."""
    from scripts import isolate

    peak = matmul_flops(dtype=jnp.dtype(args.dtype))
    print(f"matmul throughput: {peak / 1e9:.1f} GFLOP/s ({args.dtype})", flush=True)
    records = []
    for spec in args.mechanisms:
        for n in args.lengths:
            kw = dict(
                batch=args.batch,
                heads=args.heads,
                head_dim=args.head_dim,
                dtype=args.dtype,
                modes=list(args.modes),
                repeats=args.repeats,
                max_memory_gb=args.max_memory_gb,
                matmul_flops_per_s=peak,
            )
            if args.isolate:
                got = isolate.run(
                    "scripts.bench:measure_attention",
                    dict(spec=spec, length=n, **kw),
                    timeout_s=args.timeout,
                )
            else:
                got = measure_attention(spec, n, **kw)
                got["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
            if "records" not in got:  # the child process died: every mode is skipped
                name, hp = parse_mechanism(spec)
                got["records"] = [
                    dict(
                        mechanism=name,
                        label=spec,
                        hparams=dict(attention.get(name, **hp).hparams),
                        length=n,
                        batch=args.batch,
                        heads=args.heads,
                        head_dim=args.head_dim,
                        dtype=args.dtype,
                        mode=mode,
                        time_s=None,
                        time_spread_s=None,
                        memory_bytes=None,
                        flops=None,
                        achieved_flops_per_s=None,
                        fraction_of_matmul=None,
                        skipped=got["skipped"],
                    )
                    for mode in args.modes
                ]
                print(f"{spec:18s} N={n:6d} skipped: {got['skipped']}", flush=True)
            for rec in got["records"]:
                rec["peak_rss_bytes"] = got.get("peak_rss_bytes")
                records.append(rec)
    return {"matmul_flops_per_s": peak, "records": records}


def _label(r) -> str:
    return r.get("label") or r["mechanism"]


def slopes(records, mode="forward_backward", lo=None, hi=None, key="time_s") -> dict:
    """Fitted log-log slope of `key` (time, or memory) vs length per mechanism label, over the
    measured lengths within [lo, hi] (at least two points)."""
    out = {}
    for name in dict.fromkeys(_label(r) for r in records):
        pts = [
            (r["length"], r[key])
            for r in records
            if _label(r) == name
            and r["mode"] == mode
            and r[key]
            and r["time_s"]
            and (lo is None or r["length"] >= lo)
            and (hi is None or r["length"] <= hi)
        ]
        if len(pts) >= 2:
            x, y = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
            out[name] = float(np.polyfit(x, y, 1)[0])
    return out


def _pct(x) -> str:
    return "-" if x is None else f"{x:.0%}"


def _find(recs, name, n, mode):
    return next(
        (r for r in recs if _label(r) == name and r["length"] == n and r["mode"] == mode), None
    )


def analytic_flops(rec) -> float | None:
    """FLOPs of a record from the analytic counter (`core.flops`): forward (train or inference
    path) per sequence x batch; forward+backward counted as 3x the training forward (the usual
    rule: the backward does about two forwards' work). None for unknown mechanisms."""
    from core import flops

    try:
        fwd = flops.attention_flops(
            rec["mechanism"],
            rec["hparams"],
            n=rec["length"],
            m=rec["length"],
            heads=rec["heads"],
            head_dim=rec["head_dim"],
            train=rec["mode"] != "inference",
            batch=rec["batch"],
        )
    except (ValueError, KeyError, TypeError):
        return None
    return rec["batch"] * fwd * (3 if rec["mode"] == "forward_backward" else 1)


def add_analytic(result: dict) -> None:
    """Adds `analytic_flops` and its achieved fraction of the matmul throughput to each record."""
    peak = result.get("matmul_flops_per_s")
    for rec in result["records"]:
        rec["analytic_flops"] = analytic_flops(rec)
        ok = rec["analytic_flops"] and rec["time_s"] and peak
        rec["analytic_fraction_of_matmul"] = (
            rec["analytic_flops"] / rec["time_s"] / peak if ok else None
        )


def write(result: dict, out: str, tag: str, *, write_json: bool = True) -> None:
    if "analytic_flops" not in (result["records"] or [{}])[0]:
        add_analytic(result)
    if write_json:
        io.write_json(f"{out}/attention_{tag}.json", result)
    recs = result["records"]
    lengths = sorted({r["length"] for r in recs})
    names = list(dict.fromkeys(_label(r) for r in recs))
    lo, hi = result.get("slope_range") or (None, None)
    span = "all lengths" if lo is None else f"{lo}-{hi}"
    first = recs[0] if recs else {}
    lines = [
        "<!-- generated by scripts/bench.py; do not edit -->",
        f"# Attention time vs length ({result['device']['kind']}, "
        f"{result['device']['cpu_count']} CPUs)",
        "",
        f"Command: `{result['command']}`",
        "",
        f"git {result['git_revision'][:12]}; batch {first.get('batch')}, "
        f"{first.get('heads')} heads of dim {first.get('head_dim')}, {first.get('dtype')}; "
        f"matmul throughput measured in the same run: "
        f"{result['matmul_flops_per_s'] / 1e9:.1f} GFLOP/s.",
        "",
        "Times are medians over repeats after a warm-up call; `skip` = not run (reason in the "
        f"JSON). Slope: fitted log-log slope of time vs length over {span}.",
        "",
    ]
    for mode in sorted({r["mode"] for r in recs}, key=MODES.index):
        lines += [
            f"## {mode}: time (ms, median)",
            "",
            "| mechanism | " + " | ".join(str(n) for n in lengths) + f" | slope ({span}) |",
            "|---|" + "---|" * (len(lengths) + 1),
        ]
        sl = slopes(recs, mode, lo, hi)
        for name in names:
            cells = []
            for n in lengths:
                r = _find(recs, name, n, mode)
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
    mode = "forward_backward" if any(r["mode"] == "forward_backward" for r in recs) else None
    mode = mode or (recs[0]["mode"] if recs else None)
    if mode:
        lines += [
            f"## {mode}: compiled memory (MiB, temp + arguments + outputs) / process peak RSS "
            "(MiB)",
            "",
            "| mechanism | " + " | ".join(str(n) for n in lengths) + " |",
            "|---|" + "---|" * len(lengths),
        ]
        for name in names:
            cells = []
            for n in lengths:
                r = _find(recs, name, n, mode)
                if r is None or r["memory_bytes"] is None:
                    cells.append("" if r is None else "skip")
                    continue
                if r["time_s"] is None:  # compiled, not run: the figure is XLA's plan only
                    cells.append(f"skip ({r['memory_bytes'] / 2**20:.0f})")
                    continue
                rss = r.get("peak_rss_bytes")
                rss = f" / {rss / 2**20:.0f}" if rss else ""
                cells.append(f"{r['memory_bytes'] / 2**20:.1f}{rss}")
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines += [
            "",
            f"## {mode}: achieved FLOP/s as a fraction of the matmul throughput",
            "",
            "Each cell: analytic FLOPs (`core.flops`, forward+backward = 3x the training forward) "
            "/ XLA's cost analysis of the compiled function, each divided by the median time and "
            "the matmul throughput. XLA counts a loop body once (chunked softmax, GRF's scans) "
            "and sorts and scatters as little, so its figure is low for those; the analytic "
            "count of `grf` is its general path, an upper bound (about 4x) for frozen walks.",
            "",
            "| mechanism | " + " | ".join(str(n) for n in lengths) + " |",
            "|---|" + "---|" * len(lengths),
        ]
        for name in names:
            cells = []
            for n in lengths:
                r = _find(recs, name, n, mode)
                fa = None if r is None else r.get("analytic_fraction_of_matmul")
                fx = None if r is None else r.get("fraction_of_matmul")
                cells.append("" if fa is None and fx is None else f"{_pct(fa)} / {_pct(fx)}")
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines.append("")
    skipped = [r for r in recs if r["skipped"]]
    if skipped:
        lines += ["## Skipped", ""]
        for r in skipped:
            lines.append(f"- {_label(r)} N={r['length']} {r['mode']}: {r['skipped']}")
        lines.append("")
    io.write_text(f"{out}/attention_{tag}.md", "\n".join(lines))
    _plot(result, f"{out}/attention_{tag}.png")


def _plot(result, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    recs = result["records"]
    mode = "forward_backward" if any(r["mode"] == "forward_backward" for r in recs) else None
    mode = mode or recs[0]["mode"]
    lo, hi = result.get("slope_range") or (None, None)
    fig, axes = plt.subplots(1, 2, figsize=(14, 5))
    names = list(dict.fromkeys(_label(r) for r in recs))
    colors = plt.cm.tab20(np.linspace(0, 1, max(len(names), 2)))
    t_sl = slopes(recs, mode, lo, hi)
    m_sl = slopes(recs, mode, lo, hi, key="memory_bytes")
    for i, name in enumerate(names):
        pts = [
            (r["length"], r["time_s"], r["memory_bytes"])
            for r in recs
            if _label(r) == name and r["mode"] == mode and r["time_s"]
        ]
        if pts:
            n, t, m = zip(*pts, strict=True)
            style = dict(color=colors[i], marker="osD^v<>"[i % 7])
            ts = f" ({t_sl[name]:.2f})" if name in t_sl else ""
            ms = f" ({m_sl[name]:.2f})" if name in m_sl else ""
            axes[0].loglog(n, t, "-", label=name + ts, **style)
            axes[1].loglog(n, m, "-", label=name + ms, **style)
    span = "" if lo is None else f", slopes over {lo}-{hi}"
    axes[0].set(xlabel="length", ylabel=f"{mode} time (s)", title=f"time{span}")
    axes[1].set(xlabel="length", ylabel="compiled memory (bytes)", title=f"memory{span}")
    for ax in axes:
        ax.grid(alpha=0.3, which="both")
        if ax.lines:
            ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    io.save_figure(fig, path, dpi=100)


def bench_pipeline(args) -> dict:
    import pathlib

    from core import config as config_lib
    from core import data, tasks

    train_rates: dict[tuple[str, str], tuple[float, str]] = {}
    for path in sorted(pathlib.Path(args.compare).glob("**/summary.json")) if args.compare else []:
        s = io.read_json(path, what="run summary")
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
    parser = cli.ArgumentParser(prog="scripts.bench", description="attnbench efficiency benchmarks")
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
    t.add_argument("--lengths", nargs="+", type=int, default=[1000, 2000, 3000, 4000])
    t.add_argument("--batch", type=int, default=2)
    t.add_argument("--modes", nargs="+", default=["train"], choices=["train", "inference"])
    t.add_argument("--steps", type=int, default=3, help="timed steps (median)")
    t.add_argument("--warmup", type=int, default=1, help="untimed steps after compilation")
    t.add_argument("--max-memory-gb", type=float, default=16.0)
    t.add_argument("--baseline", default="softmax", help="mechanism the ratios are taken to")
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
        import pathlib

        path = pathlib.Path(args.json)
        write(
            io.read_json(path, what="benchmark record"),
            str(path.parent),
            path.stem.removeprefix("attention_"),
            write_json=False,
        )
        return
    if args.command == "train":
        from scripts import bench_train

        t0 = time.perf_counter()
        try:
            specs = bench_train.plan(args)  # loads every config: bad input fails before any run
        except (ValueError, TypeError, attention.UnknownAttentionError) as e:
            parser.error(str(e))
        result = bench_train.run(args, specs)
        result.update(
            device=io.device_info(),
            versions=io.versions(),
            git_revision=io.git_revision(),
            command="python -m scripts.bench " + " ".join(argv),
            wall_time_s=time.perf_counter() - t0,
        )
        bench_train.write(result, args.out, args.tag)
        print(f"wrote {args.out}/train_{args.tag}.{{json,md,png}}")
        return
    args.mechanisms = args.mechanisms or attention.names()
    for spec in args.mechanisms:
        try:
            parse_mechanism(spec)
        except (ValueError, TypeError, attention.UnknownAttentionError) as e:
            parser.error(str(e))
    t0 = time.perf_counter()
    result = bench_attention(args)
    result.update(
        device=io.device_info(),
        versions=io.versions(),
        git_revision=io.git_revision(),
        command="python -m scripts.bench " + " ".join(argv),
        slope_range=list(args.slope_range),
        peak_rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        wall_time_s=time.perf_counter() - t0,
    )
    write(result, args.out, args.tag)
    print(f"wrote {args.out}/attention_{args.tag}.{{json,md,png}}")


if __name__ == "__main__":
    sys.exit(cli.run(main))
