"""What a run never does (issue 32): poison its workdir through a checkpoint, report a metric of
non-finite outputs, leave processes behind, or take a file for a workdir.

- The metadata an asynchronous checkpoint writes is the snapshot of when it was saved, not the
  live dict the trainer goes on changing (deterministic: save, mutate, wait, read back).
- A workdir whose best-validation checkpoint is gone (written before the snapshots, or deleted by
  hand) finishes: the best of the intact steps stands in, and the warning and the summary say so.
- A model whose outputs are NaN only at evaluation stops with one line, exit status 2, and a
  `failed.json` a table cell shows as failed (never accuracy 0.2 from the argmax of NaN).
- SIGKILL of a trainer with data workers leaves none of its processes behind.
- A workdir that is a file is one line.

Multi-process checkpoints with the default asynchronous saves: tests/attnbench/launch/
test_multihost.py.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import jax.numpy as jnp
import numpy as np
import pytest

from attnbench import checkpoint
from attnbench.papers import runs
from tests.conftest import ROOT

SMOKE = "lra/listops.py:preset=smoke"


def _train(workdir, *extra, env=None, config=SMOKE, stdout=None):
    cmd = [sys.executable, "-m", "scripts.train", f"--config={config}", f"--workdir={workdir}"]
    env = dict(os.environ, JAX_PLATFORMS="cpu", **(env or {}))
    return subprocess.run(
        [*cmd, *extra], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )


def _one_error_line(out) -> str:
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert out.returncode == 2 and len(lines) == 1, out.stderr[-3000:]
    assert lines[0].startswith("error: ")
    return lines[0]


def _state(value: float) -> dict:
    return {"params": {"w": jnp.full((4,), value)}, "step": jnp.asarray(int(value))}


def test_an_async_checkpoint_writes_the_metadata_of_its_step_not_a_later_one(tmp_path):
    ckpts = checkpoint.Checkpoints(tmp_path / "checkpoints", use_async=True)
    meta = {"best_value": 0.5, "best_step": 4, "val_history": [{"step": 4, "accuracy": 0.5}]}
    data = {"next_index": 64}
    ckpts.save(4, _state(4), data, meta, best=True)
    # the trainer's next evaluation, while the save may still be writing
    meta["best_value"], meta["best_step"] = 0.9, 6
    meta["val_history"].append({"step": 6, "accuracy": 0.9})
    data["next_index"] = 96
    ckpts.wait()
    _, data_back, meta_back = ckpts.restore_latest(checkpoint.abstract(_state(0)))
    ckpts.close()
    assert meta_back == {
        "best_value": 0.5,
        "best_step": 4,
        "val_history": [{"step": 4, "accuracy": 0.5}],
    }
    assert data_back == {"next_index": 64}


def test_restore_best_recovers_from_the_intact_steps_when_the_best_is_gone(tmp_path):
    ckpts = checkpoint.Checkpoints(tmp_path / "checkpoints", keep=2, use_async=False)
    history = [{"step": s, "loss": v} for s, v in ((2, 0.9), (4, 0.5), (6, 0.7), (8, 0.6))]
    meta = {"best_value": None, "best_step": None, "val_history": []}
    for record in history:
        meta["val_history"].append(record)
        best = meta["best_value"] is None or record["loss"] < meta["best_value"]
        if best:
            meta["best_value"], meta["best_step"] = record["loss"], record["step"]
        ckpts.save(record["step"], _state(record["step"]), {}, meta, best=best)
    ckpts.wait()
    lower = lambda a, b: a["loss"] < b["loss"]  # noqa: E731
    abstract = checkpoint.abstract(_state(0))
    step, parts, note = ckpts.restore_best(abstract, meta, lower)
    assert (step, note) == (4, None) and float(parts["params"]["w"][0]) == 4.0
    shutil.rmtree(tmp_path / "checkpoints" / "best" / "4")
    ckpts.best.reload()
    with pytest.warns(UserWarning, match=r"step 4\) .* is missing; .* uses step 8"):
        step, parts, note = ckpts.restore_best(abstract, meta, lower)
    # latest keeps steps 6 and 8; 8 has the better validation loss of the two
    assert step == 8 and float(parts["params"]["w"][0]) == 8.0
    assert "intact checkpoints (steps 6, 8)" in note
    ckpts.close()


def test_a_resume_keeps_the_best_step_its_metadata_names_and_drops_other_newer_ones(tmp_path):
    """Best steps newer than the restored latest step are dropped (the resumed run recomputes
    them), except the one the restored metadata names: a workdir written before the snapshots
    could hold latest/4 whose metadata names best step 6, and deleting it failed every rerun."""
    ckpts = checkpoint.Checkpoints(tmp_path / "checkpoints", use_async=False)
    meta = {"best_value": 0.1, "best_step": 6, "val_history": [{"step": 4, "loss": 0.2}]}
    ckpts.save(4, _state(4), {}, meta, best=False)
    ckpts.best.save(6, args=_best_args(_state(6)))
    ckpts.wait()
    ckpts.restore_latest(checkpoint.abstract(_state(0)))
    assert ckpts.best.all_steps() == [6]
    ckpts.save(6, _state(7), {}, meta, best=True)  # the resumed run's step 6, better again
    ckpts.wait()
    step, parts, _ = ckpts.restore_best(checkpoint.abstract(_state(0)), meta, None)
    assert step == 6 and float(parts["params"]["w"][0]) == 7.0
    ckpts.close()
    other = checkpoint.Checkpoints(tmp_path / "other", use_async=False)
    other.save(4, _state(4), {}, {**meta, "best_step": 2}, best=False)
    other.best.save(6, args=_best_args(_state(6)))
    other.wait()
    other.restore_latest(checkpoint.abstract(_state(0)))
    assert other.best.all_steps() == []
    other.close()


def _best_args(state):
    import orbax.checkpoint as ocp

    return ocp.args.Composite(params=ocp.args.StandardSave(state["params"]))


@pytest.mark.slow  # ~15 s on 2 cores; the in-process recovery above is the fast sibling
def test_a_finished_run_without_its_best_checkpoint_finishes_instead_of_failing(tmp_path):
    w = tmp_path / "w"
    first = _train(w)
    assert first.returncode == 0, first.stderr[-3000:]
    summary = json.loads((w / "summary.json").read_text())
    (w / "summary.json").unlink()
    shutil.rmtree(w / "checkpoints" / "best")
    again = _train(w)
    assert again.returncode == 0, again.stderr[-3000:]
    redone = json.loads((w / "summary.json").read_text())
    assert "is missing" in again.stderr and "is missing" in redone["notes"][0]
    # the last step is the only intact evaluated step: its test is the "best" one
    assert redone["best_step"] == redone["steps"] == summary["steps"]
    assert redone["metrics"]["test_best"] == summary["metrics"]["test_last"]
    assert redone["metrics"]["test_last"] == summary["metrics"]["test_last"]


NAN_AT_EVAL = """
import jax.numpy as jnp
import attention


