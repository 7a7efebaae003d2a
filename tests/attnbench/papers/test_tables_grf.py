"""GRF topological masking Tables 1, 3, 4 as data: spot checks of the paper's numbers, the
vision recipes the ViT cells train, and what the others need (Toeplitz, the ad-hoc and learnable
masks, the video domain)."""

import pytest

from attnbench.papers import tables

KEYS = ("grf.table1", "grf.table3", "grf.table4")


@pytest.mark.parametrize("key", KEYS)
def test_grf_tables_validate_and_each_cell_trains_or_says_what_it_needs(key):
    t = tables.load(key)
    tables.validate(t)
    for c in t.cells:
        assert c.runnable != bool(c.needs), c
        assert c.config is None or c.config.startswith("vision/")
    assert all(c.scale == 1 and c.quoted is None for c in t.cells)  # fractions, run by the authors


def test_table1_vit_accuracies():
    t = tables.load("grf.table1")
    assert t.columns == ("ImageNet", "iNaturalist2021", "Places365 (Small)")
    assert len(t.cells) == 15
    assert t.cell("Unmasked softmax", "Places365 (Small)").paper == 0.567
    assert t.cell("GRF-masked linear", "ImageNet").paper == 0.730
    assert t.cell("Toeplitz-masked linear", "iNaturalist2021").paper == 0.674
    assert t.cell("M_alpha(G)-masked linear", "ImageNet").paper == 0.741
    toeplitz = t.cell("Toeplitz-masked linear", "iNaturalist2021").config
    assert toeplitz == "vision/inaturalist.py:model=grf_vit,attn=toeplitz"
    assert all(c.runnable for c in t.cells)
    assert t.cell("GRF-masked linear", "ImageNet").config == "vision/imagenet.py:model=grf_vit"
    assert t.cell("Unmasked linear", "Places365 (Small)").config.endswith("grf_vit,attn=linear")
    # the claimed gains over unmasked linear: +3.7%, +2.2%, +0.5%
    gains = [
        round(t.cell("GRF-masked linear", c).paper - t.cell("Unmasked linear", c).paper, 3)
        for c in t.columns
    ]
    assert gains == [0.037, 0.022, 0.005]


def test_table3_ablations():
    t = tables.load("grf.table3")
    got = {c.row: c.paper for c in t.cells}
    assert got == {
        "GRF-masked": 0.730,
        "Unmasked": 0.693,
        "Ad-hoc masked (Eq. 21)": 0.689,
        "Fully learnable features": 0.696,
    }
    assert "p_halt" in t.cell("GRF-masked", "Test acc.").note
    assert "Eq. 21" in t.cell("Ad-hoc masked (Eq. 21)", "Test acc.").needs
    assert t.cell("GRF-masked", "Test acc.").config.endswith("model=grf_vit,p_halt=0.5")


def test_table4_vivit():
    t = tables.load("grf.table4")
    assert t.cell("Softmax", "Test acc.").paper == 0.754
    assert t.cell("Softmax + GRFs", "Test acc.").paper == 0.758
    assert all("Kinetics-400" in c.needs for c in t.cells)
    assert "softmax attention with a GRF" in t.cell("Softmax + GRFs", "Test acc.").needs
