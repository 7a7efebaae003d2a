"""GFSA Table 36: training time (seconds per epoch) of BERT-base on GLUE with GFSA on all layers
vs GFSA_even (even-numbered layers only).

Numbers: GFSA (arXiv 2312.04234) Table 36 (App. T). These are GPU timings of the paper's GLUE
fine-tuning, whose recipes exist (configs/language/glue.py; the cells of Table 35, gfsa.table35,
GFSA_even with `even=1`): not runnable here, each cell needs that fine-tuning timed per epoch on the
paper's GPU (one RTX A5000), which no command measures (the wording is Table 23's,
`gfsa_table23.glue_needs`). List the cells:

    python -m scripts.reproduce gfsa.table36 --list
"""

from __future__ import annotations

from attnbench.papers.tables import Table, grid
from configs.tables import gfsa_table35
from configs.tables.gfsa_table23 import TABLE1_COLUMN, glue_needs

COLUMNS = ("CoLA", "SST-2", "MRPC", "QQP", "STS-B", "MNLI-m/mm", "QNLI", "RTE", "Avg")

ROWS = {  # seconds per epoch in COLUMNS order
    "BERT-BASE": (17, 182, 17, 1483, 24, 2004, 580, 18, 541),
    "BERT-BASE + GFSA": (19, 192, 19, 1571, 25, 2147, 621, 20, 577),
    "BERT-BASE + GFSA_even": (17, 185, 18, 1506, 24, 2061, 595, 18, 553),
}


def needs(row: str, column: str) -> str:
    """Table 23's wording, with Table 35's recipe of the row (GFSA_even: `even=1`)."""
    config = gfsa_table35.config(row, TABLE1_COLUMN[column]) if column != "Avg" else None
    return glue_needs(row.replace("BERT-BASE", "BERT-base"), config, column)


def get_table() -> Table:
    return Table(
        key="gfsa.table36",
        caption="Comparison of training time (seconds per epoch) using GFSA on all layers vs. "
        "GFSA_even on even layers for GLUE tasks.",
        source="GFSA paper Table 36; arXiv 2312.04234",
        rows=tuple(ROWS),
        columns=COLUMNS,
        cells=grid(ROWS, COLUMNS, metric="train.seconds_per_epoch", scale=1.0, needs=needs),
        higher_is_better={column: False for column in COLUMNS},
        notes=(
            "The BERT-BASE and BERT-BASE + GFSA rows repeat Table 23.",
            "#Params (110M) is a descriptive column, dropped. MNLI-m/mm is a single time column; "
            "Avg is the mean of the 8 time columns, rounded to whole seconds.",
            "Setting as Table 23 (one RTX A5000 24GB). Single measurements.",
            "Our cells name the run each times: Table 35's recipe of the row on the column's task "
            "(configs/language/glue.py, gfsa.table35; MNLI-m/mm: task=mnli), timed per epoch as "
            "in Table 23.",
        ),
    )
