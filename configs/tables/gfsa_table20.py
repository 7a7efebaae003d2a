"""GFSA Table 20: ZINC test MAE of Graphormer-SLIM, vanilla and with GFSA, mean +/- std over 4
seeds (Table 4 with its standard deviations), and the parameter counts.

Numbers: GFSA (arXiv 2312.04234) Table 20 (App. O.2). The MAE cells train Graphormer-SLIM on the
official ZINC-12k files (the recipes of gfsa.table4); #Params is counted exactly on the recipes'
models; list the cells:

    python -m scripts.reproduce gfsa.table20 --list
"""

from __future__ import annotations

from attnbench.papers.tables import Table, grid
from configs.tables.gfsa_table4 import config

# row: (#Params x 10^6, (MAE mean, std)) as printed ("500K")
ROWS = {"Graphormer": (0.5, (0.1240, 0.006)), "Graphormer + GFSA": (0.5, (0.1189, 0.002))}
COLUMNS = ("#Params (M)", "MAE")

NOTES = (
    "Duplicates Table 4 (gfsa.table4) with the standard deviations over 4 seeds; both tables are "
    "kept, as the paper prints both.",
    "#Params: printed '500K' for both rows (the benchmarking-gnns 500K budget). The authors' "
    "ZINC model, which our official-ZINC recipe builds (64-row atom and bond tables), has "
    "489,481 parameters and 489,577 with GFSA (one w_K per head and layer): 0.49M, which the "
    "paper rounds to its budget.",
    "The std is printed with three decimals against four for the mean.",
)


def get_table() -> Table:
    return Table(
        key="gfsa.table20",
        caption="Experimental results and number of parameters on ZINC (MAE, lower is better; "
        "mean +/- std over 4 seeds).",
        source="GFSA paper Table 20; arXiv 2312.04234",
        rows=tuple(ROWS),
        columns=COLUMNS,
        cells=grid(
            ROWS,
            COLUMNS,
            metric="test_best.mae",
            scale=1,
            config=lambda row, column: config(row) if column == "MAE" else None,
            exact=lambda _, column: (
                "attnbench.papers.exact:model_params_m" if column != "MAE" else None
            ),
            exact_args=lambda row, column: {"config": config(row)} if column != "MAE" else {},
        ),
        higher_is_better={"#Params (M)": False, "MAE": False},
        notes=NOTES,
    )
