"""GFSA Table 21: Graphormer vs Graphormer + GFSA on PCQM4M and PCQM4Mv2 (MAE, mean ± std
over 4 seeds).

Numbers: GFSA (arXiv 2312.04234) Table 21 (App. O.2). The means are Table 5's; this table adds the
standard deviations. The MAE cells train Table 5's recipes (configs/graphs/pcqm.py on the official
files, `gfsa_table5.config`), the #Params cells are counted on their models; list the cells:

    python -m scripts.reproduce gfsa.table21 --list
"""

from __future__ import annotations

from attnbench.papers.tables import Table, grid
from configs.tables.gfsa_table5 import config, metric

PARAMS = "#Params (M)"
COLUMNS = (PARAMS, "PCQM4M Train", "PCQM4M Validate", "PCQM4Mv2 Train", "PCQM4Mv2 Validate")

# row: (#Params x 10^6, then (mean, std) per MAE column); MAE, lower is better
ROWS = {
    "Graphormer": (48.3, (0.0535, 0.038), (0.1286, 0.016), (0.0250, 0.000), (0.0862, 0.000)),
    "Graphormer + GFSA": (
        48.3,
        (0.0312, 0.001),
        (0.1193, 0.000),
        (0.0249, 0.000),
        (0.0860, 0.000),
    ),
}


def get_table() -> Table:
    return Table(
        key="gfsa.table21",
        caption=(
            "Experimental results and number of parameters on PCQM4M and PCQM4Mv2 (MAE, mean ± "
            "std over 4 seeds)."
        ),
        source="GFSA paper Table 21; arXiv 2312.04234",
        rows=tuple(ROWS),
        columns=COLUMNS,
        cells=grid(
            ROWS,
            COLUMNS,
            metric=lambda _, column: metric(column) if column != PARAMS else None,
            scale=1.0,
            config=lambda row, column: config(row, column) if column != PARAMS else None,
            exact=lambda _, column: (
                "attnbench.papers.exact:model_params_m" if column == PARAMS else None
            ),
            exact_args=lambda row, column: (
                {"config": config(row, "PCQM4Mv2")} if column == PARAMS else {}
            ),
        ),
        higher_is_better={column: False for column in COLUMNS},
        notes=(
            "Table 5 prints the same means without the stds; this table duplicates it.",
            "#Params: printed 48.3M for both rows. GFSA ran PCQM with Graphormer main (fairseq; "
            "the code is a submodule outside the GFSA repository); our recipe builds "
            "Graphormer-base as v1.0 lays it out (the Sliceformer fork's model.py, which "
            "reproduces Sliceformer Table 6 exactly): 47,085,377 and 47,085,761 with GFSA. The "
            "1.2M gap is the fairseq model's own modules, not reproduced here.",
            "Train: the training MAE averaged over the last logged steps (summary train_last, "
            "dropout on), our closest reading of the paper's train MAE.",
            "Graphormer base: 12 layers, 32 heads x 24 dims (hidden 768), FFN 768; the paper's '80 "
            "encoder embedding dimension' is a typo (App. O.1). AdamW, L1 loss, polynomial lr "
            "decay 2e-4 -> 1e-9, batch 1024, 300 epochs, 60k warm-up steps, one RTX 3090, 4 seeds. "
            "Test labels are hidden, so the paper reports train and validation MAE.",
            "The baseline's PCQM4M train MAE 0.0535 ± 0.038 has a very large spread (Table 21). "
            "Sec. 5.4's '7.20%' validation improvement is 7.23% from these numbers ((0.1286 - "
            "0.1193) / 0.1286, our arithmetic).",
        ),
    )
