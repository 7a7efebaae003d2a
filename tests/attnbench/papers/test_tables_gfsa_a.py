"""GFSA Figure 1, Tables 1-20 and Figure 3 as data: spot checks of the paper's numbers, the
quoted marks, the corrections, and the cross-table identities the paper's text relies on."""

import re
import statistics

import pytest

from attnbench import config as config_lib
from attnbench.papers import tables
from configs.tables import gfsa_table12

KEYS = ["gfsa.fig1", "gfsa.fig3"] + [f"gfsa.table{i}" for i in range(1, 21) if i != 19]

# Every `needs` of the tables nothing of which runs is one of these phrasings (the same missing
# piece, the same words).
NEEDS_PATTERNS = [
    r"the GLUE task \(language domain\) and an? (BERT|ALBERT|RoBERTa)-base encoder, not built yet"
    r"(; the ContraNorm layer, not implemented)?",
    r"the LibriSpeech (100h|960h) ASR task \(speech domain\) and a (Transformer|Branchformer) ASR "
    r"model, not built yet",
    r"the Devign defect-detection task \(code domain\) and a \S+ model, not built yet",
]
# GFSA Table 6's cells that do not run: the tasks (superpixels, OGB) and Graph-ViT.
TABLE6_NEEDS = (
    r"(the (MNIST superpixel|CIFAR10 superpixel|ogbg-molhiv|ogbg-moltox21) task|a Graph-ViT model"
    r"|the (MNIST superpixel|CIFAR10 superpixel|ogbg-molhiv|ogbg-moltox21) task and a Graph-ViT "
    r"model) \(graphs domain\), not built yet"
)


def _column(table, column, rows=None):
    return [table.cell(r, column).paper for r in rows or table.rows]


def test_every_table_is_there_and_table19_is_not():
    names = tables.names()
    assert set(KEYS) <= set(names)
    assert "gfsa.table19" not in names  # ASR hyper-parameters only: no results


RUNNABLE = ("gfsa.table4", "gfsa.table5", "gfsa.table12", "gfsa.table13", "gfsa.table14")
RUNNABLE += ("gfsa.table6", "gfsa.table20", "gfsa.table2", "gfsa.table11")
# ImageNet-1k: the DeiT-S / CaiT-S / Swin-S recipes (configs/vision/imagenet.py); Figure 1's bars
# whose two cells run name the command (`elsewhere`)
RUNNABLE += ("gfsa.table3", "gfsa.table15", "gfsa.table16", "gfsa.fig3", "gfsa.fig1")
# GLUE: configs/language/glue.py (BERT / RoBERTa / ALBERT, with or without GFSA; Table 9's exact
# A^K, Table 10's K sweep)
RUNNABLE += ("gfsa.table1", "gfsa.table9", "gfsa.table10")
# The ContraNorm setting: DeiT-T / DeiT-S at 12, 16, 24 layers (configs/vision/imagenet.py)
RUNNABLE += ("gfsa.table17", "gfsa.table18")


@pytest.mark.parametrize("key", [k for k in KEYS if k not in RUNNABLE])
def test_nothing_is_runnable_yet_and_every_cell_says_what_it_needs(key):
    table = tables.load(key)
    tables.validate(table)
    for cell in table.cells:
        assert not cell.runnable and cell.elsewhere is None
        assert any(re.fullmatch(p, cell.needs) for p in NEEDS_PATTERNS), cell.needs


def test_table1_glue_numbers_and_averages():
    t = tables.load("gfsa.table1")
    assert t.cell("BERT-base", "CoLA").paper == 56.79
    assert t.cell("RoBERTa-base + GFSA", "CoLA").paper == 64.11
    assert t.cell("ALBERT-base", "MNLI-mm").paper == 84.37  # "85.37/84.37" split in two
    cn = t.cell("ALBERT-base + ContraNorm", "RTE")
    assert cn.needs is None and cn.config == "language/glue.py:task=rte,encoder=albert,contranorm=1"
    assert t.cell("ALBERT-base", "RTE").config == "language/glue.py:task=rte,encoder=albert"
    assert all(c.quoted is None and c.scale == 100 for c in t.cells)  # the authors ran them all
    for row in t.rows:
        nine = [t.cell(row, c).paper for c in t.columns if c != "Avg"]
        assert t.cell(row, "Avg").paper == pytest.approx(statistics.mean(nine), abs=0.006)


