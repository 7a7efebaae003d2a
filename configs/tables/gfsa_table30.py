"""GFSA Table 30: inference time (seconds) of GPT-2, with and without GFSA, on PTB, WikiText-2
and WikiText-103.

Numbers: GFSA (arXiv 2312.04234) Table 30 (App. S). These are GPU timings of the paper's evaluation
(configs/language/gpt2.py, gfsa.table2's runs): not runnable here, they need the paper's GPU. List
the cells:

    python -m scripts.reproduce gfsa.table30 --list
"""

from __future__ import annotations

from attnbench.papers.tables import Table, grid
from configs.tables.gfsa_table24 import NEEDS  # the same wording as Table 24

COLUMNS = ("PTB", "WikiText-2", "WikiText-103", "Avg")

ROWS = {  # inference seconds in COLUMNS order
    "GPT2": (3.2, 7.4, 7.4, 6.0),
    "GPT2 + GFSA": (5.5, 12.9, 12.9, 10.4),
}


def get_table() -> Table:
    return Table(
        key="gfsa.table30",
        caption="Inference time (seconds) on causal language modeling tasks.",
        source="GFSA paper Table 30; arXiv 2312.04234",
        rows=tuple(ROWS),
        columns=COLUMNS,
        cells=grid(
            ROWS,
            COLUMNS,
            metric="test.inference_seconds",
            scale=1.0,
            needs=lambda _, column: NEEDS[column],
        ),
        higher_is_better={column: False for column in COLUMNS},
        notes=(
            "#Params (117M for both rows) is a descriptive column, dropped.",
            "WikiText-2 and WikiText-103 share the same validation text, hence identical times.",
            "Setting (App. L.1; jeongwhanchoi/GFSA NLP/run_clm_no_trainer.py): 1,024-token blocks "
            "(the released code evaluates on the validation split), one RTX 3090 24GB. Single "
            "measurements.",
        ),
    )
