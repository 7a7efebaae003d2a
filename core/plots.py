"""Learning curves from a run's `metrics.jsonl` (matplotlib, headless)."""

from __future__ import annotations

import json
import pathlib

from core import io

__all__ = ["learning_curves"]


def learning_curves(workdir, *, title: str = "") -> pathlib.Path | None:
    """Writes `workdir/learning_curves.png`: train and validation loss and accuracy per step.

    Returns the path, or None when the log has no records.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    workdir = pathlib.Path(workdir)
    records = [json.loads(ln) for ln in (workdir / "metrics.jsonl").read_text().splitlines() if ln]
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
