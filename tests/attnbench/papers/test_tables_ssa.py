"""SSA's table configs (configs/tables/ssa_*.py): the paper's numbers, the exactly computed
cells (the C columns of Tables 1-2, Table 7's compute) against the printed values, and the
cross-table repeats (Renorm. / locally biased columns copied from Tables 1-3)."""

import pytest

from attnbench.papers import tables

KEYS = [f"ssa.table{n}" for n in (1, 2, 3, 4, 5, 7, 8, 9, 10)]


def _t(key):
    return tables.load(key)


def test_every_ssa_table_exists_and_validates_table6_is_skipped():
    assert [k for k in tables.names() if k.startswith("ssa.")] == list(KEYS)
    for key in KEYS:
        table = _t(key)
        tables.validate(table)
        assert "SSA paper Table" in table.source and table.notes


def test_runnable_cells_are_the_exact_compute_cells_and_the_recipes():
    counts = {key: sum(c.runnable for c in _t(key).cells) for key in KEYS}
    assert counts == {
        # C: 11 rows x WikiText-103 and Enwik8 (4 Enwik8 rows blank in the paper); dev / test
        # of the 11 WikiText-103 rows and of the Enwik8 S0, S16-L2, S16-L4, S12-L4 (+FT) rows
        "ssa.table1": 22 + 2 * 11 + 2 * 7,
        # CIFAR-10 C and BPD; ImageNet C and top-1 of the six Swin-T rows
        "ssa.table2": 3 + 3 + 6 + 6,
        "ssa.table3": 22,  # the EGT runs (MAE) and their compute ratios
        # 5 rows x 4 WikiText-103 columns; Enwik8: S16-L4 (+FT) x 4, S0's two Renorm. cells
        "ssa.table4": 20 + 20,  # 5 rows x 4 columns x WikiText-103 and Enwik8
        "ssa.table5": 20,  # the EGT runs, evaluated dense or as self-ensembles
        "ssa.table7": 5,  # WikiText-103, Enwik8, CIFAR-10, Swin-T and EGT compute
        "ssa.table8": 32,  # every cell: the WikiText-103 and Enwik8 recipes
        "ssa.table9": 8,  # every cell: the Swin-T recipes
        "ssa.table10": 16,  # every cell: the WikiText-103 recipe with a 50-pass ensemble
    }
    for key in KEYS:
        for c in _t(key).cells:
            assert c.runnable == (c.exact is not None or c.config is not None)
            if c.config:  # Swin-T, EGT, the language recipes; no SSA table runs on LRA
                assert c.config.startswith(
                    (
                        "vision/imagenet.py:model=swin_t",
                        "graphs/pcqm.py:",
                        "language/wikitext103.py",
                        "language/enwik8.py",
                        "language/cifar10.py",
                    )
                )
            if c.exact:
                assert c.scale == 1.0


def test_table1_compute_column_matches_every_printed_value():
    t = _t("ssa.table1")
    c = t.cell("S16-L4 +FT", "WikiText-103 C")
    assert c.exact == "attnbench.nn.flops:ssa_compute_ratio"
    assert c.exact_args == dict(run="WikiText-103", windows=4, sampled_layers=16, finetune=0.1)
    assert t.cell("S0 (Dense)", "Enwik8 C").exact_args["windows"] == 1
    checked = 0
    for cell in t.cells:
        if cell.exact and cell.paper is not None:
            assert tables.compute(cell) == pytest.approx(cell.paper, abs=0.0051), cell
            checked += 1
    assert checked == 18
    # Enwik8 L6 / L8 are blank in the paper; the C cell is ours alone
    blank = t.cell("S16-L8", "Enwik8 C")
    assert blank.paper is None and blank.runnable and t.cell("S16-L8", "Enwik8 dev BPB") is None