def nan_at_eval(params, q, k, v, *, mask=None, key=None, train=False):
    return v * (1.0 if train else jnp.nan)


attention.register("nan_at_eval", apply=nan_at_eval)
"""


def test_non_finite_evaluation_outputs_fail_the_run_never_a_metric(tmp_path):
    plugin = tmp_path / "nan_at_eval.py"
    plugin.write_text(NAN_AT_EVAL)
    w = tmp_path / "w"
    out = _train(
        w,
        "--import",
        str(plugin),
        "--config.total_steps=2",
        "--config.eval_every=2",
        config=f"{SMOKE},attn=nan_at_eval",
    )
    line = _one_error_line(out)
    assert "evaluation outputs are non-finite (NaN or inf) on split val at step 2" in line
    assert "outputs['logits']" in line
    assert not (w / "summary.json").exists()
    failed = json.loads((w / "failed.json").read_text())
    assert failed["error"] == "NonFiniteEvalError"
    # no validation record was written for the step
    records = [json.loads(x) for x in (w / "metrics.jsonl").read_text().splitlines()]
    assert [r["split"] for r in records] == ["train"]


def test_a_failed_run_is_a_failed_cell(tmp_path):
    class Cell:
        metric, scale = "test_best.accuracy", 100.0

    (tmp_path / "seed0").mkdir()
    (tmp_path / "seed0" / runs.FAILED).write_text('{"error": "NonFiniteEvalError"}')
    entry = runs._entry(dict(runs._seeds(tmp_path)), Cell(), "cpu")
    assert entry["failed"] == 1 and entry["values"] == []
    # a summary wins over a failure left by an earlier attempt of the same seed
    (tmp_path / "seed0" / "summary.json").write_text(
        json.dumps({"metrics": {"test_best": {"accuracy": 0.5}}, "data": {"source": "generated"}})
    )
    entry = runs._entry(dict(runs._seeds(tmp_path)), Cell(), "cpu")
    assert entry["failed"] == 0 and entry["values"] == [50.0]


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_sigkill_of_a_trainer_with_data_workers_leaves_no_process_behind(tmp_path):
    # The trainer leads its own process group: its grain workers and multiprocessing's resource
    # tracker are in it, so the group is empty exactly when none of them is left.
    log = open(tmp_path / "log", "w")  # noqa: SIM115 (a pipe would be held open by orphans)
    cmd = [sys.executable, "-m", "scripts.train", f"--config={SMOKE}"]
    cmd += [f"--workdir={tmp_path / 'w'}", "--config.data_workers=2", "--config.eval_every=2"]
    env = dict(os.environ, JAX_PLATFORMS="cpu", ATTNBENCH_KILL_AT_STEP="3")
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        assert proc.wait(timeout=300) == -signal.SIGKILL, (tmp_path / "log").read_text()[-3000:]
        deadline = time.monotonic() + 15
        while _group_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = subprocess.run(
            ["ps", "-o", "pid,ppid,rss,cmd", "-g", str(proc.pid)], capture_output=True, text=True
        ).stdout
        assert not _group_alive(proc.pid), f"left behind:\n{left}"
    finally:
        log.close()
        if _group_alive(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)


def test_a_workdir_that_is_a_file_is_one_line(tmp_path):
    path = tmp_path / "run"
    path.write_text("not a directory")
    line = _one_error_line(_train(path))
    assert (
        line
        == f"error: --workdir {path} is a file, not a directory; name a run directory, e.g. runs/x"
    )
    assert path.read_text() == "not a directory"


def test_the_finite_check_reads_real_rows_only():
    from attnbench import train

    weight = np.array([1.0, 1.0, 0.0])
    logits = np.array([[0.0, 1.0], [1.0, 0.0], [np.nan, np.nan]])  # padding row NaN: fine
    train._check_finite({"logits": logits}, weight, "val", 2)
    train._check_finite({"metrics": {"loss": (np.float32(1.0), np.float32(2.0))}}, weight, "val", 2)
    logits[1, 0] = np.inf
    with pytest.raises(train.NonFiniteEvalError, match=r"outputs\['logits'\]: 1 of 2 examples"):
        train._check_finite({"logits": logits}, weight, "val", 2)
    with pytest.raises(train.NonFiniteEvalError, match="metrics"):
        train._check_finite({"metrics": {"loss": (np.float32(np.nan), 2.0)}}, weight, "test", 4)
