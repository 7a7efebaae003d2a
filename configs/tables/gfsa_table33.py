"""GFSA Table 33: inference time (seconds) of the SpeechBrain Transformer and Branchformer ASR
models, with and without GFSA, on LibriSpeech 100h and 960h.

Numbers: GFSA (arXiv 2312.04234) Table 33 (App. S). These are GPU timings of the paper's ASR
evaluation: nothing here is runnable yet (no speech domain). List the cells:

    python -m scripts.reproduce gfsa.table33 --list
"""

from __future__ import annotations

from attnbench.papers.tables import Table, grid
from configs.tables.gfsa_table27 import (
    needs,
)  # the same wording as Table 27: the training times of the same models

COLUMNS = ("LibriSpeech 100h", "LibriSpeech 960h")

# row: (model, inference seconds in COLUMNS order)
ROWS = {
    "Transformer": ("Transformer", (328.1, 323.7)),
    "Transformer + GFSA": ("Transformer", (329.5, 343.3)),
    "Branchformer": ("Branchformer", (299.4, 328.7)),
    "Branchformer + GFSA": ("Branchformer", (305.5, 354.1)),
}


def get_table() -> Table:
    return Table(
        key="gfsa.table33",
        caption="Inference time (seconds) on LibriSpeech datasets.",
        source="GFSA paper Table 33; arXiv 2312.04234",
        rows=tuple(ROWS),
        columns=COLUMNS,
        cells=grid(
            {row: numbers for row, (_, numbers) in ROWS.items()},
            COLUMNS,
            metric="test.inference_seconds",
            scale=1.0,
            needs=lambda row, _: needs(ROWS[row][0]),
        ),
        higher_is_better={column: False for column in COLUMNS},
        notes=(
            "Setting (App. N.1): SpeechBrain recipes with joint CTC/attention beam search and a "
            "Transformer LM, one RTX A6000 48GB. The paper does not say which test set (clean / "
            "other) is timed. Single measurements.",
        ),
    )
