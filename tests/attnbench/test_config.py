"""Config loading: presets, attn=, misspelt keys and fields, unknown attention."""

import pytest

import attention
from attnbench import config as config_lib

LISTOPS = "lra/listops.py"


def test_presets_derive_from_the_paper_recipe():
    paper = config_lib.load(f"{LISTOPS}:preset=paper")
    cpu = config_lib.load(f"{LISTOPS}:preset=cpu")
    # the LRA base recipe, exactly
    assert (
        paper.model.num_layers,
        paper.model.dim,
        paper.model.num_heads,
        paper.model.mlp_dim,
    ) == (4, 512, 8, 1024)
    assert (
        paper.batch_size,
        paper.total_steps,
        paper.optimizer.lr,
        paper.schedule.warmup_steps,
    ) == (32, 5000, 0.05, 1000)
    assert paper.schedule.name == "constant*linear_warmup*rsqrt_decay"
    assert (paper.data.min_length, paper.data.max_length, paper.data.num_train) == (
        500,
        2000,
        96_000,
    )
    assert paper.attention.dropout_rate == 0.1 and paper.model.pool == "cls"
    assert cpu.preset == "cpu" and cpu.model.dim < paper.model.dim
    # what a preset does not touch stays the recipe's
    assert cpu.optimizer.b2 == paper.optimizer.b2 == 0.98
    assert cpu.optimizer.weight_decay == paper.optimizer.weight_decay


def test_attn_argument_swaps_the_mechanism_with_its_defaults():
    c = config_lib.load(f"{LISTOPS}:preset=smoke,attn=softmax")
    assert c.attention.name == "softmax"
    assert set(c.attention.keys()) == {"name", *attention.defaults("softmax")}


def test_unknown_attention_lists_the_known_ones():
    with pytest.raises(attention.UnknownAttentionError, match="known mechanisms: .*softmax"):
        config_lib.load(f"{LISTOPS}:attn=sofmax")


@pytest.mark.parametrize(
    "arg,match",
    [
        ("preset=cpu,atn=softmax", "unknown config argument 'atn'"),
        ("preset=laptop", "unknown preset 'laptop'"),
        ("preset", "key=value"),
    ],
)
def test_bad_config_arguments_are_errors(arg, match):
    with pytest.raises(config_lib.ConfigError, match=match):
        config_lib.load(f"{LISTOPS}:{arg}")


def test_misspelt_override_is_an_error():
    c = config_lib.load(f"{LISTOPS}:preset=smoke")
    config_lib.override(c, {"optimizer.lr": "0.5", "model.dim": 64})
    assert c.optimizer.lr == 0.5 and c.model.dim == 64
    with pytest.raises(config_lib.ConfigError, match="no field 'optimizer.lrr'"):
        config_lib.override(c, {"optimizer.lrr": 1.0})
    with pytest.raises(config_lib.ConfigError, match="no section 'optimiser'"):
        config_lib.override(c, {"optimiser.lr": 1.0})
    with pytest.raises(AttributeError):  # locked: plain assignment of a new field fails too
        c.optimizer.lrr = 1.0


def test_missing_config_file():
    with pytest.raises(config_lib.ConfigError, match="not found: configs/nope.py"):
        config_lib.load("configs/nope.py:preset=cpu")


# ---- naming config files: the configs package first, then the current directory ----------


def test_a_config_is_named_by_its_path_in_the_configs_package_from_any_directory(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)  # no configs/ here
    short = config_lib.load("lra/listops.py:preset=smoke")
    prefixed = config_lib.load("configs/lra/listops.py:preset=smoke")
    assert short.to_dict() == prefixed.to_dict()
    assert config_lib.canonical("configs/lra/listops.py:preset=smoke") == (
        "lra/listops.py:preset=smoke"
    )


def test_the_package_wins_over_a_same_named_file_here_and_dot_slash_names_the_file(
    tmp_path, monkeypatch
):
    """Where `lra/listops.py` is also a file here (the LRA data module once was): a relative name
    means the config; `./lra/listops.py` means the file (here: not a config)."""
    own = tmp_path / "lra" / "listops.py"
    own.parent.mkdir()
    own.write_text("X = 1\n")
    monkeypatch.chdir(tmp_path)
    assert config_lib.load("lra/listops.py").task == "lra.listops"
    with pytest.raises(config_lib.ConfigError, match="defines no get_config"):
        config_lib.load("./lra/listops.py")


def test_a_config_of_your_own_is_found_here_and_recorded_relative_to_here(tmp_path, monkeypatch):
    mine = tmp_path / "exp" / "mine.py"
    mine.parent.mkdir()
    mine.write_text(
        "from configs.lra import listops\n\n"
        "def get_config(arg=None):\n"
        "    c = listops.get_config('preset=smoke')\n"
        "    c.seed = 7\n"
        "    return c\n"
    )
    monkeypatch.chdir(tmp_path)
    assert config_lib.load("exp/mine.py").seed == 7
    assert config_lib.load(str(mine)).seed == 7
    assert config_lib.canonical(f"{mine}:x=1") == "exp/mine.py:x=1"
    assert config_lib.canonical("exp/mine.py") == "exp/mine.py"


def test_a_missing_config_names_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(config_lib.ConfigError, match=r"lra/listop\.py.*configs package.*lra/"):
        config_lib.load("lra/listop.py")
    with pytest.raises(config_lib.ConfigError, match="--config is empty"):
        config_lib.load(":preset=cpu")
