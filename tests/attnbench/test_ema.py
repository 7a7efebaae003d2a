"""The exponential moving average of the parameters (`config.ema_decay`, DeiT's `--model-ema`):
the trainer's average against a float64 recursion over its parameter trajectory, the `ema_`
metrics beside the raw ones, the config error; in the slow tier, the raw run unchanged by it
and exact resume with it on."""

import json

import jax
import numpy as np
import orbax.checkpoint as ocp
import pytest

from attnbench import config as config_lib
from attnbench import errors, steps, tasks, train
from tests.attnbench.test_train import _leaves, _records, _run_cli, _strip_rates

SMOKE = "lra/listops.py:preset=smoke"
DECAY = 0.9  # far from 1, so that a few steps move the average well beyond float32 rounding


def _config(ema_decay, **fields):
    c = config_lib.load(SMOKE)
    with c.unlocked():
        c.ema_decay = ema_decay
        for k, v in fields.items():
            c[k] = v
    return c


def _flat(tree):
    """`{"a/0/b": float64 copy}` of a pytree's leaves (a checkpoint's keys are strings)."""
    leaves = jax.tree_util.tree_flatten_with_path(tree)[0]
    return {"/".join(str(k.key) for k in p): np.asarray(x, np.float64) for p, x in leaves}


def _latest_state(workdir, step):
    path = workdir / "checkpoints" / "latest" / str(step) / "state"
    return ocp.PyTreeCheckpointer().restore(path.absolute())


def _best_parts(workdir):
    (step,) = [p for p in (workdir / "checkpoints" / "best").iterdir() if p.name.isdigit()]
    return {p.name for p in step.iterdir() if p.is_dir()}


def _raw(record):
    return {k: v for k, v in record.items() if not k.startswith("ema_")}


def _recording_steps(monkeypatch):
    """Makes the trainer's jitted step record the parameters: the initial ones, then those after
    each step. Returns the list it fills with `_flat` copies."""
    trajectory = []
    setup = steps.setup

    def wrap(train_step):
        def step(state, batch):
            if not trajectory:  # copied before the step donates the state's buffers
                trajectory.append(_flat(state["params"]))
            state, metrics = train_step(state, batch)
            trajectory.append(_flat(state["params"]))
            return state, metrics

        return step

    def recording(*args, **kwargs):
        built = setup(*args, **kwargs)
        built._train_steps = {name: wrap(fn) for name, fn in built._train_steps.items()}
        return built

    monkeypatch.setattr(steps, "setup", recording)
    return trajectory


FIELDS = {"total_steps": 4, "eval_every": 2, "async_checkpoints": False}
RAW_NAMES = {"accuracy", "loss", "mean_class_accuracy"}  # the ListOps evaluator's
EMA_NAMES = {f"ema_{k}" for k in RAW_NAMES}


def test_the_ema_follows_the_parameters_and_is_evaluated_beside_them(tmp_path, monkeypatch):
    """The average in the checkpoint is the float64 recursion over the parameters the run's steps
    produced; every validation and both test evaluations carry `ema_<metric>` beside each raw
    metric, which stay the run's (the best step is the raw model's)."""
    trajectory = _recording_steps(monkeypatch)
    summary = train.train_and_evaluate(_config(DECAY, **FIELDS), tmp_path)

    # the initial params, then ema = decay * ema + (1 - decay) * params after every step
    assert len(trajectory) == 1 + 4
    want = trajectory[0]
    for params in trajectory[1:]:
        want = {k: DECAY * want[k] + (1 - DECAY) * params[k] for k in want}
    state = _latest_state(tmp_path, 4)
    ema = _flat(state["ema"])
    assert ema.keys() == want.keys()  # the trainable params only: buffers are not averaged
    assert all(x.dtype == np.float32 for x in jax.tree.leaves(state["ema"]))
    for k in want:
        np.testing.assert_allclose(ema[k], want[k], rtol=1e-6, atol=1e-7, err_msg=k)
    assert max(np.abs(ema[k] - trajectory[-1][k]).max() for k in ema) > 1e-3  # >> tolerance
    assert _best_parts(tmp_path) == {"params", "ema"}

    vals = _records(tmp_path, "val")
    assert [r["step"] for r in vals] == [2, 4]
    evaluated = [v for k, v in summary["metrics"].items() if k != "train_last"]
    assert set(summary["metrics"]["train_last"]) == {"loss", "accuracy"}  # training steps
    for record in [*vals, *evaluated]:
        assert set(record) - {"step", "split", "num_examples"} == RAW_NAMES | EMA_NAMES
        assert 0 <= record["ema_accuracy"] <= 1
    assert summary["best_step"] == max(vals, key=lambda r: r["accuracy"])["step"]
    assert summary["metrics"]["test_last"]["ema_loss"] != summary["metrics"]["test_last"]["loss"]


