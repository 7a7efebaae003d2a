"""Every LRA recipe x preset loads, names a registered task and mechanism, and carries the
numbers of its source; bad arguments are errors that name the problem."""

import pytest

import attention
from attnbench import config as config_lib
from attnbench import tasks
from configs.lra import base

TASKS = ("listops", "text", "retrieval", "image", "pathfinder")

RECIPES = ("transformer", "samsa", "sliceformer", "gfsa", "s4d", "mega", "luna")
BACKBONES = ("s4d", "mega", "luna")


def test_recipes_cover_base():
    assert set(RECIPES) == set(base.RECIPES) and set(BACKBONES) == set(base.BACKBONE_RECIPES)


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("recipe", RECIPES)
@pytest.mark.parametrize("preset", ("paper", "cpu", "smoke"))
def test_every_recipe_and_preset_loads(task, recipe, preset):
    c = config_lib.load(f"lra/{task}.py:model={recipe},preset={preset}")
    assert c.task == f"lra.{task}" and c.preset == preset
    assert c.attention.name in attention.names()
    tasks.get(c.task)  # resolves
    expected = {"transformer": "softmax", "samsa": "samsa", "sliceformer": "sliceformer"}
    expected.update(dict.fromkeys(BACKBONES, "softmax"))  # unused by s4d and mega
    assert c.attention.name == expected.get(recipe, "gfsa_linear")
    encoder = recipe if recipe in ("samsa", *BACKBONES) else "transformer"
    assert c.model.encoder == encoder
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


def _load(task, recipe, preset="paper"):
    return config_lib.load(f"lra/{task}.py:model={recipe},preset={preset}")


def _run(c):
    o, s = c.optimizer, c.schedule
    return (o.lr, o.b1, o.b2, o.eps, o.weight_decay, o.grad_clip_norm, s.name, s.warmup_steps)


def test_s4d_recipe_carries_the_s4_lra_configs():
    # state-spaces/s4 configs/experiment/lra/s4-listops.yaml
    c = _load("listops", "s4d")
    m = c.model
    assert (m.encoder, m.num_layers, m.dim, m.s4d_state, m.dropout) == ("s4d", 6, 256, 4, 0.0)
    assert (m.s4d_prenorm, m.s4d_bidirectional, m.s4d_n_ssm, m.s4d_init) == (False, True, 1, "lin")
    assert (m.pool, m.positions, m.s4d_dt_min, m.s4d_dt_max) == ("mean", "none", 0.001, 0.1)
    assert _run(c) == (0.01, 0.9, 0.999, 1e-8, 0.05, 0.0, "warmup_cosine", 12_000)
    assert (c.batch_size, c.total_steps) == (32, 120_000)
    # s4-imdb.yaml: prenorm, batch 16, l_max 4096; s4-cifar.yaml: width 512, tied dropout 0.1
    text = _load("text", "s4d")
    assert (text.model.s4d_prenorm, text.batch_size, text.data.max_length) == (True, 16, 4096)
    img = _load("image", "s4d")
    assert (img.model.dim, img.model.s4d_state, img.model.dropout) == (512, 64, 0.1)
    assert img.model.s4d_tie_dropout and (img.batch_size, img.total_steps) == (50, 180_000)
    # s4-pathfinder.yaml: lr 0.004, n_ssm null (one per channel), 500k steps
    path = _load("pathfinder", "s4d")
    assert (path.optimizer.lr, path.model.s4d_n_ssm, path.total_steps) == (0.004, 0, 500_000)
    assert _load("retrieval", "s4d").model.interaction == "NLI"  # S4's retrieval decoder


