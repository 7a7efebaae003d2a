"""SAMSA Tables 2-6 as data: spot checks of the paper's numbers, quoted marks, and which cells
run (Table 1 is checked in test_paper_tables.py)."""

import pytest

from attnbench.papers import tables


def _runnable(t):
    return sum(c.runnable for c in t.cells)


def test_table2_lra_comparison():
    t = tables.load("samsa.table2")
    assert t.columns == ("ListOps", "Text", "Retrieval", "Image", "Pathfinder")
    assert t.cell("Performer", "ListOps").paper == 18.01
    assert t.cell("MEGA", "Pathfinder").paper == 96.01
    assert t.cell("Transformer", "Image").paper == 42.44  # Table 1 prints 42.94 (noted)
    assert "42.94" in t.cell("Transformer", "Image").note
    assert "garbled" in t.cell("S4", "ListOps").note
    # baselines are literature numbers, SAMSA rows the authors' own
    assert "LRA" in t.cell("BigBird", "Text").quoted
    assert "MEGA" in t.cell("Transformer", "Text").quoted
    assert t.cell("soft-SAMSA", "Text").quoted is None
    # runnable: LRA base Transformer with softmax / bigbird / reformer / performer / linformer,
    # Luna-256, S4, MEGA and both SAMSA rows
    assert t.cell("Linformer", "Image").config == ("lra/image.py:model=transformer,attn=linformer")
    assert t.cell("Transformer", "Text").config == "lra/text.py:model=transformer"
    assert t.cell("Reformer", "Text").config == "lra/text.py:model=transformer,attn=reformer"
    assert t.cell("BigBird", "Image").config == "lra/image.py:model=transformer,attn=bigbird"
    # Luna-256, S4 (as S4D, said on every S4 cell) and MEGA: their authors' LRA recipes
    assert t.cell("Luna-256", "Retrieval").config == "lra/retrieval.py:model=luna"
    assert t.cell("S4", "Text").config == "lra/text.py:model=s4d"
    assert t.cell("MEGA", "Pathfinder").config == "lra/pathfinder.py:model=mega"
    assert all(t.cell("S4", col).runnable and "S4D" in t.cell("S4", col).note for col in t.columns)
    assert "garbled" in t.cell("S4", "Image").note and "S4D" in t.cell("S4", "Image").note
    assert t.cell("MEGA", "Text").needs is None and t.cell("MEGA", "Text").note is None
    # each SAMSA cell runs the Table 1 column its number comes from
    assert t.cell("hard-SAMSA", "Retrieval").config == (
        "lra/retrieval.py:model=samsa,k=256,mode=hard"
    )
    assert t.cell("soft-SAMSA", "Pathfinder").config == (
        "lra/pathfinder.py:model=samsa,k=128,mode=soft"
    )
    assert "no soft Retrieval" in t.cell("soft-SAMSA", "Retrieval").note
    assert _runnable(t) == 10 * 5  # every row
    assert all(c.scale == 100 and c.metric == "test_best.accuracy" for c in t.cells)


def test_table2_samsa_numbers_match_table1_where_the_notes_say():
    t1, t2 = tables.load("samsa.table1"), tables.load("samsa.table2")
    for cell in t2.cells:
        if cell.row.endswith("SAMSA") and cell.note is None:
            source = t1.cell(cell.column, cell.config.split("k=")[1].replace(",mode=", " ").title())
            assert source.paper == cell.paper, cell


