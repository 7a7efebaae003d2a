"""GFSA Table 27: training time (seconds per epoch) of the SpeechBrain Transformer and
Branchformer ASR models, with and without GFSA, on LibriSpeech 100h and 960h.

Numbers: GFSA (arXiv 2312.04234) Table 27 (App. R). These are GPU timings of the paper's ASR runs:
nothing here is runnable yet (no speech domain). List the cells:

    python -m scripts.reproduce gfsa.table27 --list
"""

from __future__ import annotations

from attnbench.papers.tables import Table, grid

COLUMNS = ("LibriSpeech 100h", "LibriSpeech 960h")

# row: (model, seconds per epoch in COLUMNS order)
ROWS = {
    "Transformer": ("Transformer", (190.5, 3049.3)),
    "Transformer + GFSA": ("Transformer", (191.6, 3398.4)),
    "Branchformer": ("Branchformer", (248.5, 4990.1)),
    "Branchformer + GFSA": ("Branchformer", (254.3, 4999.3)),
}


def needs(model: str) -> str:
    return (
        "GPU timing of the paper's setting, which needs the LibriSpeech ASR task (speech "
        f"domain) and a {model} ASR model, not built yet"
    )


def get_table() -> Table:
    return Table(
        key="gfsa.table27",
        caption="Training time (seconds per epoch) on LibriSpeech datasets.",
        source="GFSA paper Table 27; arXiv 2312.04234",
        rows=tuple(ROWS),
        columns=COLUMNS,
        cells=grid(
            {row: numbers for row, (_, numbers) in ROWS.items()},
            COLUMNS,
            metric="train.seconds_per_epoch",
            scale=1.0,
            needs=lambda row, _: needs(ROWS[row][0]),
        ),
        higher_is_better={column: False for column in COLUMNS},
        notes=(
            "Setting (App. N.1, Table 19): SpeechBrain recipes, Transformer (71.5M, 100 epochs, K "
            "= 2) and Branchformer (109.8M, 120 epochs, K = 3), one RTX A6000 48GB. Single "
            "measurements.",
        ),
    )
