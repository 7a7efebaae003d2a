"""Attention time and memory versus sequence length: `python -m scripts.bench attention`.

Three modes: `forward` (the training forward, `train=True`), `forward_backward` (its gradient w.r.t.
q, k, v and the mechanism's parameters) and `inference` (`train=False`). Times are medians over
repeats after a warm-up; memory is XLA's compiled memory analysis (temp + arguments + outputs). A
configuration whose compiled memory exceeds `max_memory_gb` is skipped with the reason recorded. The
machine's matmul throughput is measured in the same run, so achieved FLOP/s can be compared with it.
Each (mechanism, length) runs in its own process (`attnbench.launch.isolate`) unless
`isolated=False`, recording that configuration's peak RSS. Mechanisms on a grid graph (GRF) get the
most square grid of the length unless the spec gives `grid=`.

    result = bench_attention.run(["softmax", "linear"], [1024, 4096], batch=1, heads=4, ...)
    bench_attention.write(result, "results/bench", "scaling")  # attention_scaling.{json,md,png}
"""

from __future__ import annotations

import resource
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

import attention
from attention import kernels
from attnbench import io
from attnbench.launch import isolate

__all__ = [
    "MODES",
    "matmul_flops",
    "parse_mechanism",
    "grid_for",
    "measure_attention",
    "measure_mechanism",
    "run",
    "slopes",
    "analytic_flops",
    "add_analytic",
    "write",
]

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
            with kernels.record() as chosen:  # which dense kernel each call site took
                lowered = jax.jit(_fn(mech, mode)).lower(*fargs)
            rec["kernels"] = chosen.summary()
            compiled = lowered.compile()
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
            try:
                rec["time_s"], rec["time_spread_s"] = _time(compiled, fargs, repeats)
            except Exception as e:  # noqa: BLE001 (recorded, not hidden: e.g. out of memory)
                rec["skipped"] = f"failed when run: {type(e).__name__}: {str(e)[:200]}"
                print(f"{spec:18s} N={n:6d} {mode:17s} skipped: {rec['skipped']}", flush=True)
                continue
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


def run(
    mechanisms,
    lengths,
    *,
    batch: int,
    heads: int,
    head_dim: int,
    dtype: str,
    modes,
    repeats: int,
    max_memory_gb: float,
    isolated: bool = True,
    timeout_s: float = 1800,
) -> dict:
    """Every (mechanism spec, length), each in its own process unless `isolated=False` (then
    `peak_rss_bytes` is the whole run's peak so far, not the configuration's). Returns
    `{"matmul_flops_per_s", "records"}`."""
    peak = matmul_flops(dtype=jnp.dtype(dtype))
    print(f"matmul throughput: {peak / 1e9:.1f} GFLOP/s ({dtype})", flush=True)
    records = []
    for spec in mechanisms:
        for n in lengths:
            kw = dict(
                batch=batch,
                heads=heads,
                head_dim=head_dim,
                dtype=dtype,
                modes=list(modes),
                repeats=repeats,
                max_memory_gb=max_memory_gb,
                matmul_flops_per_s=peak,
            )
            if isolated:
                got = isolate.run(
                    "attnbench.bench.attention:measure_attention",
                    dict(spec=spec, length=n, **kw),
                    timeout_s=timeout_s,
                )
            else:
                try:
                    got = measure_attention(spec, n, **kw)
                except Exception as e:  # noqa: BLE001 (as a dead child: every mode skipped)
                    got = {"skipped": f"failed: {type(e).__name__}: {str(e)[:200]}"}
                got["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
            if "records" not in got:  # the child process died: every mode is skipped
                name, hp = parse_mechanism(spec)
                got["records"] = [
                    dict(
                        mechanism=name,
                        label=spec,
                        hparams=dict(attention.get(name, **hp).hparams),
                        length=n,
                        batch=batch,
                        heads=heads,
                        head_dim=head_dim,
                        dtype=dtype,
                        mode=mode,
                        time_s=None,
                        time_spread_s=None,
                        memory_bytes=None,
                        flops=None,
                        achieved_flops_per_s=None,
                        fraction_of_matmul=None,
                        skipped=got["skipped"],
                    )
                    for mode in modes
                ]
                print(f"{spec:18s} N={n:6d} skipped: {got['skipped']}", flush=True)
            for rec in got["records"]:
                rec["peak_rss_bytes"] = got.get("peak_rss_bytes")
                records.append(rec)
    return {"matmul_flops_per_s": peak, "records": records}


def kernel_lines(recs, label) -> list[str]:
    """Markdown lines naming the dense-attention kernel each row ran (`attention.kernels`):
    the full-attention baseline is whatever kernel is named here, on this device."""
    seen: dict[str, set] = {}
    for r in recs:
        for site, kernel in (r.get("kernels") or {}).items():
            seen.setdefault(label(r), set()).add(f"{site}: {kernel}")
    if not seen:
        return []
    rows = [f"`{name}` {', '.join(sorted(k))}" for name, k in seen.items()]
    return ["Dense-attention kernel that ran (`attention.kernels`): " + "; ".join(rows) + ".", ""]


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
    """FLOPs of a record from the analytic counter (`attnbench.nn.flops`): forward (train or
    inference path) per sequence x batch; forward+backward counted as 3x the training forward (the
    usual rule: the backward does about two forwards' work). None for unknown mechanisms."""
    from attnbench.nn import flops

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
    lines += kernel_lines(recs, _label)
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
            "Each cell: analytic FLOPs (`attnbench.nn.flops`, forward+backward = 3x the training "
            "forward) / XLA's cost analysis of the compiled function, each divided by the median "
            "time and the matmul throughput. XLA counts a loop body once (chunked softmax, GRF's "
            "scans) and sorts and scatters as little, so its figure is low for those; the analytic "
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
