"""SAMSA Table 1: SAMSA (k = 128 / 256 / 512, soft / hard) against full self-attention.

Numbers: SAMSA (arXiv 2408.05391) Table 1 ("-" cells placed by our reading of the table layout,
checked against the learning-curve legends of Figs. 2-4, App. E). Run one cell:

    python -m scripts.reproduce samsa.table1 --preset cpu --cells listops

The table's last row (inference speed at 1,024 tokens) is not a training cell: its cells name the
function that measures them (`attnbench.papers.speed:samsa_inference`), which
`python -m scripts.speed_tables --tables samsa` runs (results/bench/paper_samsa.md).
"""

from __future__ import annotations

from attnbench.papers.tables import Cell, Table

COLUMNS = ("128 Soft", "128 Hard", "256 Soft", "256 Hard", "512 Soft", "512 Hard", "Full SA")

# row: (config file or None, summary metric, scale, paper numbers in COLUMNS order (None = "-"))
ROWS = {
    "ListOps": (
        "lra/listops.py",
        "test_best.accuracy",
        100,
        (41.53, 41.13, 41.89, 40.57, 41.33, 40.88, 37.11),
    ),
    "Pathfinder": (
        "lra/pathfinder.py",
        "test_best.accuracy",
        100,
        (81.97, 71.83, 80.55, 69.71, 79.74, 72.28, 71.83),
    ),
    "Image": (
        "lra/image.py",
        "test_best.accuracy",
        100,
        (48.64, 48.24, 48.73, 47.38, 48.24, 46.75, 42.94),
    ),
    "Text": (
        "lra/text.py",
        "test_best.accuracy",
        100,
        (64.74, 65.42, 65.53, 65.42, 65.38, 65.42, 65.21),
    ),
    "Retrieval": (
        "lra/retrieval.py",
        "test_best.accuracy",
        100,
        (None, 82.05, None, 81.89, None, 81.81, 79.14),
    ),
    "Peptides-func (AP)": (
        "graphs/peptides.py",
        "test_best.ap",
        100,
        (72.01, 72.01, 71.42, 72.21, None, 72.45, 63.26),
    ),
    "Peptides-struct (MAE)": (
        "graphs/peptides.py",
        "test_best.mae",
        1,
        (0.2519, 0.2458, None, 0.2515, None, 0.2468, 0.2529),
    ),
    "ModelNet40": (
        "pointcloud/modelnet40.py",
        "test_best.accuracy",
        100,
        (91.11, 90.91, 91.72, 90.95, 91.35, 91.39, 91.07),
    ),
    "ShapeNetPart (IoU)": (
        "pointcloud/shapenetpart.py",
        "test_best.instance_miou",
        100,
        (None, 85.74, None, 85.87, None, 85.62, 85.1),
    ),
}

# Where the caption says the Full SA numbers come from (the authors did not run them).
FULL_SA_SOURCE = {
    "ListOps": "Ma et al. 2023b (MEGA)",
    "Pathfinder": "Ma et al. 2023b (MEGA)",
    "Image": "Ma et al. 2023b (MEGA)",
    "Text": "Ma et al. 2023b (MEGA)",
    "Retrieval": "Ma et al. 2023b (MEGA)",
    "Peptides-func (AP)": "Dwivedi et al. 2022 (LRGB)",
    "Peptides-struct (MAE)": "Dwivedi et al. 2022 (LRGB)",
    "ShapeNetPart (IoU)": "Yu et al. 2022 (PointBERT)",
    # ModelNet40's Full SA was run by the authors with the SAMSA hyper-parameters.
}

SPEED_ROW = "Inference Speed (1024 tokens)"
# The last row: inference speed relative to full self-attention (FlashAttention v2) on an A100,
# in COLUMNS order (Full SA prints 1x: the normalisation). Model, batch and precision not stated.
SPEED = (1.63, 2.17, 1.44, 1.62, 1.08, 1.44, 1.0)
SPEED_ELSEWHERE = "python -m scripts.speed_tables --tables samsa (results/bench/paper_samsa.md)"


def _args(column: str, row: str = "") -> str:
    """A cell's recipe arguments: LRA's SAMSA recipe; for Peptides Graph-Bridge on LRGB's
    official files; for ModelNet40 / ShapeNetPart the point Transformer on the official releases
    (the SAMSA encoder; Full SA: the same model with softmax attention)."""
    prefix = "model=samsa,"
    if row.startswith("Peptides"):
        kind = "func" if "func" in row else "struct"
        prefix = f"kind={kind},"
    elif row.startswith(("ModelNet40", "ShapeNetPart")):
        prefix = ""
    if column == "Full SA":
        return prefix + "attn=softmax"  # the SAMSA recipe with full softmax attention
    k, mode = column.split()
    return f"{prefix}k={k},mode={mode.lower()}"


def _speed_cell(column: str, paper: float) -> Cell:
    if column == "Full SA":
        args, note = {"attn": "softmax"}, "1x by definition (the normalisation)"
    else:
        k, mode = column.split()
        args, note = {"k": int(k), "mode": mode.lower()}, None
    return Cell(
        row=SPEED_ROW,
        column=column,
        paper=paper,
        metric="inference.speedup",
        scale=1,
        note=note,
        elsewhere=SPEED_ELSEWHERE,
        measure="attnbench.papers.speed:samsa_inference",
        measure_args={"length": 1024, **args},
    )


def get_table() -> Table:
    cells = []
    for row, (path, metric, scale, numbers) in ROWS.items():
        for column, paper in zip(COLUMNS, numbers, strict=True):
            quoted = FULL_SA_SOURCE.get(row) if column == "Full SA" else None
            if paper is None and quoted is None and path is None:
                continue  # "-" in the paper and nothing we can run
            cells.append(
                Cell(
                    row=row,
                    column=column,
                    paper=paper,
                    config=None if path is None else f"{path}:{_args(column, row)}",
                    metric=metric,
                    scale=scale,
                    quoted=quoted,
                )
            )
    cells += [_speed_cell(column, paper) for column, paper in zip(COLUMNS, SPEED, strict=True)]
    return Table(
        key="samsa.table1",
        caption=(
            "Performance of full self-attention compared to SAMSA with three sampling sizes and "
            "two sampling formulations (LRA accuracy %, LRGB AP / MAE, ModelNet40 accuracy %, "
            "ShapeNetPart IoU)."
        ),
        source="SAMSA paper Table 1; arXiv 2408.05391",
        rows=(*ROWS, SPEED_ROW),
        columns=COLUMNS,
        cells=tuple(cells),
        higher_is_better={row: "MAE" not in row for row in (*ROWS, SPEED_ROW)},
    )
