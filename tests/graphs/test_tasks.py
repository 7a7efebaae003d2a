"""`graphs.zinc` end to end: the smoke recipe trains through the real trainer on a small SMILES
file in MOSES' layout (softmax and GFSA, both in the slow tier), and the recipes say what they
should."""

import os
import subprocess
import sys

import numpy as np
import pytest

from attnbench import config as config_lib
from attnbench import errors, tasks, train
from tests.conftest import ROOT
from tests.graphs.data.test_zinc import SMILES, write_smiles


def _smoke(arg, tmp_path):
    config = config_lib.load(f"graphs/zinc.py:preset=smoke,{arg}")
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
    paper = config_lib.load("graphs/zinc.py")
    assert (paper.best_metric, paper.best_mode) == ("mae", "min")
    assert paper.attention.name == "softmax" and paper.attention.dropout_rate == 0.1
    gfsa = config_lib.load("graphs/zinc.py:attn=gfsa")
    assert (gfsa.attention.order, gfsa.attention.w0) == (2, 0.0)  # zinc.sh --K 2
    cpu = config_lib.load("graphs/zinc.py:preset=cpu")
    assert cpu.model.num_layers == 4 and cpu.model.dtype == "float32"


def test_unknown_source_is_a_config_error():
    config = config_lib.load("graphs/zinc.py:preset=smoke")
    config.data.source = "offical"
    with pytest.raises(errors.ConfigError, match="offical.*known: standin, official"):
        tasks.get("graphs.zinc").load_data(config)
    with pytest.raises(errors.ConfigError, match="unknown data source='zinc'"):
        config_lib.load("graphs/zinc.py:source=zinc")


def test_l1_and_multilabel_losses_match_numpy():
    from graphs import tasks as graph_tasks

    rng = np.random.default_rng(0)
    pred, target = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    weight = np.array([1.0, 1.0, 1.0, 0.0])  # the last graph is batch padding
    loss, m = graph_tasks.l1_loss(pred, target, weight)
    want = np.abs(pred - target)[:3].mean()
    np.testing.assert_allclose(float(loss), want, rtol=1e-6)
    assert float(m["mae"][1]) == 9  # 3 graphs x 3 targets
    logits = rng.normal(size=(4, 3))
    labels = np.array([[1, 0, np.nan], [0, 0, 1], [1, 1, 1], [0, 1, 0]], float)
    loss, m = graph_tasks.multilabel_loss(logits, labels, weight)
    p = 1 / (1 + np.exp(-logits))
    bce = -(labels * np.log(p) + (1 - labels) * np.log(1 - p))
    known = ~np.isnan(labels) & (weight[:, None] > 0)
    np.testing.assert_allclose(float(loss), bce[known].mean(), rtol=1e-5)
    assert float(m["loss"][1]) == known.sum() == 8


def test_smooth_l1_is_torchs_and_reports_the_mae():
    from graphs import tasks as graph_tasks

    pred = np.array([[0.2, 3.0], [-1.5, 0.0]])
    target = np.zeros((2, 2))
    loss, m = graph_tasks.smooth_l1_loss(pred, target, np.ones(2))
    # torch.nn.SmoothL1Loss(beta=1): 0.5 x^2 below 1, |x| - 0.5 above
    want = np.mean([0.5 * 0.04, 3.0 - 0.5, 1.5 - 0.5, 0.0])
    np.testing.assert_allclose(float(loss), want, rtol=1e-6)
    np.testing.assert_allclose(float(m["mae"][0] / m["mae"][1]), np.abs(pred).mean(), rtol=1e-6)


def _pcqm_smoke(arg, tmp_path):
    from tests.graphs.data.test_pcqm import MOLECULES, write_csv

    config = config_lib.load(f"graphs/pcqm.py:preset=smoke,{arg}")
    config.data.dir = str(tmp_path / "data")
    config.data.source_file = str(write_csv(tmp_path / "qm9_part1.csv", MOLECULES))
    config.data.drop_invalid = True  # MOLECULES holds one SMILES RDKit cannot parse
    config.data.num_train, config.data.num_val, config.data.num_test = 3, 2, 2
    config.batch_size, config.eval_batch_size = 2, 2
    config.total_steps, config.eval_every = 4, 4
    return config


