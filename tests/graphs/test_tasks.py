"""`graphs.zinc` end to end: the smoke recipe trains through the real trainer on a small SMILES
file in MOSES' layout (softmax and GFSA, both in the slow tier), and the recipes say what they
should."""

import numpy as np
import pytest

from core import config as config_lib
from core import errors, tasks, train
from tests.graphs.test_zinc_like import SMILES, write_smiles


def _smoke(arg, tmp_path):
    config = config_lib.load(f"configs/graphs/zinc.py:preset=smoke,{arg}")
    config.unlock()
    config.data.dir = str(tmp_path / "data")
    config.data.source_file = str(write_smiles(tmp_path / "train.csv.gz", SMILES))
    config.data.num_train, config.data.num_val, config.data.num_test = 8, 4, 4
    config.batch_size, config.eval_batch_size = 4, 4
    config.total_steps, config.eval_every = 4, 4
    return config


def _check_summary(summary):
    assert summary["data"]["source"] == "standin" and "not ZINC-12k" in summary["data"]["standin"]
    test = summary["metrics"]["test_best"]
    assert np.isfinite(test["mae"]) and test["mae"] == pytest.approx(test["loss"])


@pytest.mark.slow  # ~21 s; the fast tier checks the bias against loops and the sizes
def test_smoke_trains_softmax(tmp_path):
    _check_summary(train.train_and_evaluate(_smoke("attn=softmax", tmp_path), tmp_path / "run"))


@pytest.mark.slow
def test_smoke_trains_gfsa(tmp_path):
    _check_summary(train.train_and_evaluate(_smoke("attn=gfsa", tmp_path), tmp_path / "run"))


def test_recipes():
    paper = config_lib.load("configs/graphs/zinc.py")
    assert (paper.best_metric, paper.best_mode) == ("mae", "min")
    assert paper.attention.name == "softmax" and paper.attention.dropout_rate == 0.1
    gfsa = config_lib.load("configs/graphs/zinc.py:attn=gfsa")
    assert (gfsa.attention.order, gfsa.attention.w0) == (2, 0.0)  # zinc.sh --K 2
    cpu = config_lib.load("configs/graphs/zinc.py:preset=cpu")
    assert cpu.model.num_layers == 4 and cpu.model.dtype == "float32"


def test_unknown_source_is_a_config_error():
    config = config_lib.load("configs/graphs/zinc.py:preset=smoke")
    config.data.source = "official"
    with pytest.raises(errors.ConfigError, match="official"):
        tasks.get("graphs.zinc").load_data(config)
