"""Learning curves from a run's `metrics.jsonl` (matplotlib, headless)."""

from __future__ import annotations

import json
import pathlib

from attnbench import io

__all__ = ["learning_curves", "compare_runs"]


def _records(workdir) -> list[dict]:
    path = pathlib.Path(workdir) / "metrics.jsonl"
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln]


def learning_curves(workdir, *, title: str = "") -> pathlib.Path | None:
    """Writes `workdir/learning_curves.png`: train and validation loss and accuracy per step.

    Returns the path, or None when the log has no records.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    workdir = pathlib.Path(workdir)
    records = _records(workdir)
    if not records:
        return None
    metrics = [k for k in ("loss", "accuracy") if any(k in r for r in records)]
    fig, axes = plt.subplots(1, len(metrics), figsize=(5 * len(metrics), 3.5), squeeze=False)
    for ax, name in zip(axes[0], metrics, strict=True):
        for split, style in (("train", "-"), ("val", "o-")):
            pts = [(r["step"], r[name]) for r in records if r["split"] == split and name in r]
            if pts:
                ax.plot(*zip(*pts, strict=True), style, label=split, markersize=4)
        ax.set_xlabel("step")
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(title or workdir.name)
    fig.tight_layout()
    return io.save_figure(fig, workdir / "learning_curves.png", dpi=100)


def compare_runs(runs: dict, out, *, title: str = "", metric: str = "accuracy") -> pathlib.Path:
    """Writes `out` (a PNG): several runs' training loss and validation `metric` per step on
    shared axes. `runs` maps a label to a run directory (with `metrics.jsonl`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(11, 4))
    for label, workdir in runs.items():
        records = _records(workdir)
        train = [(r["step"], r["loss"]) for r in records if r["split"] == "train"]
        val = [(r["step"], r[metric]) for r in records if r["split"] == "val" and metric in r]
        if train:
            ax_loss.plot(*zip(*train, strict=True), label=label)
        if val:
            ax_acc.plot(*zip(*val, strict=True), "o-", label=label, markersize=4)
    for ax, name in ((ax_loss, "training loss"), (ax_acc, f"validation {metric}")):
        ax.set_xlabel("step")
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(title)
    fig.tight_layout()
    return io.save_figure(fig, out, dpi=100)