@pytest.mark.slow
@pytest.mark.parametrize("attn", ["softmax", "gfsa", "sliceformer_graph"])
def test_pcqm_smoke_trains_graphormer(attn, tmp_path):
    """Graphormer with each mechanism its papers place in it (Sliceformer Table 6, GFSA Tables
    5 / 21) on the QM9 stand-in: trains, evaluates, reports train and valid MAE."""
    summary = train.train_and_evaluate(_pcqm_smoke(f"attn={attn}", tmp_path), tmp_path / "run")
    assert summary["data"]["source"] == "standin" and "QM9" in summary["data"]["standin"]
    m = summary["metrics"]
    assert np.isfinite(m["val_best"]["mae"]) and np.isfinite(m["train_last"]["mae"])
    assert m["test_best"]["num_examples"] == 2


@pytest.mark.slow
@pytest.mark.parametrize("arg", ["model=egt", "model=egt,ssa=U50,ft=1,ensemble=3"])
def test_pcqm_smoke_trains_egt(arg, tmp_path):
    """EGT dense and with SSA (S6-U50, +FT, evaluated as a self-ensemble of 3 passes) on the
    QM9 stand-in (SSA Tables 3 and 5)."""
    config = _pcqm_smoke(arg, tmp_path)
    summary = train.train_and_evaluate(config, tmp_path / "run")
    assert summary["attention"]["name"] == ("ssa" if "ssa" in arg else "softmax")
    assert np.isfinite(summary["metrics"]["val_best"]["mae"])
    if "ssa" in arg:
        assert summary["attention"]["keep"] == 0.5 and config.dense_finetune_fraction == 0.1
        assert config.model.ensemble_passes == 3
        m = summary["metrics"]["test_best"]  # dense and self-ensemble from one run
        assert np.isfinite(m["mae_ensemble"]) and m["mae_ensemble"] != m["mae"]


@pytest.mark.slow
@pytest.mark.parametrize("arg", ["kind=func", "kind=struct,attn=softmax"])
def test_peptides_smoke_trains_graph_bridge(arg, tmp_path):
    """Graph-Bridge with SAMSA (func: average precision) and with full attention (struct:
    SmoothL1 loss, MAE) on a few generated peptides (SAMSA Tables 1 and 3)."""
    config = config_lib.load(f"graphs/peptides.py:preset=smoke,{arg}")
    config.data.dir = str(tmp_path / "data")
    config.total_steps, config.eval_every = 4, 4
    summary = train.train_and_evaluate(config, tmp_path / "run")
    assert "not LRGB" in summary["data"]["standin"]
    m = summary["metrics"]["val_best"]
    if "func" in arg:  # 5 validation peptides: AP over the labels with both classes there
        assert summary["attention"]["name"] == "samsa" and 0.0 <= m["ap"] <= 1.0
    else:
        assert np.isfinite(m["mae"]) and m["loss"] <= m["mae"]  # smooth L1 <= L1


GRAPH_RECIPES = [
    "zinc.py:source=standin",
    "zinc.py:source=official,attn=gfsa",
    "pcqm.py:attn=sliceformer_graph",
    "pcqm.py:version=v1,attn=gfsa",
    "pcqm.py:model=egt,ssa=U20,ft=1,ensemble=50",
    "peptides.py:kind=func,k=256",
    "peptides.py:kind=struct,attn=softmax",
    "peptides.py:model=gps,kind=func,attn=gfsa",
    "zinc.py:model=gps,source=official",
]


@pytest.mark.parametrize("recipe", GRAPH_RECIPES)
def test_graph_recipes_validate_at_every_preset(recipe):
    """No false alarms from the config checks for the papers' recipes at any scale."""
    from attnbench import validate

    for preset in ("paper", "cpu", "smoke"):
        c = config_lib.load(f"graphs/{recipe},preset={preset}")
        assert validate.problems(c, tasks.get(c.task)) == [], (recipe, preset)


