"""Every (LRA task x attention mechanism) pair, and every paper recipe on every task, on the
`smoke` preset with data written in the official format (or generated): the real task, model and
jitted train step; the loss must be finite and fall on a fixed batch.

One end-to-end `train_and_evaluate` per task checks the data path through the whole trainer.
"""

from __future__ import annotations

import numpy as np
import pytest

import attention
from attnbench import config as config_lib
from attnbench import errors, steps, tasks, train, validate
from attnbench.data.formats import cifar
from lra.data import retrieval

TASKS = ("listops", "text", "retrieval", "image", "pathfinder")
RECIPES = (
    ("transformer", ""),
    ("samsa", "mode=hard"),
    ("samsa", "mode=soft"),
    ("sliceformer", ""),
    ("gfsa", ""),
    ("s4d", ""),
    ("mega", ""),
    ("luna", ""),
)
_STEPS = 4
# `make test` (the 10-minute tier) trains one mechanism of each family and the LRA recipe on ListOps
# (the shortest sequences), and runs ListOps end to end; everything else (the variants of a family,
# the papers' recipes, the other four tasks' pairs and end-to-end runs) is the `slow` tier (`make
# test-slow`). The SAMSA encoder is tested in tests/attnbench/nn/test_samsa_block.py and its recipe
# on every task in the slow tier.
FAST_MECHANISMS = (
    "softmax",
    "linear",
    "performer",
    "linformer",
    "local",
    "sliceformer",
    "gfsa",
    "grf",
    "ssa",
)  # samsa: the slow tier (~15 s; tests/attnbench/nn/test_samsa_block.py tests its encoder, sampler)
FAST_RECIPES = (("transformer", ""),)
FAST_END_TO_END = ("listops",)
TASK_TIERS = [pytest.param(t, marks=() if t == "listops" else pytest.mark.slow) for t in TASKS]


def _tiered(values, fast):
    return [pytest.param(*v, marks=() if v in fast else pytest.mark.slow) for v in values]


def _write_aclimdb(root, rng):
    """A tiny aclImdb tree: train/test x pos/neg, 24 reviews per split."""
    words = [b"good", b"bad", b"film", b"plot", b"actor", b"great", b"awful", b"scene"]
    for split in ("train", "test"):
        for label, polarity in enumerate(("neg", "pos")):
            folder = root / "aclImdb" / split / polarity
            folder.mkdir(parents=True)
            for i in range(12):
                n = int(rng.integers(5, 30))
                text = b" ".join(words[j] for j in rng.integers(0, len(words), n))
                (folder / f"{i}_{7 if label else 2}.txt").write_bytes(text)
    return root


def _write_aan(root, rng):
    root.mkdir(parents=True)
    for name in ("train", "eval", "test"):
        rows = []
        for i in range(24 if name == "train" else 8):
            a = bytes(rng.integers(97, 123, int(rng.integers(10, 90))).astype(np.uint8))
            b = bytes(rng.integers(97, 123, int(rng.integers(10, 90))).astype(np.uint8))
            rows.append((i % 2, f"a{i}", f"b{i}", a.decode(), b.decode()))
        retrieval.write_tsv(root / f"new_aan_pairs.{name}.tsv", rows)
    return root


def _write_cifar(root, rng):
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        data = rng.integers(0, 256, (8, 3072)).astype(np.uint8)
        cifar.write_batch(folder / name, data, list(rng.integers(0, 10, 8)))
    return root


@pytest.fixture(scope="module")
def official(tmp_path_factory):
    """Tiny official-format releases of the tasks that have no generator here."""
    tmp = tmp_path_factory.mktemp("lra-official")
    rng = np.random.default_rng(0)
    return {
        "text": str(_write_aclimdb(tmp / "imdb", rng)),
        "retrieval": str(_write_aan(tmp / "aan", rng)),
        "image": str(_write_cifar(tmp / "cifar", rng)),
    }


def _config(task, arg, official, *, deterministic=False):
    c = config_lib.load(f"lra/{task}.py:preset=smoke,{arg}")
    with c.unlocked():
        if task in official:
            c.data.source = "official"
            c.data.dir = official[task]
            # The smoke preset's subset sizes (Image: 256 / 64 / 64) are for the full release;
            # the files written here are smaller: take their whole splits.
            for split in ("num_train", "num_val", "num_test"):
                if split in c.data:
                    setattr(c.data, split, 0)
        if deterministic:
            # The loss must fall on a fixed batch: no dropout noise, a constant small learning
            # rate, and GRF with fewer walks
            # (its O(N) path at the 1024 pixel tokens of the image tasks is the slowest here).
            c.model.dropout = 0.0
            c.schedule.name, c.optimizer.lr = "constant", 1e-3  # small steps: no overshoot
            if "dropout_rate" in c.attention:
                c.attention.dropout_rate = 0.0
            if "n_walks" in c.attention:
                c.attention.n_walks = 4
    return c


_DATA: dict = {}


def _batch(task, config):
    """A fixed training batch of the task's smoke data (loaded once per task)."""
    if task not in _DATA:
        ds = tasks.get(config.task).load_data(config)
        arrays = {k: np.asarray(v[: config.batch_size]) for k, v in ds.train.arrays.items()}
        arrays["weight"] = np.ones(config.batch_size, np.float32)
        _DATA[task] = arrays
    return _DATA[task]


def _losses(task, arg, official):
    config = _config(task, arg, official, deterministic=True)
    task_obj = tasks.get(config.task)
    batch = _batch(task, config)
    built = steps.setup(task_obj, config)
    step, state = built.train_step(0), built.state
    losses = []
    for _ in range(_STEPS):
        state, metrics = step(state, batch)
        losses.append(float(metrics["train_loss"]))
    return losses


def _check(losses):
    assert np.all(np.isfinite(losses)), losses
    assert losses[-1] < losses[0], f"loss did not fall on a fixed batch: {losses}"


@pytest.mark.parametrize("task", TASK_TIERS)
@pytest.mark.parametrize(
    "name", _tiered([(n,) for n in attention.names()], [(n,) for n in FAST_MECHANISMS])
)
def test_task_by_mechanism(task, name, official):
    if attention.get(name).requires:  # point-cloud mechanisms: LRA gives no coordinates
        config = _config(task, f"attn={name},k=8", official, deterministic=True)
        with pytest.raises(errors.ConfigError, match="needs the per-call input"):
            validate.check(config, tasks.get(config.task))
        return
    # k=8: SAMSA's sampled tokens must fit the smoke sequences.
    _check(_losses(task, f"attn={name},k=8", official))


@pytest.mark.parametrize("task", TASK_TIERS)
@pytest.mark.parametrize("recipe,extra", _tiered(RECIPES, FAST_RECIPES))
def test_task_by_paper_recipe(task, recipe, extra, official):
    _check(_losses(task, ",".join(filter(None, [f"model={recipe}", extra])), official))


@pytest.mark.parametrize("task", _tiered([(t,) for t in TASKS], [(t,) for t in FAST_END_TO_END]))
def test_task_end_to_end(task, official, tmp_path):
    summary = train.train_and_evaluate(_config(task, "", official), tmp_path / "run")
    assert summary["task"] == f"lra.{task}"
    assert summary["data"]["source"] in ("official", "generated")
    for key in ("val_best", "test_best"):
        assert 0.0 <= summary["metrics"][key]["accuracy"] <= 1.0
    assert summary["reference"]["majority_class_rate"]["test"] > 0
