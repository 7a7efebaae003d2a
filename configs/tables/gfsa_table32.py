"""GFSA Table 32: inference time (seconds) of Graphormer, with and without GFSA, on ZINC,
PCQM4M and PCQM4Mv2.

Numbers: GFSA (arXiv 2312.04234) Table 32 (App. S). These are GPU timings of the paper's Graphormer
evaluation: not runnable here, they need the trained models of Tables 4 and 5
(configs/graphs/zinc.py and pcqm.py) timed on the paper's GPU. List the cells:

    python -m scripts.reproduce gfsa.table32 --list
"""

from __future__ import annotations

from attnbench.papers.tables import Table, grid
from configs.tables.gfsa_table26 import (
    needs,
)  # the same wording as Table 26: the training times of the same models

COLUMNS = ("ZINC", "PCQM4M", "PCQM4Mv2")

ROWS = {  # inference seconds in COLUMNS order
    "Graphormer": (8, 99, 31),
    "Graphormer + GFSA": (8, 117, 29),
}

NOTES = {
    ("Graphormer + GFSA", "PCQM4Mv2"): "Faster than Graphormer without GFSA (29 < 31 s): timing "
    "noise of a single measurement (our reading).",
}


def get_table() -> Table:
    return Table(
        key="gfsa.table32",
        caption="Inference time (seconds) on graph-level tasks.",
        source="GFSA paper Table 32; arXiv 2312.04234",
        rows=tuple(ROWS),
        columns=COLUMNS,
        cells=grid(
            ROWS,
            COLUMNS,
            metric="test.inference_seconds",
            scale=1.0,
            needs=lambda _, column: needs(column),
            note=lambda row, column: NOTES.get((row, column)),
        ),
        higher_is_better={column: False for column in COLUMNS},
        notes=(
            "Setting (App. O.1): Graphormer-SLIM on ZINC, Graphormer base on PCQM4M/PCQM4Mv2, one "
            "RTX 3090 24GB. Single measurements.",
        ),
    )
