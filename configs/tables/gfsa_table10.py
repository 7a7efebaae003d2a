"""GFSA Table 10: sensitivity of BERT-base + GFSA to K (2..10) on the GLUE tasks.

Numbers: GFSA (arXiv 2312.04234) Table 10. The K = 9 and K = 10 rows are printed column-shifted; the
cells hold the corrected assignment, each moved cell with a note. Every cell fine-tunes
bert-base-uncased with GFSA in every layer on the column's task (`configs/language/glue.py`,
`attn=gfsa`) with the row's K (`order=K`). Where the row's K is the recipe's own K for the task
(Table 1's choice: CoLA 4, SST-2 2, MRPC 2, QQP 8, STS-B 3, MNLI-m 7, MNLI-mm 4, QNLI 8, RTE 5),
the cell's config is Table 1's BERT-base + GFSA config string itself, so `scripts.reproduce`
trains that run once for both tables. At the `cpu` and `smoke` presets the cells train a small
encoder from scratch on the offline mini-GLUE stand-in (Python documentation sentences, not GLUE).

    python -m scripts.reproduce gfsa.table10 --list
    python -m scripts.reproduce gfsa.table10 --preset smoke --cells "K=3/CoLA"
"""

from __future__ import annotations

from attnbench.papers.tables import Table, grid
from configs.tables import gfsa_table1

COLUMNS = ("CoLA", "SST-2", "MRPC", "QQP", "STS-B", "MNLI-m", "MNLI-mm", "QNLI", "RTE")

METRIC = gfsa_table1.METRIC  # the same metrics as Table 1

# row: the numbers in COLUMNS order, K = 9 and 10 already corrected (see PRINTED_SHIFTED)
ROWS = {
    "K=2": "57.83 94.15 90.60 88.41 88.27 84.96 84.90 91.74 68.23",
    "K=3": "58.56 93.46 89.77 88.41 88.33 85.08 84.75 91.78 68.59",
    "K=4": "59.56 93.46 89.77 88.45 88.29 85.06 85.06 91.76 68.59",
    "K=5": "58.10 93.58 90.07 88.39 88.29 84.87 84.99 91.85 68.95",
    "K=6": "59.40 93.58 90.40 88.29 88.27 84.93 84.97 91.69 68.23",
    "K=7": "59.12 94.04 90.48 88.43 88.26 85.12 84.94 91.82 68.94",
    "K=8": "58.58 93.69 90.12 88.46 88.24 84.92 84.81 91.95 68.95",
    "K=9": "58.88 93.46 89.54 88.41 88.26 85.06 85.04 91.67 67.87",
    "K=10": "59.31 93.35 89.98 88.41 88.30 84.84 84.93 91.73 68.59",
}

# The K = 9 / 10 rows as printed: their last four numbers sit under MNLI-m, MNLI-mm, QNLI, RTE
# as "MNLI-m QNLI RTE MNLI-mm" (the MNLI-mm value was moved to the end of the row).
PRINTED_SHIFTED = {
    "K=9": "58.88 93.46 89.54 88.41 88.26 85.06 91.67 67.87 85.04",
    "K=10": "59.31 93.35 89.98 88.41 88.30 84.84 91.73 68.59 84.93",
}

NOTES = (
    "The K = 9 and K = 10 rows are column-shifted in the paper: it prints their MNLI-mm value last "
    "(under RTE) and QNLI / RTE one column early (under MNLI-mm / QNLI). Corrected here (our "
    "reading of Table 10): an RTE accuracy of 85 and an MNLI-mm of 91.7 would be far outside every "
    "other row, and Table 1's BERT-base + GFSA row, the per-column maximum of this table, has RTE "
    "68.95 and MNLI-mm 85.06, which the printed RTE 85.04 / 84.93 would exceed.",
    "Table 1's BERT-base + GFSA row (gfsa.table1) is the per-column maximum of this table (K "
    "chosen on the reported dev set; our reading of Sec. 5.1 and App. K.1).",
    "Metrics as in Table 1: CoLA MCC, MRPC/QQP F1, STS-B Spearman, accuracy otherwise (%), on the "
    "GLUE dev sets after the last epoch.",
    "Every CoLA cell keeps w_0 = -0.01, the value of the authors' BERT CoLA script (which sets K = "
    "4); w_0 = 0 elsewhere. The paper does not say which w_0 the K sweep used (our choice).",
    "MNLI-m and MNLI-mm are separate runs of each K (task=mnli and task=mnli-mm: the same "
    "training setup, tested on the matched and the mismatched dev set), as in Table 1.",
)


# The K configs/language/glue.py gives BERT-base + GFSA per column (its ORDER, and its SCRIPTS
# for CoLA): Table 1's cells. Copied here so that listing the table imports no recipe; the tests
# load every cell's config and check its K.
RECIPE_K = {
    "CoLA": 4,
    "SST-2": 2,
    "MRPC": 2,
    "QQP": 8,
    "STS-B": 3,
    "MNLI-m": 7,
    "MNLI-mm": 4,
    "QNLI": 8,
    "RTE": 5,
}


def order(row: str) -> int:
    """K of a "K=k" row."""
    return int(row.removeprefix("K="))


def config(row: str, column: str) -> str:
    """Table 1's BERT-base + GFSA config of the column, with `order=K` unless K is the recipe's
    own K for the task (then the string is Table 1's: one run for both tables)."""
    base = gfsa_table1.config("BERT-base + GFSA", column)
    k = order(row)
    return base if k == RECIPE_K[column] else f"{base},order={k}"


def _note(row: str, column: str) -> str | None:
    if row not in PRINTED_SHIFTED:
        return None
    printed = dict(zip(COLUMNS, PRINTED_SHIFTED[row].split(), strict=True))
    ours = dict(zip(COLUMNS, ROWS[row].split(), strict=True))
    if printed[column] == ours[column]:
        return None
    where = next(c for c, v in printed.items() if v == ours[column])
    return (
        f"Column-shifted in the paper: {ours[column]} is printed under {where}; placed under "
        f"{column} (the printed {column} cell reads {printed[column]})."
    )


def get_table() -> Table:
    return Table(
        key="gfsa.table10",
        caption="Sensitivity results on various K with BERT-base + GFSA finetuned on GLUE tasks.",
        source="GFSA paper Table 10; arXiv 2312.04234",
        rows=tuple(ROWS),
        columns=COLUMNS,
        cells=grid(
            ROWS,
            COLUMNS,
            metric=lambda _, column: METRIC.get(column, "test_last.accuracy"),
            scale=100,
            config=config,
            note=_note,
        ),
        notes=NOTES,
        plot="lines",
    )
