"""GFSA Tables 21-40 as data: spot checks of the paper's numbers, markers, runnable cells and the
wording of what the other cells need."""

import pytest

from attnbench import config as config_lib
from attnbench.papers import tables

KEYS = [f"gfsa.table{n}" for n in range(21, 41)]


@pytest.mark.parametrize("key", KEYS)
def test_table_loads_validates_and_every_cell_is_runnable_or_says_what_it_needs(key):
    t = tables.load(key)
    tables.validate(t)
    assert t.source.startswith(f"GFSA paper Table {key.removeprefix('gfsa.table')};")
    for c in t.cells:
        # an Avg cell: the mean of runnable ones; a timing cell: timed on its recipe (measure)
        assert c.runnable or c.needs or c.mean_of or (c.measure and c.elsewhere)
        assert c.paper is not None  # every cell of these tables has a printed number
    runnable = sum(c.runnable for c in t.cells)
    # Table 37: GPT-2 fine-tuning (configs/language/gpt2.py), 3 rows x 3 datasets (+ Avg);
    # Table 25: the FLOPs of the 8 ImageNet recipes; Table 39: DeiT-S, + GFSA, + GFSA_even top-1;
    # Table 35: BERT-base, + GFSA, + GFSA_even on the nine GLUE columns (configs/language/glue.py)
    counts = {"gfsa.table40": 12, "gfsa.table21": 10, "gfsa.table37": 9}
    counts |= {"gfsa.table25": 8, "gfsa.table39": 3, "gfsa.table35": 27}
    assert runnable == counts.get(key, 0)
    # the timing cells of Tables 25, 26, 31, 32, 39 and 40 (`configs/tables/_gfsa_timing.py`)
    timed = {"gfsa.table25": 16, "gfsa.table26": 6, "gfsa.table31": 8, "gfsa.table32": 6}
    timed |= {"gfsa.table39": 3, "gfsa.table40": 24}
    assert sum(bool(c.measure) for c in t.cells) == timed.get(key, 0)


def test_table21_holds_means_and_stds_lower_is_better():
    t = tables.load("gfsa.table21")
    c = t.cell("Graphormer", "PCQM4M Train")
    assert (c.paper, c.paper_std, c.scale) == (0.0535, 0.038, 1.0)
    assert t.cell("Graphormer + GFSA", "PCQM4Mv2 Validate").paper == 0.0860
    assert t.cell("Graphormer + GFSA", "PCQM4Mv2 Validate").paper_std == 0.0
    assert not any(t.higher_is_better.values())
    train = t.cell("Graphormer", "PCQM4Mv2 Train")
    assert train.metric == "train_last.mae" and "version=v2" in train.config
    params = t.cell("Graphormer + GFSA", "#Params (M)")
    assert params.paper == 48.3 and params.exact == "attnbench.papers.exact:model_params_m"


def test_table22_clone_f1_and_the_misprinted_gain():
    t = tables.load("gfsa.table22")
    assert t.cell("CodeT5-small + GFSA", "Clone F1").paper == 94.94
    assert t.cell("CodeT5-base", "Clone F1").paper == 94.31
    assert "0.65%" in t.cell("CodeT5-base + GFSA", "Clone F1").note
    assert all(c.quoted is None for c in t.cells)


@pytest.mark.parametrize("key", [f"gfsa.table{n}" for n in (23, 24, 27, 28, 29, 30)])
def test_timing_tables_need_gpu_timings_and_lower_is_better(key):
    t = tables.load(key)
    assert all(c.needs.startswith("GPU timing of the paper's setting") for c in t.cells)
    assert t.higher_is_better and not any(t.higher_is_better.values())


