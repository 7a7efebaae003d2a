"""Sliceformer Table 5: ViT vs. Sliceformer (a ViT with slicing-sorting attention), top-1
accuracy (%) on CIFAR-10, CIFAR-100 and Tiny-ImageNet, trained from scratch.

Numbers: the paper's Table 5 (checked against ../shared/papers/sliceformer.txt), as extracted in
../shared/papers/notes/sliceformer.md Sec. 3 (Table 5); both rows are the authors' runs. The
"Size" columns (parameters x 10^6) are descriptive and kept in the table's notes. No cell is
runnable yet: the ViT image-classification task (vision domain) does not exist.

    python -m scripts.reproduce sliceformer.table5 --list     # the cells and what they need
"""

from __future__ import annotations

from core.paper_tables import Table, grid

COLUMNS = ("CIFAR-10", "CIFAR-100", "Tiny-ImageNet")  # Top-1 Acc (%)

NEEDS = "the ViT image-classification task (vision domain), not built yet"

# row: top-1 accuracy in COLUMNS order (the mechanisms exist: softmax, sliceformer)
ROWS = {
    "ViT": (80.98, 53.99, 52.74),
    "Sliceformer": (82.16, 54.24, 51.77),
}

# Size (x 10^6 parameters) as printed, per row, in COLUMNS order (descriptive; notes only).
SIZES = {"ViT": (9.60, 9.65, 22.05), "Sliceformer": (6.46, 6.50, 18.50)}


def get_table() -> Table:
    sizes = "; ".join(
        f"{row} " + ", ".join(f"{c} {s:.2f}" for c, s in zip(COLUMNS, SIZES[row], strict=True))
        for row in ROWS
    )
    return Table(
        key="sliceformer.table5",
        caption=(
            "The comparison for our Sliceformer and ViT on the number of parameters (x 10^6) "
            "and classification accuracy (%)."
        ),
        source="Sliceformer paper Table 5; notes sliceformer.md Sec. 3 (Table 5)",
        rows=tuple(ROWS),
        columns=COLUMNS,
        cells=grid(ROWS, COLUMNS, metric="test_best.accuracy", scale=100, needs=NEEDS),
        higher_is_better={c: True for c in COLUMNS},
        notes=(
            f"Size column dropped (descriptive), printed x 10^6 parameters: {sizes}. The notes "
            "reproduce them exactly (Sec. 2.6): vit-pytorch ViT, dim 512, depth 6, 8x64 heads, "
            "MLP 512, patch 2 for CIFAR; timm ViT-S/16 at 224x224 with a 1000-class head for "
            "Tiny-ImageNet; the Sliceformer drops W_Q and W_K and keeps W_O.",
            "Setup from the authors' code (the draft gives none; notes Sec. 2.6): CIFAR 400 "
            "epochs, Adam 1e-4, batch 512 / 128, cosine per epoch, crop + flip; Tiny-ImageNet "
            "600 epochs, AdamP 3e-3, wd 0.05, batch 256, presumably resized to 224 (notes Sec. "
            "6.21).",
            "Reported accuracy is the best test accuracy over epochs (model selection on the "
            "test set; notes Sec. 6.19), i.e. our test_best.",
        ),
    )
