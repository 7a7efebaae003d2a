"""The point-cloud tasks end to end: every (task x model x mechanism) pair the papers use trains
on the `smoke` preset through the real trainer on the generated shapes (slow tier); the recipes
validate at every preset; the segmentation loss against numpy; bad arguments are named."""

import numpy as np
import pytest

from attnbench import config as config_lib
from attnbench import errors, tasks, train, validate

RECIPES = [
    "modelnet40.py",
    "modelnet40.py:mode=soft,k=256",
    "modelnet40.py:attn=softmax",
    "modelnet40.py:attn=grf",
    "modelnet40.py:model=pointnet",
    "modelnet40.py:model=dgcnn",
    "modelnet40.py:source=official",
    "shapenetpart.py",
    "shapenetpart.py:attn=softmax",
    "shapenetpart.py:source=official,k=512",
]


@pytest.mark.parametrize("recipe", RECIPES)
def test_point_recipes_validate_at_every_preset(recipe):
    sep = "," if ":" in recipe else ":"
    for preset in ("paper", "cpu", "smoke"):
        c = config_lib.load(f"pointcloud/{recipe}{sep}preset={preset}")
        assert validate.problems(c, tasks.get(c.task)) == [], (recipe, preset)


def test_paper_recipes_say_what_samsa_tables_7_and_8_say():
    c = config_lib.load("pointcloud/modelnet40.py")
    m = c.model
    assert (m.num_layers, m.dim, m.mlp_dim, m.num_heads) == (6, 256, 768, 8)  # Table 8
    assert (m.dropout, m.drop_path) == (0.1, 0.1)
    assert (c.optimizer.lr, c.optimizer.weight_decay, c.optimizer.grad_clip_norm) == (
        0.002,
        0.1,
        2.0,
    )  # Table 7
    assert c.batch_size == 32 and c.total_steps == 600 * 308  # 600 epochs of 9,843 shapes
    assert c.data.num_points == 1024 and c.attention.name == "samsa" and c.attention.k == 128
    s = config_lib.load("pointcloud/shapenetpart.py:source=official")
    assert s.model.num_layers == 8 and s.data.num_parts == 50
    assert len(s.data.parts_per_category) == 16 and s.best_metric == "instance_miou"


def test_bad_point_arguments_are_named():
    with pytest.raises(errors.ConfigError, match="SAMSA k=2048 exceeds the 1024 points"):
        config_lib.load("pointcloud/modelnet40.py:k=2048")
    with pytest.raises(errors.ConfigError, match="model 'pointnet2'"):
        config_lib.load("pointcloud/modelnet40.py:model=pointnet2")
    c = config_lib.load("pointcloud/modelnet40.py:preset=smoke")
    c.unlock()
    c.data.vote = 10
    with pytest.raises(errors.ConfigError, match="voting is not implemented"):
        validate.check(c, tasks.get(c.task))


def test_segmentation_loss_matches_numpy():
    import jax.numpy as jnp

    from pointcloud import tasks as point_tasks

    rng = np.random.default_rng(0)
    logits = rng.standard_normal((3, 5, 4))
    parts = rng.integers(0, 4, (3, 5))
    weight = np.array([1.0, 1.0, 0.0])
    mask = np.ones((3, 5))
    mask[1, 3:] = 0
    loss, metrics = point_tasks.segmentation_loss(
        jnp.asarray(logits), jnp.asarray(parts), jnp.asarray(weight), jnp.asarray(mask)
    )
    keep = (weight[:, None] * mask) > 0
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    nll = -np.take_along_axis(logp, parts[..., None], -1)[..., 0]
    np.testing.assert_allclose(float(loss), nll[keep].mean(), rtol=1e-5)
    hits = (logits.argmax(-1) == parts)[keep]
    assert float(metrics["accuracy"][0]) == hits.sum() and float(metrics["accuracy"][1]) == 8


def _smoke(recipe, tmp_path):
    c = config_lib.load(f"pointcloud/{recipe}")
    c.unlock()
    c.data.dir = str(tmp_path / "data")
    c.total_steps, c.eval_every = 4, 4
    return c


@pytest.mark.slow  # ~10-30 s each on 2 cores
@pytest.mark.parametrize(
    "arg",
    [
        "k=8,mode=hard",
        "k=8,mode=soft",
        "attn=softmax",
        "attn=grf",
        "model=pointnet",
        "model=dgcnn",
    ],
)
def test_modelnet40_smoke_trains(arg, tmp_path):
    summary = train.train_and_evaluate(
        _smoke(f"modelnet40.py:preset=smoke,{arg}", tmp_path), tmp_path / "run"
    )
    assert summary["data"]["source"] == "standin"
    test = summary["metrics"]["test_best"]
    assert 0 <= test["accuracy"] <= 1 and 0 <= test["mean_class_accuracy"] <= 1
    assert np.isfinite(test["loss"])


@pytest.mark.slow
@pytest.mark.parametrize("arg", ["k=8,mode=hard", "attn=softmax"])
def test_shapenetpart_smoke_trains(arg, tmp_path):
    summary = train.train_and_evaluate(
        _smoke(f"shapenetpart.py:preset=smoke,{arg}", tmp_path), tmp_path / "run"
    )
    test = summary["metrics"]["test_best"]
    assert 0 <= test["instance_miou"] <= 1 and 0 <= test["class_miou"] <= 1
    assert np.isfinite(summary["metrics"]["train_last"]["accuracy"])  # per-point, training
