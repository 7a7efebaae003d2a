"""Whole-model speed and memory from a config (`python -m scripts.bench train`).

    python -m scripts.bench train --config configs/lra/text.py --lengths 1000 2000 3000 4000 \\
        --mechanisms softmax sliceformer linear --batch 2

For each mechanism and length, the config `<config>:<arg>,attn=<mechanism>,length=<n>` is built
(the task's model, optimizer and jitted step exactly as `scripts.train` runs them) and fed
synthetic batches of random inputs (`task.example_batch`: no dataset needed). Without `--lengths`
(or with `--lengths 0`) each config runs at its own shapes, so any domain's config can be timed:

    python -m scripts.bench train --config vision/deit.py:preset=smoke --mechanisms softmax gfsa

Its records' `length` is the config's sequence length where it has one (`config_length`), else
None (shown as "own" in the tables). Each (mechanism,
length) runs in its own process (`attnbench.launch.isolate`), so its peak RSS is its own and a
configuration that runs out of memory only loses its own record.

Modes: `train` times the trainer's jitted train step (forward, backward, optimizer update;
dropout as configured); `inference` times the jitted evaluation forward (`train=False`).
Records: `steps_per_s` = 1 / median step time over `--steps` timed steps after `--warmup`
untimed ones (the first call compiles), `step_time_spread_s` (half the range),
`peak_memory_bytes` = XLA's compiled memory analysis of the step (temp + arguments + outputs
- donated aliases: what the step needs resident at its peak) and `peak_rss_bytes` (the process
peak, including the Python runtime and the compiler). A configuration whose compiled memory
exceeds `--max-memory-gb` is recorded as skipped with the figure, before running it.
"""

from __future__ import annotations

import statistics
import time

import jax
import numpy as np

from attention import kernels
from attnbench import config as config_lib
from attnbench import errors, io, tasks, validate
from attnbench import steps as steps_lib  # `steps` is measure()'s count of timed steps
from attnbench.bench import attention as bench_attention
from attnbench.launch import isolate

__all__ = ["spec_for", "measure", "skipped_record", "plan", "run", "write"]


def spec_for(config: str, mechanism: str | None, length: int | None) -> str:
    """`configs/x.py[:args]` plus `attn=` and `length=` (the LRA configs' arguments)."""
    extra = [f"attn={mechanism}"] if mechanism else []
    extra += [f"length={length}"] if length else []
    if not extra:
        return config
    sep = "," if ":" in config else ":"
    return config + sep + ",".join(extra)


def config_length(config) -> int | None:
    """The sequence length a config sets (`data.max_length` in LRA, `data.length` in language
    modelling), or None where its shapes are not one length (images, graphs, point clouds)."""
    data = config.get("data", {})
    length = data.get("max_length", data.get("length"))
    return None if length is None else int(length)


def _memory(compiled) -> int | None:
    mem = compiled.memory_analysis()
    if mem is None:
        return None
    return int(
        mem.temp_size_in_bytes
        + mem.argument_size_in_bytes
        + mem.output_size_in_bytes
        - mem.alias_size_in_bytes
    )


MAX_TIMED_STEPS = 200  # `measure(min_time_s=...)`: the most steps it times