def test_glue_timing_spot_checks_and_avg_is_the_rounded_mean():
    t23 = tables.load("gfsa.table23")
    assert t23.cell("BERT-BASE + GFSA", "MNLI-m/mm").paper == 2147
    assert t23.cell("ALBERT-BASE", "QQP").paper == 1506
    for row in t23.rows:
        times = [t23.cell(row, col).paper for col in t23.columns[:-1]]
        assert round(sum(times) / 8) == t23.cell(row, "Avg").paper
    t29 = tables.load("gfsa.table29")
    assert t29.cell("RoBERTa-BASE + GFSA", "QQP").paper == 50.4
    assert "rounded to whole" in t29.cell("BERT-BASE", "Avg").note
    assert t29.cell("ALBERT-BASE", "CoLA").needs == (
        "GPU timing of the paper's setting, which needs the CoLA dev-set evaluation of "
        "ALBERT-base (language/glue.py:task=cola,encoder=albert) timed on the authors' RTX A5000"
    )


def test_glue_timing_cells_name_the_runs_they_time_with_one_wording():
    """Tables 23, 29 and 36: the GLUE recipes exist (Tables 1 and 35's runs); each cell names the
    run it times and needs the paper's GPU timing of it (no run records seconds per epoch)."""
    t1, t35 = tables.load("gfsa.table1"), tables.load("gfsa.table35")
    t23, t29, t36 = (tables.load(f"gfsa.table{n}") for n in (23, 29, 36))
    head = "GPU timing of the paper's setting, which needs the "
    gpu = " on the authors' RTX A5000"
    rte = t1.cell("BERT-base + GFSA", "RTE").config
    assert t23.cell("BERT-BASE + GFSA", "RTE").needs == (
        f"{head}RTE fine-tuning of BERT-base + GFSA ({rte}) timed per training epoch{gpu}"
    )
    assert t36.cell("BERT-BASE + GFSA", "RTE").needs == t23.cell("BERT-BASE + GFSA", "RTE").needs
    even = t35.cell("BERT-BASE + GFSA_even", "QQP").config
    assert (
        even.endswith(",even=1") and f"({even})" in t36.cell("BERT-BASE + GFSA_even", "QQP").needs
    )
    # one MNLI column: the task=mnli run (MNLI-m's in Table 1)
    mnli = t1.cell("RoBERTa-base", "MNLI-m").config
    assert f"the MNLI dev-set evaluation of RoBERTa-base ({mnli})" in (
        t29.cell("RoBERTa-BASE", "MNLI-m/mm").needs
    )
    assert t23.cell("ALBERT-BASE", "Avg").needs == (
        f"{head}row's eight GLUE fine-tunings (its other columns) timed per training epoch{gpu}"
    )
    for t in (t23, t29, t36):
        for c in t.cells:
            assert c.needs.endswith(gpu) and "not built yet" not in c.needs
            if c.column != "Avg":
                assert "(language/glue.py:task=" in c.needs


def test_gpt2_tables_and_the_avg_that_does_not_add_up():
    t24 = tables.load("gfsa.table24")
    assert t24.cell("GPT2 + GFSA", "WikiText-103").paper == 17424.6
    assert "3307.7" in t24.cell("GPT2", "Avg").note
    assert t24.cell("GPT2", "PTB").needs == (
        "GPU timing of the paper's setting, which needs the PTB fine-tuning of the pretrained "
        "GPT-2 (configs/language/gpt2.py:dataset=ptb) on a GPU"
    )
    t37 = tables.load("gfsa.table37")
    assert t37.cell("GPT2 + GFSA_even", "PTB").config == (
        "language/gpt2.py:dataset=ptb,attn=gfsa,even=1"
    )
    assert t37.cell("GPT2 + GFSA", "WikiText-2").config == (
        "language/gpt2.py:dataset=wikitext-2,attn=gfsa"
    )
    assert t37.cell("GPT2", "Avg").mean_of == ("PTB", "WikiText-2", "WikiText-103")
    assert t37.cell("GPT2", "Avg").config is None
    assert t37.cell("GPT2 + GFSA_even", "PTB").paper == 19.453
    assert t37.cell("GPT2 + GFSA_even", "Avg").paper == 18.767
    assert not any(t37.higher_is_better.values())
    t38 = tables.load("gfsa.table38")
    assert t38.cell("GPT2 + GFSA_even", "WikiText-103").paper == 13761.4
    # GPT2 and GPT2 + GFSA rows repeat Table 24
    for row in ("GPT2", "GPT2 + GFSA"):
        for col in t24.columns:
            assert t38.cell(row, col).paper == t24.cell(row, col).paper


