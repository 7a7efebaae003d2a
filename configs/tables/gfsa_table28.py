"""GFSA Table 28: training time (seconds per epoch) on Devign code defect prediction of
RoBERTa, CodeBERT, PLBART and CodeT5-small/base, with and without GFSA.

Numbers: GFSA (arXiv 2312.04234) Table 28 (App. R). These are GPU timings of the paper's
fine-tuning: nothing here is runnable yet (no code domain). List the cells:

    python -m scripts.reproduce gfsa.table28 --list
"""

from __future__ import annotations

from attnbench.papers.tables import Table, grid

COLUMN = "Runtime (s/epoch)"

# row: (model, seconds per epoch)
ROWS = {
    "RoBERTa": ("RoBERTa", 543.96),
    "RoBERTa + GFSA": ("RoBERTa", 537.79),
    "CodeBERT": ("CodeBERT", 555.28),
    "CodeBERT + GFSA": ("CodeBERT", 561.43),
    "PLBART": ("PLBART", 467.80),
    "PLBART + GFSA": ("PLBART", 470.19),
    "CodeT5-small": ("CodeT5-small", 301.11),
    "CodeT5-small + GFSA": ("CodeT5-small", 309.04),
    "CodeT5-base": ("CodeT5-base", 362.28),
    "CodeT5-base + GFSA": ("CodeT5-base", 373.22),
}

NOTES = {
    "RoBERTa + GFSA": "Faster than RoBERTa without GFSA (537.79 < 543.96 s): timing noise of a "
    "single measurement (our reading).",
}


def needs(model: str) -> str:
    return (
        "GPU timing of the paper's setting, which needs the Devign defect-detection task "
        f"(code domain) and a {model} model, not built yet"
    )


def get_table() -> Table:
    return Table(
        key="gfsa.table28",
        caption="Training time (seconds per epoch) on the code defect prediction task.",
        source="GFSA paper Table 28; arXiv 2312.04234",
        rows=tuple(ROWS),
        columns=(COLUMN,),
        cells=grid(
            {row: paper for row, (_, paper) in ROWS.items()},
            (COLUMN,),
            metric="train.seconds_per_epoch",
            scale=1.0,
            needs=lambda row, _: needs(ROWS[row][0]),
            note=lambda row, _: NOTES.get(row),
        ),
        higher_is_better={COLUMN: False},
        notes=(
            "Setting (App. P.1): CodeT5 codebase, pretrained models fine-tuned on Devign, source "
            "length 512, batch 16 (32 in the released code), one RTX A6000 48GB. 'PLBART' may be "
            "facebook/bart-base in the released scripts (jeongwhanchoi/GFSA Code/run_exp.py). "
            "Single measurements.",
        ),
    )
