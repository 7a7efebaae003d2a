"""Where a run's metric records go: `metrics.jsonl` always, TensorBoard where asked.

    config.writers = "jsonl,tensorboard"   # jsonl is always written; names are comma-separated

`metrics.jsonl` (one JSON record per logged step: `{"step", "split", <metrics>}`) is the source
of truth the summaries, tables and plots read. `tensorboard` also writes each record's finite
numbers as scalars `<split>/<name>` (e.g. `train/loss`, `val/accuracy`) at the record's step
into `<workdir>/tensorboard/`, through tensorboardX (no TensorFlow): `tensorboard --logdir
<workdir>/tensorboard`. A resumed run purges the events after the step it resumes from, as it
truncates metrics.jsonl, so the curves hold each step once.

`export(workdir)` writes the event files of a finished (or older) run from its metrics.jsonl:
`attnbench-tensorboard RUN_DIR ...` (scripts/tensorboard.py).

W&B and MLflow are not built in: both read TensorBoard event files (`wandb.tensorboard.patch`,
`wandb sync --sync-tensorboard`; MLflow's tensorboard import) or the JSONL records directly.
"""

from __future__ import annotations

import json
import math
import pathlib
import shutil

from attnbench import errors

__all__ = ["KNOWN", "parse", "MetricWriters", "export", "TENSORBOARD_DIR"]

KNOWN = ("jsonl", "tensorboard")
TENSORBOARD_DIR = "tensorboard"
_NOT_SCALARS = ("step", "split")


def parse(spec) -> tuple[str, ...]:
    """The writers `config.writers` names ("jsonl,tensorboard", or a list): always jsonl first;
    an unknown name is a ConfigError listing the known ones."""
    names = [s.strip() for s in (spec.split(",") if isinstance(spec, str) else spec)]
    names = [n for n in names if n]
    unknown = [n for n in names if n not in KNOWN]
    if unknown:
        raise errors.ConfigError(
            f"config.writers={spec!r}: unknown {', '.join(map(repr, unknown))}; known: "
            f"{', '.join(KNOWN)} (jsonl is always written)"
        )
    return ("jsonl", *(n for n in KNOWN[1:] if n in names))


def _scalars(record: dict) -> list[tuple[str, float]]:
    split = record.get("split", "train")
    out = []
    for key, value in record.items():
        if key in _NOT_SCALARS or isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if math.isfinite(value):
            out.append((f"{split}/{key}", float(value)))
    return out


def _summary_writer(logdir: pathlib.Path, purge_step: int | None):
    import tensorboardX

    return tensorboardX.SummaryWriter(logdir=str(logdir), purge_step=purge_step)


class MetricWriters:
    """The run's writers, open from `start_step` (0 for a new run): `write(record)` appends a
    record to metrics.jsonl (flushed) and to the other writers; `close()`."""

    def __init__(self, workdir: pathlib.Path, names, start_step: int = 0):
        self.names = parse(names)
        self._jsonl = open(pathlib.Path(workdir) / "metrics.jsonl", "a")  # noqa: SIM115
        self._tb = None
        if "tensorboard" in self.names:
            self._tb = _summary_writer(
                pathlib.Path(workdir) / TENSORBOARD_DIR, start_step + 1 if start_step else None
            )

    def write(self, record: dict) -> None:
        self._jsonl.write(json.dumps(record) + "\n")
        self._jsonl.flush()
        if self._tb is not None:
            for tag, value in _scalars(record):
                self._tb.add_scalar(tag, value, int(record["step"]))
            self._tb.flush()

    def close(self) -> None:
        self._jsonl.close()
        if self._tb is not None:
            self._tb.close()


def export(workdir) -> pathlib.Path:
    """`<workdir>/tensorboard/` written anew from `<workdir>/metrics.jsonl`; returns it. A
    workdir without metrics.jsonl, or a line that is not a JSON record, is a DataError."""
    workdir = pathlib.Path(workdir)
    path = workdir / "metrics.jsonl"
    if not path.is_file():
        raise errors.DataError(f"{workdir}: no metrics.jsonl (not a run directory?)")
    records = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            int(record["step"])
        except (ValueError, TypeError, KeyError):
            raise errors.DataError(
                f"{path}, line {n}: not a metrics record (JSON with a step)"
            ) from None
        records.append(record)
    logdir = workdir / TENSORBOARD_DIR
    shutil.rmtree(logdir, ignore_errors=True)
    writer = _summary_writer(logdir, None)
    try:
        for record in records:
            for tag, value in _scalars(record):
                writer.add_scalar(tag, value, int(record["step"]))
    finally:
        writer.close()
    return logdir
