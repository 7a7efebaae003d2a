"""attnbench.validate: every rule names the field and the value typed; no shipped config trips
one."""

import pytest

import attention
from attnbench import config as config_lib
from attnbench import errors, tasks, validate

SMOKE = "lra/listops.py:preset=smoke"

# (config argument suffix, overrides, a problem must contain)
CASES = [
    ("", {"batch_size": 0}, "config.batch_size=0: must be an integer >= 1"),
    ("", {"seed": -1}, "config.seed=-1"),
    ("", {"best_mode": "maximum"}, "config.best_mode='maximum'"),
    ("", {"best_metric": "f1"}, "config.best_metric='f1': not a validation metric"),
    ("", {"dense_finetune_fraction": 1.5}, "config.dense_finetune_fraction=1.5"),
    ("", {"optimizer.lr": 0.0}, "config.optimizer.lr=0.0"),
    ("", {"optimizer.lr": float("nan")}, "config.optimizer.lr=nan"),
    ("", {"optimizer.b2": 1.0}, "config.optimizer.b2=1.0"),
    ("", {"optimizer.weight_decay": -0.1}, "config.optimizer.weight_decay=-0.1"),
    ("", {"optimizer.grad_clip_norm": -1.0}, "config.optimizer.grad_clip_norm=-1.0"),
    ("", {"schedule.warmup_steps": -5}, "config.schedule.warmup_steps=-5"),
    ("", {"model.num_layers": 0}, "config.model.num_layers=0"),
    ("", {"model.num_heads": 5}, "config.model.qkv_dim=32: not divisible by"),
    ("", {"model.drop_path": 1.0}, "config.model.drop_path=1.0"),
    ("", {"model.positions": "rope"}, "config.model.positions='rope'"),
    ("", {"model.dtype": "float8"}, "config.model.dtype='float8'"),
    ("", {"data.max_length": 0}, "config.data.max_length=0"),
    ("", {"attention.dropout_rate": 1.0}, "dropout_rate=1.0"),
    (",attn=samsa", {"attention.k": 42}, "k=42 (tokens sampled per head) exceeds the 41 tokens"),
    (",attn=samsa", {"attention.mode": "medium"}, "unknown mode 'medium'"),
    (",attn=grf", {"model.pool": "mean"}, "set --config.attention.cls_token=False"),
    (",attn=grf", {"data.max_length": 30}, "grid=(1, 40) does not have 30 graph nodes"),
    (",attn=grf", {"attention.p_halt": 1.5}, "p_halt must be in (0, 1)"),
    (",attn=ssa", {"attention.keep": 0.0}, "keep (fraction of sources kept) must be in (0, 1]"),
    (",attn=local", {"attention.window": -1}, "window=-1"),
    (",attn=linformer", {"attention.proj_len": 0}, "proj_len=0"),
    (",attn=performer", {"attention.num_features": 0}, "num_features=0"),
    (",attn=gfsa", {"attention.order": 0}, "order=0"),
    (",attn=softmax_chunked", {"attention.key_chunk": 0}, "key_chunk=0"),
]


def _config(suffix, overrides):
    c = config_lib.load(SMOKE + suffix)
    config_lib.override(c, overrides)
    return c


@pytest.mark.parametrize("suffix,overrides,expected", CASES, ids=[str(c[1]) for c in CASES])
def test_a_bad_value_is_named_with_its_field(suffix, overrides, expected):
    c = _config(suffix, overrides)
    found = validate.problems(c, tasks.get(c.task))
    assert any(expected in p for p in found), found
    with pytest.raises(errors.ConfigError, match="config"):
        validate.check(c, tasks.get(c.task))


def test_a_value_at_the_limit_is_accepted():
    c = _config(",attn=samsa", {"attention.k": 41})  # every token, CLS included
    assert validate.problems(c, tasks.get(c.task)) == []


@pytest.mark.parametrize("task", ["listops", "text", "retrieval", "image", "pathfinder"])
@pytest.mark.parametrize("preset", ["paper", "cpu", "smoke"])
def test_every_recipe_and_mechanism_passes(task, preset):
    """No false alarms: every recipe, and every mechanism swapped in, at every preset; the one
    alarm that must ring is a mechanism that needs inputs LRA does not give (grf_asym)."""
    args = [f"model={m}" for m in ("transformer", "samsa", "sliceformer", "gfsa")]
    args += [f"attn={a}" for a in attention.names()]
    for arg in args:
        c = config_lib.load(f"lra/{task}.py:preset={preset},{arg}")
        found = validate.problems(c, tasks.get(c.task))
        if attention.get(c.attention.name).requires:
            assert len(found) == 1 and "needs the per-call input(s) coords" in found[0], arg
        else:
            assert found == [], arg


def test_override_parses_the_field_type_and_names_a_bad_value():
    c = config_lib.load(SMOKE + ",attn=ssa")
    config_lib.override(c, {"attention.scale": "0.5", "attention.grid": "(5, 8)"})
    assert c.attention.scale == 0.5 and c.attention.grid == (5, 8)
    with pytest.raises(errors.ConfigError, match=r"config.attention.grid='\[5': cannot parse"):
        config_lib.override(c, {"attention.grid": "[5"})
    with pytest.raises(errors.ConfigError, match="config.model is a section"):
        config_lib.override(c, {"model": "x"})


