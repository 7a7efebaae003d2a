"""GFSA Table 37: GPT-2 perplexity on PTB, WikiText-2 and WikiText-103 with GFSA on all layers vs
GFSA_even (even-numbered layers only).

Numbers: GFSA (arXiv 2312.04234) Table 37 (App. T). Every cell fine-tunes the pretrained GPT-2 small
with configs/language/gpt2.py on the official data (`gfsa_table2.config`; GFSA_even is
`attn=gfsa,even=1`, the `gfsa` mechanism's `even_layers_only=True`); Avg is the mean of the three.
List the cells:

    python -m scripts.reproduce gfsa.table37 --list
"""

from __future__ import annotations

from attnbench.papers.tables import Table, grid
from configs.tables.gfsa_table2 import config, mean_of

COLUMNS = ("PTB", "WikiText-2", "WikiText-103", "Avg")

ROWS = {  # perplexity in COLUMNS order
    "GPT2": (19.513, 20.966, 15.939, 18.806),
    "GPT2 + GFSA": (19.450, 20.923, 15.919, 18.764),
    "GPT2 + GFSA_even": (19.453, 20.926, 15.923, 18.767),
}


def get_table() -> Table:
    return Table(
        key="gfsa.table37",
        caption="Comparison of performance (perplexity) using GFSA on all layers vs. GFSA_even "
        "on even layers for causal language modeling tasks.",
        source="GFSA paper Table 37; arXiv 2312.04234",
        rows=tuple(ROWS),
        columns=COLUMNS,
        cells=grid(
            ROWS,
            COLUMNS,
            metric="val_best.perplexity",
            scale=1.0,
            config=lambda row, column: config(row, column, even=row.endswith("_even")),
            mean_of=mean_of,
        ),
        higher_is_better={column: False for column in COLUMNS},
        notes=(
            "The GPT2 and GPT2 + GFSA rows repeat Table 2. #Params (117M) is a descriptive "
            "column, dropped. Avg is the mean of the three perplexities.",
            "Perplexity on the validation split in the released code (jeongwhanchoi/GFSA "
            "NLP/run_clm_no_trainer.py); GFSA's K was selected per dataset on the same split.",
            "GFSA_even: the paper does not say whether layers count from 0 or 1, nor which K the "
            "even layers use (Sec. 6, App. T); our `even_layers_only` counts from 0.",
        ),
    )
