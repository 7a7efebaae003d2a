"""SSA Table 2: CIFAR-10 image generation (left) and ImageNet-1K Swin-T classification (right).

Left: the 16-layer sub-pixel decoder on CIFAR-10 (3,072 tokens), dense S0 vs S16-L4 (locally
biased 2-D SSA with 4 bands of rows in all layers) without and with +FT; validation bits per
dimension and C / M / S normalised to S0. Right: Swin-T with 7x7 (W7) or 14x14 (W14) windows;
W14-S<l>-L4 splits each 14x14 window into four 7x7 sub-windows in l layers; top-1 validation
accuracy and C / M / S normalised to W14-S0.

Numbers: SSA (arXiv 2306.01705) Table 2. The CIFAR-10 BPD cells train configs/language/cifar10.py
(`ssa=S16-L4`, `ft=1`; `CIFAR_CONFIG`) on the official pickles at the paper preset, on the
stand-in at cpu and smoke; the ImageNet rows run
configs/vision/imagenet.py's Swin-T (`window=14`, `ssa=S10|S6`, `ft=1`; `IMAGENET_CONFIG`); the
C columns are computed exactly (no training):

    python -m scripts.reproduce ssa.table2 --list

This module also holds what the other SSA tables share for the image runs: the Swin-T recipes
(`imagenet_config`) and the GPU `needs` wording (`GPU_NEEDS`).
"""

from __future__ import annotations

from attnbench.papers.tables import Cell, Table
from configs.tables.ssa_table1 import SPEED_COUNTERPART, compute_cell, counterpart, gpu_needs

CIFAR_RECIPE = "language/cifar10.py"
# CIFAR-10 row -> its recipe (configs/language/cifar10.py on the official pickles)
CIFAR_CONFIG = {
    "S0 (Dense)": CIFAR_RECIPE,
    "S16-L4": CIFAR_RECIPE + ":ssa=S16-L4",
    "S16-L4 +FT": CIFAR_RECIPE + ":ssa=S16-L4,ft=1",
}
GPU_NEEDS = {
    "CIFAR-10": gpu_needs(
        "16-layer CIFAR-10 decoder (3,072 sub-pixels)",
        "its recipe at full scale (configs/language/cifar10.py)",
    ),
    "ImageNet-1K": (
        "GPU timing of the paper's setting (Swin-T at 224x224 on an accelerator; the recipe is "
        "vision/imagenet.py, IMAGENET_CONFIG)"
    ),
}

# CIFAR-10 row: (windows, sampled layers, +FT), (BPD, C, M, S)
CIFAR = {
    "S0 (Dense)": ((1, 0, False), (2.789, 1.00, 1.00, 1.00)),
    "S16-L4": ((4, 16, False), (2.796, 0.75, 0.53, 1.25)),
    "S16-L4 +FT": ((4, 16, True), (2.774, 0.77, 0.58, 1.22)),
}
# ImageNet-1K row -> its Swin-T recipe (configs/vision/imagenet.py), and the normalisation's
IMAGENET_CONFIG = {
    "W7-S0 (Dense)": "model=swin_t",
    "W14-S10-L4": "model=swin_t,window=14,ssa=S10",
    "W14-S10-L4 +FT": "model=swin_t,window=14,ssa=S10,ft=1",
    "W14-S6-L4": "model=swin_t,window=14,ssa=S6",
    "W14-S6-L4 +FT": "model=swin_t,window=14,ssa=S6,ft=1",
    "W14-S0 (Dense)": "model=swin_t,window=14",
}
IMAGENET_BASELINE = "W14-S0 (Dense)"


def imagenet_config(row: str, **extra) -> str:
    """The recipe of an ImageNet row, with extra `key=value` arguments (e.g. sampling=)."""
    args = ",".join([IMAGENET_CONFIG[row], *(f"{k}={v}" for k, v in extra.items())])
    return f"vision/imagenet.py:{args}"


# ImageNet-1K row: (top-1 %, C, M, S), normalised to W14-S0
IMAGENET = {
    "W7-S0 (Dense)": (81.19, 0.90, 0.70, 1.14),
    "W14-S10-L4": (80.56, 0.90, 0.73, 1.13),
    "W14-S10-L4 +FT": (81.15, 0.91, 0.76, 1.13),
    "W14-S6-L4": (81.23, 0.97, 0.91, 1.05),
    "W14-S6-L4 +FT": (81.60, 0.97, 0.92, 1.05),
    "W14-S0 (Dense)": (81.89, 1.00, 1.00, 1.00),
}

COLUMNS = (
    "CIFAR-10 BPD",
    "CIFAR-10 C",
    "CIFAR-10 M",
    "CIFAR-10 S",
    "ImageNet Acc.",
    "ImageNet C",
    "ImageNet M",
    "ImageNet S",
)

NOTES = {
    ("S16-L4 +FT", "CIFAR-10 C"): (
        "our count is 0.775, the same as WikiText-103 S16-L4 +FT (same depth, width and "
        "length), which the paper prints as 0.78; here it prints 0.77: a rounding of the tie, "
        "or a slightly larger count in the authors' CIFAR-10 model (2-D relative bias, output "
        "layer)"
    ),
    ("W7-S0 (Dense)", "ImageNet C"): (
        "a plain Swin-T count gives W7/W14 = 0.92 (our count; the paper gives none), not 0.90"
    ),
    ("W14-S10-L4", "ImageNet C"): ("a plain Swin-T count gives 0.92 (our count), not 0.90"),
    ("W14-S10-L4 +FT", "ImageNet S"): (
        "1.13 does not follow from S = 1.13 without FT under either averaging convention (about "
        "1.115; our arithmetic from the conventions of Sec. 4.1)"
    ),
}


