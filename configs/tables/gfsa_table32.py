"""GFSA Table 32: inference time (seconds) of Graphormer, with and without GFSA, on ZINC,
PCQM4M and PCQM4Mv2.

Numbers: the paper's Table 32 (App. S), as extracted in ../shared/papers/notes/gfsa.md Sec. 3.
These are GPU timings of the paper's Graphormer evaluation: nothing here is runnable yet (no
graphs domain). List the cells:

    python -m scripts.reproduce gfsa.table32 --list
"""

from __future__ import annotations

from core.paper_tables import Cell, Table

COLUMNS = ("ZINC", "PCQM4M", "PCQM4Mv2")

ROWS = {  # inference seconds in COLUMNS order
    "Graphormer": (8, 99, 31),
    "Graphormer + GFSA": (8, 117, 29),
}

NOTES = {
    ("Graphormer + GFSA", "PCQM4Mv2"): "Faster than Graphormer without GFSA (29 < 31 s): timing "
    "noise of a single measurement (notes Sec. 6.22).",
}


def needs(dataset: str) -> str:
    return (
        f"GPU timing of the paper's setting, which needs the {dataset} task (graphs domain) "
        "and a Graphormer encoder, not built yet"
    )


def get_table() -> Table:
    cells = [
        Cell(
            row=row,
            column=column,
            paper=float(paper),
            metric="test.inference_seconds",
            scale=1.0,
            needs=needs(column),
            note=NOTES.get((row, column)),
        )
        for row, numbers in ROWS.items()
        for column, paper in zip(COLUMNS, numbers, strict=True)
    ]
    return Table(
        key="gfsa.table32",
        caption="Inference time (seconds) on graph-level tasks.",
        source="GFSA paper Table 32; notes gfsa.md Sec. 3 (Table 32)",
        rows=tuple(ROWS),
        columns=COLUMNS,
        cells=tuple(cells),
        higher_is_better={column: False for column in COLUMNS},
        notes=(
            "Setting (notes Sec. 2.4): Graphormer-SLIM on ZINC, Graphormer base on "
            "PCQM4M/PCQM4Mv2, one RTX 3090 24GB. Single measurements.",
        ),
    )
