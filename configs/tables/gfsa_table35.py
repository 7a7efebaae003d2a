"""GFSA Table 35: BERT-base on GLUE with GFSA on all layers vs GFSA_even (GFSA on the
even-numbered layers only).

Numbers: GFSA (arXiv 2312.04234) Table 35 (App. T). Nothing here is runnable yet (no GLUE task, no
BERT encoder; GFSA_even itself exists as the `gfsa` mechanism's `even_layers_only=True`). List the
cells:

    python -m scripts.reproduce gfsa.table35 --list
"""

from __future__ import annotations

from attnbench.papers.tables import Table, grid

COLUMNS = ("CoLA", "SST-2", "MRPC", "QQP", "STS-B", "MNLI-m", "MNLI-mm", "QNLI", "RTE", "Avg")

# GLUE dev metrics (App. K.1): CoLA Matthews correlation, MRPC and QQP F1, STS-B
# Spearman, the others accuracy; Avg is the mean of the 9 numbers.
METRIC = {
    "CoLA": "val_best.mcc",
    "MRPC": "val_best.f1",
    "QQP": "val_best.f1",
    "STS-B": "val_best.spearman",
    "Avg": "derived.glue_avg",
}

ROWS = {  # percent, in COLUMNS order
    "BERT-BASE": (56.79, 93.81, 88.70, 88.32, 88.16, 84.96, 84.15, 91.63, 66.06, 82.51),
    "BERT-BASE + GFSA": (59.56, 94.15, 90.60, 88.46, 88.33, 85.12, 85.06, 91.95, 68.95, 83.58),
    "BERT-BASE + GFSA_even": (58.80, 93.69, 90.50, 88.47, 88.27, 85.13, 85.02, 91.65, 70.76, 83.59),
}

NEEDS = "the GLUE task (language domain) and a BERT-base encoder, not built yet"


def get_table() -> Table:
    return Table(
        key="gfsa.table35",
        caption="Comparison of performance using GFSA on all layers vs. GFSA_even on even "
        "layers for GLUE tasks.",
        source="GFSA paper Table 35; arXiv 2312.04234",
        rows=tuple(ROWS),
        columns=COLUMNS,
        cells=grid(
            ROWS,
            COLUMNS,
            metric=lambda _, column: METRIC.get(column, "val_best.accuracy"),
            needs=NEEDS,
        ),
        notes=(
            "The paper prints MNLI as one 'MNLI-m/mm' cell; it is split into two columns. "
            "#Params (110M) is a descriptive column, dropped. Avg is the mean of the 9 numbers.",
            "Metrics on the GLUE dev sets: CoLA Matthews correlation, MRPC and QQP F1, STS-B "
            "Spearman, the others accuracy (App. K.1).",
            "The BERT-BASE and BERT-BASE + GFSA rows repeat Table 1. The GFSA row is the "
            "per-column best K of Table 10 (selected on the dev sets it reports; our reading of "
            "Sec. 5.1 and App. K.1).",
            "GFSA_even: the paper does not say whether layers count from 0 or 1, nor which K the "
            "even layers use (Sec. 6, App. T); our `even_layers_only` counts from 0.",
        ),
    )