def test_mega_recipe_carries_the_mega_lra_commands():
    # facebookresearch/mega examples/mega/README.lra.md + fairseq/models/lra/model.py
    c = _load("listops", "mega")
    m = c.model
    assert (m.encoder, m.num_layers, m.dim, m.qkv_dim, m.mlp_dim) == ("mega", 6, 80, 64, 160)
    assert (m.mega_attention, m.mega_norm, m.mega_prenorm, m.mega_chunk_size) == (
        "softmax",
        "layernorm",
        False,
        -1,
    )
    assert (m.mega_ndim, m.mega_truncation, m.dropout, m.pool) == (16, 1024, 0.1, "mean")
    assert _run(c) == (1e-3, 0.9, 0.98, 1e-8, 0.01, 1.0, "warmup_linear", 3000)
    assert c.schedule.start_factor * c.optimizer.lr == pytest.approx(1e-7)  # --warmup-init-lr
    assert (c.batch_size, c.total_steps) == (64, 90_000)
    text = _load("text", "mega")
    assert (text.model.mega_norm, text.batch_size, text.optimizer.lr) == ("scalenorm", 50, 4e-3)
    retr = _load("retrieval", "mega")
    assert (retr.model.interaction, retr.batch_size, retr.total_steps) == ("concat", 64, 91_960)
    img = _load("image", "mega")
    assert (img.model.num_layers, img.model.dim, img.model.qkv_dim, img.model.mlp_dim) == (
        8,
        160,
        96,
        320,
    )
    assert (img.model.mega_attention, img.model.mega_norm, img.model.mega_prenorm) == (
        "laplace",
        "batchnorm",
        True,
    )
    path = _load("pathfinder", "mega")
    assert (path.batch_size, path.total_steps, path.schedule.warmup_steps) == (128, 250_000, 50_000)


def test_luna_recipe_carries_the_luna_lra_commands():
    # XuezheMax/fairseq-apollo examples/luna/README.lra.md + fairseq/models/lra/model.py
    c = _load("listops", "luna")
    m = c.model
    assert (m.encoder, m.num_layers, m.dim, m.mlp_dim, m.num_heads) == ("luna", 1, 512, 2048, 8)
    assert (m.proj_len, m.init, m.pool, m.positions, m.dtype) == (
        256,
        "bert",
        "cls",
        "sinusoidal",
        "auto",
    )
    assert _run(c) == (
        1e-4,
        0.9,
        0.98,
        1e-8,
        1e-4,
        0.0,
        "constant*linear_warmup*rsqrt_normalized_decay",
        1000,
    )
    assert (c.batch_size, c.total_steps, c.eval_every, c.attention.dropout_rate) == (
        32,
        5000,
        20,
        0.1,
    )
    text = _load("text", "luna")
    assert (text.model.dropout, text.attention.dropout_rate, text.optimizer.lr) == (0.3, 0.3, 5e-5)
    retr = _load("retrieval", "luna")
    assert (retr.model.init, retr.model.interaction, retr.model.dim) == ("xavier", "concat", 128)
    img = _load("image", "luna")
    assert (img.model.dim, img.batch_size, img.optimizer.weight_decay) == (64, 256, 0.0)
    path = _load("pathfinder", "luna")
    assert (path.model.pool, path.batch_size, path.total_steps) == ("mean", 512, 62_500)


def test_luna_schedule_is_fairseqs_inverse_sqrt():
    from attnbench import optim

    c = _load("text", "luna")
    lr, w = c.optimizer.lr, c.schedule.warmup_steps
    sched = optim.make_schedule(c.schedule, lr, c.total_steps)
    for t, want in (
        (w // 2, lr / 2),
        (w, lr),
        (4 * w, lr / 2),
        (c.total_steps, lr * (w / 20_000) ** 0.5),
    ):
        assert float(sched(t)) == pytest.approx(want, rel=1e-5)


@pytest.mark.parametrize("recipe", BACKBONES)
@pytest.mark.parametrize("preset", ("cpu", "smoke"))
def test_backbone_recipes_scale_like_the_others(recipe, preset):
    c = _load("text", recipe, preset)
    ref = _load("text", "transformer", preset)
    m = c.model
    assert (m.num_layers, m.dim, m.qkv_dim, m.mlp_dim) == (
        ref.model.num_layers,
        ref.model.dim,
        ref.model.qkv_dim,
        ref.model.mlp_dim,
    )
    assert m.encoder == recipe and m.dtype == "float32"
    assert c.total_steps == ref.total_steps and c.data.max_length == ref.data.max_length


@pytest.mark.parametrize(
    "arg,match",
    [
        ("model=s4d,attn=performer", "no attention mechanism"),
        ("model=mega,attn=linear", "no attention mechanism"),
        ("model=luna,attn=linear", "softmax attention"),
    ],
)
def test_backbone_recipes_refuse_attn(arg, match):
    with pytest.raises(config_lib.ConfigError, match=match):
        config_lib.load(f"lra/listops.py:{arg}")
    assert config_lib.load("lra/listops.py:model=luna,attn=softmax").model.encoder == "luna"


@pytest.mark.parametrize("recipe", BACKBONES)
def test_backbone_recipes_are_pathfinder_32_only(recipe):
    with pytest.raises(config_lib.ConfigError, match="Pathfinder-32"):
        config_lib.load(f"lra/pathfinder.py:model={recipe},resolution=128")
