"""GFSA Table 26: training time (seconds per epoch) of Graphormer, with and without GFSA, on ZINC,
PCQM4M and PCQM4Mv2.

Numbers: GFSA (arXiv 2312.04234) Table 26 (App. R). These are GPU timings of the paper's Graphormer
runs: not runnable here, they need the runs of Tables 4 and 5 (configs/graphs/zinc.py and pcqm.py on
the official files) timed on the paper's GPU. The PCQM4M cells name our counterpart
(`_gfsa_timing.step_counterpart`: one LRA Text training step at 1,024 tokens with softmax and with
GFSA), which `python -m scripts.speed_tables --tables gfsa` measures and prints beside them; a
different model, so compare the ratios. List the cells:

    python -m scripts.reproduce gfsa.table26 --list
"""

from __future__ import annotations

from attnbench.papers.tables import Table, grid
from configs.tables._gfsa_timing import step_counterpart

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


def needs(dataset: str) -> str:
    """Tables 26 (training) and 32 (inference): the paper's runs, timed on its GPU."""
    return (
        f"GPU timing of the paper's setting, which needs the {dataset} runs of Graphormer "
        f"({RECIPE[dataset]}, attn=softmax or gfsa) on the authors' RTX 3090"
    )


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
            needs=lambda _, column: needs(column),
            **step_counterpart({"Graphormer": "softmax", "Graphormer + GFSA": "gfsa"}, "PCQM4M"),
        ),
        higher_is_better={column: False for column in COLUMNS},
        notes=(
            "Setting (App. O.1): Graphormer-SLIM (500K parameters, batch 256) on ZINC and "
            "Graphormer base (48.3M, batch 1024) on PCQM4M/PCQM4Mv2, one RTX 3090 24GB. Single "
            "measurements.",
        ),
    )