def test_table10_shifted_rows_are_corrected_and_table1_is_its_column_maximum():
    t10 = tables.load("gfsa.table10")
    assert t10.cell("K=9", "MNLI-mm").paper == 85.04  # printed last, under RTE
    assert t10.cell("K=9", "QNLI").paper == 91.67
    assert t10.cell("K=10", "RTE").paper == 68.59
    noted = {(c.row, c.column) for c in t10.cells if c.note}
    assert noted == {(k, c) for k in ("K=9", "K=10") for c in ("MNLI-mm", "QNLI", "RTE")}
    assert "printed under RTE" in t10.cell("K=9", "MNLI-mm").note
    t1 = tables.load("gfsa.table1")
    for column in t10.columns:
        assert t1.cell("BERT-base + GFSA", column).paper == max(_column(t10, column))


def test_table9_repeats_table1_and_adds_the_exact_power():
    t1, t9 = tables.load("gfsa.table1"), tables.load("gfsa.table9")
    for column in t1.columns:
        assert t9.cell("BERT-base", column).paper == t1.cell("BERT-base", column).paper
        approx = t9.cell("BERT-base + GFSA (approximated A^K)", column).paper
        assert approx == t1.cell("BERT-base + GFSA", column).paper
    assert t9.cell("BERT-base + GFSA (actual A^K)", "Avg").paper == 83.39


def test_table9_cells_share_table1_runs_and_the_exact_row_runs_gfsa_exact():
    t1, t9 = tables.load("gfsa.table1"), tables.load("gfsa.table9")
    tables.validate(t9)
    approx, exact = "BERT-base + GFSA (approximated A^K)", "BERT-base + GFSA (actual A^K)"
    same = {"BERT-base": "BERT-base", approx: "BERT-base + GFSA"}
    for column in t9.columns:
        for row, row1 in same.items():  # the identical string: one run serves both tables
            assert t9.cell(row, column).config == t1.cell(row1, column).config
            assert t9.cell(row, column).metric == t1.cell(row1, column).metric
        if column == "Avg":
            for row in t9.rows:
                assert t9.cell(row, column).config is None
                assert t9.cell(row, column).mean_of == t1.cell("BERT-base", column).mean_of
            continue
        power = t9.cell(exact, column)
        assert power.config == t1.cell("BERT-base + GFSA", column).config + ",exact=1"
        a = config_lib.load(t9.cell(approx, column).config + ",preset=smoke").attention
        p = config_lib.load(power.config + ",preset=smoke").attention
        assert (a.name, p.name) == ("gfsa", "gfsa_exact")
        assert (p.order, p.w0) == (a.order, a.w0)  # the same K and w_0 as the approximation
    assert sum(c.config is not None for c in t9.cells) == 27


def test_table10_cells_run_their_k_and_share_table1_runs_at_the_recipes_k():
    t1, t10 = tables.load("gfsa.table1"), tables.load("gfsa.table10")
    tables.validate(t10)
    shared = 0
    for c in t10.cells:
        k = int(c.row.removeprefix("K="))
        config = config_lib.load(c.config + ",preset=smoke")
        assert config.attention.name == "gfsa" and config.attention.order == k
        assert c.metric == t1.cell("BERT-base + GFSA", c.column).metric
        gfsa1 = t1.cell("BERT-base + GFSA", c.column).config
        if config_lib.load(gfsa1 + ",preset=smoke").attention.order == k:
            assert c.config == gfsa1  # the identical string: one run serves both tables
            shared += 1
        else:
            assert c.config == f"{gfsa1},order={k}"
    assert shared == len(t10.columns)  # one K per column is the recipe's
    assert t10.cell("K=5", "RTE").config == t1.cell("BERT-base + GFSA", "RTE").config
    assert t10.cell("K=8", "RTE").config.endswith(",order=8")  # the tie: K = 5 is the recipe's


