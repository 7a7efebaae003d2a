"""GFSA Table 16: DeiT-S + GFSA against Fourier-based and anti-oversmoothing models of similar
size on ImageNet-1k (12-layer setup; top-1 and top-5 %).

Numbers: the paper's Table 16 (App. M.5, checked against the paper text), as extracted in
../shared/papers/notes/gfsa.md Sec. 3. Nothing here is runnable yet (no vision domain); list the
cells:

    python -m scripts.reproduce gfsa.table16 --list
"""

from __future__ import annotations

from core.paper_tables import Table, grid

COLUMNS = ("Top-1 Acc", "Top-5 Acc")

# row: (printed top-1 and top-5 %, "-" where not printed (no cell: nothing we can run); the paper
# the number was copied from)
ROWS = {
    "DeiT-S": ("79.8 95.0", "Touvron et al. 2021a (DeiT) [74]"),
    "FNet-XS": ("71.2 -", "Lee-Thorp et al. 2021 (FNet) [42]"),
    "GFNet-XS": ("78.6 94.2", "Rao et al. 2021 (GFNet) [64]"),
    "SpectFormer-XS": ("80.2 94.7", "Patro et al. 2023 (SpectFormer) [58]"),
    "SVT-XS": ("79.9 94.5", "Patro and Agneeswaran 2023 (SVT) [57]"),
    "DeiT-S + NeuTRENO": ("80.7 95.4", "Nguyen et al. 2023 (NeuTRENO) [52]"),
    "DeiT-S + GFSA": ("81.1 95.4", None),
}

NOTES = (
    "Descriptive columns dropped: input size 224, 12 layers for every row; #Params DeiT-S 22M, "
    "FNet-XS 20M, GFNet-XS 16M, SpectFormer-XS 20M, SVT-XS 20M, DeiT-S + NeuTRENO 20M (sic: a "
    "DeiT-S has 22M; notes Sec. 6 item 19), DeiT-S + GFSA 22M.",
    "Quoted: every row but GFSA's is copied from the literature (notes Sec. 5); the DeiT-S row "
    "carries no citation here but is DeiT's own 79.8 (notes Sec. 6, item 11). FNet-XS has no "
    "top-5 ('-'); that cell is left out.",
)


def _needs(row: str) -> str:
    needs = f"the ImageNet-1k task (vision domain) and a {row.split()[0]} model, not built yet"
    return needs + ("; the NeuTRENO method, not implemented" if "NeuTRENO" in row else "")


def get_table() -> Table:
    return Table(
        key="gfsa.table16",
        caption="Compared with state-of-the-art models on ImageNet-1k, 12-layer setup (top-1 and "
        "top-5 %).",
        source="GFSA paper Table 16; notes gfsa.md Sec. 3 (Table 16)",
        rows=tuple(ROWS),
        columns=COLUMNS,
        cells=grid(
            {row: numbers for row, (numbers, _) in ROWS.items()},
            COLUMNS,
            metric=lambda _, column: (
                f"test_best.{'top5_' if column == 'Top-5 Acc' else ''}accuracy"
            ),
            scale=100,
            quoted=lambda row, _: ROWS[row][1],
            needs=lambda row, _: _needs(row),
        ),
        notes=NOTES,
    )
