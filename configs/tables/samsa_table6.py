"""SAMSA Table 6: ModelNet40 classification (mAcc, OA %) and ShapeNetPart part segmentation
(class / instance mIoU %), SAMSA against point-cloud models.

Numbers: SAMSA (arXiv 2408.05391) Table 6 ("-" cells are left out). The baselines are literature
numbers of the cited works (our reading of the citations; the caption does not say so). Runnable:
the SAMSA rows (the point Transformer, k as noted below) and the PointNet / DGCNN ModelNet40 cells
(our baselines), on the official releases:

    python -m scripts.reproduce samsa.table6 --preset cpu --cells "ModelNet40 OA"

The other baselines are not implemented; each cell says what it needs.
"""

from __future__ import annotations

from attnbench.papers.tables import Table, grid

COLUMNS = ("ModelNet40 mAcc", "ModelNet40 OA", "ShapeNetPart c. IoU", "ShapeNetPart i. IoU")

RECIPE = {
    "ModelNet40": "pointcloud/modelnet40.py",
    "ShapeNetPart": "pointcloud/shapenetpart.py",
}
# The SAMSA rows' k is not stated; Table 1's best of each (the numbers here are those,
# truncated: Table 1 vs Table 6): hard ModelNet40 k=512, hard ShapeNetPart k=256, soft
# ModelNet40 k=256. PointNet / DGCNN: our baselines (pointcloud.models) trained with the SAMSA
# recipe's optimiser, classification only.
ARGS = {
    ("hard-SAMSA", "ModelNet40"): "k=512,mode=hard",
    ("hard-SAMSA", "ShapeNetPart"): "k=256,mode=hard",
    ("soft-SAMSA", "ModelNet40"): "k=256,mode=soft",
    ("PointNet", "ModelNet40"): "model=pointnet",
    ("DGCNN", "ModelNet40"): "model=dgcnn",
}
METRIC = {
    "ModelNet40 mAcc": "test_best.mean_class_accuracy",
    "ModelNet40 OA": "test_best.accuracy",
    "ShapeNetPart c. IoU": "test_best.class_miou",
    "ShapeNetPart i. IoU": "test_best.instance_miou",
}

# row: (numbers in COLUMNS order (None = "-": no cell, nothing we can run), quoted source (the
# cited work) or None)
ROWS = {
    "PointNet": ((86.2, 89.2, 80.4, 83.7), "Charles et al. 2017 (PointNet)"),
    "Set Transformer": ((None, 90.4, None, None), "Lee et al. 2019 (Set Transformer)"),
    "PointNet++": ((None, 91.9, 81.9, 85.1), "Qi et al. 2017 (PointNet++)"),
    "SpecGCN": ((None, 92.1, None, None), "Wang et al. 2018 (SpecGCN)"),
    "PointCNN": ((88.1, 92.2, 84.6, 86.1), "Li et al. 2018 (PointCNN)"),
    "DGCNN": ((90.2, 92.2, 82.3, 85.1), "Wang et al. 2019 (DGCNN)"),
    "PointWeb": ((89.4, 92.3, None, None), "Zhao et al. 2019 (PointWeb)"),
    "SpiderCNN": ((None, 92.4, 81.7, 85.3), "Xu et al. 2018 (SpiderCNN)"),
    "PointConv": ((None, 92.5, 82.8, 85.7), "Wu et al. 2019 (PointConv)"),
    "Point2Sequence": ((90.4, 92.6, None, 85.2), "Liu et al. 2019 (Point2Sequence)"),
    "KPConv": ((None, 92.9, 85.1, 86.4), "Thomas et al. 2019 (KPConv)"),
    "InterpCNN": ((None, 93.0, 84.0, 86.3), "Mao et al. 2019 (InterpCNN)"),
    "Point Transformer": ((90.6, 93.7, 83.7, 86.6), "Zhao et al. 2021 (Point Transformer)"),
    "hard-SAMSA": ((88.9, 91.3, 83.8, 85.8), None),
    "soft-SAMSA": ((88.7, 91.7, None, None), None),
}

NOTES = {
    ("hard-SAMSA", "ModelNet40 OA"): (
        "Table 1's best hard ModelNet40 is 91.39 (hard-512), truncated here (Table 1 vs Table 6)"
    ),
    ("hard-SAMSA", "ShapeNetPart i. IoU"): (
        "Table 1's best hard ShapeNetPart is 85.87 (hard-256), truncated here (Table 1 vs Table 6)"
    ),
    ("soft-SAMSA", "ModelNet40 OA"): "Table 1's soft-256 ModelNet40 is 91.72",
}


def _config(row: str, column: str) -> str | None:
    dataset = column.split()[0]
    args = ARGS.get((row, dataset))
    return None if args is None else f"{RECIPE[dataset]}:{args}"


def _needs(row: str, column: str) -> str | None:
    if _config(row, column) is not None:
        return None
    if row in ("PointNet", "DGCNN"):
        return f"a {row} part-segmentation model, not implemented (ours classify only)"
    return f"the {row} model, not implemented"


def get_table() -> Table:
    return Table(
        key="samsa.table6",
        caption=(
            "Experimental results on ModelNet40 dataset and part segmentation results on "
            "ShapeNetPart dataset against point-cloud specialized baselines (%)."
        ),
        source="SAMSA paper Table 6; arXiv 2408.05391",
        rows=tuple(ROWS),
        columns=COLUMNS,
        cells=grid(
            {row: numbers for row, (numbers, _) in ROWS.items()},
            COLUMNS,
            metric=lambda _, column: METRIC[column],
            scale=100,
            quoted=lambda row, _: ROWS[row][1],
            config=_config,
            needs=_needs,
            note=lambda row, column: NOTES.get((row, column)),
        ),
        notes=(
            "Baselines are quoted from the cited works (the caption does not say so; our reading "
            "of the citations).",
            "SAMSA: ModelNet40 6 layers, ShapeNetPart 8 layers (d 256, d_FFN 768, 8 heads, "
            "dropout 0.1, drop-path 0.1; lr 2e-3, weight decay 0.1, 600 epochs; Tables 7-8); the "
            "k of each SAMSA row is not stated. ShapeNetPart was run hard only (Table 1), hence "
            "no soft IoU. mAcc and c. IoU appear only in this table.",
            "The SAMSA numbers are Table 1's best runs truncated to one decimal (91.39 -> 91.3, "
            "85.87 -> 85.8; soft 91.72 -> 91.7) (Table 1 vs Table 6).",
        ),
    )
