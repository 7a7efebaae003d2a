"""SSA Table 3: unbiased SSA on PCQM4Mv2 graph regression (EGT-Simple small, 6 layers).

Rows: the dense S0 and S6-U<x> (unbiased SSA in all 6 layers, x% of the source nodes dropped).
Columns: validation MAE and normalised training compute, without and with +FT (SSA off for
the last 10% of training).

Numbers: SSA (arXiv 2306.01705) Table 3. The MAE cells train EGT-Simple small on the official
PCQM4Mv2 files (`graphs/pcqm.py:version=v2,model=egt[,ssa=U<x>][,ft=1]`); the
Compute cells are computed exactly from the recipes' models (`attnbench.papers.exact:
model_compute_ratio`: training-forward matmul FLOPs against S0's, at PCQM4Mv2's mean graph of 14
heavy atoms plus the 4 virtual nodes); list the cells with

    python -m scripts.reproduce ssa.table3 --list

This module also holds the recipes the other SSA graph tables share (`config`).
"""

from __future__ import annotations

from attnbench.papers.tables import Table, grid

BASELINE = "graphs/pcqm.py:version=v2,model=egt"


def config(row: str, finetune: bool = False, ensemble: int = 0) -> str:
    """The recipe of a row: S0 is the dense EGT-Simple small; S6-U<x> adds unbiased SSA in all
    6 layers; `finetune` its +FT; `ensemble` a self-ensemble of that many passes at
    evaluation (Table 5)."""
    out = BASELINE if row.startswith("S0") else f"{BASELINE},ssa={row.split('-')[1]}"
    if finetune:
        out += ",ft=1"
    return out + (f",ensemble={ensemble}" if ensemble else "")


def _cell(row: str, column: str) -> dict:
    finetune = column.startswith("+FT")
    if column.endswith("MAE"):
        return {"config": config(row, finetune), "metric": "val_last.mae"}
    return {
        "exact": "attnbench.papers.exact:model_compute_ratio",
        "exact_args": {
            "config": config(row, finetune),
            "baseline": BASELINE,
            "finetune": 0.1 if finetune else 0.0,
        },
        "metric": "exact.value",
    }


S0_SOURCE = "Hussain et al. 2022 (EGT) [26]"

# row: (w/o FT MAE, w/o FT compute, +FT MAE, +FT compute); None = blank (S0 has no +FT): no cell
ROWS = {
    "S0 (Dense)": (0.0905, 1.00, None, None),
    "S6-U10": (0.0907, 0.96, 0.0895, 0.97),
    "S6-U20": (0.0895, 0.93, 0.0876, 0.94),
    "S6-U30": (0.0904, 0.89, 0.0876, 0.90),
    "S6-U40": (0.0930, 0.86, 0.0879, 0.87),
    "S6-U50": (0.0964, 0.82, 0.0908, 0.84),
}
COLUMNS = ("w/o FT dev MAE", "w/o FT Compute", "+FT dev MAE", "+FT Compute")


def _quoted(row: str, column: str) -> str | None:
    return S0_SOURCE if row == "S0 (Dense)" and column.endswith("MAE") else None


def _note(row: str, column: str) -> str | None:
    if row != "S0 (Dense)":
        return None
    if column.endswith("MAE"):
        return (
            "the text: 'We achieve a baseline MAE of 0.0905, as reported in [26] "
            "without SSA' (the authors' own EGT paper)"
        )
    return "1.00 by definition (the normalisation)"


def get_table() -> Table:
    return Table(
        key="ssa.table3",
        caption="Graph regression results on PCQM4Mv2 dataset (validation MAE; normalized "
        "training compute, S0 = 1).",
        source="SSA paper Table 3; arXiv 2306.01705",
        rows=tuple(ROWS),
        columns=COLUMNS,
        cells=grid(
            ROWS,
            COLUMNS,
            metric=lambda row, column: _cell(row, column)["metric"],
            scale=1.0,
            quoted=_quoted,
            config=lambda row, column: _cell(row, column).get("config"),
            exact=lambda row, column: _cell(row, column).get("exact"),
            exact_args=lambda row, column: _cell(row, column).get("exact_args", {}),
            note=_note,
        ),
        higher_is_better={column: False for column in COLUMNS},
        notes=(
            "EGT-Simple small (EGT with edge channels reduced to an attention bias; #Layers 6, "
            "#Params 11M), the hyper-parameters of the EGT paper [26] but no attention "
            "dropout. S6-U<x>: unbiased SSA in all 6 layers with x% of the source nodes "
            "dropped. Memory and speed were not reported (graph data loading was the "
            "bottleneck).",
            "S0's MAE 0.0905 is the value reported in the EGT paper [26] (marked quoted).",
            "Best: S6-U20 +FT and S6-U30 +FT (0.0876). The text's 'around 10% less compute' holds "
            "for U30 +FT (0.90); U20 +FT is 0.94 (Sec. 4.3 vs Table 3).",
            "The printed compute fits C ~ 1 - 0.36 x drop (our fit to Table 3; the paper gives no "
            "formula), and +FT = 0.9 C + 0.1 to within rounding.",
            "Quality metrics are the final model's (`*_last`): a best-checkpoint pick could land "
            "before the +FT phase.",
            "Our compute (EGT-Simple small as graphs/backbones/egt.py builds it, 11,430,657 "
            "parameters): "
            "at PCQM4Mv2's mean graph (14.1 heavy atoms + 4 virtual nodes) attention and the "
            "per-pair edge terms are a small share of a layer, so dropping sources saves less "
            "than printed (U50: 0.953 against 0.82). The printed C ~ 1 - 0.36 x drop implies "
            "pairwise work of about 36% of the compute, i.e. much larger graphs (or padded "
            "batches) than the mean; the paper does not say how it counted.",
        ),
    )