def test_glue_even_layers_tables():
    t35 = tables.load("gfsa.table35")
    assert "MNLI-m" in t35.columns and "MNLI-mm" in t35.columns  # "85.13/85.02" split in two
    assert t35.cell("BERT-BASE + GFSA_even", "MNLI-m").paper == 85.13
    assert t35.cell("BERT-BASE + GFSA_even", "MNLI-mm").paper == 85.02
    assert t35.cell("BERT-BASE + GFSA_even", "RTE").paper == 70.76
    for row in t35.rows:
        scores = [t35.cell(row, col).paper for col in t35.columns[:-1]]
        assert round(sum(scores) / 9, 2) == t35.cell(row, "Avg").paper
    t36 = tables.load("gfsa.table36")
    t23 = tables.load("gfsa.table23")
    for row in ("BERT-BASE", "BERT-BASE + GFSA"):
        for col in t23.columns:
            assert t36.cell(row, col).paper == t23.cell(row, col).paper
    assert t36.cell("BERT-BASE + GFSA_even", "Avg").paper == 553


def test_table35_cells_share_table1_runs_and_gfsa_even_runs_the_even_layers():
    t1, t35 = tables.load("gfsa.table1"), tables.load("gfsa.table35")
    same = {"BERT-BASE": "BERT-base", "BERT-BASE + GFSA": "BERT-base + GFSA"}
    for column in t35.columns:
        for row, row1 in same.items():  # the identical string: one run serves both tables
            assert t35.cell(row, column).config == t1.cell(row1, column).config
        for row in t35.rows:  # Table 1's metrics: the dev set after the last epoch
            assert t35.cell(row, column).metric == t1.cell("BERT-base", column).metric
            assert t35.cell(row, column).mean_of == t1.cell("BERT-base", column).mean_of
        even = t35.cell("BERT-BASE + GFSA_even", column)
        if column == "Avg":
            assert even.config is None and even.mean_of
            continue
        assert even.config == t1.cell("BERT-base + GFSA", column).config + ",even=1"
        e = config_lib.load(even.config + ",preset=smoke").attention
        a = config_lib.load(t1.cell("BERT-base + GFSA", column).config + ",preset=smoke").attention
        assert e.name == "gfsa" and e.even_layers_only and not a.even_layers_only
        assert (e.order, e.w0) == (a.order, a.w0)


def test_imagenet_tables():
    t25 = tables.load("gfsa.table25")
    assert t25.cell("DeiT-S + GFSA (24L)", "FLOPs (G)").paper == 9.10
    assert t25.cell("Swin-S + GFSA", "Throughput (img/s)").paper == 714.60
    assert t25.cell("CaiT-S (24L)", "Runtime (s/epoch)").paper == 1530
    assert t25.higher_is_better == {
        "FLOPs (G)": False,
        "Throughput (img/s)": True,
        "Runtime (s/epoch)": False,
    }
    flops = t25.cell("DeiT-S (12L)", "FLOPs (G)")  # as Table 12's: the authors' counter
    assert flops.exact == "attnbench.papers.exact:gfsa_code_gflops"
    assert flops.exact_args == {"config": "vision/imagenet.py:model=deit_s"}
    runtime = t25.cell("Swin-S + GFSA", "Runtime (s/epoch)")
    assert runtime.measure_args == dict(
        config="vision/imagenet.py:model=swin_s,attn=gfsa",
        mode="train",
        unit="s/epoch",
        batch=256,
        examples="imagenet:train",
    )
    assert t25.cell("Swin-S", "Throughput (img/s)").measure_args["mode"] == "inference"
    inference = tables.load("gfsa.table31").cell("CaiT-S (24L)", "Inference Time (s)")
    assert inference.measure_args["config"].endswith("model=cait_s24")
    assert inference.measure_args["examples"] == "imagenet:val"
    assert (
        tables.load("gfsa.table31").cell("CaiT-S + GFSA (24L)", "Inference Time (s)").paper == 107
    )
    t39 = tables.load("gfsa.table39")
    assert t39.cell("DeiT-S", "Top-1 Acc").quoted == "Touvron et al. 2021 (DeiT)"
    assert t39.cell("DeiT-S + GFSA_even", "Top-1 Acc").quoted is None
    assert t39.cell("DeiT-S + GFSA_even", "Runtime (s/epoch)").paper == 595
    # the runtimes repeat Table 25's 12-layer DeiT-S rows
    assert (
        t39.cell("DeiT-S + GFSA", "Runtime (s/epoch)").paper
        == t25.cell("DeiT-S + GFSA (12L)", "Runtime (s/epoch)").paper
    )


