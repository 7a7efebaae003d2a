"""The trainer end to end on the ListOps smoke preset: outputs, resume identity, devices,
non-finite stops."""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import orbax.checkpoint as ocp
import pytest

from attnbench import config as config_lib
from attnbench import errors, io, train
from attnbench import summary as summary_lib
from tests.conftest import ROOT

SMOKE = "lra/listops.py:preset=smoke"


TOY = "tests/toy/config.py"  # variable-size sets: a transform and a collate in the data path


def _run_cli(workdir, *extra, env=None, devices=1, config=SMOKE):
    env = dict(os.environ, **(env or {}))
    # the caller's flags (make test's optimisation level) kept, the device count appended
    flags = env.get("XLA_FLAGS", "")
    env["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={devices}".strip()
    env["JAX_PLATFORMS"] = "cpu"
    cmd = [
        sys.executable,
        "-m",
        "scripts.train",
        f"--config={config}",
        f"--workdir={workdir}",
        *extra,
    ]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def _records(workdir, split):
    lines = pathlib.Path(workdir, "metrics.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["split"] == split]


def _final_params(workdir, step):
    state = ocp.PyTreeCheckpointer().restore(
        pathlib.Path(workdir, "checkpoints", "latest", str(step), "state").absolute()
    )
    return state["params"]


def test_smoke_run_writes_config_metrics_and_summary(tmp_path):
    config = config_lib.load(SMOKE)
    summary = train.train_and_evaluate(config, tmp_path)
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    assert on_disk == json.loads(json.dumps(summary))
    assert summary["schema_version"] == summary_lib.SCHEMA_VERSION
    assert summary["steps"] == config.total_steps
    assert summary["num_examples"] == {"train": 256, "val": 64, "test": 64}
    for name in ("val_last", "val_best", "test_last", "test_best"):
        assert 0.0 <= summary["metrics"][name]["accuracy"] <= 1.0
    assert summary["metrics"]["test_last"]["num_examples"] == 64
    # train_last: the last logged window of training steps, as metrics.jsonl records it
    records = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    last = [r for r in records if r["split"] == "train"][-1]
    assert summary["metrics"]["train_last"] == {
        k: last[k] for k in summary["metrics"]["train_last"]
    }
    assert {"loss", "accuracy"} <= set(summary["metrics"]["train_last"])
    assert (
        summary_lib.last_train_record(tmp_path / "metrics.jsonl")
        == summary["metrics"]["train_last"]
    )
    assert summary["data"]["source"] == "generated"
    assert summary["data"]["cache"].startswith("lra/listops-")  # relative: no machine paths
    assert summary["device"]["count"] >= 1 and summary["device"]["kind"]
    assert summary["num_params"] > 0 and summary["versions"]["jax"]
    assert summary["throughput"]["steps_per_s"] > 0
    tp = summary["throughput"]  # peak memory: the device's where it reports it, the host's RSS
    assert tp["peak_host_rss_bytes"] > 2**20
    on_cpu = summary["device"]["platform"] == "cpu"
    assert (tp["peak_device_memory_bytes"] is None) == on_cpu
    assert 0 < summary["reference"]["majority_class_rate"]["test"] < 1
    assert json.loads((tmp_path / "config.json").read_text())["task"] == "lra.listops"
    assert (tmp_path / "learning_curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    train_steps = [r["step"] for r in _records(tmp_path, "train")]
    assert train_steps == list(range(2, 13, 2))
    assert [r["step"] for r in _records(tmp_path, "val")] == [4, 8, 12]
    # the best checkpoint is the one with the best validation accuracy
    vals = _records(tmp_path, "val")
    assert summary["best_step"] == max(vals, key=lambda r: r["accuracy"])["step"]
    # a finished workdir returns its summary instead of training again
    assert train.train_and_evaluate(config, tmp_path) == on_disk


@pytest.mark.parametrize(
    "kill_at,use_async,resumes_from",
    [
        (6, False, 4),  # mid-interval, after a finished synchronous save at step 4
        pytest.param(  # right after an async save started: it may or may not have finalised
            8, True, None, marks=pytest.mark.slow
        ),
    ],
)
def test_killed_run_resumes_to_identical_params_and_metrics(
    tmp_path, request, kill_at, use_async, resumes_from
):
    ref, resumed = tmp_path / "ref", tmp_path / "resumed"
    flag = f"--config.async_checkpoints={use_async}"
    if use_async:
        assert _run_cli(ref, flag).returncode == 0
    else:  # the same uninterrupted run as the damaged-checkpoint tests'
        ref = request.getfixturevalue("sync_reference")
    killed = _run_cli(resumed, flag, env={"ATTNBENCH_KILL_AT_STEP": str(kill_at)})
    assert killed.returncode == -9, killed.stderr[-2000:]
    assert not (resumed / "summary.json").exists()
    done = _run_cli(resumed, flag)
    assert done.returncode == 0, done.stderr[-3000:]
    if resumes_from is not None:
        assert f"resumed from step {resumes_from}" in done.stdout
    a, b = _final_params(ref, 12), _final_params(resumed, 12)
    for x, y in zip(_leaves(a), _leaves(b), strict=True):
        np.testing.assert_array_equal(x, y)
    ref_train = _records(ref, "train")
    assert ref_train == _strip_rates(_records(resumed, "train"), ref_train)
    assert _records(ref, "val") == _records(resumed, "val")
    sa = json.loads((ref / "summary.json").read_text())
    sb = json.loads((resumed / "summary.json").read_text())
    assert sa["command"].startswith("python -m scripts.train --config=")
    assert sa["metrics"] == sb["metrics"] and sa["best_step"] == sb["best_step"]


def _truncate_largest_array_file(step_dir: pathlib.Path) -> None:
    files = [p for p in (step_dir / "state").rglob("*") if p.is_file() and "/d/" in str(p)]
    biggest = max(files, key=lambda p: p.stat().st_size)
    biggest.write_bytes(biggest.read_bytes()[: biggest.stat().st_size // 2])


def _truncate(path: pathlib.Path) -> None:
    path.write_bytes(path.read_bytes()[: max(path.stat().st_size // 2, 1)])


@pytest.fixture(scope="module")
def sync_reference(tmp_path_factory):
    """An uninterrupted smoke run with synchronous checkpoints, shared by the resume tests."""
    ref = tmp_path_factory.mktemp("sync-reference") / "ref"
    out = _run_cli(ref, "--config.async_checkpoints=False")
    assert out.returncode == 0, out.stderr[-3000:]
    return ref


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(  # a parameter array cut short (~40 s on 2 cores)
            _truncate_largest_array_file, marks=pytest.mark.slow
        ),
        pytest.param(
            lambda d: _truncate(d / "meta" / "metadata"),  # the trainer's JSON bookkeeping
            marks=pytest.mark.slow,
        ),
        pytest.param(
            lambda d: _truncate(d / "state" / "_METADATA"),  # orbax's tree metadata
            marks=pytest.mark.slow,
        ),
    ],
    ids=["array", "meta-json", "tree-metadata"],
)
def test_damaged_latest_checkpoint_falls_back_to_the_previous_step(
    tmp_path, sync_reference, damage
):
    """Step 8 is damaged after the kill: the restart names it, keeps it aside, resumes from
    step 4 and ends identical to an uninterrupted run."""
    ref, resumed = sync_reference, tmp_path / "resumed"
    flag = "--config.async_checkpoints=False"
    killed = _run_cli(resumed, flag, env={"ATTNBENCH_KILL_AT_STEP": "9"})
    assert killed.returncode == -9, killed.stderr[-2000:]
    latest = resumed / "checkpoints" / "latest"
    assert sorted(int(p.name) for p in latest.iterdir() if p.name.isdigit()) == [4, 8]
    damage(latest / "8")
    done = _run_cli(resumed, flag)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "checkpoint step 8" in done.stderr and "is damaged" in done.stderr
    assert "resumed from step 4" in done.stdout
    assert (resumed / "checkpoints" / "damaged" / "latest-8").is_dir()  # kept, not deleted
    for x, y in zip(
        _leaves(_final_params(ref, 12)), _leaves(_final_params(resumed, 12)), strict=True
    ):
        np.testing.assert_array_equal(x, y)
    sa = json.loads((ref / "summary.json").read_text())
    sb = json.loads((resumed / "summary.json").read_text())
    assert sa["metrics"] == sb["metrics"] and sa["best_step"] == sb["best_step"]
    assert _records(ref, "val") == _records(resumed, "val")


@pytest.mark.slow  # ~25 s on 2 cores; `make test-slow`
def test_no_intact_checkpoint_is_one_clear_error(tmp_path):
    w = tmp_path / "w"
    flag = "--config.async_checkpoints=False"
    killed = _run_cli(w, flag, env={"ATTNBENCH_KILL_AT_STEP": "5"})
    assert killed.returncode == -9
    _truncate(w / "checkpoints" / "latest" / "4" / "meta" / "metadata")
    out = _run_cli(w, flag)
    assert out.returncode == 2, out.stderr[-3000:]
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "no intact checkpoint" in lines[0] and "step 4" in lines[0]
    assert (w / "checkpoints" / "latest" / "4").is_dir()  # nothing moved when nothing is intact


@pytest.mark.slow  # over a minute on 2 cores; `make test-slow`
def test_toy_sets_resume_and_devices_through_transform_and_collate(tmp_path):
    """The new data path (per-example transform, bucketed collate) keeps the trainer's promises:
    a killed run resumes to identical params and metrics, and 4 devices give 1 device's losses."""
    ref, resumed, four = tmp_path / "ref", tmp_path / "resumed", tmp_path / "four"
    flag = "--config.async_checkpoints=False"
    assert _run_cli(ref, flag, config=TOY).returncode == 0
    killed = _run_cli(resumed, flag, config=TOY, env={"ATTNBENCH_KILL_AT_STEP": "6"})
    assert killed.returncode == -9, killed.stderr[-2000:]
    done = _run_cli(resumed, flag, config=TOY)
    assert done.returncode == 0 and "resumed from step 4" in done.stdout, done.stderr[-3000:]
    for x, y in zip(
        _leaves(_final_params(ref, 12)), _leaves(_final_params(resumed, 12)), strict=True
    ):
        np.testing.assert_array_equal(x, y)
    ref_train = _records(ref, "train")
    assert ref_train == _strip_rates(_records(resumed, "train"), ref_train)
    assert _records(ref, "val") == _records(resumed, "val")
    # two evaluators by name (config.evals): classification and de-normalised regression
    s = json.loads((ref / "summary.json").read_text())
    for section in ("val_last", "val_best", "test_last", "test_best"):
        m = s["metrics"][section]
        assert {"accuracy", "top2_accuracy", "mean_class_accuracy", "loss", "mae"} <= set(m)
        assert m["num_examples"] == 50 and 0 <= m["accuracy"] <= m["top2_accuracy"] <= 1
        assert 0 < m["mae"] < 22  # in set-size units: de-normalised
    out = _run_cli(four, flag, config=TOY, devices=4)
    assert out.returncode == 0, out.stderr[-3000:]
    np.testing.assert_allclose(
        [r["loss"] for r in _records(four, "train")], [r["loss"] for r in ref_train], rtol=1e-4
    )
    np.testing.assert_allclose(
        [r["loss"] for r in _records(four, "val")],
        [r["loss"] for r in _records(ref, "val")],
        rtol=1e-4,
    )


def _leaves(tree):
    if isinstance(tree, dict):
        return [leaf for k in sorted(tree) for leaf in _leaves(tree[k])]
    return [np.asarray(tree)]


def _strip_rates(records, like):
    """Timing fields differ between runs; everything else must be identical."""
    keys = ("steps_per_s", "examples_per_s")
    return [{**r, **{k: ref[k] for k in keys}} for r, ref in zip(records, like, strict=True)]


@pytest.mark.slow  # ~45 s on 2 cores; `make test-slow`
def test_one_and_four_devices_give_the_same_loss_curve(tmp_path):
    one = _run_cli(tmp_path / "one", devices=1)
    four = _run_cli(tmp_path / "four", devices=4)
    assert one.returncode == 0 and four.returncode == 0, four.stderr[-3000:]
    s4 = json.loads((tmp_path / "four" / "summary.json").read_text())
    assert s4["device"]["count"] == 4
    l1 = [r["loss"] for r in _records(tmp_path / "one", "train")]
    l4 = [r["loss"] for r in _records(tmp_path / "four", "train")]
    assert len(l1) == len(l4) == 6
    np.testing.assert_allclose(l1, l4, rtol=1e-4)
    v1 = [r["loss"] for r in _records(tmp_path / "one", "val")]
    v4 = [r["loss"] for r in _records(tmp_path / "four", "val")]
    np.testing.assert_allclose(v1, v4, rtol=1e-4)


def test_non_finite_loss_stops_with_the_step_and_keeps_last_good_checkpoint(tmp_path):
    config = config_lib.load(SMOKE)
    with config.unlocked():
        config.optimizer.lr = 1e30  # Adam steps of ~1e30 overflow within a few steps
        config.eval_every = 1
        config.log_every = 1
    # The loss of the step after the overflow, or already the evaluation of its parameters
    # (the evaluation outputs overflow first when the step evaluates): a failure either way.
    with pytest.raises(
        (train.NonFiniteLossError, train.NonFiniteEvalError), match=r"at step (\d+)"
    ) as err:
        train.train_and_evaluate(config, tmp_path)
    assert "the last good checkpoint is step" in str(err.value)
    assert (tmp_path / train.FAILED).exists()
    bad_step = int(str(err.value).split("at step ")[1].split()[0])
    last_good = max(
        int(p.name) for p in (tmp_path / "checkpoints" / "latest").iterdir() if p.name.isdigit()
    )
    assert last_good < bad_step
    for leaf in _leaves(_final_params(tmp_path, last_good)):
        assert np.all(np.isfinite(leaf))
    assert not (tmp_path / "summary.json").exists()


def test_non_finite_loss_before_any_checkpoint_says_so(tmp_path):
    config = config_lib.load(SMOKE)
    with config.unlocked():
        config.optimizer.lr = 1e30
        config.eval_every = 12  # the only checkpoint would be the last step
        config.log_every = 1
    with pytest.raises(train.NonFiniteLossError, match="no checkpoint was saved before it"):
        train.train_and_evaluate(config, tmp_path)
    assert not (tmp_path / "checkpoints" / "latest").exists() or not any(
        p.name.isdigit() for p in (tmp_path / "checkpoints" / "latest").iterdir()
    )


def test_workdir_with_a_different_config_is_refused(tmp_path):
    """Before anything is built: a workdir whose config.json (as a run writes it) differs."""
    config = config_lib.load(SMOKE)
    io.write_json(tmp_path / "run" / "config.json", config.to_dict())  # as `_train` writes it
    train._check_config(config, tmp_path / "run")  # the same config passes (resumes)
    other = config_lib.load(SMOKE)
    with other.unlocked():
        other.seed = 1
    with pytest.raises(errors.WorkdirError, match="different config"):
        train.train_and_evaluate(other, tmp_path / "run")


def test_cli_rejects_a_misspelt_field(tmp_path):
    out = _run_cli(tmp_path, "--config.optimizer.lrr=0.1")
    assert out.returncode != 0
    assert "lrr" in out.stderr


def _losses(config, workdir):
    train.train_and_evaluate(config, workdir)
    return [r["loss"] for r in _records(workdir, "train")]


@pytest.mark.slow  # over a minute on 2 cores; `make test-slow`
def test_ssa_dense_finetuning_phase_trains_with_dense_attention(tmp_path):
    """With the whole run in the "+FT" phase, SSA is dense softmax attention: same losses as a
    softmax run from the same init; without it, subsampling changes the curve."""

    def config(attn, fraction):
        c = config_lib.load(f"{SMOKE},attn={attn}")
        with c.unlocked():
            c.attention.dropout_rate = 0.0  # the two mechanisms draw dropout bits differently
            c.dense_finetune_fraction = fraction
        return c

    softmax = _losses(config("softmax", 0.0), tmp_path / "softmax")
    dense_ssa = _losses(config("ssa", 1.0), tmp_path / "ssa_dense")
    sparse_ssa = _losses(config("ssa", 0.0), tmp_path / "ssa_sparse")
    np.testing.assert_allclose(dense_ssa, softmax, rtol=1e-5)
    assert not np.allclose(sparse_ssa, softmax, rtol=1e-3)
    # half the run: steps 1-6 subsample (logged at 2, 4, 6), steps 7-12 are dense
    mixed = _losses(config("ssa", 0.5), tmp_path / "ssa_half")
    np.testing.assert_array_equal(mixed[:3], sparse_ssa[:3])
    assert all(
        not np.isclose(a, b, rtol=1e-4) for a, b in zip(mixed[3:], sparse_ssa[3:], strict=True)
    )


def test_with_epochs_counts_steps_from_the_training_examples():
    c = config_lib.load(TOY)
    assert train.with_epochs(c, 200) is c  # no epochs field: the config's steps
    with c.unlocked():
        c.epochs, c.eval_every_epochs = 3, 2
    r = train.with_epochs(c, 33)  # batch 16: 3 steps per epoch, the last one partial
    assert (r.total_steps, r.eval_every) == (9, 6) and (c.total_steps, c.eval_every) == (12, 4)
    with c.unlocked():
        c.epochs = 0
    assert train.with_epochs(c, 33) is c


@pytest.mark.slow  # ~12 s; fast sibling: test_with_epochs_counts_steps_from_the_training_...
def test_epoch_based_run_takes_its_length_from_the_data(tmp_path):
    """`config.epochs`: the run trains epochs x ceil(train / batch) steps and evaluates after
    every epoch, whatever the recipe's estimated total_steps; config.json keeps the recipe's
    fields, so the same config resumes in the same workdir."""
    c = config_lib.load(TOY)
    with c.unlocked():
        c.epochs, c.eval_every_epochs = 2, 1
        c.batch_size, c.async_checkpoints = 64, False
    s = train.train_and_evaluate(c, tmp_path / "run")
    per = -(-s["num_examples"]["train"] // 64)  # 200 examples: 4 steps per epoch
    assert per == 4 and s["steps"] == 2 * per
    assert s["epochs"] == {
        "epochs": 2, "steps_per_epoch": per, "total_steps": 2 * per, "recipe_total_steps": 12
    }  # fmt: skip
    assert [r["step"] for r in _records(tmp_path / "run", "val")] == [per, 2 * per]
    assert json.loads((tmp_path / "run" / "config.json").read_text())["total_steps"] == 12
    (tmp_path / "run" / "summary.json").unlink()
    again = train.train_and_evaluate(c, tmp_path / "run")  # resumes its last checkpoint
    assert again["steps"] == 2 * per and again["metrics"]["test_best"] == s["metrics"]["test_best"]