def measure(
    spec: str,
    *,
    batch: int,
    mode: str = "train",
    steps: int = 3,
    warmup: int = 1,
    max_memory_gb: float = 16.0,
    overrides: dict | None = None,
    min_time_s: float = 0.0,
) -> dict:
    """One record: steps/s and memory of config `spec`'s train (or inference) step.
    `overrides`: `{"attention.keep": 0.25, ...}` set on the loaded config (fields must exist).
    `min_time_s`: time more than `steps` steps until they add up to this many seconds (at most
    `MAX_TIMED_STEPS`), so that a short step's median is not three samples of noise."""
    if mode not in ("train", "inference"):
        raise ValueError(f"mode={mode!r}; known: train, inference")
    config = config_lib.load(spec)
    with config.unlocked():
        config.batch_size = batch
    config_lib.override(config, overrides or {})
    task = tasks.get(config.task)
    validate.check(config, task)
    rec = {
        "config": spec,
        "overrides": dict(overrides or {}),
        "task": config.task,
        "mechanism": config.attention.name,
        "hparams": {k: v for k, v in config.attention.items() if k != "name"},
        "length": config_length(config),
        "batch": batch,
        "mode": mode,
        "model": {
            k: config.model.get(k) for k in ("encoder", "num_layers", "dim", "num_heads", "mlp_dim")
        },
        "steps_per_s": None,
        "step_time_s": None,
        "step_time_spread_s": None,
        "peak_memory_bytes": None,
        "compile_s": None,
        "skipped": None,
    }
    built = steps_lib.setup(task, config)
    state = built.state
    example = jax.device_put(task.example_batch(config, batch), built.batch_sharding)
    t0 = time.perf_counter()
    with kernels.record() as chosen:  # which dense kernel each call site took
        if mode == "train":
            lowered = built.train_step(0).lower(state, example)
        else:
            lowered = built.eval_step.lower(state["params"], state["buffers"], example)
    rec["kernels"] = chosen.summary()
    compiled = lowered.compile()
    rec["compile_s"] = time.perf_counter() - t0
    rec["peak_memory_bytes"] = _memory(compiled)
    if rec["peak_memory_bytes"] and rec["peak_memory_bytes"] > max_memory_gb * 2**30:
        rec["skipped"] = (
            f"compiled step needs {rec['peak_memory_bytes'] / 2**30:.1f} GiB > "
            f"--max-memory-gb {max_memory_gb}"
        )
        return rec

    if mode == "train":

        def call(state):
            state, metrics = compiled(state, example)
            jax.block_until_ready(metrics)
            if not np.isfinite(float(metrics["train_loss"])):
                raise FloatingPointError(f"{spec}: non-finite training loss")
            return state
    else:

        def call(state):
            jax.block_until_ready(compiled(state["params"], state["buffers"], example))
            return state

    for _ in range(warmup):
        state = call(state)
    times = []
    while len(times) < steps or (sum(times) < min_time_s and len(times) < MAX_TIMED_STEPS):
        t = time.perf_counter()
        state = call(state)
        times.append(time.perf_counter() - t)
    med = statistics.median(times)
    rec.update(
        step_time_s=med,
        step_time_spread_s=(max(times) - min(times)) / 2,
        steps_per_s=1.0 / med,
        timed_steps=len(times),
    )
    return rec


def skipped_record(spec: str, mechanism: str, length: int | None, batch: int, mode: str, why):
    """The record of a measurement that returned none (its process died, or it raised):
    `length` None is the config's own."""
    if length is None:
        length = config_length(config_lib.load(spec))
    return dict(
        config=spec,
        mechanism=mechanism,
        length=length,
        batch=batch,
        mode=mode,
        steps_per_s=None,
        peak_memory_bytes=None,
        peak_rss_bytes=None,
        skipped=why,
    )


def parse_overrides(config: str, items) -> dict:
    """`["model.dtype=bfloat16", ...]` as `{field: value}`, checked against `config` (a field it
    lacks or a bad value is a ConfigError naming it)."""
    overrides = {}
    for item in items:
        field, sep, value = item.partition("=")
        if not sep:
            raise errors.ConfigError(f"--set {item}: expected FIELD=VALUE")
        overrides[field] = value
    validate.check(config_lib.override(config_lib.load(config), overrides))
    return overrides


def plan(config: str, mechanisms, lengths) -> list[tuple[str, str, int]]:
    """`(mechanism label, config spec, length)` for every run; loads each config, so an unknown
    mechanism, config argument or length fails here with the config's own error message.
    `mechanisms` None or empty: the config's own; `lengths` None or empty, or a length 0: the
    config's own shapes (no `length=` argument)."""
    import attention

    mechanisms = mechanisms or [None]
    lengths = [n or None for n in lengths or [None]]
    for m in mechanisms:
        if m is not None and m not in attention.names():
            raise attention.UnknownAttentionError(
                f"unknown mechanism {m!r}; known: {', '.join(attention.names())}"
            )
    out = []
    for m in mechanisms:
        for n in lengths:
            spec = spec_for(config, m, n)
            loaded = config_lib.load(spec)
            tasks.get(loaded.task).example_batch(loaded, 1)  # refused where there is none
            out.append((m or loaded.attention.name, spec, n or config_length(loaded)))
    return out


