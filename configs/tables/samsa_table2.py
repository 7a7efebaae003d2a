"""SAMSA Table 2: SAMSA (hard / soft) against efficient transformers and sequence models on the
five Long Range Arena tasks (accuracy %).

Numbers: SAMSA (arXiv 2408.05391) Table 2. The baseline rows are literature numbers (our reading:
Table 2 cites each row's paper, and the paper reports no baseline runs of its own for it): BigBird,
Reformer, Performer and Linformer are the LRA paper's (Tay et al. 2021), Luna-256 its own paper's,
Transformer MEGA's (Table 1's caption), S4 and MEGA their papers'. Run one cell:

    python -m scripts.reproduce samsa.table2 --preset cpu --cells listops

The two SAMSA rows are selections from Table 1's runs; each cell runs the Table 1 column
(k, mode) its number matches (SAMSA_COLUMN below). Baselines whose model is the LRA base
Transformer with a mechanism we have (Transformer, BigBird, Reformer, Performer, Linformer) run
that recipe; Luna-256, S4 and MEGA run their authors' LRA recipes on our backbones
(`model=luna|s4d|mega`, configs/lra/base.py): Luna with 256 packed tokens, MEGA unchunked, and
for S4 the diagonal S4D layer (the row prints S4's numbers).
"""

from __future__ import annotations

from attnbench.papers.tables import Table, grid
from configs.tables import sliceformer_table2

COLUMNS = ("ListOps", "Text", "Retrieval", "Image", "Pathfinder")

CONFIG = {
    "ListOps": "lra/listops.py",
    "Text": "lra/text.py",
    "Retrieval": "lra/retrieval.py",
    "Image": "lra/image.py",
    "Pathfinder": "lra/pathfinder.py",
}

LRA = "Tay et al. 2021 (LRA)"
MEGA = "Ma et al. 2023b (MEGA)"

# row: (paper numbers in COLUMNS order, config args or None, quoted source or None, needs)
ROWS = {
    "BigBird": (
        (36.05, 64.02, 59.29, 40.83, 74.87),
        "model=transformer,attn=bigbird",
        LRA,
        None,
    ),
    "Reformer": (
        (37.27, 56.10, 53.40, 38.07, 68.50),
        "model=transformer,attn=reformer",
        LRA,
        None,
    ),
    "Performer": (
        (18.01, 65.40, 53.82, 42.77, 77.05),
        "model=transformer,attn=performer",
        LRA,
        None,
    ),
    "Linformer": (
        (35.70, 53.94, 52.27, 38.56, 76.34),
        "model=transformer,attn=linformer",
        LRA,
        None,
    ),
    "Luna-256": ((37.98, 65.78, 79.56, 47.86, 78.55), "model=luna", "Ma et al. 2021 (Luna)", None),
    "Transformer": ((37.11, 65.21, 79.14, 42.44, 71.83), "model=transformer", MEGA, None),
    "S4": ((88.65, 76.02, 87.09, 86.09, 86.05), "model=s4d", "Gu et al. 2022 (S4)", None),
    "MEGA": ((63.14, 90.43, 91.25, 90.44, 96.01), "model=mega", MEGA, None),
    "hard-SAMSA": ((41.12, 65.42, 81.89, 48.24, 72.27), "samsa", None, None),
    "soft-SAMSA": ((41.88, 65.53, 82.05, 48.73, 81.97), "samsa", None, None),
}

# The Table 1 column (k, mode) whose number each SAMSA cell is (Table 1 vs Table 2).
SAMSA_COLUMN = {
    ("hard-SAMSA", "ListOps"): (128, "hard"),  # 41.12 vs Table 1 hard-128 41.13
    ("hard-SAMSA", "Text"): (128, "hard"),  # 65.42 = every hard column of Table 1
    ("hard-SAMSA", "Retrieval"): (256, "hard"),  # 81.89 = hard-256 (not the best hard, 82.05)
    ("hard-SAMSA", "Image"): (128, "hard"),  # 48.24 = hard-128
    ("hard-SAMSA", "Pathfinder"): (512, "hard"),  # 72.27 vs hard-512 72.28
    ("soft-SAMSA", "ListOps"): (256, "soft"),  # 41.88 vs soft-256 41.89
    ("soft-SAMSA", "Text"): (256, "soft"),  # 65.53 = soft-256
    ("soft-SAMSA", "Retrieval"): (128, "soft"),  # 82.05 = hard-128; Table 1 has no soft run
    ("soft-SAMSA", "Image"): (256, "soft"),  # 48.73 = soft-256
    ("soft-SAMSA", "Pathfinder"): (128, "soft"),  # 81.97 = soft-128
}

