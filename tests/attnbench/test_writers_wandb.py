"""attnbench/writers.py's `wandb` writer, offline: MetricWriters logs each record's numbers to a
W&B run in `<workdir>/wandb/` (read back from the run's `.wandb` transaction log: LevelDB-log
framing of wandb's own `Record` protobufs), a resumed run continues the same W&B run id, and a
missing wandb is the one-line error naming the extra."""

import json
import pathlib
import struct
import sys

import pytest

from attnbench import cli, errors, extras, writers

wandb = pytest.importorskip("wandb")
wandb_internal_pb2 = pytest.importorskip("wandb.proto.wandb_internal_pb2")

_HEADER = b":W&B\xe1\xbe\x00"  # ident, magic 0xBEE1 (little-endian), version 0
_BLOCK = 32768  # LevelDB log blocks; a record header never straddles one
_FULL, _LAST = 1, 4


@pytest.fixture(autouse=True)
def offline_wandb(tmp_path, monkeypatch):
    """W&B offline and quiet, every file it writes under tmp_path; its service process ends with
    the test."""
    for name in ("WANDB_PROJECT", "WANDB_ENTITY", "WANDB_API_KEY", "WANDB_RUN_ID", "WANDB_NAME"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    env = {
        "WANDB_MODE": "offline",
        "WANDB_SILENT": "true",
        "WANDB_CONSOLE": "off",  # leave pytest's capture of stdout and stderr alone
        "HOME": str(home),
        "WANDB_DIR": str(home / "wandb-dir"),  # MetricWriters passes dir= itself
        "WANDB_CONFIG_DIR": str(home / "config"),
        "WANDB_CACHE_DIR": str(home / "cache"),
        "WANDB_DATA_DIR": str(home / "data"),
        "WANDB_ARTIFACT_DIR": str(home / "artifacts"),
        "WANDB__DISABLE_STATS": "true",  # no system metrics sampling
        "WANDB__DISABLE_MACHINE_INFO": "true",
        "WANDB__SAVE_REQUIREMENTS": "false",  # no pip freeze
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    yield
    wandb.teardown()  # finishes any run left open and stops the service process


def _run_logs(workdir) -> list[pathlib.Path]:
    """The `.wandb` transaction logs of the offline runs in `<workdir>/wandb/`, once W&B's service
    process has written them out (`run.finish()` returns before it closes them)."""
    wandb.teardown()
    return sorted((workdir / writers.WANDB_DIR).glob("offline-run-*/run-*.wandb"))


def _records(path: pathlib.Path):
    """wandb's `Record` protobufs in the transaction log `path`."""
    data = path.read_bytes()
    assert data[: len(_HEADER)] == _HEADER, f"{path}: not a W&B transaction log"
    i, chunk = len(_HEADER), b""
    while i < len(data):
        if _BLOCK - i % _BLOCK < 7:  # the block's zero-padded tail
            i += _BLOCK - i % _BLOCK
            continue
        _crc, length, kind = struct.unpack("<IHB", data[i : i + 7])
        chunk += data[i + 7 : i + 7 + length]
        i += 7 + length
        if kind in (_FULL, _LAST):
            yield wandb_internal_pb2.Record.FromString(chunk)
            chunk = b""


def _history(path) -> dict[int, dict[str, float]]:
    """step -> the row W&B holds for it (without W&B's own `_` keys)."""
    rows = {}
    for record in _records(path):
        if record.WhichOneof("record_type") == "history":
            row = {}
            for item in record.history.item:
                key = item.key or "/".join(item.nested_key)
                if not key.startswith("_"):
                    row[key] = json.loads(item.value_json)
            rows[record.history.step.num] = row
    return rows


def _run_record(path):
    return next(r.run for r in _records(path) if r.WhichOneof("record_type") == "run")


def test_jsonl_and_wandb_log_each_records_numbers_at_its_step(tmp_path):
    workdir = tmp_path / "my-run"
    workdir.mkdir()
    (workdir / "config.json").write_text(json.dumps({"task": "listops", "model": {"depth": 2}}))
    w = writers.MetricWriters(workdir, "jsonl,wandb")
    assert w.names == ("jsonl", "wandb")
    records = [
        {"step": 10, "split": "train", "loss": 2.5, "lr": 1e-3},
        {"step": 20, "split": "train", "loss": 1.5, "grad_norm": float("nan"), "ok": True},
        {"step": 20, "split": "val", "accuracy": 0.25, "num_examples": 64},
    ]
    for record in records:
        w.write(record)
    w.close()

    lines = (workdir / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == [10, 20, 20]  # jsonl holds them all
    run_id = (workdir / writers.WANDB_DIR / "run_id").read_text().strip()
    [log] = _run_logs(workdir)
    assert log.name == f"run-{run_id}.wandb"
    assert _history(log) == {
        10: {"train/loss": 2.5, "train/lr": 1e-3},
        20: {"train/loss": 1.5, "val/accuracy": 0.25, "val/num_examples": 64},
    }  # the non-finite grad_norm and the boolean are not scalars; train and val share step 20
    run = _run_record(log)
    assert (run.run_id, run.display_name, run.project) == (run_id, "my-run", "attnbench")
    config = {u.key: json.loads(u.value_json) for u in run.config.update}
    assert config["task"] == "listops" and config["model"] == {"depth": 2}
    assert not (tmp_path / "home" / "wandb-dir").exists()  # dir= is the workdir's


def test_a_resumed_run_continues_the_same_wandb_run(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_PROJECT", "elsewhere")
    w = writers.MetricWriters(tmp_path, "wandb", config={"seed": 3})
    w.write({"step": 100, "split": "train", "loss": 1.0})
    w.close()
    run_id = (tmp_path / writers.WANDB_DIR / "run_id").read_text().strip()

    w = writers.MetricWriters(tmp_path, "jsonl,wandb", start_step=100, config={"seed": 3})
    assert w._wandb.id == run_id
    w.write({"step": 150, "split": "train", "loss": 0.5})
    w.close()

    assert (tmp_path / writers.WANDB_DIR / "run_id").read_text().strip() == run_id
    logs = _run_logs(tmp_path)  # offline, each attempt is a folder of the same run
    assert [(_run_record(p).run_id, _run_record(p).project) for p in logs] == [
        (run_id, "elsewhere")
    ] * 2
    assert sorted(map(_history, logs), key=min) == [  # by their first step
        {100: {"train/loss": 1.0}},
        {150: {"train/loss": 0.5}},
    ]


def test_a_resumed_run_skips_the_steps_wandb_holds(tmp_path, monkeypatch):
    """Online, a resumed W&B run starts after its last step (`starting_step`): records of the
    steps it holds are not logged again (W&B would drop them)."""

    class FakeRun:
        starting_step = 151  # a crashed attempt logged up to step 150

        def __init__(self):
            self.logged = []

        def log(self, data, step):
            self.logged.append((step, data))

        def finish(self):
            self.logged.append("finished")

    run = FakeRun()
    monkeypatch.setattr(writers, "_wandb_run", lambda workdir, config: run)
    w = writers.MetricWriters(tmp_path, "wandb", start_step=100)
    for step in (140, 150, 151, 160):
        w.write({"step": step, "split": "train", "loss": float(step)})
    w.close()
    assert run.logged == [(151, {"train/loss": 151.0}), (160, {"train/loss": 160.0}), "finished"]
    assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == 4  # jsonl holds all


def test_unknown_writers_list_wandb_among_the_known(tmp_path):
    with pytest.raises(
        errors.ConfigError, match=r"unknown 'mlflow'; known: jsonl, tensorboard, wandb"
    ):
        writers.parse("jsonl,mlflow")
    assert writers.parse("wandb, tensorboard") == ("jsonl", "tensorboard", "wandb")


def test_wandb_not_installed_is_the_one_line_extra_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "wandb", None)  # `import wandb` fails
    assert writers.parse("jsonl,tensorboard") == ("jsonl", "tensorboard")  # no wandb asked
    with pytest.raises(extras.MissingExtraError, match=r"pip install 'attnbench\[wandb\]'"):
        writers.parse("jsonl,wandb")
    with pytest.raises(extras.MissingExtraError):
        writers.MetricWriters(tmp_path, ["wandb"])
    assert not (tmp_path / "metrics.jsonl").exists()
    assert cli.run(lambda argv: writers.parse(argv[0]), ["wandb"]) == 2
    assert capsys.readouterr().err == (
        "error: config.writers='wandb' needs wandb, which is not installed: "
        "pip install 'attnbench[wandb]'\n"
    )


def test_a_failed_wandb_init_is_one_line(tmp_path, monkeypatch):
    def init(**kwargs):
        raise wandb.errors.UsageError("No API key configured. Use `wandb login` to log in.")

    monkeypatch.setattr(wandb, "init", init)
    with pytest.raises(errors.ConfigError, match=r"wandb.init failed: No API key .*WANDB_MODE"):
        writers.MetricWriters(tmp_path, "wandb")


@pytest.mark.slow  # a smoke run (about 20 s on 2 cores)
def test_a_smoke_run_logs_its_records_and_config_to_wandb(tmp_path):
    from attnbench import config as config_lib
    from attnbench import train

    config = config_lib.load("lra/listops.py:preset=smoke")
    config.writers = "wandb"
    train.train_and_evaluate(config, tmp_path)
    [log] = _run_logs(tmp_path)
    history = _history(log)
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert {r["split"] for r in records} == {"train", "val"}
    assert sorted(history) == sorted({r["step"] for r in records})
    for record in records:
        for tag, value in writers._scalars(record):
            assert history[record["step"]][tag] == pytest.approx(value, rel=1e-6)
    config_json = json.loads((tmp_path / "config.json").read_text())
    logged = {u.key: json.loads(u.value_json) for u in _run_record(log).config.update}
    assert {k: logged[k] for k in config_json} == config_json
