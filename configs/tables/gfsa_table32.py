"""GFSA Table 32: inference time (seconds) of Graphormer, with and without GFSA, on ZINC,
PCQM4M and PCQM4Mv2.

Numbers: the paper's Table 32 (App. S), as extracted in ../shared/papers/notes/gfsa.md Sec. 3.
These are GPU timings of the paper's Graphormer evaluation: not runnable here, they need the
trained models of Tables 4 and 5 (configs/graphs/zinc.py and pcqm.py) timed on the paper's GPU.
List the cells:

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
    "noise of a single measurement (notes Sec. 6.22).",
}


def get_table() -> Table:
    return Table(
        key="gfsa.table32",
        caption="Inference time (seconds) on graph-level tasks.",
        source="GFSA paper Table 32; notes gfsa.md Sec. 3 (Table 32)",
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
            "Setting (notes Sec. 2.4): Graphormer-SLIM on ZINC, Graphormer base on "
            "PCQM4M/PCQM4Mv2, one RTX 3090 24GB. Single measurements.",
        ),
    )
