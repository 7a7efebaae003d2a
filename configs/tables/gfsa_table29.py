"""GFSA Table 29: inference time (seconds) of BERT, ALBERT and RoBERTa (base), with and without
GFSA, on the GLUE tasks.

Numbers: GFSA (arXiv 2312.04234) Table 29 (App. S). These are GPU timings of the paper's GLUE
evaluation: not runnable here, each cell needs the dev-set evaluation of the model that Table 1's
recipe fine-tunes (configs/language/glue.py, gfsa.table1) timed on the paper's GPU (one RTX A5000),
which no command measures (the wording is Table 23's, `gfsa_table23.needs`). List the cells:

    python -m scripts.reproduce gfsa.table29 --list
"""

from __future__ import annotations

from attnbench.papers.tables import Table, grid
from configs.tables import gfsa_table23  # the same rows and wording: Table 23's training times

COLUMNS = ("CoLA", "SST-2", "MRPC", "QQP", "STS-B", "MNLI-m/mm", "QNLI", "RTE", "Avg")

# row: (encoder, inference seconds in COLUMNS order)
ROWS = {
    "BERT-BASE": ("BERT-base", (1.0, 1.4, 1.2, 48.7, 1.9, 15.5, 10.1, 1.2, 10.0)),
    "BERT-BASE + GFSA": ("BERT-base", (1.1, 1.4, 1.2, 52.3, 2.0, 16.8, 11.0, 1.3, 11.0)),
    "ALBERT-BASE": ("ALBERT-base", (1.1, 1.6, 1.4, 58.4, 2.2, 18.4, 12.1, 1.3, 12.0)),
    "ALBERT-BASE + GFSA": ("ALBERT-base", (1.2, 1.7, 1.4, 62.1, 2.3, 19.7, 13.1, 1.4, 13.0)),
    "RoBERTa-BASE": ("RoBERTa-base", (1.0, 1.4, 1.1, 47.0, 1.9, 15.0, 9.9, 1.2, 10.0)),
    "RoBERTa-BASE + GFSA": ("RoBERTa-base", (1.1, 1.4, 1.2, 50.4, 2.0, 16.3, 10.8, 1.2, 11.0)),
}


def _avg_note(numbers) -> str:
    mean = sum(numbers[:-1]) / (len(numbers) - 1)
    return (
        f"The mean of the 8 printed times is {mean:.2f} s; the printed Avg is rounded to whole "
        "seconds."
    )


def get_table() -> Table:
    return Table(
        key="gfsa.table29",
        caption="Inference time (seconds) on GLUE tasks. Avg is the average over all tasks.",
        source="GFSA paper Table 29; arXiv 2312.04234",
        rows=tuple(ROWS),
        columns=COLUMNS,
        cells=grid(
            {row: numbers for row, (_, numbers) in ROWS.items()},
            COLUMNS,
            metric="test.inference_seconds",
            scale=1.0,
            needs=lambda row, column: gfsa_table23.needs(row, column, "inference"),
            note=lambda row, column: _avg_note(ROWS[row][1]) if column == "Avg" else None,
        ),
        higher_is_better={column: False for column in COLUMNS},
        notes=(
            "The printed caption says 'Avg denotes the average training time across all tasks', "
            "copied from Table 23; these are inference times (App. S).",
            "#Params (BERT 110M, ALBERT 11M, RoBERTa 125M) is a descriptive column, dropped. "
            "MNLI-m/mm is a single time column.",
            "Setting (App. K.1; jeongwhanchoi/GFSA NLP/script_NLU/): GLUE validation sets and max "
            "length 128 in the released code, one RTX A5000 24GB. Single measurements.",
            "Our cells name the run whose evaluation each times, as Table 23's (Table 1's recipe "
            "of the row on the column's task; MNLI-m/mm: task=mnli). The paper does not say "
            "whether MNLI-m/mm times one dev set or both.",
        ),
    )
