"""SAMSA Table 4: runtime of graph positional encodings (LapPE, RWPE) over one epoch of
Peptides-struct against one training epoch of the whole 24-layer SAMSA model, on an A100 (s).

Numbers: the paper's Table 4 (checked against ../shared/papers/samsa.txt; notes samsa.md Sec. 3).
LapPE and RWPE are quoted from the LRGB paper (Dwivedi et al. 2022), other hardware.

Not runnable here, and not reproduced elsewhere either: `scripts/speed_tables.py` times SAMSA's
Table 1 speed row only (LRA-encoder inference at 1,024 tokens), not a Peptides-struct epoch nor
LapPE / RWPE precomputation. So

    python -m scripts.reproduce samsa.table4

only lists what each cell needs.
"""

from __future__ import annotations

from core.paper_tables import Table, grid

ROW = "Peptides-struct"
COLUMNS = ("LapPE", "RWPE", "SAMSA (whole model)")

# Same wording as samsa.table1 for the missing task.
PEPTIDES = "the LRGB Peptides task (graphs domain), not built yet"

# column: (seconds as printed, quoted source or None, what else is missing)
CELLS = {
    "LapPE": (
        73.0,
        "Dwivedi et al. 2022 (LRGB)",
        "Laplacian-eigenvector positional encodings (LapPE), not implemented",
    ),
    "RWPE": (
        53.0,
        "Dwivedi et al. 2022 (LRGB)",
        "random-walk positional encodings (RWPE), not implemented",
    ),
    "SAMSA (whole model)": (
        35.0,
        None,
        "a one-epoch timing of the 24-layer SAMSA Peptides-struct model, not in "
        "scripts.speed_tables",
    ),
}


def get_table() -> Table:
    return Table(
        key="samsa.table4",
        caption=(
            "Runtime of Graph Positional Encoding on one epoch on A100 compared to our 24-layer "
            "SAMSA model (seconds)."
        ),
        source="SAMSA paper Table 4; notes samsa.md Sec. 3 (Table 4)",
        rows=(ROW,),
        columns=COLUMNS,
        cells=grid(
            {ROW: tuple(seconds for seconds, _, _ in CELLS.values())},
            COLUMNS,
            metric="wall_time_s",
            scale=1,
            quoted=lambda _, column: CELLS[column][1],
            needs=lambda _, column: f"{PEPTIDES}; and {CELLS[column][2]}",
        ),
        higher_is_better={ROW: False},
        notes=(
            "Printed as '73s', '53s', '35s'. A timing table: each number is seconds on the "
            "paper's hardware; `metric` names no summary metric (no cell is runnable).",
            "Not a same-machine comparison: LapPE / RWPE precompute times are copied from the LRGB "
            "paper (other hardware), the SAMSA epoch is the authors' A100; batch, precision and k "
            "of the SAMSA run are not stated (notes Sec. 6, item 26).",
            "Peptides-struct graphs have 'around 155 nodes' (paper; LRGB's training split holds "
            "10,873 graphs, notes Sec. 2.2); SAMSA: 24 layers, d 128, batch 32 (Tables 7-8).",
        ),
    )
