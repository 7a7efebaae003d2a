"""GFSA Table 36: training time (seconds per epoch) of BERT-base on GLUE with GFSA on all layers
vs GFSA_even (even-numbered layers only).

Numbers: GFSA (arXiv 2312.04234) Table 36 (App. T). These are GPU timings of the paper's GLUE
fine-tuning: nothing here is runnable yet (no GLUE task, no BERT encoder). List the cells:

    python -m scripts.reproduce gfsa.table36 --list
"""

from __future__ import annotations

from attnbench.papers.tables import Table, grid

COLUMNS = ("CoLA", "SST-2", "MRPC", "QQP", "STS-B", "MNLI-m/mm", "QNLI", "RTE", "Avg")

ROWS = {  # seconds per epoch in COLUMNS order
    "BERT-BASE": (17, 182, 17, 1483, 24, 2004, 580, 18, 541),
    "BERT-BASE + GFSA": (19, 192, 19, 1571, 25, 2147, 621, 20, 577),
    "BERT-BASE + GFSA_even": (17, 185, 18, 1506, 24, 2061, 595, 18, 553),
}

NEEDS = (
    "GPU timing of the paper's setting, which needs the GLUE task (language domain) and a "
    "BERT-base encoder, not built yet"
)


def get_table() -> Table:
    return Table(
        key="gfsa.table36",
        caption="Comparison of training time (seconds per epoch) using GFSA on all layers vs. "
        "GFSA_even on even layers for GLUE tasks.",
        source="GFSA paper Table 36; arXiv 2312.04234",
        rows=tuple(ROWS),
        columns=COLUMNS,
        cells=grid(ROWS, COLUMNS, metric="train.seconds_per_epoch", scale=1.0, needs=NEEDS),
        higher_is_better={column: False for column in COLUMNS},
        notes=(
            "The BERT-BASE and BERT-BASE + GFSA rows repeat Table 23.",
            "#Params (110M) is a descriptive column, dropped. MNLI-m/mm is a single time column; "
            "Avg is the mean of the 8 time columns, rounded to whole seconds.",
            "Setting as Table 23 (one RTX A5000 24GB). Single measurements.",
        ),
    )
