"""Sliceformer's paper tables (configs/tables/sliceformer_table*.py): spot checks of the printed
numbers, the quoted marks, and which cells are runnable and how."""

import pytest

from attnbench.papers import tables

KEYS = [f"sliceformer.table{n}" for n in (2, 3, 4, 5, 6)]


@pytest.mark.parametrize("key", KEYS)
def test_table_loads_and_validates(key):
    table = tables.load(key)
    tables.validate(table)
    for cell in table.cells:
        assert cell.runnable or cell.needs or cell.elsewhere or cell.mean_of


def test_table2_lra_accuracy():
    t = tables.load("sliceformer.table2")
    assert len(t.rows) == 14 and len(t.columns) == 7
    assert t.cell("Transformer", "ListOps").paper == 36.37
    assert t.cell("Linear Trans.", "Text").paper == 65.90
    assert t.cell("Cosformer", "Retrieval").paper == 61.36
    assert t.cell("Sliceformer", "Path").paper == 82.04
    assert t.cell("Sliceformer", "Avg. Acc").paper == 58.91
    # Path-X prints FAIL: no number, a note, and still runnable where the mechanism exists
    fail = t.cell("Sliceformer", "Path-X")
    assert fail.paper is None and "FAIL" in fail.note
    assert fail.config == "lra/pathfinder.py:model=sliceformer,resolution=128"
    # the Sinkhorn average is inconsistent with its five scores (our arithmetic)
    assert t.cell("Sinkhorn Trans.", "Avg. Acc").paper == 51.29
    assert "51.48" in t.cell("Sinkhorn Trans.", "Avg. Acc").note
    # quoted baselines: LRA paper and cosFormer; Sinkformer and Sliceformer are the authors' runs
    assert "LRA" in t.cell("Performer", "Image").quoted
    assert "cosFormer" in t.cell("Cosformer", "ListOps").quoted
    assert t.cell("Sinkformer", "ListOps").quoted is None
    assert t.cell("Sliceformer", "ListOps").quoted is None
    # rows -> configs
    assert t.cell("Transformer", "Text").config == "lra/text.py:model=transformer"
    assert t.cell("Local Attention", "Image").config == (
        "lra/image.py:model=transformer,attn=local"
    )
    assert t.cell("Sliceformer", "ListOps").config == "lra/listops.py:model=sliceformer"
    # every baseline row runs its mechanism in the LRA base recipe
    for row, name in {
        "Reformer": "reformer",
        "Sinkformer": "sinkformer",
        "Sparse Trans.": "sparse_transformer",
        "Sinkhorn Trans.": "sinkhorn",
        "Synthesizer": "synthesizer_random",
        "Longformer": "longformer",
        "BigBird": "bigbird",
        "Cosformer": "cosformer",
    }.items():
        assert t.cell(row, "Text").config == f"lra/text.py:model=transformer,attn={name}"
    assert not t.cell("Sliceformer", "Avg. Acc").runnable
    assert all(c.scale == 100 and c.metric == "test_best.accuracy" for c in t.cells)
    # every row has its mechanism: 14 rows x 6 task columns (Avg. Acc is derived)
    assert sum(c.runnable for c in t.cells) == 84
    assert {c.row for c in t.cells if c.runnable} == set(t.rows)


def test_table3_speed_memory_is_reproduced_by_speed_tables():
    t = tables.load("sliceformer.table3")
    assert t.cell("Sliceformer", "Speed 4K").paper == 16.25
    assert t.cell("Transformer", "Memory 3K (GB)").paper == 65.67
    oom = t.cell("Transformer", "Speed 4K")
    assert oom.paper is None and "OOM" in oom.note
    assert t.higher_is_better["Speed 1K"] is True
    assert t.higher_is_better["Memory 1K (GB)"] is False
    assert not any(c.runnable or c.quoted for c in t.cells)
    measured = {c.row for c in t.cells if c.elsewhere}
    assert measured == set(t.rows) and len(measured) == 14
    assert all("--tables sliceformer" in c.elsewhere for c in t.cells if c.elsewhere)
    assert sum(bool(c.elsewhere) for c in t.cells) == 14 * 8
    assert not any(c.needs for c in t.cells)


