"""GFSA Table 23: training time (seconds per epoch) of BERT, ALBERT and RoBERTa (base), with and
without GFSA, fine-tuned on the GLUE tasks.

Numbers: GFSA (arXiv 2312.04234) Table 23 (App. R). These are GPU timings of the paper's GLUE
fine-tuning, whose recipes exist (configs/language/glue.py; the cells of Table 1, gfsa.table1):
not runnable here, each cell needs that fine-tuning timed per epoch on the paper's GPU (one RTX
A5000), which no command measures (a run's summary records steps/s, not seconds per epoch, and
`scripts.speed_tables` has no GLUE counterpart). `python -m scripts.speed_tables --tables gfsa`
measures GFSA's overhead on the LRA Text step at 1,024 tokens, a related but different quantity
(GLUE runs at 128 tokens). List the cells:

    python -m scripts.reproduce gfsa.table23 --list
"""

from __future__ import annotations

from attnbench.papers.tables import Table, grid
from configs.tables import gfsa_table1

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

# A time column -> Table 1's column whose run it times: one MNLI training epoch is task=mnli's
# (MNLI-m's run; MNLI-mm's differs in GFSA's K only, 4 instead of 7).
TABLE1_COLUMN = {column: column for column in COLUMNS[:-1]} | {"MNLI-m/mm": "MNLI-m"}
GPU = "the authors' RTX A5000"
# what is timed, for Tables 23 / 36 ("training") and 29 ("inference")
TIMED = {
    "training": ("fine-tuning", "fine-tunings", "timed per training epoch"),
    "inference": ("dev-set evaluation", "dev-set evaluations", "timed"),
}


def table1_row(row: str) -> str:
    """Table 1's row of a timing row: "BERT-BASE + GFSA" -> "BERT-base + GFSA"."""
    return ROWS[row][0] + (" + GFSA" if row.endswith("+ GFSA") else "")


def glue_needs(model: str, config: str | None, column: str, quantity: str = "training") -> str:
    """What a GLUE timing cell needs (Tables 23, 29 and 36 share the wording): the run of
    `config` (Table 1's recipe of the row on the column's task; None where its encoder is not
    built) timed on the paper's GPU; for Avg, the row's eight runs."""
    one, many, timed = TIMED[quantity]
    head = "GPU timing of the paper's setting, which needs "
    if config is None and column != "Avg":
        article = "an" if model[0] in "AEIOU" else "a"
        return f"{head}{article} {model} encoder (language/hf_albert.py), not built yet"
    if column == "Avg":
        return f"{head}the row's eight GLUE {many} (its other columns) {timed} on {GPU}"
    task = TABLE1_COLUMN[column].removesuffix("-m")
    return f"{head}the {task} {one} of {model} ({config}) {timed} on {GPU}"


def needs(row: str, column: str, quantity: str = "training") -> str:
    """`glue_needs` of a row of Tables 23 and 29 (the same rows), from Table 1's recipes."""
    row1 = table1_row(row)
    config = gfsa_table1.config(row1, TABLE1_COLUMN[column]) if column != "Avg" else None
    return glue_needs(row1, config, column, quantity)


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
            needs=needs,
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
            "Our cells name the run each times: Table 1's recipe of the row on the column's task "
            "(configs/language/glue.py, gfsa.table1; MNLI-m/mm: task=mnli, K = 7 with GFSA). They "
            "need that fine-tuning timed per epoch on the paper's GPU: a run's summary records "
            "steps/s and its wall time, not seconds per epoch, and no speed table times GLUE.",
        ),
    )