def test_gpt2_tables():
    t2, t11 = tables.load("gfsa.table2"), tables.load("gfsa.table11")
    assert t2.higher_is_better == {c: False for c in t2.columns}
    assert t2.cell("GPT2", "Avg").paper == 18.806 and t2.cell("GPT2", "PTB").scale == 1
    gfsa_rows = [r for r in t11.rows if "K=" in r]
    for column in t11.columns:
        assert t2.cell("GPT2 + GFSA", column).paper == min(_column(t11, column, gfsa_rows))
        assert t2.cell("GPT2", column).paper == t11.cell("GPT2", column).paper
    assert t11.plot == "lines"
    # every cell fine-tunes GPT-2 with configs/language/gpt2.py (Avg: the mean of the three)
    recipe = "language/gpt2.py"
    assert t2.cell("GPT2", "PTB").config == f"{recipe}:dataset=ptb"
    assert (
        t2.cell("GPT2 + GFSA", "WikiText-103").config == f"{recipe}:dataset=wikitext-103,attn=gfsa"
    )
    assert t2.cell("GPT2", "Avg").mean_of == ("PTB", "WikiText-2", "WikiText-103")
    # K=9 is the recipe's own K for WikiText-2: the same run as Table 2's GFSA cell
    assert (
        t11.cell("GPT2 + GFSA (K=9)", "WikiText-2").config
        == t2.cell("GPT2 + GFSA", "WikiText-2").config
    )
    assert t11.cell("GPT2 + GFSA (K=4)", "PTB").config == f"{recipe}:dataset=ptb,attn=gfsa,order=4"
    assert sum(c.runnable for c in t11.cells) == 27
    assert t2.cell("GPT2", "#Params (M)").paper == 117.0


@pytest.mark.slow
def test_gpt2_parameter_cells_count_the_recipes_model():
    """GPT-2 small from configs/language/gpt2.py: 124,439,808 (the "117M"), GFSA 144 more."""
    t2 = tables.load("gfsa.table2")
    params = {row: tables.compute(t2.cell(row, "#Params (M)")) for row in t2.rows}
    assert params == {"GPT2": 124.439808, "GPT2 + GFSA": pytest.approx(124.439952)}


def test_imagenet_quoted_marks():
    t3 = tables.load("gfsa.table3")
    assert "DeiT" in t3.cell("DeiT-S (12L)", "Top-1 Acc").quoted
    assert "CaiT" in t3.cell("CaiT-S (24L)", "Top-1 Acc").quoted
    assert "Wang" in t3.cell("DeiT-S + AttnScale (24L)", "Top-1 Acc").quoted
    assert t3.cell("Swin-S", "Top-1 Acc").quoted is None  # 82.9: the authors' run
    assert all(t3.cell(r, "Top-1 Acc").quoted is None for r in t3.rows if "GFSA" in r)
    assert "AttnScale method" in t3.cell("DeiT-S + AttnScale (12L)", "Top-1 Acc").needs
    t15 = tables.load("gfsa.table15")
    for row in t3.rows:  # Table 15 holds Table 3, with the same marks
        assert t15.cell(row, "Top-1 Acc").paper == t3.cell(row, "Top-1 Acc").paper
        assert bool(t15.cell(row, "Top-1 Acc").quoted) == bool(t3.cell(row, "Top-1 Acc").quoted)
    assert "ResNet" in t15.cell("ResNet-152", "Top-1 Acc").quoted
    assert t15.cell("DeiT-S + GFSA (12L)", "Top-1 gain (pts)").paper == 1.3
    assert t15.cell("DeiT-S (12L)", "Top-1 gain (pts)") is None
    t16 = tables.load("gfsa.table16")
    assert all(bool(c.quoted) == ("GFSA" not in c.row) for c in t16.cells)
    assert t16.cell("FNet-XS", "Top-5 Acc") is None  # "-" in the paper
    assert t16.cell("DeiT-S + GFSA", "Top-5 Acc").paper == 95.4