def test_table3_measured_cells_name_one_training_step_per_row_and_length():
    from attnbench.papers import speed

    t = tables.load("sliceformer.table3")
    module = __import__("configs.tables.sliceformer_table3", fromlist=["MEASURED"])
    measured = [c for c in t.cells if c.measure]
    assert {c.row for c in measured} == set(module.MEASURED) and len(measured) == 14 * 8
    for c in measured:
        assert c.measure == "attnbench.papers.speed:lra_text_step" and c.elsewhere
        length = {"1K": 1000, "2K": 2000, "3K": 3000, "4K": 4000}[c.column.split()[1]]
        assert c.measure_args == {"attn": module.MEASURED[c.row], "length": length}
    # the speed and the memory cell of a row and length share one measurement
    step, memory = t.cell("Sliceformer", "Speed 3K"), t.cell("Sliceformer", "Memory 3K (GB)")
    assert step.measure_args == memory.measure_args
    # full scale measures every row the paper has a number for
    assert set(module.MEASURED.values()) <= set(speed.SCALES["full"]["slice_mechanisms"])


def test_table4_sorting_variants():
    t = tables.load("sliceformer.table4")
    assert len(t.rows) == 7
    assert t.cell("Half-Half", "Image").paper == 45.80
    assert t.cell("Multi-permutation (K = 4)", "Path").paper == 74.06
    assert t.cell("Shuffle", "Image").paper == 10.00
    assert t.cell("Shuffle", "Avg. Acc").paper == 35.79
    # the default row is Table 2's Sliceformer (same config, same numbers)
    t2 = tables.load("sliceformer.table2")
    for column in t.columns:
        a, b = t.cell("Ascending (Default)", column), t2.cell("Sliceformer", column)
        assert (a.paper, a.config) == (b.paper, b.config)
    expected = {
        "Descending": "sliceformer_descend",
        "Half-Half": "sliceformer_half",
        "Multi-permutation (K = 2)": "sliceformer_perm2",
        "Multi-permutation (K = 4)": "sliceformer_perm4",
        "Max-exchange": "sliceformer_max_exchange",
        "Shuffle": "sliceformer_shuffle_independent",  # what the authors' code ran
    }
    for row, mech in expected.items():
        assert t.cell(row, "Image").config == f"lra/image.py:model=sliceformer,attn={mech}"
    assert "shared" in t.cell("Shuffle", "Text").note
    assert t.cell("Descending", "ListOps").note is None
    assert not any(c.quoted for c in t.cells)
    assert sum(c.runnable for c in t.cells) == 7 * 6


def test_table4_configs_really_swap_only_the_mechanism():
    from attnbench import config as config_lib

    t = tables.load("sliceformer.table4")
    base = config_lib.load(t.cell("Ascending (Default)", "Path").config + ",preset=paper")
    half = config_lib.load(t.cell("Half-Half", "Path").config + ",preset=paper")
    assert base.attention.name == "sliceformer" and half.attention.name == "sliceformer_half"
    assert base.model.to_dict() == half.model.to_dict()
    assert (base.seed, base.total_steps, base.optimizer.lr) == (
        half.seed,
        half.total_steps,
        half.optimizer.lr,
    )
    # on a padded task every variant sorts over padding like the fork (ignore_mask kept)
    for row in t.rows:
        padded = config_lib.load(t.cell(row, "ListOps").config + ",preset=paper")
        assert padded.attention.ignore_mask is True, row


def test_table5_trains_the_vision_recipes_and_computes_the_sizes_and_table6_the_graphs():
    t5 = tables.load("sliceformer.table5")
    assert t5.cell("ViT", "Tiny-ImageNet").paper == 52.74
    assert t5.cell("Sliceformer", "CIFAR-10").paper == 82.16
    config = t5.cell("Sliceformer", "CIFAR-10").config
    assert config == "vision/cifar10.py:model=sliceformer"
    size = t5.cell("ViT", "Size CIFAR-100 (M)")
    assert size.paper == 9.65 and size.exact == "attnbench.papers.exact:model_params_m"
    assert size.exact_args == {"config": "vision/cifar100.py:model=vit"}
    assert all(c.runnable for c in t5.cells)
    t6 = tables.load("sliceformer.table6")
    assert t6.cell("Sliceformer", "MAE").paper == 0.1308
    assert t6.cell("Graphormer", "MAE").scale == 1
    assert t6.higher_is_better["MAE"] is False
    assert all(c.runnable for c in t6.cells)
    assert t6.cell("Sliceformer", "MAE").config == (
        "graphs/pcqm.py:version=v1,attn=sliceformer_graph"
    )
    size = t6.cell("Sliceformer", "Size")
    assert size.paper == 32.91 and size.exact == "attnbench.papers.exact:model_params_m"