# Probabilities, rates and shares of every domain's config: (config argument, overrides, the
# one problem expected)
RANGES = [
    ("vision/cifar10.py:preset=smoke", {"data.mix_prob": 5.0},
     "config.data.mix_prob=5.0: must be in [0, 1]"),
    ("vision/cifar10.py:preset=smoke", {"data.switch_prob": -0.5},
     "config.data.switch_prob=-0.5: must be in [0, 1]"),
    ("vision/cifar10.py:preset=smoke", {"data.random_erasing": 1.5},
     "config.data.random_erasing=1.5: must be in [0, 1]"),
    ("vision/cifar10.py:preset=smoke", {"data.label_smoothing": 1.0},
     "config.data.label_smoothing=1.0: must be in [0, 1)"),
    ("vision/cifar10.py:preset=smoke", {"data.mixup": -0.8},
     "config.data.mixup=-0.8: must be >= 0"),
    ("vision/cifar10.py:preset=smoke", {"model.dropout": float("nan")},
     "config.model.dropout=nan: must be in [0, 1)"),
    ("vision/imagenet.py:preset=smoke", {"model.drop_path": 1.0},
     "config.model.drop_path=1.0: must be in [0, 1)"),
    ("language/wikitext103.py:preset=smoke", {"model.activation_dropout": 5.0},
     "config.model.activation_dropout=5.0: must be in [0, 1)"),
    ("language/wikitext103.py:preset=smoke", {"model.adaptive_dropout": 1.0},
     "config.model.adaptive_dropout=1.0: must be in [0, 1)"),
    ("language/enwik8.py:preset=smoke", {"attention.dropout_rate": -0.1},
     "config.attention (softmax: dropout_rate=-0.1 must be in [0, 1))"),
    ("lra/listops.py:preset=smoke", {"data.value_p": 5.0},
     "config.data.value_p=5.0: must be in [0, 1]"),
    ("lra/text.py:preset=smoke", {"data.val_fraction": 1.0},
     "config.data.val_fraction=1.0: must be in (0, 1)"),
    ("lra/text.py:preset=smoke", {"data.standin_test_fraction": 0.95},
     "config.data.standin_test_fraction=0.95: must be in (0, 0.9)"),
    ("lra/retrieval.py:preset=smoke", {"data.test_fraction": -0.1},
     "config.data.test_fraction=-0.1: must be in [0, 1)"),
    ("lra/retrieval.py:preset=smoke", {"data.test_fraction": 0.9},
     "config.data.val_fraction=0.1 + config.data.test_fraction=0.9: must be below 1"),
    ("pointcloud/modelnet40.py:preset=smoke", {"model.dropout": 1.0},
     "config.model.dropout=1.0: must be in [0, 1)"),
    ("pointcloud/dynamics.py:preset=smoke", {"model.local_attention.p_halt": 5.0},
     "config.model.local_attention (grf_asym: p_halt must be in (0, 1), got 5.0)"),
]  # fmt: skip


@pytest.mark.parametrize("arg,overrides,expected", RANGES, ids=[str(c[1]) for c in RANGES])
def test_a_probability_outside_its_range_is_named(arg, overrides, expected):
    c = config_lib.load(arg)
    task = tasks.get(c.task)
    assert validate.problems(c, task) == []
    config_lib.override(c, overrides)
    found = validate.problems(c, task)
    assert len(found) == 1 and found[0].startswith(expected), found
    with pytest.raises(errors.ConfigError, match="config"):
        validate.check(c, task)


KNN = [  # (config argument, overrides, the one problem expected)
    ("pointcloud/modelnet40.py:preset=smoke,attn=grf", {"attention.knn_k": 64},
     "config.attention.knn_k=64: must be below the 64 points of a cloud "
     "(config.data.num_points=64)"),
    ("pointcloud/modelnet40.py:preset=smoke,attn=grf_asym", {"attention.knn_k": 100},
     "config.attention.knn_k=100: must be below the 64 points of a cloud "
     "(config.data.num_points=64)"),
    ("pointcloud/shapenetpart.py:preset=smoke,attn=grf_dense", {"attention.knn_k": 64},
     "config.attention.knn_k=64: must be below the 64 points"),
    ("pointcloud/modelnet40.py:preset=smoke,attn=grf", {"attention.knn_k": 0},
     "config.attention (grf: knn_k=0 must be an integer >= 1)"),
    ("pointcloud/modelnet40.py:preset=smoke,attn=grf", {"data.num_points": 3},
     "config.attention.knn_k=3: must be below the 3 points of a cloud "
     "(config.data.num_points=3)"),
    ("pointcloud/modelnet40.py:preset=smoke,model=dgcnn", {"model.dgcnn_k": 65},
     "config.model.dgcnn_k=65: must be an integer in [1, config.data.num_points=64]"),
]  # fmt: skip


@pytest.mark.parametrize("arg,overrides,expected", KNN, ids=[c[0] + str(c[1]) for c in KNN])
def test_a_knn_k_the_cloud_cannot_have_is_named_once_with_the_point_count(arg, overrides, expected):
    """One problem, naming knn_k, the point count and its field, where the mechanism's own
    rule (knowing only a token count) would say the same again."""
    c = config_lib.load(arg)
    task = tasks.get(c.task)
    assert validate.problems(c, task) == []
    config_lib.override(c, overrides)
    found = validate.problems(c, task)
    assert len(found) == 1 and found[0].startswith(expected), found