def test_table12_flops_and_throughput_are_not_the_speed_tables():
    t = tables.load("gfsa.table12")
    assert t.cell("DeiT-S + GFSA (24L)", "FLOPs (G)").paper == 9.10
    assert t.cell("Swin-S + GFSA", "Throughput (img/s)").paper == 714.60
    assert t.cell("CaiT-S + GFSA (24L)", "Top-1 Acc").paper == 82.8
    throughput = [c for c in t.cells if c.column.startswith("Throughput")]
    assert len(throughput) == 8
    for c in throughput:  # timed on the row's own recipe (inference), not trained
        assert not c.runnable and c.needs is None and "timing_gfsa_vision" in c.elsewhere
        assert c.measure_args == dict(
            config=gfsa_table12.CONFIG[c.row], mode="inference", unit="img/s", batch=256
        )
    assert t.higher_is_better["FLOPs (G)"] is False


def test_vision_k_sweeps():
    t13, t14 = tables.load("gfsa.table13"), tables.load("gfsa.table14")
    assert _column(t13, "Top-1 Acc") == [79.27, 81.12, 80.86, 81.07]
    assert _column(t14, "Top-1 Acc") == [82.54, 82.65, 82.84]
    t17, t18 = tables.load("gfsa.table17"), tables.load("gfsa.table18")
    for model in ("DeiT-T", "DeiT-S"):
        sweep = [r for r in t18.rows if r.startswith(model)]
        for column in t17.columns:
            assert t17.cell(f"{model} + GFSA", column).paper == max(_column(t18, column, sweep))
    assert t18.cell("DeiT-S + GFSA (K=5)", "12 layers") is None  # not run
    assert "3.30%" in t17.cell("DeiT-S + GFSA", "16 layers").note


def test_graph_tables():
    t4, t20 = tables.load("gfsa.table4"), tables.load("gfsa.table20")
    assert _column(t4, "MAE") == _column(t20, "MAE") == [0.1240, 0.1189]
    assert [t20.cell(r, "MAE").paper_std for r in t20.rows] == [0.006, 0.002]
    assert t4.higher_is_better["MAE"] is False and any("Table 4" in n for n in t20.notes)
    t5 = tables.load("gfsa.table5")
    assert t5.cell("Graphormer", "PCQM4M Train").paper == 0.0535
    assert "7.23%" in t5.cell("Graphormer + GFSA", "PCQM4M Validate").note
    # Runnable on the official files: ZINC-12k (Graphormer-SLIM) and PCQM4M / v2 (base).
    for t in (t4, t20, t5):
        tables.validate(t)
        assert all(c.runnable for c in t.cells)
    assert t4.cell("Graphormer + GFSA", "MAE").config == ("graphs/zinc.py:attn=gfsa")
    assert t5.cell("Graphormer", "PCQM4M Train").metric == "train_last.mae"
    assert t5.cell("Graphormer + GFSA", "PCQM4Mv2 Validate").config == (
        "graphs/pcqm.py:version=v2,attn=gfsa"
    )
    params = t20.cell("Graphormer + GFSA", "#Params (M)")
    assert params.paper == 0.5 and params.exact == "attnbench.papers.exact:model_params_m"
    assert params.exact_args == {"config": "graphs/zinc.py:attn=gfsa"}
    t6 = tables.load("gfsa.table6")
    tables.validate(t6)
    runnable = {(c.row, c.column) for c in t6.cells if c.runnable}
    gps_columns = ("Peptides-func AP", "Peptides-struct MAE", "ZINC MAE")
    assert runnable == {(r, c) for r in ("GPS", "GPS + GFSA") for c in gps_columns}
    assert t6.cell("GPS + GFSA", "ZINC MAE").config == ("graphs/zinc.py:model=gps,attn=gfsa")
    assert all(c.runnable or re.fullmatch(TABLE6_NEEDS, c.needs) for c in t6.cells)
    assert t6.cell("GPS", "MNIST Acc").needs == (
        "the MNIST superpixel task (graphs domain), not built yet"
    )
    assert (
        t6.cell("Graph-ViT", "ZINC MAE").needs == "a Graph-ViT model (graphs domain), not built yet"
    )
    assert t6.cell("GPS", "Molhiv ROCAUC") is None  # "-" in the paper
    assert t6.cell("Graph-ViT", "ZINC MAE").paper_std == 0.0047
    assert t6.cell("Graph-ViT", "Peptides-func AP").quoted is None  # the † cell: their run
    assert "Graph-ViT" in t6.cell("Graph-ViT", "MNIST Acc").quoted
    assert t6.cell("GPS + GFSA", "ZINC MAE").quoted is None
    assert t6.higher_is_better["Peptides-struct MAE"] is False
    assert t6.higher_is_better["Molhiv ROCAUC"] is True