def test_graph_speech_and_code_timing_spot_checks():
    assert tables.load("gfsa.table26").cell("Graphormer + GFSA", "PCQM4M").paper == 896
    assert (
        tables.load("gfsa.table27").cell("Branchformer + GFSA", "LibriSpeech 960h").paper == 4999.3
    )
    t28 = tables.load("gfsa.table28")
    assert t28.cell("RoBERTa + GFSA", "Runtime (s/epoch)").paper == 537.79
    assert t28.cell("RoBERTa + GFSA", "Runtime (s/epoch)").note  # faster than the baseline
    t32 = tables.load("gfsa.table32")
    assert t32.cell("Graphormer + GFSA", "PCQM4Mv2").paper == 29
    assert tables.load("gfsa.table33").cell("Transformer + GFSA", "LibriSpeech 960h").paper == 343.3
    assert (
        tables.load("gfsa.table34").cell("CodeT5-base + GFSA", "Inference Time (s)").paper == 88.5
    )


def test_table40_runnable_cells_are_the_right_models():
    t = tables.load("gfsa.table40")
    expected = {
        "Transformer": ("", "softmax"),
        "Transformer + GFSA": ("attn=gfsa", "gfsa"),
        "Linformer": ("attn=linformer", "linformer"),
        "Efficient Attention + GFSA": ("", "gfsa_linear"),
        "YOSO-E": ("attn=yoso", "yoso"),
        "Efficient Attention": ("attn=efficient_attention", "efficient_attention"),
    }
    for row, (arg, mechanism) in expected.items():
        for task, path in (
            ("ListOps", "lra/listops.py"),
            ("Image", "lra/image.py"),
        ):
            c = t.cell(row, f"{task} Accuracy")
            assert c.runnable and c.config.startswith(path + ":") and arg in c.config
            assert (c.metric, c.scale) == ("test_best.accuracy", 100.0)
            config = config_lib.load(c.config + ",preset=smoke")
            assert config.attention.name == mechanism
    assert t.cell("Efficient Attention + GFSA", "ListOps Accuracy").config == (
        "lra/listops.py:model=gfsa"
    )
    # runtime and memory cells time the row's recipe (the one its accuracy cell trains)
    for c in t.cells:
        if not c.column.endswith("Accuracy"):
            assert not c.runnable and c.measure and c.scale == 1.0
            task = c.column.split()[0]
            assert c.measure_args["config"] == t.cell(c.row, f"{task} Accuracy").config
            assert t.higher_is_better[c.column] is False
    assert t.cell("Transformer + GFSA", "ListOps Runtime (s/1k steps)").paper == 635.8
    assert t.cell("Efficient Attention + GFSA", "ListOps Runtime (s/1k steps)").paper == 53.8
    assert t.cell("YOSO-E", "ListOps GPU (GB)").paper == 0.37
    assert t.cell("Transformer + GFSA", "Image GPU (GB)").paper == 11.20
    # Figure 4's "11.82x faster"
    assert round(635.8 / 53.8, 2) == 11.82
    assert any("4K" in n for n in t.notes)  # Image (4K) vs our 1,024 pixels
