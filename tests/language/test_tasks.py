"""`language.lm` end to end: the byte-level recipe's smoke preset trains through the real
trainer on the offline stand-in with each mechanism the papers use (dense, GFSA, SSA locally
biased and unbiased, +FT, self-ensemble), and the loss and ensemble arithmetic by hand."""

import numpy as np
import pytest

from attnbench import config as config_lib
from attnbench import errors, tasks, train, validate
from language import tasks as lm_tasks
from language.data import standin


def _docs_available() -> bool:
    try:
        standin.find_standin_dir(None)
    except errors.UserError:
        return False
    return True


needs_docs = pytest.mark.skipif(
    not _docs_available(), reason="apt-get install python3.11-doc (the byte-level stand-in)"
)


def test_lm_loss_is_the_mean_scored_nll():
    nll = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    mask = np.array([[0.0, 1.0, 1.0], [1.0, 1.0, 1.0]])
    weight = np.array([1.0, 0.0])  # the second window is batch padding
    loss, m = lm_tasks.lm_loss(nll, mask, weight)
    assert float(loss) == pytest.approx(2.5) and float(m["loss"][1]) == 2.0


@pytest.mark.parametrize(
    "arg",
    ["", "attn=gfsa", "ssa=S16-L4,ft=1", "ssa=S16-L2,sampling=unbiased", "ssa=S16-L2,ensemble=3"],
)
@pytest.mark.parametrize("preset", ["paper", "cpu", "smoke"])
def test_recipes_validate(arg, preset):
    c = config_lib.load(f"language/enwik8.py:preset={preset},{arg}")
    assert validate.problems(c, tasks.get(c.task)) == [], (arg, preset)


def test_bad_arguments_are_named():
    with pytest.raises(errors.ConfigError, match="ft=1 is SSA's dense fine-tuning"):
        config_lib.load("language/enwik8.py:ft=1")
    with pytest.raises(errors.ConfigError, match="unknown SSA ssa='S12-L8'"):
        config_lib.load("language/enwik8.py:ssa=S12-L8")


@needs_docs
@pytest.mark.slow
@pytest.mark.parametrize(
    "arg",
    ["attn=softmax", "attn=gfsa", "ssa=S16-L4,ft=1,ensemble=2", "ssa=S16-L2,sampling=unbiased"],
)
def test_smoke_trains_on_the_byte_standin(arg, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path / "data"))
    config = config_lib.load(f"language/enwik8.py:preset=smoke,{arg}")
    summary = train.train_and_evaluate(config, tmp_path / "run")
    assert summary["data"]["source"] == "standin"
    m = summary["metrics"]["test_best"]
    assert np.isfinite(m["bpb"]) and m["bpb"] == pytest.approx(m["loss"] / np.log(2))
    assert summary["num_examples"]["test"] == m["num_examples"]
    if "ensemble" in arg:  # both evaluations from one run
        assert np.isfinite(m["bpb_ensemble"]) and m["bpb_ensemble"] != m["bpb"]


@pytest.mark.slow
def test_self_ensemble_averages_probabilities_of_subsampled_passes():
    """eval_outputs with ensemble_passes = S: nll = -log(mean_s p_s), each pass subsampled."""
    import jax
    from flax import nnx

    config = config_lib.load("language/enwik8.py:preset=smoke,ssa=S16-L2")
    task = tasks.get(config.task)
    batch = task.example_batch(config, 2)
    model = task.build_model(config, nnx.Rngs(0))
    model.ensemble_passes, model.ensemble_seed = 3, 5
    out = task.eval_outputs(model, batch)
    got = np.asarray(out["nll_ensemble"])
    dense = np.asarray(model.nll(batch["tokens"], batch["targets"]))
    np.testing.assert_allclose(np.asarray(out["nll"]), dense, rtol=1e-6)  # renormalized
    keys = jax.random.split(jax.random.key(5), 3)
    each = np.stack(
        [
            np.asarray(model.nll(batch["tokens"], batch["targets"], key=k, subsample=True))
            for k in keys
        ]
    )
    np.testing.assert_allclose(got, -np.log(np.exp(-each).mean(0)), rtol=1e-5, atol=1e-5)
    assert np.abs(each[0] - each[1]).max() > 1e-5  # the members differ


def test_enwik8_s12_and_the_dense_models_ensemble():
    s12 = config_lib.load("language/enwik8.py:ssa=S12-L4")
    assert tuple(s12.model.attention_layers) == tuple(range(4, 16))  # SSA in the last 12
    s0 = config_lib.load("language/enwik8.py:ensemble=50")
    # Table 4's S0: trained dense throughout, its ensemble passes sampled as S16-L4
    assert s0.attention.name == "ssa" and s0.dense_finetune_fraction == 1.0
    assert s0.attention.keep == 0.25 and s0.model.ensemble_passes == 50