def test_asr_and_code_tables():
    t7 = tables.load("gfsa.table7")
    assert t7.cell("Transformer + GFSA", "100h test-other").paper == 24.30
    assert "25.30" in t7.cell("Transformer + GFSA", "100h test-other").note
    assert "4.76%" in t7.cell("Transformer + GFSA", "960h test-clean").note
    assert t7.higher_is_better == {c: False for c in t7.columns}
    t8 = tables.load("gfsa.table8")
    for row in (r for r in t8.rows if "GFSA" in r):
        base = row.removesuffix(" + GFSA")
        acc, base_acc = t8.cell(row, "Accuracy").paper, t8.cell(base, "Accuracy").paper
        gain = t8.cell(row, "Improvement (%)")
        computed = 100 * (acc - base_acc) / base_acc
        if gain.note:  # CodeBERT 0.12 (0.28) and PLBART 0.52 (0.53): misprinted rates
            assert abs(round(computed, 2) - gain.paper) >= 0.01 and f"{computed:.2f}%" in gain.note
        else:
            assert round(computed, 2) == gain.paper
    assert {c.row for c in t8.cells if c.note} == {"CodeBERT + GFSA", "PLBART + GFSA"}


def test_figures():
    f1 = tables.load("gfsa.fig1")
    printed = {r.split(" (")[0]: f1.cell(r, "Improvement (%)").paper for r in f1.rows}
    assert printed == {
        "Language understanding": 6.25,
        "Causal language modelling": 0.31,
        "Speech recognition": 4.55,
        "Image classification": 1.63,
        "Code classification": 2.40,
        "Graph regression": 4.03,
    }
    notes = {r.split(" (")[0]: f1.cell(r, "Improvement (%)").note for r in f1.rows}
    assert "0.32%" in notes["Causal language modelling"] and "4.11%" in notes["Graph regression"]
    assert "4.76%" in notes["Speech recognition"] and notes["Image classification"] is None
    f3 = tables.load("gfsa.fig3")
    assert _column(f3, "Runtime (s/epoch)") == [551, 814, 595]
    assert _column(f3, "Top-1 Acc") == [79.8, 81.1, 81.0]
    assert f3.higher_is_better["Runtime (s/epoch)"] is False
    if "gfsa.table39" in tables.names():  # the other helper's duplicate of Figure 3
        t39 = tables.load("gfsa.table39")
        assert sorted(c.paper for c in t39.cells) == sorted(c.paper for c in f3.cells)


