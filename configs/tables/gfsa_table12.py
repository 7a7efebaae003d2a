"""GFSA Table 12: FLOPs, throughput and ImageNet-1k top-1 accuracy of DeiT-S (12 and 24 layers),
CaiT-S and Swin-S, with and without GFSA.

Numbers: GFSA (arXiv 2312.04234) Table 12 (App. M.2). A printed "81.1 (↑1.3)" is split into the
Top-1 Acc and Top-1 gain columns. #Params and FLOPs are computed from the recipes' models; the Top-1
cells run the recipes (configs/vision/imagenet.py). The throughputs are timed on the same recipes
(`_gfsa_timing`: inference at 256 images per step, synthetic images) by `python -m
scripts.speed_tables --tables timing_gfsa_vision`, on whatever device it runs on, beside the
paper's RTX 3090 numbers. `CONFIG` also holds the recipes of Tables 3
and 15's "DeiT-S + ContraNorm (12L)" / "(24L)" rows (`CONTRANORM`: `model=deit_s,contranorm=1` and
`model=deit_s24,contranorm=1`), which this table does not have. List the cells:

    python -m scripts.reproduce gfsa.table12 --list
"""

from __future__ import annotations

from attnbench.papers.tables import Table, grid
from configs.tables import _gfsa_timing

COLUMNS = ("#Params (M)", "FLOPs (G)", "Throughput (img/s)", "Top-1 Acc", "Top-1 gain (pts)")

METRIC = {
    "#Params (M)": "model.params_m",
    "FLOPs (G)": "model.gflops",
    "Throughput (img/s)": "eval.images_per_s",
    "Top-1 Acc": "test_best.accuracy",
    "Top-1 gain (pts)": "derived.accuracy_gain",
}

# row: the printed numbers in COLUMNS order ("-": no gain printed on a backbone row, which has no
# gain over itself; no cell)
ROWS = {
    "DeiT-S (12L)": "22.0 4.57 856.07 79.8 -",
    "DeiT-S + GFSA (12L)": "22.0 4.57 614.54 81.1 1.3",
    "DeiT-S (24L)": "43.3 9.09 423.68 80.5 -",
    "DeiT-S + GFSA (24L)": "43.3 9.10 314.75 81.5 1.0",
    "CaiT-S (24L)": "46.9 9.34 574.66 82.6 -",
    "CaiT-S + GFSA (24L)": "47.0 9.34 406.96 82.8 0.2",
    "Swin-S": "49.6 8.75 912.38 82.9 -",
    "Swin-S + GFSA": "49.6 8.75 714.60 83.0 0.1",
}

# Top-1 numbers the authors quoted (as in Table 3, gfsa.table3, which explains the reading).
QUOTED_TOP1 = {
    "DeiT-S (12L)": "Touvron et al. 2021a (DeiT) [74]",
    "DeiT-S (24L)": "Touvron et al. 2021a (DeiT) [74]",
    "CaiT-S (24L)": "Touvron et al. 2021b (CaiT) [75]",
}

NOTES = (
    "Descriptive columns dropped: input size 224; #Layers in the row label (Swin-S is printed with "
    "24 layers here and in Table 25 but 12 in Tables 3 and 15; it has 24 blocks: depths 2, 2, 18, "
    "2).",
    "#Params of every row are counted on the models configs/vision/imagenet.py builds "
    "(attnbench.papers.exact.model_params_m): exact (CaiT-S's 46,916,200 and 46,916,392 with GFSA "
    "are the released model and the authors' log).",
    "FLOPs are the authors' counter applied to the recipes "
    "(attnbench.papers.exact.gfsa_code_gflops: the flops() methods of their Image/gfsa.py, "
    "gfsa_cait.py and Swin code): it counts the blocks on the 196 patches without the class token,"
    " adds one op per element for norms, softmax and LayerScale, and never counts the GFSA filter,"
    " so GFSA rows equal their backbones. It reproduces every printed value: DeiT-S 4.5787 "
    "(printed 4.57, truncated), 24 layers 9.0991 (printed 9.09, and 9.10 for the identical GFSA "
    "count), CaiT-S 9.3414, Swin-S 8.7500. Our own count of the same models "
    "(attnbench.papers.exact.model_gmacs: matmul multiply-accumulates, class token included, "
    "checked against XLA's cost analysis) is DeiT-S 4.599, 24 layers 9.140, CaiT-S 9.327, Swin-S "
    "8.741 GMAC, and with our GFSA (A(AV), never A^2) 4.778, 9.497, 9.681 and 8.855: the filter "
    "costs 1-4%; forming A^2 as the authors' code does would cost n^3 multiply-adds per head and "
    "layer (0.55 G, +12%, for the 12-layer DeiT-S).",
    "Throughput units are not stated (timm-style images/s presumed); single measurements on "
    "an RTX 3090.",
    "The FLOPs and throughput columns reappear in Table 25 (gfsa.table25, with the training "
    "times), the Top-1 column in Tables 3 and 15 (gfsa.table3, gfsa.table15). The backbone "
    "Top-1 numbers of DeiT-S and CaiT-S are marked quoted as in Table 3.",
    "Top-1 gain is printed in points over the backbone row above; it is derived from two runs, "
    "which scripts.tables does not compute.",
)