def test_table3_peptides_with_stds():
    t = tables.load("samsa.table3")
    c = t.cell("24-layer hard-SAMSA", "Peptides-func (AP)")
    assert (c.paper, c.paper_std, c.scale) == (0.7221, 0.0042, 1)
    assert t.cell("24-layer soft-SAMSA", "Peptides-struct (MAE)").paper_std == 0.0011
    assert t.cell("GINE", "Peptides-struct (MAE)").paper == 0.6346  # printed, flagged
    assert "0.3547" in t.cell("GINE", "Peptides-struct (MAE)").note
    assert "LRGB" in t.cell("GCN", "Peptides-func (AP)").quoted
    assert t.cell("24-layer hard-SAMSA", "Peptides-func (AP)").quoted is None
    assert t.higher_is_better["Peptides-struct (MAE)"] is False
    assert all(c.paper_std is not None for c in t.cells)
    # the SAMSA rows: Graph-Bridge on LRGB's official files; GraphGPS + LapPE: GPS's recipe
    assert _runnable(t) == 6
    assert t.cell("GraphGPS + LapPE", "Peptides-func (AP)").config == (
        "graphs/peptides.py:kind=func,model=gps"
    )
    assert t.cell("GraphGPS + LapPE", "Peptides-struct (MAE)").quoted
    assert t.cell("24-layer hard-SAMSA", "Peptides-func (AP)").config == (
        "graphs/peptides.py:kind=func,k=256,mode=hard"
    )
    assert all(c.runnable or "model (graphs domain), not implemented" in c.needs for c in t.cells)


def test_table4_pe_runtime_is_measured_elsewhere():
    t = tables.load("samsa.table4")
    assert [t.cell("Peptides-struct", c).paper for c in t.columns] == [73.0, 53.0, 35.0]
    assert t.cell("Peptides-struct", "LapPE").quoted and t.cell("Peptides-struct", "RWPE").quoted
    assert t.cell("Peptides-struct", "SAMSA (whole model)").quoted is None
    assert t.higher_is_better["Peptides-struct"] is False
    assert _runnable(t) == 0
    assert all(c.elsewhere == "python -m scripts.graph_pe_timing" for c in t.cells)


def test_table5_modelnet_inference_time():
    t = tables.load("samsa.table5")
    row = "Inference time (s)"
    assert t.cell(row, "PointNet").paper == 18.0 and "Kaba" in t.cell(row, "PointNet").quoted
    assert t.cell(row, "hard-SAMSA").paper is None  # printed "<1s"
    assert "<1s" in t.cell(row, "hard-SAMSA").note
    assert t.cell(row, "soft-SAMSA").paper == 1.0
    assert t.higher_is_better[row] is False
    assert _runnable(t) == 0  # a timing table: measured by scripts.samsa_table5, not trained
    assert all(c.elsewhere == "python -m scripts.samsa_table5" for c in t.cells)


def test_table6_point_clouds():
    t = tables.load("samsa.table6")
    assert t.cell("Point Transformer", "ModelNet40 OA").paper == 93.7
    assert t.cell("hard-SAMSA", "ShapeNetPart c. IoU").paper == 83.8
    assert t.cell("soft-SAMSA", "ShapeNetPart i. IoU") is None  # "-": soft was not run
    assert t.cell("Set Transformer", "ModelNet40 mAcc") is None
    assert "91.39" in t.cell("hard-SAMSA", "ModelNet40 OA").note
    assert "PointNet" in t.cell("PointNet", "ModelNet40 OA").quoted
    assert t.cell("hard-SAMSA", "ModelNet40 OA").quoted is None
    assert "part-segmentation model" in t.cell("DGCNN", "ShapeNetPart i. IoU").needs
    assert t.cell("hard-SAMSA", "ModelNet40 OA").config == (
        "pointcloud/modelnet40.py:k=512,mode=hard"
    )
    assert t.cell("PointNet", "ModelNet40 mAcc").config.endswith("model=pointnet")
    assert "not implemented" in t.cell("KPConv", "ModelNet40 OA").needs
    # hard-SAMSA x 4, soft-SAMSA x 2, PointNet and DGCNN x 2 ModelNet40 columns
    assert _runnable(t) == 4 + 2 + 2 + 2
    assert len(t.cells) == 15 * 4 - 16  # 16 "-" cells left out


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_tables_validate(n):
    t = tables.load(f"samsa.table{n}")
    tables.validate(t)
    assert t.source.startswith(f"SAMSA paper Table {n}")