def _gpu_cell(row, column, paper, run, metric, dense_row):
    return Cell(
        row=row,
        column=column,
        paper=paper,
        metric=f"train.{metric}",
        scale=1.0,
        needs=GPU_NEEDS[run],
        note="1.00 by definition (the normalisation)"
        if row == dense_row
        else NOTES.get((row, column)),
        # the CIFAR-10 decoder's S0 and S16-L4 have ssa_table1's counterpart (the same ratios)
        **(counterpart(row) if run == "CIFAR-10" else {}),
    )


def get_table() -> Table:
    cells = []
    setups = {row: setup for row, (setup, _) in CIFAR.items()}
    for row, (_, (bpd, c, m, s)) in CIFAR.items():
        cells.append(
            Cell(
                row=row,
                column="CIFAR-10 BPD",
                paper=bpd,
                metric="val_last.bpd",
                scale=1.0,
                config=CIFAR_CONFIG[row],
            )
        )
        note = NOTES.get((row, "CIFAR-10 C"))
        cells.append(compute_cell("CIFAR-10", row, "CIFAR-10 C", c, setups=setups, note=note))
        cells.append(_gpu_cell(row, "CIFAR-10 M", m, "CIFAR-10", "peak_memory_ratio", "S0 (Dense)"))
        cells.append(_gpu_cell(row, "CIFAR-10 S", s, "CIFAR-10", "speedup", "S0 (Dense)"))
    for row, (acc, c, m, s) in IMAGENET.items():
        cells.append(
            Cell(
                row=row,
                column="ImageNet Acc.",
                paper=acc,
                metric="val_last.accuracy",
                scale=100.0,
                config=imagenet_config(row),
            )
        )
        cells.append(
            Cell(
                row=row,
                column="ImageNet C",
                paper=c,
                metric="exact.value",
                scale=1.0,
                exact="attnbench.papers.exact:model_compute_ratio",
                exact_args=dict(
                    config=imagenet_config(row),
                    baseline=imagenet_config(IMAGENET_BASELINE),
                    finetune=0.1 if row.endswith("+FT") else 0.0,
                ),
                note="1.00 by definition (the normalisation)"
                if row == IMAGENET_BASELINE
                else NOTES.get((row, "ImageNet C")),
            )
        )
        cells.append(
            _gpu_cell(row, "ImageNet M", m, "ImageNet-1K", "peak_memory_ratio", "W14-S0 (Dense)")
        )
        cells.append(_gpu_cell(row, "ImageNet S", s, "ImageNet-1K", "speedup", "W14-S0 (Dense)"))
    return Table(
        key="ssa.table2",
        caption=(
            "Image generation results on CIFAR-10 (bits per dimension) and image classification "
            "results on ImageNet-1K (Swin-T top-1 accuracy %); C/M/S: normalized Compute/Memory/"
            "Speedup of training."
        ),
        source="SSA paper Table 2; arXiv 2306.01705",
        rows=(*CIFAR, *IMAGENET),
        columns=COLUMNS,
        cells=tuple(cells),
        higher_is_better={
            "CIFAR-10 BPD": False,
            "CIFAR-10 C": False,
            "CIFAR-10 M": False,
            "CIFAR-10 S": True,
            "ImageNet Acc.": True,
            "ImageNet C": False,
            "ImageNet M": False,
            "ImageNet S": True,
        },
        notes=(
            "CIFAR-10: 16-layer decoder over 3,072 sub-pixel tokens (the paper's #Params 203M), "
            "2-D relative position bias, no dropout, DistAug augmentation; S16-L4 = 4 vertical "
            "windows of 8 rows, sigma = 0.25 x side, in all layers. C/M/S normalised to its S0.",
            "ImageNet-1K: Swin-T (12 layers, #Params 28M), 224x224. C/M/S normalised to W14-S0, so "
            "W7-S0 has C < 1. W14-S10 = SSA in the FIRST 10 layers (the two 7x7 stage-4 layers "
            "cannot be split); W14-S6 = layers 5-10 (Sec. 4.2 and App. D).",
            "+FT rows: total compute, memory and speed averaged over training. Quality metrics "
            "are the final model's (`*_last`).",
            "CIFAR-10 C is computed exactly by attnbench.nn.flops.ssa_compute_ratio (run "
            "'CIFAR-10'); it gives 0.775 for S16-L4 +FT against the printed 0.77 (see the cell's "
            "note). ImageNet C is the ratio of the Swin-T recipes' training-forward matmul FLOPs "
            "(attnbench.papers.exact.model_compute_ratio; SSA counts only the sampled sources): "
            "0.92 / 0.92 / 0.97 against the printed 0.90 / 0.90 / 0.97, as a plain analytic Swin-T "
            "count also gives.",
            "Best per the text: CIFAR-10 S16-L4 +FT; ImageNet W14-S6-L4 +FT among SSA runs.",
            SPEED_COUNTERPART + ".",
        ),
    )
