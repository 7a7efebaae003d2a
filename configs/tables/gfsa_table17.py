"""GFSA Table 17: ImageNet-1k top-1 accuracy of DeiT-T and DeiT-S at 12, 16 and 24 layers in the
ContraNorm setting (Guo et al.'s recipe), vanilla, with ContraNorm and with GFSA.

Numbers: GFSA (arXiv 2312.04234) Table 17 (App. M.6). Each cell trains configs/vision/imagenet.py
with `model=deit_t|deit_s,depth=12|16|24` (the ContraNorm setting: Guo et al.'s DeiT main.py
defaults, which are the DeiT recipe, with dropout 0 at every depth; `contranorm_setting` there),
plus `contranorm=1` (ContraNorm around every LayerNorm, `attnbench.nn.contranorm`, s = 0.01,
tau = 1) or `attn=gfsa,order=K` with the column's best K of Table 18 (gfsa.table18, whose cells
are the same runs). List and run the cells:

    python -m scripts.reproduce gfsa.table17 --list
    python -m scripts.reproduce gfsa.table17 --preset smoke --cells "DeiT-T + ContraNorm/12 layers"
"""

from __future__ import annotations

from attnbench.papers.tables import Table, grid

COLUMNS = ("12 layers", "16 layers", "24 layers")
DEPTH = {"12 layers": 12, "16 layers": 16, "24 layers": 24}
MODEL = {"DeiT-T": "deit_t", "DeiT-S": "deit_s"}
RECIPE = "vision/imagenet.py"

# row: the printed top-1 % in COLUMNS order
ROWS = {
    "DeiT-T": "76.52 75.34 76.76",
    "DeiT-T + ContraNorm": "77.03 78.72 78.12",
    "DeiT-T + GFSA": "77.68 79.02 78.64",
    "DeiT-S": "77.32 78.25 77.69",
    "DeiT-S + ContraNorm": "77.80 79.04 78.67",
    "DeiT-S + GFSA": "79.86 80.83 79.15",
}

# (model, column) -> K of the GFSA row: Table 18's best K in that column (its maximum is this
# table's number). DeiT-T at 24 layers ties at K = 4 and 5 (78.64): the smaller, 4 (our choice).
BEST_K = {
    ("DeiT-T", "12 layers"): 5,
    ("DeiT-T", "16 layers"): 4,
    ("DeiT-T", "24 layers"): 4,
    ("DeiT-S", "12 layers"): 4,
    ("DeiT-S", "16 layers"): 2,
    ("DeiT-S", "24 layers"): 2,
}

CELL_NOTES = {
    ("DeiT-S + GFSA", "16 layers"): "The text says this is a 3.23% improvement (and, garbled, that "
    "GFSA 'increase[s] the performance by 80.83%'); (80.83 - 78.25) / 78.25 = 3.30% (our "
    "arithmetic).",
    ("DeiT-T", "24 layers"): "76.76 is also the vanilla 24-layer DeiT the ContraNorm README "
    "(github.com/PKU-ML/ContraNorm) reports on ImageNet-100; whether this row is Guo et al.'s "
    "number is not established, so it is not marked quoted.",
    ("DeiT-T + GFSA", "24 layers"): "Table 18 has 78.64 at both K = 4 and K = 5; the cell runs "
    "K = 4.",
}

NOTES = (
    "Setting (App. M.6): Guo et al.'s modified DeiT recipe, AdamW with cosine decay, 300 epochs, "
    "batch 1024, 224 x 224, 4 x RTX A6000; ContraNorm trained by the authors 'with their "
    "recommended hyperparameters' (so not quoted). The rest is Guo et al.'s ViT code "
    "(ViT_imagenet/main.py), whose defaults are DeiT's: our 12-layer cells are the deit_s / "
    "deit_t recipes config for config, 16 and 24 layers the same with depth= (dropout 0).",
    "The baselines are far from the usual DeiT numbers (DeiT-T 12 layers 76.52 vs DeiT's 72.2; "
    "DeiT-S 12 layers 77.32 vs Table 3's 79.8, the same recipe by Guo et al.'s code): App. M.6 "
    "says ImageNet-1k, but these numbers fit Guo et al.'s ImageNet-100 experiments better (the "
    "DeiT-T 24-layer note). Our cells train on ImageNet-1k, as the paper states.",
    "ContraNorm: s = 0.01 (the one ViT value in Guo et al.'s code, ViT_imagenet/run.sh), tau = "
    "1, no dual normalisation (their main.py defaults); the paper's recommended values are not "
    "restated by GFSA (configs/vision/imagenet.py CONTRANORM_VIT).",
    "The GFSA rows are the per-column maxima of Table 18 (gfsa.table18), K chosen on the reported "
    "val set; each cell runs that K, the same run as Table 18's cell. Text checks: DeiT-T 12 "
    "layers +1.52% and DeiT-T 16 layers +4.88% match the numbers.",
)


def gfsa_config(model: str, column: str, k: int) -> str:
    """The config of `model` ("DeiT-T" / "DeiT-S") + GFSA with K = `k` at the column's depth;
    Table 18's cells use it too, so that a run serves both tables."""
    return f"{base_config(model, column)},attn=gfsa,order={k}"


def base_config(model: str, column: str) -> str:
    """The vanilla model of a row at the column's depth, in the ContraNorm setting."""
    return f"{RECIPE}:model={MODEL[model]},depth={DEPTH[column]}"


def config(row: str, column: str) -> str:
    model = row.split(" + ")[0]
    if row.endswith("+ GFSA"):
        return gfsa_config(model, column, BEST_K[(model, column)])
    if row.endswith("+ ContraNorm"):
        return base_config(model, column) + ",contranorm=1"
    return base_config(model, column)


def get_table() -> Table:
    return Table(
        key="gfsa.table17",
        caption="ImageNet-1k top-1 accuracy (%) in the ContraNorm setting, DeiT-T and DeiT-S at "
        "12, 16 and 24 layers.",
        source="GFSA paper Table 17; arXiv 2312.04234",
        rows=tuple(ROWS),
        columns=COLUMNS,
        cells=grid(
            ROWS,
            COLUMNS,
            metric="test_best.accuracy",
            scale=100,
            config=config,
            note=lambda row, column: CELL_NOTES.get((row, column)),
        ),
        notes=NOTES,
    )