NOTES = {
    ("Reformer", "Image"): sliceformer_table2.REFORMER_IMAGE_NOTE,
    ("hard-SAMSA", "ListOps"): "Table 1's hard-128 ListOps is 41.13 (Table 1 vs Table 2)",
    ("hard-SAMSA", "Text"): "Table 1 prints 65.42 for hard-128, -256 and -512; we run k = 128",
    ("hard-SAMSA", "Retrieval"): (
        "= Table 1's hard-256, not its best hard Retrieval (hard-128, 82.05) (Table 1 vs Table 2)"
    ),
    ("hard-SAMSA", "Pathfinder"): "Table 1's hard-512 Pathfinder is 72.28 (Table 1 vs Table 2)",
    ("soft-SAMSA", "ListOps"): "Table 1's soft-256 ListOps is 41.89 (Table 1 vs Table 2)",
    ("soft-SAMSA", "Retrieval"): (
        "Table 1 has no soft Retrieval run; 82.05 is its hard-128 number. We run the soft sampler "
        "at k = 128 (the row's model), so ours is not the run behind the printed number (Table 1 "
        "vs Table 2)"
    ),
    ("Transformer", "Image"): (
        "Table 1 (the same MEGA-quoted Transformer) prints 42.94, MEGA's number; 42.44 is the LRA "
        "paper's Transformer Image score (Table 1 vs Table 2 and the LRA paper's Table 1)"
    ),
    ("S4", "ListOps"): (
        "garbled row: 88.65 is S4-v2's Image score, not a ListOps score (our comparison with the "
        "S4 paper)"
    ),
    ("S4", "Image"): "garbled row: 86.09 is S4-v2's LRA average (our comparison with the S4 paper)",
}


# Said on every cell of a row, after the cell's own note.
ROW_NOTES = {
    "S4": (
        "we run S4D (diagonal S4, Gu et al. 2022, arXiv 2206.11893) in S4's LRA configs, not the "
        "DPLR S4 whose numbers the row prints; S4D's own LRA results are within about a point of "
        "S4's on most tasks (S4D Sec. 5)"
    ),
}


def _note(row: str, column: str) -> str | None:
    notes = [n for n in (NOTES.get((row, column)), ROW_NOTES.get(row)) if n]
    return "; ".join(notes) or None


def _config(row: str, column: str) -> str | None:
    args = ROWS[row][1]
    if args is None:
        return None
    if args == "samsa":
        k, mode = SAMSA_COLUMN[(row, column)]
        args = f"model=samsa,k={k},mode={mode}"
    return f"{CONFIG[column]}:{args}"


def get_table() -> Table:
    return Table(
        key="samsa.table2",
        caption=(
            "(Long Range Arena) Accuracy on the full suite of long range arena (LRA) tasks "
            "(accuracy %)."
        ),
        source="SAMSA paper Table 2; arXiv 2408.05391",
        rows=tuple(ROWS),
        columns=COLUMNS,
        cells=grid(
            {row: numbers for row, (numbers, *_) in ROWS.items()},
            COLUMNS,
            config=_config,
            metric="test_best.accuracy",
            scale=100,
            quoted=lambda row, _: ROWS[row][2],
            needs=lambda row, _: ROWS[row][3],
            note=_note,
        ),
        notes=(
            "The printed Modality column (Sequence for BigBird, S4, MEGA; Any for the others) is "
            "descriptive and dropped; bold/underline (best sequence / modality-agnostic model) "
            "are lost in the text source.",
            "Every baseline row is a literature number the authors copied (the caption does not "
            "say so; our reading of the citations, and the Table 1 caption for the Transformer): "
            "BigBird, Reformer, Performer, Linformer = Tay et al. 2021 (LRA); Luna-256 = Ma et al. "
            "2021; Transformer = MEGA (Ma et al. 2023b) except Image; S4 = Gu et al. 2022 "
            "(garbled); MEGA = Ma et al. 2023b.",
            "Runnable baselines are the LRA base recipe (model=transformer, Tay et al. 2021's "
            "released configs) with the row's mechanism, except Luna-256, S4 and MEGA, which run "
            "their authors' LRA recipes (model=luna with 256 packed tokens, model=s4d, "
            "model=mega; configs/lra/base.py). The S4 row prints S4's numbers; we run S4D, the "
            "diagonal variant, whose own LRA numbers are within about a point of S4's (S4D, "
            "arXiv 2206.11893, Sec. 5).",
            "The Transformer numbers are MEGA's "
            "re-tuned Transformer, which trains better than the LRA base recipe (Table 1 caption).",
            "The SAMSA rows are single cells of Table 1 (not new runs): each cell runs the Table 1 "
            "column whose number it matches, and the mismatches (41.12 vs 41.13, 41.88 vs 41.89, "
            "72.27 vs 72.28, soft Retrieval 82.05 = hard-128) are noted on the cells (Table 1 vs "
            "Table 2).",
            "The S4 row mixes S4-v1 and S4-v2 numbers (v1: 58.35/76.02/87.09/87.26/86.05; v2: "
            "59.60/86.82/90.90/88.65/94.20, avg 86.09); the printed values are kept (our "
            "comparison with the S4 paper).",
        ),
    )
