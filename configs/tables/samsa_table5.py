"""SAMSA Table 5: inference time (s) over the ModelNet40 classification test split (2,468 shapes
of 1,024 points), one A100 and 8 CPUs, batch 32: PointNet and DGCNN against hard / soft SAMSA.

Numbers: the paper's Table 5 (checked against ../shared/papers/samsa.txt; notes samsa.md Sec. 3).
PointNet and DGCNN are quoted from Kaba et al. 2023 (caption).

Not runnable here, and not reproduced elsewhere: the point-cloud domain is not built, and
`scripts/speed_tables.py` times SAMSA's Table 1 speed row only (the LRA encoder at 1,024 tokens),
not the ModelNet40 model over its test split. So

    python -m scripts.reproduce samsa.table5

only lists what each cell needs.
"""

from __future__ import annotations

from core.paper_tables import Table, grid

ROW = "Inference time (s)"
COLUMNS = ("PointNet", "DGCNN", "hard-SAMSA", "soft-SAMSA")

# Same wording as samsa.table1 for the missing task.
MODELNET = "the ModelNet40 task (point-cloud domain), not built yet"
TIMING = "a test-split inference timing, not in scripts.speed_tables"

KABA = "Kaba et al. 2023"

# column: (seconds as printed (None: not a number), quoted source or None, missing model or None)
CELLS = {
    "PointNet": (18.0, KABA, "PointNet"),
    "DGCNN": (23.0, KABA, "DGCNN"),
    "hard-SAMSA": (None, None, None),
    "soft-SAMSA": (1.0, None, None),
}

NOTES = {"hard-SAMSA": "printed '<1s' (under one second), not a number"}


def _needs(model: str | None) -> str:
    parts = [MODELNET] + ([f"the {model} model, not implemented"] if model else []) + [TIMING]
    return "; and ".join(parts)


def get_table() -> Table:
    return Table(
        key="samsa.table5",
        caption=(
            "Inference time (in seconds) of the networks for ModelNet40 classification test split "
            "in 1 A100 and 8 CPUs with a batch size of 32."
        ),
        source="SAMSA paper Table 5; notes samsa.md Sec. 3 (Table 5)",
        rows=(ROW,),
        columns=COLUMNS,
        cells=grid(
            {ROW: tuple(seconds for seconds, _, _ in CELLS.values())},
            COLUMNS,
            keep_blanks=True,
            metric="wall_time_s",
            scale=1,
            quoted=lambda _, column: CELLS[column][1],
            needs=lambda _, column: _needs(CELLS[column][2]),
            note=lambda _, column: NOTES.get(column),
        ),
        higher_is_better={ROW: False},
        notes=(
            "Printed as '18s', '23s', '<1s', '1s'. A timing table; `metric` names no summary "
            "metric (no cell is runnable).",
            "Not a same-machine comparison: PointNet / DGCNN times are copied from Kaba et al. "
            "2023; the k of the SAMSA rows and the precision are not stated (notes Sec. 6, "
            "item 26). SAMSA's ModelNet40 model: 6 layers, d 256, d_FFN 768, 8 heads (Table 8).",
            "The text's '18x faster than PointNet' reads 18 s against hard-SAMSA's '<1s'.",
        ),
    )
