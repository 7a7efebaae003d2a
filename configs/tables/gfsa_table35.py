"""GFSA Table 35: BERT-base on GLUE with GFSA on all layers vs GFSA_even (GFSA on the
even-numbered layers only).

Numbers: GFSA (arXiv 2312.04234) Table 35 (App. T). Every cell fine-tunes bert-base-uncased on the
column's task with `configs/language/glue.py` (the `language.glue` task), as GFSA Table 1 does
(gfsa.table1): softmax attention, GFSA in every layer (`attn=gfsa`), or GFSA in the even layers
only (`attn=gfsa,even=1`: the `gfsa` mechanism's `even_layers_only=True`), each with the recipe's K
per task. The first two rows are the same runs as Table 1's BERT-base and BERT-base + GFSA rows
(the same config strings, so `scripts.reproduce` trains them once for both tables). At the `cpu`
and `smoke` presets the cells train a small encoder from scratch on the offline mini-GLUE
stand-in (Python documentation sentences, not GLUE). "Avg" is derived: the mean of the row's nine
numbers once all of them exist at one preset (`Cell.mean_of`).

    python -m scripts.reproduce gfsa.table35 --list
    python -m scripts.reproduce gfsa.table35 --preset smoke --cells "GFSA_even/MRPC"
"""

from __future__ import annotations

from attnbench.papers.tables import Table, grid
from configs.tables import gfsa_table1
from configs.tables.gfsa_table1 import METRIC, TASK  # the same metrics and tasks as Table 1

COLUMNS = ("CoLA", "SST-2", "MRPC", "QQP", "STS-B", "MNLI-m", "MNLI-mm", "QNLI", "RTE", "Avg")

ROWS = {  # percent, in COLUMNS order
    "BERT-BASE": (56.79, 93.81, 88.70, 88.32, 88.16, 84.96, 84.15, 91.63, 66.06, 82.51),
    "BERT-BASE + GFSA": (59.56, 94.15, 90.60, 88.46, 88.33, 85.12, 85.06, 91.95, 68.95, 83.58),
    "BERT-BASE + GFSA_even": (58.80, 93.69, 90.50, 88.47, 88.27, 85.13, 85.02, 91.65, 70.76, 83.59),
}

# row -> (Table 1's row whose config it starts from, the arguments it adds)
BASE = {
    "BERT-BASE": ("BERT-base", ""),
    "BERT-BASE + GFSA": ("BERT-base + GFSA", ""),
    "BERT-BASE + GFSA_even": ("BERT-base + GFSA", ",even=1"),
}

NOTES = (
    "The paper prints MNLI as one 'MNLI-m/mm' cell; it is split into two columns. "
    "#Params (110M) is a descriptive column, dropped. Avg is the mean of the 9 numbers.",
    "Metrics as in Table 1: CoLA Matthews correlation, MRPC and QQP F1, STS-B Spearman, the "
    "others accuracy (App. K.1), on the GLUE dev sets after the last epoch (the runs' "
    "test_last: the GLUE dev set is the runs' test split, and the authors' script reports the "
    "last epoch).",
    "The BERT-BASE and BERT-BASE + GFSA rows repeat Table 1 (the same runs). The GFSA row is the "
    "per-column best K of Table 10 (selected on the dev sets it reports; our reading of "
    "Sec. 5.1 and App. K.1).",
    "GFSA_even: the paper does not say whether layers count from 0 or 1, nor which K the "
    "even layers use (Sec. 6, App. T); our `even_layers_only` counts from 0, and the even layers "
    "use the recipe's K per task, the K of the all-layers row (our choice).",
)


def config(row: str, column: str) -> str | None:
    """Table 1's config of the row's base (identical strings: shared runs), plus `even=1` for
    GFSA_even; None for Avg."""
    if column not in TASK:
        return None
    base, extra = BASE[row]
    return gfsa_table1.config(base, column) + extra


def mean_of(row: str, column: str) -> tuple[str, ...]:
    """The Avg column: the mean of the row's nine cells."""
    return tuple(TASK) if column == "Avg" else ()


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
            metric=lambda _, column: METRIC.get(column, "test_last.accuracy"),
            scale=100,
            config=config,
            mean_of=mean_of,
        ),
        notes=NOTES,
    )
