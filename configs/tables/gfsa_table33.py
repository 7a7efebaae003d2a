"""GFSA Table 33: inference time (seconds) of the SpeechBrain Transformer and Branchformer ASR
models, with and without GFSA, on LibriSpeech 100h and 960h.

Numbers: the paper's Table 33 (App. S), as extracted in ../shared/papers/notes/gfsa.md Sec. 3.
These are GPU timings of the paper's ASR evaluation: nothing here is runnable yet (no speech
domain). List the cells:

    python -m scripts.reproduce gfsa.table33 --list
"""

from __future__ import annotations

from core.paper_tables import Cell, Table

COLUMNS = ("LibriSpeech 100h", "LibriSpeech 960h")

# row: (model, inference seconds in COLUMNS order)
ROWS = {
    "Transformer": ("Transformer", (328.1, 323.7)),
    "Transformer + GFSA": ("Transformer", (329.5, 343.3)),
    "Branchformer": ("Branchformer", (299.4, 328.7)),
    "Branchformer + GFSA": ("Branchformer", (305.5, 354.1)),
}


def needs(model: str) -> str:
    return (
        "GPU timing of the paper's setting, which needs the LibriSpeech ASR task (speech "
        f"domain) and a {model} ASR model, not built yet"
    )


def get_table() -> Table:
    cells = [
        Cell(
            row=row,
            column=column,
            paper=paper,
            metric="test.inference_seconds",
            scale=1.0,
            needs=needs(model),
        )
        for row, (model, numbers) in ROWS.items()
        for column, paper in zip(COLUMNS, numbers, strict=True)
    ]
    return Table(
        key="gfsa.table33",
        caption="Inference time (seconds) on LibriSpeech datasets.",
        source="GFSA paper Table 33; notes gfsa.md Sec. 3 (Table 33)",
        rows=tuple(ROWS),
        columns=COLUMNS,
        cells=tuple(cells),
        higher_is_better={column: False for column in COLUMNS},
        notes=(
            "Setting (notes Sec. 2.5): SpeechBrain recipes with joint CTC/attention beam search "
            "and a Transformer LM, one RTX A6000 48GB. The paper does not say which test set "
            "(clean / other) is timed. Single measurements.",
        ),
    )