@pytest.mark.slow  # ~9 s: builds the Swin-T and CIFAR-10 recipes for their FLOP counts
def test_table2_cifar_compute_and_the_077_tie():
    t = _t("ssa.table2")
    assert tables.compute(t.cell("S16-L4", "CIFAR-10 C")) == pytest.approx(0.75)
    ft = t.cell("S16-L4 +FT", "CIFAR-10 C")
    assert ft.paper == 0.77 and tables.compute(ft) == pytest.approx(0.775)
    assert "0.78" in ft.note  # the same count is printed 0.78 for WikiText-103
    # ImageNet C from the Swin-T recipes' counts: 0.92 / 0.92 / 0.97 against 0.90 / 0.90 / 0.97
    swin = {row: tables.compute(t.cell(row, "ImageNet C")) for row in t.rows if "W" in row}
    assert swin["W14-S0 (Dense)"] == 1.0
    assert swin["W7-S0 (Dense)"] == pytest.approx(0.9185, abs=1e-4)
    assert swin["W14-S10-L4"] == pytest.approx(0.9185, abs=1e-4)
    assert swin["W14-S10-L4 +FT"] == pytest.approx(0.9 * 0.9185 + 0.1, abs=1e-4)
    assert swin["W14-S6-L4"] == pytest.approx(0.9728, abs=1e-4)
    assert t.cell("W14-S6-L4 +FT", "ImageNet Acc.").config.endswith("window=14,ssa=S6,ft=1")
    assert t.cell("W7-S0 (Dense)", "ImageNet Acc.").paper == 81.19
    assert t.cell("W7-S0 (Dense)", "ImageNet Acc.").scale == 100.0
    assert t.higher_is_better["CIFAR-10 BPD"] is False and t.higher_is_better["ImageNet S"]


def test_table7_compute_is_exact_for_the_decoders():
    t = _t("ssa.table7")
    ours = {
        row: tables.compute(t.cell(row, "Compute (ExaFLOP)"))
        for row in ("WikiText-103", "Enwik8", "CIFAR-10")
    }
    assert ours["WikiText-103"] == pytest.approx(7.6, abs=0.005)
    assert ours["Enwik8"] == pytest.approx(1.759, abs=0.001)  # printed 1.7
    assert ours["CIFAR-10"] == pytest.approx(23.749, abs=0.001)  # printed 23.8
    for row, value in ours.items():
        assert value == pytest.approx(t.cell(row, "Compute (ExaFLOP)").paper, rel=0.05)
    swin = tables.compute(t.cell("ImageNet-1k", "Compute (ExaFLOP)"))
    assert swin == pytest.approx(3.758, abs=0.001)  # printed 3.2: see the cell's note
    egt = tables.compute(t.cell("PCQM4Mv2", "Compute (ExaFLOP)"))
    assert egt == pytest.approx(0.0484, abs=0.0005)  # printed 0.5: see the cell's note
    assert "global batch" in t.cell("PCQM4Mv2", "Compute (ExaFLOP)").note
    assert t.cell("PCQM4Mv2", "Memory/GPU (GB)") is None  # "-" in the paper
    assert t.cell("CIFAR-10", "Time/step (ms)").paper == 1059


def test_spot_numbers_and_quoted_marks():
    assert _t("ssa.table1").cell("S16-L4 +FT", "WikiText-103 test Ppl").paper == 17.60
    assert _t("ssa.table1").cell("S12-L4 +FT", "Enwik8 dev BPB").paper == 1.044
    t3 = _t("ssa.table3")
    assert t3.cell("S6-U30", "+FT dev MAE").paper == 0.0876
    assert t3.cell("S0 (Dense)", "+FT dev MAE") is None  # blank
    assert "EGT" in t3.cell("S0 (Dense)", "w/o FT dev MAE").quoted
    assert not any(c.quoted for key in KEYS if key != "ssa.table3" for c in _t(key).cells)
    assert _t("ssa.table5").cell("S6-U50", "+FT Ensemble").paper == 0.1005
    assert _t("ssa.table8").cell("25% attention", "Enwik8 Unbiased dev").paper == 1.329
    assert _t("ssa.table9").cell("6 layers +FT", "Unbiased dev Acc.").paper == 81.36
    t10 = _t("ssa.table10")
    assert "S12-L8" in t10.rows and "S16-L8" in t10.cell("S12-L8", "Renorm. dev").note


