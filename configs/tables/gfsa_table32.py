"""GFSA Table 32: inference time (seconds) of Graphormer, with and without GFSA, on ZINC,
PCQM4M and PCQM4Mv2.

Numbers: GFSA (arXiv 2312.04234) Table 32 (App. S). These are GPU timings of the paper's Graphormer
evaluation; ours time the recipes of Tables 4 and 5 (configs/graphs/zinc.py and pcqm.py) at
their evaluation batch on one device over the official validation split (synthetic molecules;
seconds = validation graphs / graphs per second) with `python -m scripts.speed_tables --tables
timing_gfsa_graphs`, on whatever device it runs on, beside the paper's numbers. List the cells:

    python -m scripts.reproduce gfsa.table32 --list
"""

from __future__ import annotations

from attnbench.papers.tables import Table, grid
from configs.tables import _gfsa_timing
from configs.tables.gfsa_table26 import timing  # Table 26's recipes, here evaluated

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
            **_gfsa_timing.recipe_timing(
                "timing_gfsa_graphs", lambda row, column: timing(row, column, "s", "val")
            ),
            note=lambda row, column: NOTES.get((row, column)),
        ),
        higher_is_better={column: False for column in COLUMNS},
        notes=(
            "Setting (App. O.1): Graphormer-SLIM on ZINC, Graphormer base on PCQM4M/PCQM4Mv2, one "
            "RTX 3090 24GB. Single measurements. The paper does not say which split is "
            "timed; ours is the validation split.",
        ),
    )