# Rows whose model a recipe builds: the #Params and FLOPs cells are computed from it exactly (and
# the Top-1 cells train it; Tables 3, 15, 25, 31 and 39 take their rows' recipes from here).
CONFIG = {
    "DeiT-S (12L)": "vision/imagenet.py:model=deit_s",
    "DeiT-S + GFSA (12L)": "vision/imagenet.py:model=deit_s,attn=gfsa",
    "DeiT-S (24L)": "vision/imagenet.py:model=deit_s24",
    "DeiT-S + GFSA (24L)": "vision/imagenet.py:model=deit_s24,attn=gfsa",
    "CaiT-S (24L)": "vision/imagenet.py:model=cait_s24",
    "CaiT-S + GFSA (24L)": "vision/imagenet.py:model=cait_s24,attn=gfsa",
    "Swin-S": "vision/imagenet.py:model=swin_s",
    "Swin-S + GFSA": "vision/imagenet.py:model=swin_s,attn=gfsa",
}
# Tables 3 and 15's two "DeiT-S + ContraNorm" rows (not in this table): the backbone rows' recipes
# with ContraNorm around every LayerNorm (`contranorm=1`: attnbench.nn.contranorm, s = 0.01, tau =
# 1, configs/vision/imagenet.py CONTRANORM_VIT); the 24-layer one keeps deit_s24's dropout 0.2
# (GFSA App. M.1, the setting of its DeiT-S (24L) row). Tables 3 and 15 read CONFIG, so they are
# in it; this table's rows never look them up.
CONTRANORM = {
    "DeiT-S + ContraNorm (12L)": "vision/imagenet.py:model=deit_s,contranorm=1",
    "DeiT-S + ContraNorm (24L)": "vision/imagenet.py:model=deit_s24,contranorm=1",
}
CONFIG |= CONTRANORM
EXACT = {
    "#Params (M)": "attnbench.papers.exact:model_params_m",
    "FLOPs (G)": "attnbench.papers.exact:gfsa_code_gflops",  # the authors' counter (see NOTES)
}


def _computed(row: str, column: str) -> bool:
    return row in CONFIG and column in EXACT


def _trained(row: str, column: str) -> bool:
    return row in CONFIG and column == "Top-1 Acc"


# What the cells no recipe runs need (Tables 15 and 25 share the wording).
GAIN_NEEDS = "the difference of two Top-1 runs (derived, not a run of its own)"


def _timing(row: str, column: str) -> dict | None:
    """The throughput cells: inference of the row's recipe (`_gfsa_timing.imagenet`)."""
    if column.startswith("Throughput"):
        return _gfsa_timing.imagenet(CONFIG.get(row), "img/s")
    return None


def _needs(row: str, column: str) -> str | None:
    if _computed(row, column) or _trained(row, column):
        return None
    if column.startswith("Throughput"):
        return None  # timed (`_timing`)
    if column.startswith("Top-1 gain"):
        return GAIN_NEEDS
    raise ValueError(f"gfsa.table12 [{row!r}, {column!r}]: no recipe and no reason")


def get_table() -> Table:
    return Table(
        key="gfsa.table12",
        caption="Experimental evaluation of GFSA plugged into DeiT-S, CaiT-S, and Swin-S: FLOPs, "
        "throughput and ImageNet-1k top-1 accuracy (%).",
        source="GFSA paper Table 12; arXiv 2312.04234",
        rows=tuple(ROWS),
        columns=COLUMNS,
        cells=grid(
            ROWS,
            COLUMNS,
            metric=lambda _, column: METRIC[column],
            scale=lambda _, column: 100 if column == "Top-1 Acc" else 1,
            quoted=lambda row, column: QUOTED_TOP1.get(row) if column == "Top-1 Acc" else None,
            needs=_needs,
            config=lambda row, column: CONFIG[row] if _trained(row, column) else None,
            exact=lambda row, column: EXACT[column] if _computed(row, column) else None,
            exact_args=lambda row, column: (
                {"config": CONFIG[row]} if _computed(row, column) else {}
            ),
            **_gfsa_timing.recipe_timing("timing_gfsa_vision", _timing),
        ),
        higher_is_better={"FLOPs (G)": False, "#Params (M)": False},
        notes=NOTES,
    )
