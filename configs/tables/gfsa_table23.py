"""GFSA Table 23: training time (seconds per epoch) of BERT, ALBERT and RoBERTa (base), with and
without GFSA, fine-tuned on the GLUE tasks.

Numbers: GFSA (arXiv 2312.04234) Table 23 (App. R). These are GPU timings of the paper's GLUE
fine-tuning: nothing here is runnable yet (no GLUE task, no BERT / ALBERT / RoBERTa encoder).
`python -m scripts.speed_tables --tables gfsa` measures GFSA's overhead over softmax attention on
synthetic tensors, a related but different quantity. List the cells:

    python -m scripts.reproduce gfsa.table23 --list
"""

from __future__ import annotations

from attnbench.papers.tables import Table, grid

COLUMNS = ("CoLA", "SST-2", "MRPC", "QQP", "STS-B", "MNLI-m/mm", "QNLI", "RTE", "Avg")

# row: (encoder, seconds per epoch in COLUMNS order)
ROWS = {
    "BERT-BASE": ("BERT-base", (17, 182, 17, 1483, 24, 2004, 580, 18, 541)),
    "BERT-BASE + GFSA": ("BERT-base", (19, 192, 19, 1571, 25, 2147, 621, 20, 577)),
    "ALBERT-BASE": ("ALBERT-base", (15, 188, 20, 1506, 25, 2072, 612, 19, 557)),
    "ALBERT-BASE + GFSA": ("ALBERT-base", (16, 197, 21, 1604, 26, 2219, 659, 21, 595)),
    "RoBERTa-BASE": ("RoBERTa-base", (17, 190, 18, 1492, 25, 2012, 593, 18, 546)),
    "RoBERTa-BASE + GFSA": ("RoBERTa-base", (19, 200, 19, 1580, 26, 2151, 634, 20, 581)),
}


def needs(encoder: str) -> str:
    article = "an" if encoder[0] in "AEIOU" else "a"
    return (
        "GPU timing of the paper's setting, which needs the GLUE task (language domain) and "
        f"{article} {encoder} encoder, not built yet"
    )


def get_table() -> Table:
    return Table(
        key="gfsa.table23",
        caption="Training time (seconds per epoch) on GLUE tasks. Avg is the average training "
        "time across all tasks.",
        source="GFSA paper Table 23; arXiv 2312.04234",
        rows=tuple(ROWS),
        columns=COLUMNS,
        cells=grid(
            {row: numbers for row, (_, numbers) in ROWS.items()},
            COLUMNS,
            metric="train.seconds_per_epoch",
            scale=1.0,
            needs=lambda row, _: needs(ROWS[row][0]),
        ),
        higher_is_better={column: False for column in COLUMNS},
        notes=(
            "#Params (BERT 110M, ALBERT 11M, RoBERTa 125M, unchanged by GFSA) is a descriptive "
            "column, dropped.",
            "MNLI-m/mm is a single time column (one MNLI training epoch). Avg is the mean of the "
            "8 time columns, rounded to whole seconds (e.g. BERT 540.6 -> 541).",
            "Setting (App. K.1; jeongwhanchoi/GFSA NLP/script_NLU/): HuggingFace fine-tuning, 5 "
            "epochs, batch 32, max length 128, one RTX A5000 24GB; GFSA's K is chosen per task. "
            "Single measurements.",
            "Sec. 6's 'less than 36 seconds per epoch' overhead is BERT's Avg, 577 - 541. The "
            "BERT-BASE and BERT-BASE + GFSA rows reappear in Table 36.",
        ),
    )
