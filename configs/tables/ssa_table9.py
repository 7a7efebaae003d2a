"""SSA Table 9: locally biased vs unbiased SSA on ImageNet-1K (Swin-T, W14, 4 sub-windows).

Rows: SSA (25% of each 14x14 window's attention sampled) in 10 layers (W14-S10-L4) or with the
first 4 layers excluded (6 layers, W14-S6-L4), each without and with +FT. Columns: top-1
validation accuracy (%) with locally biased SSA (the numbers repeat Table 2) and with unbiased
SSA.

Numbers: SSA (arXiv 2306.01705) Table 9 (App. D). Every cell runs a Swin-T recipe of
configs/vision/imagenet.py (`window=14,ssa=S10|S6[,ft=1],sampling=local|unbiased`); list them:

    python -m scripts.reproduce ssa.table9
"""

from __future__ import annotations

from attnbench.papers.tables import Table, grid
from configs.tables.ssa_table2 import imagenet_config

# row: (Table 2 row, locally biased %, unbiased %)
ROWS = {
    "10 layers": ("W14-S10-L4", 80.56, 80.21),
    "10 layers +FT": ("W14-S10-L4 +FT", 81.15, 80.80),
    "6 layers": ("W14-S6-L4", 81.23, 81.21),
    "6 layers +FT": ("W14-S6-L4 +FT", 81.60, 81.36),
}
COLUMNS = ("Locally Biased dev Acc.", "Unbiased dev Acc.")
SAMPLING = {"Locally Biased dev Acc.": "local", "Unbiased dev Acc.": "unbiased"}


def get_table() -> Table:
    return Table(
        key="ssa.table9",
        caption=(
            "Locally biased vs unbiased SSA results on the ImageNet-1K image classification "
            "task (Swin-T, W14, 25% sampled with 4 sub-windows; top-1 validation accuracy %)."
        ),
        source="SSA paper Table 9; arXiv 2306.01705",
        rows=tuple(ROWS),
        columns=COLUMNS,
        cells=grid(
            {row: numbers for row, (_table2_row, *numbers) in ROWS.items()},
            COLUMNS,
            metric="val_last.accuracy",
            scale=100.0,
            config=lambda row, column: imagenet_config(ROWS[row][0], sampling=SAMPLING[column]),
        ),
        higher_is_better={column: True for column in COLUMNS},
        notes=(
            "The Locally Biased column repeats Table 2's W14-S10-L4 / W14-S6-L4 rows "
            "(ssa.table2), as the caption says. Unbiased: a uniform shuffle of the sources "
            "inside each 14x14 window, then four 7x7 sub-windows.",
            "'10 layers' = SSA in the first 10 layers (the two 7x7 stage-4 layers cannot be "
            "split); '6 layers' = the first 4 layers excluded (App. D, Sec. 4.2).",
            "Quality metrics are the final model's (`*_last`): a best-checkpoint pick could land "
            "before the +FT phase.",
        ),
    )