def test_table12_sizes_are_computed_and_the_top1_cells_train_the_vision_recipes():
    t = tables.load("gfsa.table12")
    tables.validate(t)
    for row in ("DeiT-S (12L)", "DeiT-S + GFSA (24L)", "Swin-S", "Swin-S + GFSA"):
        for column in ("#Params (M)", "FLOPs (G)"):
            cell = t.cell(row, column)
            assert cell.exact and cell.exact_args["config"].startswith("vision/imagenet")
    assert t.cell("DeiT-S + GFSA (12L)", "Top-1 Acc").config.endswith("model=deit_s,attn=gfsa")
    assert t.cell("DeiT-S (12L)", "#Params (M)").paper == 22.0
    for row in ("CaiT-S (24L)", "CaiT-S + GFSA (24L)"):
        assert (
            t.cell(row, "#Params (M)")
            .exact_args["config"]
            .endswith("model=cait_s24" + (",attn=gfsa" if "GFSA" in row else ""))
        )
    assert t.cell("CaiT-S + GFSA (24L)", "Top-1 Acc").config.endswith("model=cait_s24,attn=gfsa")
    assert not t.cell("CaiT-S (24L)", "Throughput (img/s)").runnable


@pytest.mark.parametrize(
    ("key", "model", "ks"),
    [("gfsa.table13", "deit_s", (2, 3, 4, 5)), ("gfsa.table14", "cait_s24", (2, 3, 4))],
)
def test_k_sweeps_run_the_recipe_with_each_k(key, model, ks):
    t = tables.load(key)
    tables.validate(t)
    for k in ks:
        config = t.cell(f"K={k}", "Top-1 Acc").config
        assert config.endswith(f"model={model},attn=gfsa,order={k}")
        loaded = config_lib.load(config)
        assert loaded.attention.order == k
        assert loaded.attention.talking_heads == (model == "cait_s24")


def test_imagenet_tables_train_table12s_recipes_and_name_what_else_they_need():
    t3, t15, t16 = (tables.load(f"gfsa.table{n}") for n in (3, 15, 16))
    for t in (t3, t15, t16):
        tables.validate(t)
    # Tables 3 and 15: the backbone and GFSA rows (quoted ones too) run Table 12's recipes
    for t in (t3, t15):
        runnable = {c.row for c in t.cells if c.runnable}
        assert runnable == set(gfsa_table12.CONFIG)
        for row, config in gfsa_table12.CONFIG.items():
            assert t.cell(row, "Top-1 Acc").config == config
    assert t3.cell("DeiT-S (12L)", "Top-1 Acc").quoted  # quoted, and still run
    assert t3.cell("CaiT-S + GFSA (24L)", "Top-1 Acc").config.endswith("model=cait_s24,attn=gfsa")
    # the ContraNorm rows: the backbone rows' recipes with contranorm=1 (quoted, and still run)
    for depth, model in ((12, "deit_s"), (24, "deit_s24")):
        row = f"DeiT-S + ContraNorm ({depth}L)"
        for t in (t3, t15):
            cell = t.cell(row, "Top-1 Acc")
            assert cell.needs is None and cell.quoted and "ContraNorm" in cell.quoted
            assert cell.config == f"vision/imagenet.py:model={model},contranorm=1"
        loaded = config_lib.load(t3.cell(row, "Top-1 Acc").config)
        assert loaded.model.encoder == "transformer_contranorm"
        assert (loaded.model.num_layers, loaded.model.dropout) == (depth, 0.2 if depth == 24 else 0)
        assert loaded.model.contranorm_scale == 0.01
    assert t3.cell("DeiT-S + AttnScale (24L)", "Top-1 Acc").needs == (
        "the AttnScale method on the 24-layer DeiT-S, not implemented"
    )
    assert t15.cell("DeiT-S + HAT (12L)", "Top-1 Acc").needs == (
        "the HAT method on the 12-layer DeiT-S, not implemented"
    )
    assert "model=grf_vit" in t15.cell("ViT-B/16", "Top-1 Acc").needs
    assert t15.cell("ResNet-152", "Top-1 Acc").needs.endswith("not built yet")
    gain = t15.cell("DeiT-S + GFSA (12L)", "Top-1 gain (pts)")
    assert not gain.runnable and gain.needs == gfsa_table12.GAIN_NEEDS
    # Table 16: the 12-layer DeiT-S rows, top-1 and top-5 from the same runs
    for row, arg in (("DeiT-S", ""), ("DeiT-S + GFSA", ",attn=gfsa")):
        for column, metric in (("Top-1 Acc", "accuracy"), ("Top-5 Acc", "top5_accuracy")):
            cell = t16.cell(row, column)
            assert cell.config == "vision/imagenet.py:model=deit_s" + arg
            assert cell.metric == f"test_best.{metric}"
    assert {c.row for c in t16.cells if c.runnable} == {"DeiT-S", "DeiT-S + GFSA"}
    assert "NeuTRENO method" in t16.cell("DeiT-S + NeuTRENO", "Top-1 Acc").needs
    # Tables 17 / 18: the ContraNorm setting, DeiT-T / DeiT-S with depth= (and contranorm=1)
    t17 = tables.load("gfsa.table17")
    assert t17.cell("DeiT-S", "12 layers").config == "vision/imagenet.py:model=deit_s,depth=12"
    assert t17.cell("DeiT-S + GFSA", "16 layers").config.endswith("depth=16,attn=gfsa,order=2")
    assert t17.cell("DeiT-T + ContraNorm", "24 layers").config.endswith("depth=24,contranorm=1")


