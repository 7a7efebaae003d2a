"""GFSA Table 25: FLOPs, throughput and training time (seconds per epoch) on ImageNet-1k of
DeiT-S (12 and 24 layers), CaiT-S and Swin-S, with and without GFSA.

Numbers: GFSA (arXiv 2312.04234) Table 25 (App. R). The FLOPs cells are computed exactly, as Table
12's (the authors' counter applied to the models configs/vision/imagenet.py builds:
attnbench.papers.exact.gfsa_code_gflops); the throughputs and runtimes are GPU timings of the
paper's setting, timed on the same recipes (`_gfsa_timing`: 256 images per step on one device,
synthetic images; seconds per epoch = 1,281,167 training images / images per second) by `python -m
scripts.speed_tables --tables timing_gfsa_vision`, on whatever device it runs on, beside the
paper's numbers. List the cells:

    python -m scripts.reproduce gfsa.table25 --list
"""

from __future__ import annotations

from attnbench.papers.tables import Table, grid
from configs.tables import _gfsa_timing, gfsa_table12

COLUMNS = ("FLOPs (G)", "Throughput (img/s)", "Runtime (s/epoch)")
METRIC = {
    "FLOPs (G)": "model.gflops",
    "Throughput (img/s)": "eval.images_per_s",
    "Runtime (s/epoch)": "train.seconds_per_epoch",
}

# row: (model, (FLOPs G, throughput img/s, seconds per epoch))
ROWS = {
    "DeiT-S (12L)": ("DeiT-S", (4.57, 856.07, 551)),
    "DeiT-S + GFSA (12L)": ("DeiT-S", (4.57, 614.54, 814)),
    "DeiT-S (24L)": ("DeiT-S", (9.09, 423.68, 1508)),
    "DeiT-S + GFSA (24L)": ("DeiT-S", (9.10, 314.75, 1798)),
    "CaiT-S (24L)": ("CaiT-S", (9.34, 574.66, 1530)),
    "CaiT-S + GFSA (24L)": ("CaiT-S", (9.34, 406.96, 1624)),
    "Swin-S": ("Swin-S", (8.75, 912.38, 1897)),
    "Swin-S + GFSA": ("Swin-S", (8.75, 714.60, 1970)),
}


UNIT = {"Throughput (img/s)": "img/s", "Runtime (s/epoch)": "s/epoch"}


def _timing(row: str, column: str) -> dict | None:
    """The throughput and runtime cells: the row's recipe (`_gfsa_timing.imagenet`)."""
    if column in UNIT:
        return _gfsa_timing.imagenet(gfsa_table12.CONFIG[row], UNIT[column])
    return None


def _exact(row: str, column: str) -> bool:
    return column.startswith("FLOPs")


def get_table() -> Table:
    return Table(
        key="gfsa.table25",
        caption="Training time (seconds per epoch) on ImageNet-1k, with FLOPs and throughput.",
        source="GFSA paper Table 25; arXiv 2312.04234",
        rows=tuple(ROWS),
        columns=COLUMNS,
        cells=grid(
            {row: numbers for row, (_, numbers) in ROWS.items()},
            COLUMNS,
            metric=lambda _, column: METRIC[column],
            scale=1.0,
            exact=lambda row, column: gfsa_table12.EXACT[column] if _exact(row, column) else None,
            exact_args=lambda row, column: (
                {"config": gfsa_table12.CONFIG[row]} if _exact(row, column) else {}
            ),
            **_gfsa_timing.recipe_timing("timing_gfsa_vision", _timing),
        ),
        higher_is_better={
            "FLOPs (G)": False,
            "Throughput (img/s)": True,
            "Runtime (s/epoch)": False,
        },
        notes=(
            "Backbone and #Layers go into the row labels; #Params (DeiT-S 22.0M / 43.3M, CaiT-S "
            "46.9M -> 47.0M with GFSA, Swin-S 49.6M) is a descriptive column, dropped.",
            "The FLOPs and throughput columns repeat Table 12; the FLOPs are computed as there "
            "(the authors' counter, which never counts the GFSA filter; see gfsa.table12's notes "
            "for our own count). Swin-S is listed with 24 layers here and in Table 12 but 12 in "
            "Tables 3 and 15 (Swin-S has 24 blocks: depths 2, 2, 18, 2).",
            "Setting (App. M.1): timm DeiT/CaiT/Swin recipes, RTX 3090 24GB (the GPU count is not "
            "stated; the code README, jeongwhanchoi/GFSA Image/README.md, says 4). GFSA K: DeiT-S "
            "12L 3 in the paper (the released code hard-codes 4), CaiT-S 4, Swin-S 3 (code). "
            "Single measurements.",
            "The 12-layer DeiT-S runtimes (551 / 814 s) reappear in Table 39 and Figure 3.",
        ),
    )
