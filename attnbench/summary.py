"""A run's `summary.json` (versioned schema) and the text the trainer prints from it.

The summary holds the final and best-checkpoint metrics (`val_last`, `val_best`, `test_last`,
`test_best`, and `train_last`: the training metrics of the last logged steps), the evaluators'
references (the majority-class rate), where the data came from, throughput, precision, the
kernels the dense attention ran, the device, the library versions (attnbench's included), the
git revision when run from a checkout, and the command (its config named as
`attnbench.config.canonical` names it).
"""

from __future__ import annotations

import json
import pathlib
import sys

import jax
import jax.numpy as jnp

from attnbench import config as config_lib
from attnbench import errors, io

__all__ = ["SCHEMA_VERSION", "build", "text", "precision", "command", "format_time"]

SCHEMA_VERSION = 1


def build(
    *,
    config,
    data,
    steps: int,
    best_step: int,
    epochs: dict | None,
    metrics: dict,
    reference: dict,
    throughput: dict,
    wall_time_s: float,
    num_params: int,
    precision: dict,
    kernels: dict,
    notes: list[str] | tuple = (),
) -> dict:
    """The summary of a finished run of `config` (its epochs resolved) on `data`
    (`attnbench.tasks.Data`)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "task": config.task,
        "attention": config.attention.to_dict(),
        "preset": config.get("preset"),
        "steps": steps,
        "best_step": best_step,
        **({"epochs": epochs} if epochs else {}),
        "metrics": metrics,
        "num_examples": {"train": len(data.train), "val": len(data.val), "test": len(data.test)},
        "reference": reference,
        "data": {"source": data.source, **data.description},
        "throughput": throughput,
        "wall_time_s": wall_time_s,
        "num_params": num_params,
        "precision": precision,
        "kernels": kernels,
        **({"notes": list(notes)} if notes else {}),
        "device": io.device_info(),
        "versions": io.versions(),
        "git_revision": io.git_revision(),
        "command": command(),
    }


def precision(config, state, requested_dtype) -> dict:
    """The summary's `precision`: the compute dtype the run used (resolved), the one asked for
    (e.g. "auto") and the dtypes the parameters and optimizer state are kept in."""
    return {
        "compute_dtype": config.get("model", {}).get("dtype"),
        "requested_dtype": requested_dtype,
        "params": _float_dtypes(state["params"]),
        "optimizer_state": _float_dtypes(state["opt_state"]),
    }


def _float_dtypes(tree) -> str | None:
    """The floating dtypes of a pytree's leaves, e.g. "float32" ("+"-joined if several)."""
    kinds = {str(x.dtype) for x in jax.tree.leaves(tree) if jnp.issubdtype(x.dtype, jnp.floating)}
    return "+".join(sorted(kinds)) or None


def command() -> str:
    """The command line, without machine-specific paths (`python -m scripts.train ...`, or the
    console script's name), its `--config` named as `attnbench.config.canonical` names it."""
    main = pathlib.Path(sys.argv[0])
    root = pathlib.Path(__file__).resolve().parents[1]
    if main.suffix == ".py" and main.resolve().is_relative_to(root):
        rel = main.resolve().relative_to(root).with_suffix("")
        head = "python -m " + ".".join(rel.parts)
    else:
        head = main.name
    args = list(sys.argv[1:])
    for i, arg in enumerate(args):
        if arg.startswith("--config="):
            args[i] = "--config=" + _canonical_config(arg.removeprefix("--config="))
        elif arg == "--config" and i + 1 < len(args):
            args[i + 1] = _canonical_config(args[i + 1])
    return " ".join([head, *args])


def _canonical_config(spec: str) -> str:
    try:
        return config_lib.canonical(spec)
    except errors.ConfigError:
        return spec


def last_train_record(path: pathlib.Path) -> dict:
    """The task metrics of the last training record of `metrics.jsonl` (a resumed run that
    logged no step itself); {} when there is none."""
    last = {}
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by a kill
            if record.get("split") == "train":
                last = record
    drop = {"step", "split", "grad_norm", "lr", "steps_per_s", "examples_per_s"}
    return {k: v for k, v in last.items() if k not in drop}


def format_time(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s"


def text(s: dict) -> str:
    """The lines the trainer prints at the end of a run."""
    m = s["metrics"]
    lines = [
        f"summary ({s['task']}, attention {s['attention']['name']}, "
        f"data {s['data']['source']}, {s['steps']} steps):"
    ]
    for name in ("val_last", "val_best", "test_last", "test_best"):
        vals = ", ".join(
            f"{k} {io.format_metric(v)}" for k, v in m[name].items() if k != "num_examples"
        )
        lines.append(f"  {name:10s} {vals}  (n={m[name]['num_examples']})")
    maj = s["reference"].get("majority_class_rate", {}).get("test")
    if maj is not None:
        lines.append(f"  majority-class rate (test): {maj:.4f}")
    tp = s["throughput"]
    if tp["steps_per_s"]:
        lines.append(
            f"  {tp['steps_per_s']:.2f} steps/s, {tp['examples_per_s']:.1f} examples/s, "
            f"wall {format_time(s['wall_time_s'])}, best step {s['best_step']}"
        )
    peak = tp.get("peak_device_memory_bytes") or tp.get("peak_host_rss_bytes")
    if peak:
        where = "device" if tp.get("peak_device_memory_bytes") else "host RSS"
        lines.append(f"  peak memory ({where}): {peak / 2**30:.2f} GiB")
    return "\n".join(lines)
