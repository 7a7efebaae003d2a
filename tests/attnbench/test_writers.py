"""attnbench/writers.py: a smoke run with `writers=tensorboard` writes TensorBoard event files
whose scalars are metrics.jsonl's records (read back with tensorboardX's own Event protobuf
from the files' record framing), a resumed run purges what follows its step, the export
command writes the same from an existing run, and bad values are one-line errors."""

import json
import struct

import numpy as np
import pytest

from attnbench import cli, errors, train, validate, writers
from attnbench import config as config_lib
from scripts import tensorboard as tb_cli

event_pb2 = pytest.importorskip("tensorboardX.proto.event_pb2")

SMOKE = "lra/listops.py:preset=smoke"


def _events(logdir):
    """Every Event of the event files in `logdir`, in order (TFRecord framing: length uint64,
    its crc uint32, the Event bytes, their crc uint32)."""
    files = sorted(logdir.glob("events.out.tfevents.*"))
    assert files, f"no event file in {logdir}"
    out = []
    for path in files:
        data, i = path.read_bytes(), 0
        while i < len(data):
            (n,) = struct.unpack("<Q", data[i : i + 8])
            out.append(event_pb2.Event.FromString(data[i + 12 : i + 12 + n]))
            i += 12 + n + 4
    return out


def _scalars(logdir) -> dict[str, dict[int, float]]:
    out: dict[str, dict[int, float]] = {}
    for event in _events(logdir):
        for value in event.summary.value:
            out.setdefault(value.tag, {})[event.step] = value.simple_value
    return out


def _records(workdir):
    lines = (workdir / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_a_smoke_run_writes_the_jsonl_records_as_tensorboard_scalars(tmp_path):
    config = config_lib.load(SMOKE)
    config.writers = "tensorboard"
    train.train_and_evaluate(config, tmp_path)
    scalars = _scalars(tmp_path / writers.TENSORBOARD_DIR)
    records = _records(tmp_path)
    train_records = [r for r in records if r["split"] == "train"]
    val_records = [r for r in records if r["split"] == "val"]
    assert train_records and val_records
    assert sorted(scalars["train/loss"]) == [r["step"] for r in train_records]
    np.testing.assert_allclose(
        [scalars["train/loss"][r["step"]] for r in train_records],
        [r["loss"] for r in train_records],
        rtol=1e-6,
    )
    assert sorted(scalars["val/accuracy"]) == [r["step"] for r in val_records]
    assert "train/step" not in scalars and not any(t.endswith("/split") for t in scalars)

    # the export command writes the same scalars from metrics.jsonl alone
    before = scalars
    assert cli.run(tb_cli.main, [str(tmp_path)]) == 0
    assert _scalars(tmp_path / writers.TENSORBOARD_DIR) == before


def test_a_resumed_writer_purges_the_steps_after_its_start(tmp_path):
    w = writers.MetricWriters(tmp_path, "tensorboard", start_step=100)
    w.write({"step": 150, "split": "train", "loss": 1.0, "lr": float("nan"), "ok": True})
    w.close()
    events = _events(tmp_path / writers.TENSORBOARD_DIR)
    starts = [e for e in events if e.HasField("session_log")]
    assert [(e.step, e.session_log.status) for e in starts] == [(101, 1)]  # START: purge > 100
    assert _scalars(tmp_path / writers.TENSORBOARD_DIR) == {"train/loss": {150: 1.0}}
    assert _records(tmp_path)[0]["loss"] == 1.0  # the jsonl record is written as it is


def test_writers_can_change_when_a_run_resumes(tmp_path):
    config = config_lib.load(SMOKE)
    config.total_steps = config.eval_every
    train.train_and_evaluate(config, tmp_path)
    config.writers = "jsonl,tensorboard"
    train._check_config(config, tmp_path)  # no WorkdirError: an output choice only


def test_unknown_writers_and_bad_runs_are_one_line(tmp_path, capsys):
    with pytest.raises(
        errors.ConfigError, match=r"unknown 'mlflow'; known: jsonl, tensorboard, wandb"
    ):
        writers.parse("jsonl,mlflow")
    assert writers.parse(["tensorboard"]) == ("jsonl", "tensorboard")
    config = config_lib.load(SMOKE)
    config.writers = "tensorbord"
    assert any("tensorbord" in p for p in validate.problems(config))
    assert cli.run(tb_cli.main, [str(tmp_path / "nowhere")]) == 2
    assert "no metrics.jsonl" in capsys.readouterr().err
    (tmp_path / "metrics.jsonl").write_text('{"step": 1, "loss": 2}\nnot json\n')
    assert cli.run(tb_cli.main, [str(tmp_path)]) == 2
    assert "line 2: not a metrics record" in capsys.readouterr().err