def test_figure1_bars_name_the_runs_of_their_two_cells():
    f1 = tables.load("gfsa.fig1")
    tables.validate(f1)
    elsewhere = {r.split(" (")[0]: f1.cell(r, "Improvement (%)").elsewhere for r in f1.rows}
    assert elsewhere["Image classification"].startswith(
        "python -m scripts.reproduce gfsa.table3 --cells 'DeiT-S (12L)' 'DeiT-S + GFSA (12L)'"
    )
    assert elsewhere["Causal language modelling"].startswith(
        "python -m scripts.reproduce gfsa.table2 --cells GPT2/PTB 'GPT2 + GFSA/PTB'"
    )
    assert elsewhere["Graph regression"].startswith("python -m scripts.reproduce gfsa.table4 ")
    assert elsewhere["Language understanding"].startswith(
        "python -m scripts.reproduce gfsa.table1 --cells RoBERTa-base/CoLA "
        "'RoBERTa-base + GFSA/CoLA'"
    )
    for c in f1.cells:
        assert not c.runnable
        assert bool(c.elsewhere) != bool(c.needs)
        assert c.elsewhere or any(re.fullmatch(p, c.needs) for p in NEEDS_PATTERNS), c.needs
    # the bars' source cells run in their tables
    t3 = tables.load("gfsa.table3")
    assert t3.cell("DeiT-S (12L)", "Top-1 Acc").runnable
    assert t3.cell("DeiT-S + GFSA (12L)", "Top-1 Acc").runnable


def test_figure3_and_table39_train_the_deit_s_top1_cells_and_time_the_same_recipes():
    f3, t39 = tables.load("gfsa.fig3"), tables.load("gfsa.table39")
    even = gfsa_table12.CONFIG["DeiT-S + GFSA (12L)"] + ",even=1"
    for t in (f3, t39):
        tables.validate(t)
        runnable = {(c.row, c.column): c.config for c in t.cells if c.runnable}
        assert runnable == {
            ("DeiT-S", "Top-1 Acc"): gfsa_table12.CONFIG["DeiT-S (12L)"],
            ("DeiT-S + GFSA", "Top-1 Acc"): gfsa_table12.CONFIG["DeiT-S + GFSA (12L)"],
            ("DeiT-S + GFSA_even", "Top-1 Acc"): even,
        }
        for row in t.rows:
            runtime = t.cell(row, "Runtime (s/epoch)")
            assert runtime.measure_args["config"] == runnable[(row, "Top-1 Acc")]
            assert runtime.measure_args["examples"] == "imagenet:train" and not runtime.needs
    config = config_lib.load(even)
    assert config.attention.name == "gfsa" and config.attention.even_layers_only
