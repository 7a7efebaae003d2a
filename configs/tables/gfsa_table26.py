"""GFSA Table 26: training time (seconds per epoch) of Graphormer, with and without GFSA, on ZINC,
PCQM4M and PCQM4Mv2.

Numbers: GFSA (arXiv 2312.04234) Table 26 (App. R). These are GPU timings of the paper's Graphormer
runs; ours time the recipes of Tables 4 and 5 (configs/graphs/zinc.py and pcqm.py) at their own
batch on one device (synthetic molecules of the recipe's node count; seconds per epoch = training
graphs / graphs per second) with `python -m scripts.speed_tables --tables timing_gfsa_graphs`, on
whatever device it runs on, beside the paper's numbers. List the cells:

    python -m scripts.reproduce gfsa.table26 --list
"""

from __future__ import annotations

from attnbench.papers.tables import Table, grid
from configs.tables import _gfsa_timing

COLUMNS = ("ZINC", "PCQM4M", "PCQM4Mv2")

ROWS = {  # seconds per epoch in COLUMNS order
    "Graphormer": (9, 740, 817),
    "Graphormer + GFSA": (9, 896, 955),
}


# column -> the Graphormer recipe of Tables 4 and 5 (attn=softmax for Graphormer, gfsa for GFSA)
RECIPE = {
    "ZINC": "graphs/zinc.py",
    "PCQM4M": "graphs/pcqm.py:version=v1",
    "PCQM4Mv2": "graphs/pcqm.py:version=v2",
}


# column -> the catalog name of the dataset whose official split sizes the epoch
DATASET = {"ZINC": "zinc", "PCQM4M": "pcqm4m", "PCQM4Mv2": "pcqm4mv2"}
ATTENTION = {"Graphormer": "softmax", "Graphormer + GFSA": "gfsa"}


def recipe(row: str, column: str) -> str:
    """Tables 26 (training) and 32 (inference): the row's Graphormer recipe on `column`."""
    return RECIPE[column] + ("," if ":" in RECIPE[column] else ":") + f"attn={ATTENTION[row]}"


def timing(row: str, column: str, unit: str = "s/epoch", split: str = "train") -> dict:
    return dict(config=recipe(row, column), unit=unit, examples=f"{DATASET[column]}:{split}")


def get_table() -> Table:
    return Table(
        key="gfsa.table26",
        caption="Training time (seconds per epoch) on graph-level tasks.",
        source="GFSA paper Table 26; arXiv 2312.04234",
        rows=tuple(ROWS),
        columns=COLUMNS,
        cells=grid(
            ROWS,
            COLUMNS,
            metric="train.seconds_per_epoch",
            scale=1.0,
            **_gfsa_timing.recipe_timing("timing_gfsa_graphs", timing),
        ),
        higher_is_better={column: False for column in COLUMNS},
        notes=(
            "Setting (App. O.1): Graphormer-SLIM (500K parameters, batch 256) on ZINC and "
            "Graphormer base (48.3M, batch 1024) on PCQM4M/PCQM4Mv2, one RTX 3090 24GB. Single "
            "measurements.",
        ),
    )
