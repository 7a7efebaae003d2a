"""Every LRA recipe x preset loads, names a registered task and mechanism, and carries the
numbers of its source; bad arguments are errors that name the problem."""

import pytest

import attention
from attnbench import config as config_lib
from attnbench import tasks

TASKS = ("listops", "text", "retrieval", "image", "pathfinder")
RECIPES = ("transformer", "samsa", "sliceformer", "gfsa")


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("recipe", RECIPES)
@pytest.mark.parametrize("preset", ("paper", "cpu", "smoke"))
def test_every_recipe_and_preset_loads(task, recipe, preset):
    c = config_lib.load(f"lra/{task}.py:model={recipe},preset={preset}")
    assert c.task == f"lra.{task}" and c.preset == preset
    assert c.attention.name in attention.names()
    tasks.get(c.task)  # resolves
    expected = {"transformer": "softmax", "samsa": "samsa", "sliceformer": "sliceformer"}
    assert c.attention.name == expected.get(recipe, "gfsa_linear")
    assert c.model.encoder == ("samsa" if recipe == "samsa" else "transformer")
    if "k" in c.attention:
        assert 1 <= c.attention.k <= c.data.max_length


def test_samsa_recipe_carries_tables_7_and_8():
    c = config_lib.load("lra/listops.py:model=samsa,k=256,mode=soft")
    m = c.model
    assert (m.num_layers, m.dim, m.mlp_dim, m.num_heads, m.dropout) == (6, 256, 768, 8, 0.1)
    assert (c.optimizer.lr, c.optimizer.weight_decay, c.optimizer.grad_clip_norm) == (
        1e-3,
        0.01,
        2.0,
    )
    assert c.total_steps == 50 * 96_000 // 32  # 50 epochs at batch 32
    assert (c.attention.k, c.attention.mode) == (256, "soft")
    image = config_lib.load("lra/image.py:model=samsa")
    assert (image.model.num_layers, image.model.dim, image.model.dropout) == (8, 128, 0.3)


def test_cpu_preset_keeps_samsa_sampling_ratio():
    paper = config_lib.load("lra/text.py:model=samsa,k=256")
    cpu = config_lib.load("lra/text.py:model=samsa,k=256,preset=cpu")
    assert paper.attention.k / paper.data.max_length == cpu.attention.k / cpu.data.max_length


def test_sliceformer_recipes_follow_the_fork():
    img = config_lib.load("lra/image.py:model=sliceformer")
    assert (img.batch_size, img.model.num_layers, img.model.dim, img.model.qkv_dim) == (
        192,
        6,
        96,
        48,
    )
    assert img.attention.ignore_mask  # the fork sorts padding too
    path = config_lib.load("lra/pathfinder.py:model=sliceformer")
    assert (path.batch_size, path.model.dim, path.model.positions) == (640, 320, "learned")


def test_attn_override_and_path_x():
    c = config_lib.load("lra/image.py:attn=performer")
    assert c.attention.name == "performer" and c.model.num_layers == 1
    x = config_lib.load("lra/pathfinder.py:resolution=128")
    assert x.data.max_length == 128 * 128 and x.optimizer.grad_clip_norm == 1.0


@pytest.mark.parametrize(
    "arg,match",
    [
        ("model=bert", "unknown LRA recipe model='bert'"),
        ("preset=huge", "unknown preset 'huge'"),
        ("mode=medium", "unknown SAMSA mode"),
        ("atn=softmax", "unknown config argument 'atn'"),
        ("attn=flash", "unknown attention"),
        ("attn=samsa,k=100000", "k=100000 exceeds"),
    ],
)
def test_bad_arguments_are_named(arg, match):
    with pytest.raises((config_lib.ConfigError, KeyError, ValueError), match=match):
        config_lib.load(f"lra/text.py:{arg}")


def test_length_argument_replaces_the_length_and_keeps_samsas_k_ratio_unless_k_is_given():
    c = config_lib.load("lra/text.py:model=samsa,length=1024")
    assert c.data.max_length == 1024 and c.attention.k == 128 * 1024 // 2048
    c = config_lib.load("lra/text.py:model=samsa,length=1024,k=128")
    assert c.attention.k == 128
    c = config_lib.load("lra/retrieval.py:attn=linear,length=300")
    assert c.data.max_length == 300 and c.attention.name == "linear"
    with pytest.raises(config_lib.ConfigError, match="pixels"):
        config_lib.load("lra/pathfinder.py:length=100")


@pytest.mark.parametrize(
    "task,tau",
    [("listops", 11), ("text", 12), ("retrieval", 12), ("image", 10), ("pathfinder", 10)],
)
def test_yoso_takes_its_authors_hash_length_per_lra_task(task, tau):
    # mlpen/YOSO LRA/models/yoso-v1-32/config.json: hash_code_len per task
    for preset in ("paper", "smoke"):
        c = config_lib.load(f"lra/{task}.py:attn=yoso,preset={preset}")
        assert (c.attention.name, c.attention.tau) == ("yoso", tau)
    # a mechanism without a per-task entry keeps its registry defaults
    assert config_lib.load(f"lra/{task}.py:attn=cosformer").attention.to_dict() == {
        "name": "cosformer",
        **attention.defaults("cosformer"),
    }
