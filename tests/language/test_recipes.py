"""The language recipes (WikiText-103, CIFAR-10 sub-pixels, GPT-2 fine-tuning): every SSA row
validates at every preset, the paper presets' models have the model tests' parameter counts,
S<l> rows put SSA in the last layers, bad arguments are named, a missing checkpoint folder is a
ConfigError; the smoke presets train end to end (slow), GPT-2 from a tiny Hugging Face
checkpoint with tiny BPE files."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from flax import nnx

from attnbench import config as config_lib
from attnbench import errors, tasks, train, validate
from language.data import corpora, standin

WT = "language/wikitext103.py"
C10 = "language/cifar10.py"
GPT2 = "language/gpt2.py"

ARGS = {
    WT: [
        "",
        "ensemble=3",
        "dataset=wikitext-2,source=official",
        *(f"ssa={row}" for row in ("S16-L2", "S16-L4", "S16-L6", "S16-L8", "S12-L4", "S12-L8")),
        "ssa=S12-L4,ft=1,ensemble=2",
        "ssa=S16-L8,sampling=unbiased,source=official",
        "attn=gfsa",
    ],
    C10: ["", "ssa=S16-L4", "ssa=S16-L4,ft=1,ensemble=2", "source=official,ssa=S16-L4"],
    GPT2: [
        "",
        "attn=gfsa",
        "attn=gfsa,dataset=wikitext-2,order=4",
        "dataset=wikitext-103,source=official,checkpoint=/models/gpt2",
    ],
}
CASES = [(recipe, arg) for recipe, args in ARGS.items() for arg in args]


@pytest.mark.parametrize("preset", ["paper", "cpu", "smoke"])
def test_recipes_validate(preset):
    for recipe, arg in CASES:
        c = config_lib.load(f"{recipe}:preset={preset},{arg}")
        assert validate.problems(c, tasks.get(c.task)) == [], (recipe, arg, preset)
        length = int(c.data.length)
        if c.attention.name == "ssa":  # the windows tile the sequence
            assert length % round(1 / c.attention.keep) == 0, (recipe, arg, preset)


def test_ssa_rows_sample_the_last_layers():
    c = config_lib.load(f"{WT}:ssa=S12-L4,source=official")
    assert c.model.attention_layers == tuple(range(4, 16))
    assert c.attention.keep == 0.25 and c.attention.causal
    assert (c.attention.sigma_first, c.attention.sigma_last) == (0.20, 0.35)
    assert config_lib.load(f"{WT}:ssa=S16-L6").model.attention_layers == tuple(range(16))
    assert config_lib.load(f"{WT}:preset=cpu,ssa=S12-L8").model.attention_layers == (1, 2, 3)
    s0 = config_lib.load(f"{WT}:ensemble=50")  # Table 4's S0: dense training, SSA passes
    assert s0.attention.name == "ssa" and s0.dense_finetune_fraction == 1.0
    assert s0.model.ensemble_passes == 50 and "lm_ensemble" in s0.evals
    c10 = config_lib.load(f"{C10}:ssa=S16-L4,source=official")
    assert c10.data.length == 3072 and c10.attention.grid == (32, 96)
    assert c10.attention.tiles == (4, 1) and c10.attention.sampling == "grid_2d"
    assert config_lib.load(f"{C10}:preset=smoke,ssa=S16-L4").attention.grid == (28, 28)
    g = config_lib.load(f"{GPT2}:attn=gfsa,dataset=ptb")
    assert g.attention.order == 7 and g.attention.init_wk == 0.0 and g.total_steps == 15 * 263


def test_bad_arguments_are_named():
    bad = [
        (f"{WT}:ft=1", "ft=1 is SSA's dense fine-tuning"),
        (f"{WT}:ssa=S8-L4", "unknown SSA ssa='S8-L4'"),
        (f"{WT}:dataset=ptb", "unknown dataset 'ptb'"),
        (f"{WT}:ensemble=2,attn=gfsa", "ensemble=2 without ssa="),
        (f"{C10}:ssa=S12-L4", "unknown SSA ssa='S12-L4'"),
        (f"{C10}:ensemble=2", "give ssa=S16-L4"),
        (f"{GPT2}:order=4", "order=4: GFSA's K"),
        (f"{GPT2}:dataset=enwik8", "unknown dataset 'enwik8'"),
    ]
    for spec, message in bad:
        with pytest.raises(errors.ConfigError, match=message):
            config_lib.load(spec)


def _params(spec: str, **data) -> int:
    c = config_lib.load(spec)
    with c.unlocked():
        c.data.update(data)
    model = nnx.eval_shape(lambda: tasks.get(c.task).build_model(c, nnx.Rngs(0)))
    return sum(math.prod(v.shape) for _, v in nnx.iter_graph(model) if isinstance(v, nnx.Param))


@pytest.mark.slow
def test_paper_parameter_counts():
    """SSA's 247M / 203M and GPT-2's 117M (+144 for GFSA) from the recipes themselves:
    tests/language/test_models.py and test_gpt2.py's numbers (CIFAR-10: plus the start
    symbols' embedding and output rows, 2 x 1,024 each: 8 with the recipe's DistAug, 1
    without)."""
    assert _params(f"{WT}:source=official,ssa=S12-L4") == 246_933_504
    assert _params(f"{C10}:source=official,ssa=S16-L4") == 202_573_952 + 8 * 2 * 1024
    assert _params(f"{C10}:source=official,ssa=S16-L4", distaug="") == 202_573_952 + 2 * 1024
    assert _params(f"{GPT2}:source=official,checkpoint=none") == 124_439_808
    assert _params(f"{GPT2}:source=official,checkpoint=none,attn=gfsa") == 124_439_808 + 144


def test_missing_checkpoint_folder_is_named(tmp_path):
    c = config_lib.load(f"{GPT2}:preset=smoke,checkpoint={tmp_path / 'nowhere'}")
    with pytest.raises(errors.ConfigError, match="config.model.checkpoint=.*nowhere.*no such"):
        tasks.get(c.task).build_model(c, nnx.Rngs(0))


# ------------------------------------------------------------------ smoke trainings (slow)


def _docs_available() -> bool:
    try:
        standin.find_standin_dir(None)
    except errors.UserError:
        return False
    return True


@pytest.mark.slow
@pytest.mark.skipif(not _docs_available(), reason="apt-get install python3.11-doc")
def test_wikitext_smoke_trains_s12_with_ft_and_ensemble(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path / "data"))
    config = config_lib.load(f"{WT}:preset=smoke,ssa=S12-L4,ft=1,ensemble=2")
    assert config.model.attention_layers == (0,)  # the smoke model's one layer
    with config.unlocked():
        config.model.num_layers = 2  # then block 0 dense, block 1 SSA
        config.model.attention_layers = (1,)
    summary = train.train_and_evaluate(config, tmp_path / "run")
    m = summary["metrics"]["test_last"]
    assert np.isfinite(m["perplexity"]) and np.isfinite(m["perplexity_ensemble"])


@pytest.mark.slow
def test_cifar10_smoke_trains_on_fashion_mnist(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path / "data"))
    config = config_lib.load(f"{C10}:preset=smoke,ssa=S16-L4,ft=1")
    try:
        corpora.load(config.data)
    except errors.DataError as e:
        pytest.skip(f"Fashion-MNIST not installed: {e}")
    summary = train.train_and_evaluate(config, tmp_path / "run")
    m = summary["metrics"]["test_last"]
    assert np.isfinite(m["bpd"]) and m["bpd"] == pytest.approx(m["loss"] / np.log(2))


def _tiny_bpe(directory, vocab_size: int) -> None:
    """A GPT-2-format tokenizer over the letters a..h and the space (`Ġ`): single characters,
    the merges "a b" and "Ġ a", ids padded with unused symbols up to `vocab_size`."""
    symbols = [*"abcdefgh", "\u0120", "ab", "\u0120a"]
    symbols += [f"<unused{i}>" for i in range(vocab_size - len(symbols))]
    (directory / "vocab.json").write_text(json.dumps({s: i for i, s in enumerate(symbols)}))
    (directory / "merges.txt").write_text("#version: 0.2\na b\n\u0120 a\n")


@pytest.mark.slow
def test_gpt2_smoke_fine_tunes_a_checkpoint_with_gfsa(tmp_path, monkeypatch):
    from tests.language import test_gpt2

    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path / "data"))
    folder = test_gpt2.write_checkpoint(tmp_path / "gpt2")
    _tiny_bpe(folder, test_gpt2.VOCAB)
    data = tmp_path / "ptb"
    data.mkdir()
    rng = np.random.default_rng(0)
    for split, lines in (("train", 60), ("valid", 8), ("test", 8)):
        text = "\n".join(
            " ".join("".join(rng.choice(list("abcdefgh"), 3)) for _ in range(5))
            for _ in range(lines)
        )
        (data / f"ptb.{split}.txt").write_text(text + "\n")
    config = config_lib.load(f"{GPT2}:preset=smoke,attn=gfsa,source=official,checkpoint={folder}")
    with config.unlocked():
        config.data.dir = str(data)
        config.data.vocab_size = test_gpt2.VOCAB
    task = tasks.get(config.task)
    model = task.build_model(config, nnx.Rngs(0))
    assert model.stack.blocks[0].attn.mechanism.name == "gfsa"
    assert config.attention.order == 7
    summary = train.train_and_evaluate(config, tmp_path / "run")
    m = summary["metrics"]["val_last"]
    assert np.isfinite(m["perplexity"]) and m["perplexity"] < 3 * test_gpt2.VOCAB
    bad = config_lib.load(f"{GPT2}:preset=smoke,source=official,checkpoint={folder}")
    with pytest.raises(errors.ConfigError, match="vocab_size 50"):
        task.build_model(bad, nnx.Rngs(0))