def test_bad_recipe_arguments_are_named():
    with pytest.raises(errors.ConfigError, match="ssa= is SSA's EGT setting"):
        config_lib.load("graphs/pcqm.py:ssa=U20")
    with pytest.raises(errors.ConfigError, match="unknown SSA ssa='U25'"):
        config_lib.load("graphs/pcqm.py:model=egt,ssa=U25")
    with pytest.raises(errors.ConfigError, match="unknown Peptides kind='fun'"):
        config_lib.load("graphs/peptides.py:kind=fun")


@pytest.mark.slow
@pytest.mark.parametrize("arg", ["attn=softmax", "attn=gfsa"])
def test_zinc_smoke_trains_gps(arg, tmp_path):
    """GPS with RWSE, its GINE layers, sum pooling and 3-layer head, with softmax and GFSA
    (GFSA Table 6's ZINC column) on the ZINC-like stand-in."""
    config = _smoke(f"model=gps,{arg}", tmp_path)
    assert config.model.head_hidden == (32, 16) and config.model.rwse_dim == 28
    _check_summary(train.train_and_evaluate(config, tmp_path / "run"))


@pytest.mark.slow
def test_peptides_smoke_trains_gps_with_gfsa(tmp_path):
    """GPS with LapPE and GFSA on generated peptides (GFSA Table 6's Peptides-func column)."""
    config = config_lib.load("graphs/peptides.py:preset=smoke,kind=func,model=gps,attn=gfsa")
    config.data.dir = str(tmp_path / "data")
    config.total_steps, config.eval_every = 4, 4
    summary = train.train_and_evaluate(config, tmp_path / "run")
    assert summary["attention"]["name"] == "gfsa"
    assert 0.0 <= summary["metrics"]["test_best"]["ap"] <= 1.0


# Issue 32: no bad input read silently. The official ZINC files of test_zinc.py (atoms 1-3,
# edges 0-6 per molecule; train = chain, single; val = chain; test = pair).


def _official_zinc(tmp_path, *overrides):
    from tests.graphs.data.test_zinc import write_zinc

    write_zinc(tmp_path / "data" / "molecules")
    config = config_lib.load("graphs/zinc.py:preset=smoke,source=official")
    config_lib.override(config, {"data.dir": str(tmp_path / "data"), **dict(overrides)})
    return config


def test_a_graph_above_the_largest_bucket_is_found_when_the_data_is_loaded(tmp_path):
    """It raised at the test evaluation, after training; now when any split is loaded."""
    task = tasks.get("graphs.zinc")
    config = _official_zinc(tmp_path, ("data.max_nodes", 2), ("data.node_buckets", ()))
    with pytest.raises(
        errors.DataError,
        match=r"train example 0 \(.*molecules/train.pickle\) has 3 nodes, more than the largest "
        r"node bucket 2 \(config.data.max_nodes=2; 1 graph\(s\) of the train split are "
        r"larger\): raise config.data.max_nodes to at least 3",
    ):
        task.load_data(config)
    config = _official_zinc(tmp_path, ("data.max_nodes", 3), ("data.edge_factor", 1))
    with pytest.raises(
        errors.DataError,
        match=r"train example 0 \(.*\) has 4 edges, more than the largest edge bucket 3 "
        r"\(config.data.edge_factor=1 x config.data.max_nodes=3; .*raise config.data.edge_factor "
        r"to at least 2",
    ):
        task.load_data(config)
    # Only a test graph too large (a 5-atom path): the run trained, then failed at the test
    # evaluation; now the load names it.
    from tests.graphs.data.test_zinc import replace_molecule, zinc_molecule

    config = _official_zinc(tmp_path / "path", ("data.max_nodes", 4))
    path = np.eye(5, k=1, dtype=np.int64) + np.eye(5, k=-1, dtype=np.int64)
    replace_molecule(
        tmp_path / "path" / "data" / "molecules", "test", 0, zinc_molecule([1] * 5, path, 0.0)
    )
    with pytest.raises(
        errors.DataError,
        match=r"test example 0 \(.*molecules/test.pickle\) has 5 nodes, more than the largest "
        r"node bucket 4 \(config.data.max_nodes=4; .*at least 5",
    ):
        task.load_data(config)