def test_off_the_state_has_no_ema_and_on_it_starts_at_the_params():
    task = tasks.get(_config(0.0).task)
    off = steps.setup(task, _config(0.0)).state
    assert set(off) == {"step", "params", "buffers", "opt_state"}
    on = steps.setup(task, _config(DECAY)).state
    assert set(on) == {"step", "params", "buffers", "opt_state", "ema"}
    assert _flat(on["ema"]).keys() == _flat(on["params"]).keys()
    for k, v in _flat(on["params"]).items():
        np.testing.assert_array_equal(_flat(on["ema"])[k], v)


@pytest.mark.slow  # two in-process smoke runs, ~25 s on 2 cores; `make test-slow`
def test_the_raw_run_is_unchanged_by_the_ema_and_off_adds_nothing(tmp_path):
    """EMA on and off from the same seed: identical params, raw metrics, train log and best
    step; off has no EMA in its checkpoints and no `ema_` metrics."""
    off = train.train_and_evaluate(_config(0.0, **FIELDS), tmp_path / "off")
    on = train.train_and_evaluate(_config(DECAY, **FIELDS), tmp_path / "on")
    for section, metrics in off["metrics"].items():
        # train_last: the training steps' own metrics (no evaluator, no EMA)
        names = {"loss", "accuracy"} if section == "train_last" else RAW_NAMES
        assert set(metrics) - {"num_examples"} == names, section
        assert _raw(on["metrics"][section]) == metrics, section
    assert on["best_step"] == off["best_step"]
    val_off, val_on = _records(tmp_path / "off", "val"), _records(tmp_path / "on", "val")
    assert [_raw(r) for r in val_on] == val_off
    assert not any(k.startswith("ema_") for r in val_off for k in r)
    train_off = _records(tmp_path / "off", "train")
    assert _strip_rates(_records(tmp_path / "on", "train"), train_off) == train_off
    state_off, state_on = _latest_state(tmp_path / "off", 4), _latest_state(tmp_path / "on", 4)
    assert set(state_off) == {"step", "params", "buffers", "opt_state"}
    assert set(state_on) == set(state_off) | {"ema"}
    for x, y in zip(_leaves(state_on["params"]), _leaves(state_off["params"]), strict=True):
        np.testing.assert_array_equal(x, y)
    assert _best_parts(tmp_path / "off") == {"params"}


@pytest.mark.parametrize("value", [1.0, -0.1, float("nan")])
def test_a_decay_outside_0_1_is_a_config_error_naming_ema_decay(tmp_path, value):
    with pytest.raises(errors.ConfigError) as err:
        train.train_and_evaluate(_config(value), tmp_path)
    message = str(err.value)
    assert message.startswith(f"config.ema_decay={value!r}: must be in [0, 1)"), message
    assert "\n" not in message and errors.is_user_error(err.value)
    assert not (tmp_path / "config.json").exists()


@pytest.mark.slow  # three smoke runs in subprocesses, ~45 s on 2 cores; `make test-slow`
def test_a_killed_run_with_the_ema_resumes_to_identical_params_ema_and_metrics(tmp_path):
    flags = ("--config.async_checkpoints=False", f"--config.ema_decay={DECAY}")
    ref, resumed = tmp_path / "ref", tmp_path / "resumed"
    assert _run_cli(ref, *flags).returncode == 0
    killed = _run_cli(resumed, *flags, env={"ATTNBENCH_KILL_AT_STEP": "6"})
    assert killed.returncode == -9, killed.stderr[-2000:]
    done = _run_cli(resumed, *flags)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "resumed from step 4" in done.stdout
    a, b = _latest_state(ref, 12), _latest_state(resumed, 12)
    for part in ("params", "ema"):
        for x, y in zip(_leaves(a[part]), _leaves(b[part]), strict=True):
            np.testing.assert_array_equal(x, y)
    ref_train = _records(ref, "train")
    assert ref_train == _strip_rates(_records(resumed, "train"), ref_train)
    assert _records(ref, "val") == _records(resumed, "val")
    assert "ema_accuracy" in _records(ref, "val")[-1]
    sa = json.loads((ref / "summary.json").read_text())
    sb = json.loads((resumed / "summary.json").read_text())
    assert sa["metrics"] == sb["metrics"] and sa["best_step"] == sb["best_step"]