def test_language_cells_name_their_recipes_and_the_same_missing_piece_has_the_same_wording():
    wt = "language/wikitext103.py"
    t1 = _t("ssa.table1")
    assert t1.cell("S12-L4 +FT", "WikiText-103 dev Ppl").config == f"{wt}:ssa=S12-L4,ft=1"
    assert t1.cell("S0 (Dense)", "WikiText-103 test Ppl").config == wt
    assert t1.cell("S16-L2", "Enwik8 dev BPB").config == ("language/enwik8.py:ssa=S16-L2")
    assert t1.cell("S12-L4", "Enwik8 dev BPB").config == ("language/enwik8.py:ssa=S12-L4")
    t4 = _t("ssa.table4")
    assert t4.cell("S12-L4 +FT", "Enwik8 Ensemble test").config == (
        "language/enwik8.py:ssa=S12-L4,ft=1,ensemble=50"
    )
    renorm, ensemble = (
        t4.cell("S0 (Dense)", "WikiText-103 Renorm. dev"),
        t4.cell("S0 (Dense)", "WikiText-103 Ensemble dev"),
    )
    assert renorm.config == ensemble.config == f"{wt}:ensemble=50"
    assert (renorm.metric, ensemble.metric) == (
        "val_last.perplexity",
        "val_last.perplexity_ensemble",
    )
    enwik8_s0 = "language/enwik8.py:ensemble=50"
    assert t4.cell("S0 (Dense)", "Enwik8 Ensemble dev").config == enwik8_s0
    assert t4.cell("S0 (Dense)", "Enwik8 Renorm. dev").config == enwik8_s0
    assert _t("ssa.table8").cell("25% attention +FT", "WikiText-103 Unbiased dev").config == (
        f"{wt}:ssa=S16-L4,sampling=unbiased,ft=1"
    )
    assert (
        _t("ssa.table10").cell("S12-L8", "Ensemble test").config == f"{wt}:ssa=S16-L8,ensemble=50"
    )
    assert _t("ssa.table2").cell("S16-L4 +FT", "CIFAR-10 BPD").config == (
        "language/cifar10.py:ssa=S16-L4,ft=1"
    )
    gpu = _t("ssa.table1").cell("S16-L4", "WikiText-103 M").needs
    assert _t("ssa.table7").cell("WikiText-103", "Time/step (ms)").needs == gpu
    # Table 5's runs are Table 3's recipes evaluated both ways: dense and 50-pass ensemble
    t3, t5 = _t("ssa.table3"), _t("ssa.table5")
    renorm, ensemble = t5.cell("S6-U20", "+FT Renorm."), t5.cell("S6-U20", "+FT Ensemble")
    assert (
        renorm.config
        == ensemble.config
        == t3.cell("S6-U20", "+FT dev MAE").config + (",ensemble=50")
    )
    assert (renorm.metric, ensemble.metric) == ("val_last.mae", "val_last.mae_ensemble")


def test_table3_compute_cells_are_ratios_of_the_egt_recipes():
    t3 = _t("ssa.table3")
    c = t3.cell("S6-U30", "+FT Compute")
    assert c.exact == "attnbench.papers.exact:model_compute_ratio"
    assert c.exact_args == {
        "config": "graphs/pcqm.py:version=v2,model=egt,ssa=U30,ft=1",
        "baseline": "graphs/pcqm.py:version=v2,model=egt",
        "finetune": 0.1,
    }
    assert tables.compute(t3.cell("S0 (Dense)", "w/o FT Compute")) == 1.0
    ratios = [tables.compute(t3.cell(f"S6-U{x}", "w/o FT Compute")) for x in (10, 30, 50)]
    assert 1.0 > ratios[0] > ratios[1] > ratios[2] > 0.9  # less than printed: see the notes


def test_repeated_columns_equal_their_source_tables():
    t1, t2, t3 = _t("ssa.table1"), _t("ssa.table2"), _t("ssa.table3")
    t4 = _t("ssa.table4")
    for row in t4.rows:
        for run, name in (("WikiText-103", "Ppl"), ("Enwik8", "BPB")):
            assert (
                t4.cell(row, f"{run} Renorm. dev").paper == t1.cell(row, f"{run} dev {name}").paper
            )
            assert (
                t4.cell(row, f"{run} Renorm. test").paper
                == t1.cell(row, f"{run} test {name}").paper
            )
    t8 = _t("ssa.table8")
    for row, t1_row in (("50% attention", "S16-L2"), ("25% attention +FT", "S16-L4 +FT")):
        assert (
            t8.cell(row, "Enwik8 Locally Biased test").paper
            == t1.cell(t1_row, "Enwik8 test BPB").paper
        )
    t9 = _t("ssa.table9")
    assert (
        t9.cell("10 layers +FT", "Locally Biased dev Acc.").paper
        == t2.cell("W14-S10-L4 +FT", "ImageNet Acc.").paper
    )
    t5 = _t("ssa.table5")
    for row in t5.rows:
        assert t5.cell(row, "w/o FT Renorm.").paper == t3.cell(row, "w/o FT dev MAE").paper
        assert t5.cell(row, "+FT Renorm.").paper == t3.cell(row, "+FT dev MAE").paper
    t10 = _t("ssa.table10")
    assert (
        t10.cell("S12-L8 +FT", "Renorm. test").paper
        == t1.cell("S16-L8 +FT", "WikiText-103 test Ppl").paper
    )
    assert (
        t10.cell("S16-L6", "Renorm. dev").paper == t1.cell("S16-L6", "WikiText-103 dev Ppl").paper
    )
