"""GFSA Table 34: inference time (seconds) on Devign code defect prediction of RoBERTa,
CodeBERT, PLBART and CodeT5-small/base, with and without GFSA.

Numbers: GFSA (arXiv 2312.04234) Table 34 (App. S). These are GPU timings of the paper's evaluation:
nothing here is runnable yet (no code domain). List the cells:

    python -m scripts.reproduce gfsa.table34 --list
"""

from __future__ import annotations

from attnbench.papers.tables import Table, grid
from configs.tables.gfsa_table28 import (
    needs,
)  # the same wording as Table 28: the training times of the same models

COLUMN = "Inference Time (s)"

# row: (model, inference seconds)
ROWS = {
    "RoBERTa": ("RoBERTa", 22.4),
    "RoBERTa + GFSA": ("RoBERTa", 23.9),
    "CodeBERT": ("CodeBERT", 23.8),
    "CodeBERT + GFSA": ("CodeBERT", 24.1),
    "PLBART": ("PLBART", 37.7),
    "PLBART + GFSA": ("PLBART", 39.3),
    "CodeT5-small": ("CodeT5-small", 78.2),
    "CodeT5-small + GFSA": ("CodeT5-small", 82.5),
    "CodeT5-base": ("CodeT5-base", 83.2),
    "CodeT5-base + GFSA": ("CodeT5-base", 88.5),
}


def get_table() -> Table:
    return Table(
        key="gfsa.table34",
        caption="Inference time (seconds) on the code defect prediction task.",
        source="GFSA paper Table 34; arXiv 2312.04234",
        rows=tuple(ROWS),
        columns=(COLUMN,),
        cells=grid(
            {row: paper for row, (_, paper) in ROWS.items()},
            (COLUMN,),
            metric="test.inference_seconds",
            scale=1.0,
            needs=lambda row, _: needs(ROWS[row][0]),
        ),
        higher_is_better={COLUMN: False},
        notes=(
            "Setting (App. P.1; jeongwhanchoi/GFSA Code/run_exp.py): Devign evaluation of the "
            "fine-tuned models (source length 512 in the released code), one RTX A6000 48GB; the "
            "paper does not say which split is timed. Single measurements.",
        ),
    )