def test_feature_ids_beyond_the_models_tables_are_refused(tmp_path):
    """Ids the data has but the model's embedding table lacks (JAX clamps them silently)."""
    task = tasks.get("graphs.zinc")
    config = _official_zinc(tmp_path, ("model.atom_dims", (4,)))  # train: atom types 0-2, 4
    with pytest.raises(
        errors.DataError,
        match=r"train example 1 \(.*train.pickle\): node feature atom_type is 4, outside "
        r"\[0, 4\), the rows of its embedding table \(config.model.atom_dims\[0\]=4; .*raise "
        r"config.model.atom_dims\[0\]",
    ):
        task.load_data(config)
    config = _official_zinc(tmp_path, ("model.bond_dims", (2,)))  # the chain's bond of type 2
    with pytest.raises(errors.DataError, match=r"edge feature bond_type is 2, outside \[0, 2\)"):
        task.load_data(config)
    # ZINC's one-column features under OGB's 9 tables (source=official set by an override
    # instead of the recipe's argument): the columns would broadcast against the offsets.
    config = config_lib.load("graphs/zinc.py:preset=smoke")
    config_lib.override(config, {"data.source": "official", "data.dir": str(tmp_path / "data")})
    with pytest.raises(
        errors.ConfigError,
        match=r"config.model.atom_dims=\(119, 5, .*\): 9 node features, but the train graphs "
        r"\(.*\) have 1 \(sizes \[28\]\); .*graphs/zinc.py:source=official",
    ):
        task.load_data(config)


@pytest.mark.parametrize("recipe", ["zinc.py", "pcqm.py", "peptides.py:kind=func"])
def test_drop_invalid_defaults_to_false(recipe):
    config = config_lib.load(f"graphs/{recipe}")
    assert config.data.drop_invalid is False


def test_drop_invalid_reaches_the_reader_and_the_summary(tmp_path):
    from tests.graphs.data.test_peptides import PEPTIDES, write_peptides

    write_peptides(tmp_path / "data", "func", smiles=["C1CC", *PEPTIDES[1:]])
    config = config_lib.load("graphs/peptides.py:preset=smoke,kind=func,source=official")
    config_lib.override(config, {"data.dir": str(tmp_path / "data")})
    task = tasks.get("graphs.peptides_func")
    with pytest.raises(errors.DataError, match="RDKit cannot parse 1 of the 2 molecules"):
        task.load_data(config)
    config_lib.override(config, {"data.drop_invalid": True})
    data = task.load_data(config)
    assert len(data.train) == 1
    assert data.description["dropped"]["train"]["count"] == 1


def test_cli_one_line_and_exit_2_for_an_atom_type_outside_the_vocabulary(tmp_path):
    """The hostile tester's case through the command: atom type 70 trained as type 63 (the
    64-row table clamped it); now one line, exit status 2, no traceback."""
    from tests.attnbench.data.formats.test_torch_pickle import torch_writer_pickle
    from tests.graphs.data.test_zinc import PAIR, SINGLE, TRIANGLE, write_zinc, zinc_molecule

    folder = write_zinc(tmp_path / "data" / "molecules")
    bad = zinc_molecule([0, 70, 1], [[0, 1, 0], [1, 0, 2], [0, 2, 0]], 0.5)
    (folder / "train.pickle").write_bytes(
        torch_writer_pickle([SINGLE, PAIR, bad, TRIANGLE], protocol=4)
    )
    run = subprocess.run(
        [sys.executable, "-m", "scripts.train", "--config", "graphs/zinc.py:preset=smoke,"
         "source=official", f"--workdir={tmp_path / 'run'}",
         f"--config.data.dir={tmp_path / 'data'}"],
        cwd=ROOT, env=dict(os.environ, JAX_PLATFORMS="cpu"), capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), run.stderr
    assert "train.pickle, molecule 2 (split 'train'): node feature atom_type is 70" in lines[0]
    assert "outside [0, 28)" in lines[0]
