"""Where a run's metric records go: `metrics.jsonl` always, TensorBoard and W&B where asked.

    config.writers = "jsonl,tensorboard"   # jsonl is always written; names are comma-separated

`metrics.jsonl` (one JSON record per logged step: `{"step", "split", <metrics>}`) is the source
of truth the summaries, tables and plots read. `tensorboard` also writes each record's finite
numbers as scalars `<split>/<name>` (e.g. `train/loss`, `val/accuracy`) at the record's step
into `<workdir>/tensorboard/`, through tensorboardX (no TensorFlow): `tensorboard --logdir
<workdir>/tensorboard`. A resumed run purges the events after the step it resumes from, as it
truncates metrics.jsonl, so the curves hold each step once.

`wandb` (the `wandb` extra: `pip install 'attnbench[wandb]'`) logs the same `<split>/<name>`
numbers to a Weights & Biases run at the record's step (`run.log(..., step=record["step"])`),
named after the workdir, with the run's config (`<workdir>/config.json`) as its config. W&B
keeps its files in `<workdir>/wandb/`, and the W&B run id in `<workdir>/wandb/run_id`, so a
resumed run continues the same W&B run (`resume="allow"`). Project, entity and mode come from
W&B's own environment variables: WANDB_PROJECT (default "attnbench"), WANDB_ENTITY, WANDB_MODE
(`offline` logs without a network, for `wandb sync <workdir>/wandb/offline-run-*` later), as
does the login (WANDB_API_KEY or `wandb login`). W&B's steps only go up: a resumed run skips
the records of steps the W&B run already holds (those a crashed attempt logged after its last
checkpoint keep their first values there; metrics.jsonl holds the resumed ones). An offline
run knows no earlier steps, so each attempt is its own `offline-run-*` folder of the same run
id, synced in turn. A run resumed with `wandb` newly among its writers logs to W&B from the
step it resumes from (metrics.jsonl holds the earlier records).

`export(workdir)` writes the event files of a finished (or older) run from its metrics.jsonl:
`attnbench-tensorboard RUN_DIR ...` (scripts/tensorboard.py).

MLflow is not built in: it imports TensorBoard event files (MLflow's tensorboard import) or
reads the JSONL records directly.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import pathlib
import secrets
import shutil
import string

from attnbench import errors, extras, io

__all__ = ["KNOWN", "parse", "MetricWriters", "export", "TENSORBOARD_DIR", "WANDB_DIR"]

KNOWN = ("jsonl", "tensorboard", "wandb")
TENSORBOARD_DIR = "tensorboard"
WANDB_DIR = "wandb"  # <workdir>/wandb/: W&B's run folders and the run id (run_id)
_WANDB_PROJECT = "attnbench"  # where WANDB_PROJECT is not set
_NOT_SCALARS = ("step", "split")


def parse(spec) -> tuple[str, ...]:
    """The writers `config.writers` names ("jsonl,tensorboard", or a list): always jsonl first;
    an unknown name is a ConfigError listing the known ones, "wandb" without wandb installed the
    one-line `MissingExtraError` naming the extra."""
    names = [s.strip() for s in (spec.split(",") if isinstance(spec, str) else spec)]
    names = [n for n in names if n]
    unknown = [n for n in names if n not in KNOWN]
    if unknown:
        raise errors.ConfigError(
            f"config.writers={spec!r}: unknown {', '.join(map(repr, unknown))}; known: "
            f"{', '.join(KNOWN)} (jsonl is always written)"
        )
    if "wandb" in names and importlib.util.find_spec("wandb") is None:
        raise _missing_wandb()
    return ("jsonl", *(n for n in KNOWN[1:] if n in names))


def _missing_wandb() -> extras.MissingExtraError:
    return extras.MissingExtraError(
        "config.writers='wandb' needs wandb, which is not installed: "
        "pip install 'attnbench[wandb]'",
        name="wandb",
    )


def _import_wandb():
    try:
        import wandb
    except ImportError as e:
        if e.name is not None and e.name.split(".")[0] != "wandb":
            raise  # wandb is there but something it imports is broken: a real bug
        raise _missing_wandb() from None
    return wandb


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


def _wandb_run_id(wandb_dir: pathlib.Path) -> str:
    """The workdir's W&B run id: read from `wandb_dir/run_id`, or made (8 base-36 characters,
    as W&B's own) and stored there the first time."""
    path = wandb_dir / "run_id"
    if path.is_file():
        run_id = path.read_text().strip()
        if run_id:
            return run_id
    alphabet = string.ascii_lowercase + string.digits
    run_id = "".join(secrets.choice(alphabet) for _ in range(8))
    io.write_text(path, run_id + "\n")
    return run_id


def _wandb_run(workdir: pathlib.Path, config: dict | None):
    """`wandb.init` of the workdir's W&B run (a new one, or the one its run_id names)."""
    wandb = _import_wandb()
    wandb_dir = workdir / WANDB_DIR
    wandb_dir.mkdir(parents=True, exist_ok=True)
    if config is None and (workdir / "config.json").is_file():
        config = io.read_json(workdir / "config.json", what="run config")
    try:
        return wandb.init(
            project=os.environ.get("WANDB_PROJECT") or _WANDB_PROJECT,
            dir=workdir,  # W&B keeps its files in <dir>/wandb/
            id=_wandb_run_id(wandb_dir),
            name=workdir.resolve().name,
            config=config,
            resume="allow",
            reinit="create_new",  # never an unfinished earlier run of this process
        )
    except wandb.errors.Error as e:  # not logged in, no network, a bad project or entity
        why = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise errors.ConfigError(
            f"config.writers='wandb': wandb.init failed: {why} "
            "(WANDB_MODE=offline logs without a login or a network)"
        ) from None


class MetricWriters:
    """The run's writers, open from `start_step` (0 for a new run): `write(record)` appends a
    record to metrics.jsonl (flushed) and to the other writers; `close()`. `config` (a plain
    dict) is the W&B run's config; by default `<workdir>/config.json` where it exists."""

    def __init__(
        self, workdir: pathlib.Path, names, start_step: int = 0, *, config: dict | None = None
    ):
        workdir = pathlib.Path(workdir)
        self.names = parse(names)
        self._jsonl = open(workdir / "metrics.jsonl", "a")  # noqa: SIM115
        self._tb = None
        self._wandb = None
        if "tensorboard" in self.names:
            self._tb = _summary_writer(
                workdir / TENSORBOARD_DIR, start_step + 1 if start_step else None
            )
        if "wandb" in self.names:
            try:
                self._wandb = _wandb_run(workdir, config)
            except BaseException:
                self._jsonl.close()
                if self._tb is not None:
                    self._tb.close()
                raise
            # W&B drops a step below the run's next one: a resumed W&B run skips the steps
            # it holds (its starting_step is one past its last; 0 for a new or offline run).
            self._wandb_from = int(self._wandb.starting_step)

    def write(self, record: dict) -> None:
        self._jsonl.write(json.dumps(record) + "\n")
        self._jsonl.flush()
        if self._tb is not None:
            for tag, value in _scalars(record):
                self._tb.add_scalar(tag, value, int(record["step"]))
            self._tb.flush()
        if self._wandb is not None and int(record["step"]) >= self._wandb_from:
            scalars = dict(_scalars(record))
            if scalars:  # the records of one step (train, then val) share W&B's row of it
                self._wandb.log(scalars, step=int(record["step"]))

    def close(self) -> None:
        self._jsonl.close()
        if self._tb is not None:
            self._tb.close()
        if self._wandb is not None:
            self._wandb.finish()
            self._wandb = None


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
