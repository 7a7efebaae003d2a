"""GFSA Table 38: training time (seconds per epoch) of GPT-2 on PTB, WikiText-2 and WikiText-103
with GFSA on all layers vs GFSA_even (even-numbered layers only).

Numbers: GFSA (arXiv 2312.04234) Table 38 (App. T). These are GPU timings of the paper's GPT-2
fine-tuning (configs/language/gpt2.py, gfsa.table37's runs, GFSA_even being `even=1`): not runnable
here, they need the paper's GPU. List the cells:

    python -m scripts.reproduce gfsa.table38 --list
"""

from __future__ import annotations

from attnbench.papers.tables import Table, grid
from configs.tables.gfsa_table24 import NEEDS  # the same wording as Table 24

COLUMNS = ("PTB", "WikiText-2", "WikiText-103", "Avg")

ROWS = {  # seconds per epoch in COLUMNS order
    "GPT2": (89.1, 195.7, 9638.4, 3307.8),
    "GPT2 + GFSA": (160.3, 354.2, 17424.6, 5979.7),
    "GPT2 + GFSA_even": (127.4, 279.1, 13761.4, 4722.6),
}

NOTES = {
    ("GPT2", "Avg"): "The mean of the three printed times is 3307.7 (9923.2 / 3), not 3307.8.",
}


def get_table() -> Table:
    return Table(
        key="gfsa.table38",
        caption="Comparison of training time (seconds per epoch) using GFSA on all layers vs. "
        "GFSA_even on even layers for causal language modeling tasks.",
        source="GFSA paper Table 38; arXiv 2312.04234",
        rows=tuple(ROWS),
        columns=COLUMNS,
        cells=grid(
            ROWS,
            COLUMNS,
            metric="train.seconds_per_epoch",
            scale=1.0,
            needs=lambda _, column: NEEDS[column],
            note=lambda row, column: NOTES.get((row, column)),
        ),
        higher_is_better={column: False for column in COLUMNS},
        notes=(
            "The GPT2 and GPT2 + GFSA rows repeat Table 24. #Params (117M) is a descriptive "
            "column, dropped.",
            "Setting as Table 24 (one RTX 3090 24GB). Single measurements.",
        ),
    )
