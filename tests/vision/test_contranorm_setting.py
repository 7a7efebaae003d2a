"""GFSA Tables 17 and 18, the ContraNorm setting: the DeiT-T recipe, `depth=` for DeiT-T / DeiT-S
(dropout 0 at every depth, the depth ratio kept at the scaled presets), `contranorm=1` in a ViT,
the named errors, and the two tables' cells (every one a config; Table 17's GFSA cells the runs
of Table 18's best K)."""

from __future__ import annotations

import pytest

from attnbench import config as config_lib
from attnbench import errors, tasks, validate
from attnbench.papers import tables
from configs.tables import gfsa_table17

RECIPE = "vision/imagenet.py"


def _load(arg):
    return config_lib.load(f"{RECIPE}:{arg}")


def test_deit_t_and_depths():
    t = _load("model=deit_t")
    m = t.model
    assert (m.num_layers, m.dim, m.qkv_dim, m.num_heads, m.mlp_dim) == (12, 192, 192, 3, 768)
    s = _load("model=deit_s")
    # DeiT-T trains with DeiT-S's recipe (DeiT Table 9)
    assert (t.optimizer.lr, t.batch_size, t.total_steps) == (s.optimizer.lr, 1024, s.total_steps)
    assert (t.model.drop_path, t.data.mixup, t.ema_decay) == (0.1, 0.8, 0.99996)
    assert t.attention.name == "softmax" and t.model.encoder == "transformer"
    for model, depth in (("deit_t", 16), ("deit_s", 24)):
        c = _load(f"model={model},depth={depth}")
        assert (c.model.num_layers, c.model.dropout) == (depth, 0.0)  # Guo et al.'s --drop 0
    assert _load("model=deit_s24").model.dropout == 0.2  # GFSA App. M.1's, unchanged
    assert _load("model=deit_s,depth=12").to_dict() == s.to_dict()
    # a scaled preset keeps the depths apart: its layers x depth / 12
    layers = [_load(f"preset=cpu,model=deit_t,depth={d}").model.num_layers for d in (12, 16, 24)]
    assert layers == [4, 5, 8]
    assert _load("preset=smoke,model=deit_s,depth=24").model.num_layers == 2


def test_contranorm_in_the_vit():
    c = _load("model=deit_s,depth=16,contranorm=1")
    m = c.model
    assert m.encoder == "transformer_contranorm" and m.num_layers == 16
    assert (m.contranorm_scale, m.contranorm_temperature, m.contranorm_dual) == (0.01, 1.0, False)
    c = _load("model=deit_t,contranorm=1,cn_scale=0.1,cn_tau=0.5,cn_dual=1")
    assert (c.model.contranorm_scale, c.model.contranorm_temperature) == (0.1, 0.5)
    assert c.model.contranorm_dual
    assert "contranorm_scale" not in _load("model=deit_t").model
    for preset in ("paper", "cpu", "smoke"):
        c = _load(f"preset={preset},model=deit_t,depth=24,contranorm=1")
        assert validate.problems(c, tasks.get(c.task)) == [], preset


@pytest.mark.parametrize(
    "arg, match",
    [
        ("model=cait_s24,depth=16", "not model=cait_s24"),
        ("model=deit_s24,depth=16", "not model=deit_s24"),
        ("model=deit_s,depth=-1", "depth=-1"),
        ("model=swin_t,contranorm=1", "not of encoder 'swin'"),
        ("model=deit_t,contranorm=1,attn=gfsa", "never combines them"),
        ("model=deit_t,cn_scale=0.1", "give contranorm=1"),
        ("model=deit_t,contranorm=1,cn_tau=-1", "cn_tau=-1"),
        ("model=deit_t,contranorm=1,checkpoint=/x", "timm checkpoints"),
    ],
)
def test_errors_are_named(arg, match):
    with pytest.raises(errors.ConfigError, match=match):
        _load(arg)


def test_table17_and_table18_cells():
    t17, t18 = tables.load("gfsa.table17"), tables.load("gfsa.table18")
    for t in (t17, t18):
        tables.validate(t)  # every config loads at smoke
        assert all(c.runnable and c.needs is None for c in t.cells)
    assert t17.cell("DeiT-T", "16 layers").config == f"{RECIPE}:model=deit_t,depth=16"
    cn = t17.cell("DeiT-S + ContraNorm", "24 layers").config
    assert cn == f"{RECIPE}:model=deit_s,depth=24,contranorm=1"
    assert config_lib.load(cn).model.encoder == "transformer_contranorm"
    # Table 17's GFSA cell = Table 18's cell of the column's best K: the same config, one run
    for model in ("DeiT-T", "DeiT-S"):
        for column in t17.columns:
            cell = t17.cell(f"{model} + GFSA", column)
            best = max(
                (c for c in t18.cells if c.row.startswith(model) and c.column == column),
                key=lambda c: c.paper,  # the first of a tie (DeiT-T 24 layers: K = 4 and 5)
            )
            assert cell.paper == best.paper and cell.config == best.config, (model, column)
    assert gfsa_table17.BEST_K[("DeiT-T", "24 layers")] == 4
    c = config_lib.load(t18.cell("DeiT-T + GFSA (K=3)", "12 layers").config)
    assert (c.attention.name, c.attention.order, c.model.dim) == ("gfsa", 3, 192)