def run(
    config: str,
    specs,
    *,
    modes,
    batch: int,
    steps: int,
    warmup: int,
    max_memory_gb: float,
    baseline: str = "softmax",
    isolated: bool = True,
    timeout_s: float = 1800,
    overrides: dict | None = None,
) -> dict:
    """One record per (`plan` entry, mode), each in its own process unless `isolated=False`.
    `overrides`: config fields set on every run (`measure`), e.g. `{"model.dtype": "bfloat16"}`.
    Returns `{"config", "baseline", "records"}` (what `write` renders)."""
    records = []
    total = len(specs) * len(modes)
    t0 = time.perf_counter()
    for label, spec, n in specs:
        for mode in modes:
            kw = dict(
                spec=spec,
                batch=batch,
                mode=mode,
                steps=steps,
                warmup=warmup,
                max_memory_gb=max_memory_gb,
                overrides=overrides,
            )
            if isolated:
                rec = isolate.run("attnbench.bench.train:measure", kw, timeout_s=timeout_s)
            else:
                import resource

                try:
                    rec = measure(**kw)
                except Exception as e:  # noqa: BLE001 (as a dead child: recorded as skipped)
                    rec = {"skipped": f"failed: {type(e).__name__}: {str(e)[:200]}"}
                rec["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
            if "config" not in rec:  # the child died before returning a record
                rec = skipped_record(spec, label, n, batch, mode, rec["skipped"])
            rec["label"] = label
            records.append(rec)
            done = len(records)
            elapsed = time.perf_counter() - t0
            eta = elapsed / done * (total - done)
            shown = (
                f"{rec['steps_per_s']:.3f} steps/s, {_mib(rec['peak_memory_bytes'])} MiB"
                if rec["steps_per_s"]
                else f"skipped: {rec['skipped']}"
            )
            print(
                f"[{done}/{total} {elapsed:.0f}s, ETA {eta:.0f}s] {label:16s} N={n or 'own':>6} "
                f"{mode}: "
                f"{shown}",
                flush=True,
            )
    return {"config": config, "baseline": baseline, "records": records}


def _mib(b: int) -> str:
    return f"{b / 2**20:.1f}" if b < 100 * 2**20 else f"{b / 2**20:.0f}"


def _find(recs, label, n, mode):
    return next(
        (r for r in recs if r["label"] == label and r["length"] == n and r["mode"] == mode), None
    )


def write(result: dict, out: str, tag: str) -> None:
    """`<out>/train_<tag>.{json,md,png}`: the records, a table per mode and a plot."""
    io.write_json(f"{out}/train_{tag}.json", result)
    recs = result["records"]
    lengths = sorted({r["length"] for r in recs}, key=lambda n: (n is None, n or 0))
    labels = list(dict.fromkeys(r["label"] for r in recs))
    base = result["baseline"]
    first = next((r for r in recs if r.get("model")), {})
    lines = [
        "<!-- generated by scripts/bench.py train; do not edit -->",
        f"# Whole-model steps/s and memory vs length ({result['device']['kind']}, "
        f"{result['device']['cpu_count']} CPUs)",
        "",
        f"Command: `{result['command']}`",
        "",
        f"git {result['git_revision'][:12]}; config `{result['config']}`, model "
        f"{first.get('model')}, batch {first.get('batch')}, synthetic random inputs.",
        "",
        "steps/s = 1 / median step time after warm-up; memory = XLA's compiled memory analysis "
        "of the step (temp + arguments + outputs - donated aliases), with the process peak RSS "
        f"after the slash (each configuration in its own process). Ratios are to `{base}` at "
        "the same length; `skip` = not run (reason below).",
        "",
    ]
    lines += bench_attention.kernel_lines(recs, lambda r: r["label"])
    for mode in dict.fromkeys(r["mode"] for r in recs):
        head = " | ".join("own" if n is None else str(n) for n in lengths)
        lines += [
            f"## {mode}: steps/s (x {base})",
            "",
            f"| mechanism | {head} |",
            "|---|" + "---|" * len(lengths),
        ]
        for label in labels:
            cells = []
            for n in lengths:
                r, b = _find(recs, label, n, mode), _find(recs, base, n, mode)
                if r is None:
                    cells.append("")
                elif not r["steps_per_s"]:
                    cells.append("skip")
                else:
                    ratio = (
                        f" ({r['steps_per_s'] / b['steps_per_s']:.2f}x)"
                        if b and b["steps_per_s"] and label != base
                        else ""
                    )
                    cells.append(f"{r['steps_per_s']:.3f}{ratio}")
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        lines += [
            "",
            f"## {mode}: memory, MiB (x {base}) / peak RSS MiB",
            "",
            f"| mechanism | {head} |",
            "|---|" + "---|" * len(lengths),
        ]
        for label in labels:
            cells = []
            for n in lengths:
                r, b = _find(recs, label, n, mode), _find(recs, base, n, mode)
                if r is None or not r.get("peak_memory_bytes"):
                    cells.append("" if r is None else "skip")
                    continue
                ratio = (
                    f" ({r['peak_memory_bytes'] / b['peak_memory_bytes']:.2f}x)"
                    if b and b.get("peak_memory_bytes") and label != base
                    else ""
                )
                rss = f" / {r['peak_rss_bytes'] / 2**20:.0f}" if r.get("peak_rss_bytes") else ""
                cells.append(f"{_mib(r['peak_memory_bytes'])}{ratio}{rss}")
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        lines.append("")
    skipped = [r for r in recs if r["skipped"]]
    if skipped:
        lines += ["## Skipped", ""]
        lines += [
            f"- {r['label']} N={r['length'] or 'own'} {r['mode']}: {r['skipped']}" for r in skipped
        ]
        lines.append("")
    io.write_text(f"{out}/train_{tag}.md", "\n".join(lines))
    _plot(result, f"{out}/train_{tag}.png")


def _plot(result, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    recs = result["records"]
    modes = list(dict.fromkeys(r["mode"] for r in recs))
    fig, axes = plt.subplots(len(modes), 2, figsize=(13, 4.5 * len(modes)), squeeze=False)
    labels = list(dict.fromkeys(r["label"] for r in recs))
    colors = plt.cm.tab20(np.linspace(0, 1, max(len(labels), 2)))
    if len({r["length"] for r in recs}) < 2 or any(r["length"] is None for r in recs):
        # one shape per mechanism (a config's own): bars, not curves over length
        for row, mode in zip(axes, modes, strict=True):
            got = [r for r in recs if r["mode"] == mode and r["steps_per_s"]]
            names = [r["label"] for r in got]
            row[0].barh(names, [r["steps_per_s"] for r in got], color=colors[: len(got)])
            row[1].barh(
                names, [r["peak_memory_bytes"] / 2**30 for r in got], color=colors[: len(got)]
            )
            row[0].set(xlabel=f"{mode} steps/s")
            row[1].set(xlabel="compiled memory (GiB)")
            for ax in row:
                ax.grid(alpha=0.3, axis="x")
        fig.tight_layout()
        io.save_figure(fig, path, dpi=100)
        return
    for row, mode in zip(axes, modes, strict=True):
        for i, label in enumerate(labels):
            pts = [
                (r["length"], r["steps_per_s"], r["peak_memory_bytes"] / 2**30)
                for r in recs
                if r["label"] == label and r["mode"] == mode and r["steps_per_s"]
            ]
            if pts:
                n, s, m = zip(*pts, strict=True)
                style = dict(color=colors[i], marker="osD^v<>"[i % 7], label=label)
                row[0].plot(n, s, "-", **style)
                row[1].plot(n, m, "-", **style)
        row[0].set(xlabel="length", ylabel=f"{mode} steps/s", yscale="log")
        row[1].set(xlabel="length", ylabel="compiled memory (GiB)", yscale="log")
        for ax in row:
            ax.grid(alpha=0.3, which="both")
        if row[0].lines:
            row[0].legend(fontsize=7)
    fig.tight_layout()
    io.save_figure(fig, path, dpi=100)
