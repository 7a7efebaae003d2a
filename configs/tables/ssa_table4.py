"""SSA Table 4: attention self-ensembles of the WikiText-103 and Enwik8 language models.

Each model of Table 1 is evaluated twice: "Renorm." (dense attention at inference; the numbers
repeat Table 1) and "Ensemble" (the average of the predicted probabilities of 50 passes with
locally biased SSA, 4 windows, for each input segment). Columns: dev/test perplexity
(WikiText-103) and bits per byte (Enwik8).

Numbers: SSA (arXiv 2306.01705) Table 4. Each cell trains its Table 1 recipe with `ensemble=50`
(`ssa_table1.lm_config`): one run gives both the Renorm. (`*_last.perplexity` / `bpb`) and the
Ensemble (`*_ensemble`) cells of a row. S0 trains densely and samples its ensemble passes with
locally biased SSA, 4 windows. List the cells with

    python -m scripts.reproduce ssa.table4 --list
"""

from __future__ import annotations

from attnbench.papers.tables import Table, grid
from configs.tables.ssa_table1 import lm_cell

# row: WikiText-103 (renorm dev, test, ensemble dev, test), Enwik8 (the same)
ROWS = {
    "S0 (Dense)": ((17.14, 17.98, 16.86, 17.46), (1.052, 1.028, 1.066, 1.042)),
    "S16-L4": ((17.39, 18.13, 16.75, 17.42), (1.081, 1.058, 1.086, 1.062)),
    "S16-L4 +FT": ((16.91, 17.60, 16.54, 17.18), (1.052, 1.029, 1.058, 1.035)),
    "S12-L4": ((17.29, 17.95, 16.89, 17.60), (1.047, 1.024, 1.050, 1.029)),
    "S12-L4 +FT": ((17.09, 17.86, 16.80, 17.51), (1.044, 1.024, 1.055, 1.033)),
}
DATASETS = (("WikiText-103", "perplexity"), ("Enwik8", "bpb"))
PASSES = 50  # "produced with 50 samples for each input segment" (the caption)
KINDS = (
    ("Renorm. dev", "val"),
    ("Renorm. test", "test"),
    ("Ensemble dev", "val"),
    ("Ensemble test", "test"),
)
COLUMNS = tuple(f"{run} {kind}" for run, _ in DATASETS for kind, _ in KINDS)
METRIC = {
    f"{run} {kind}": f"{split}_last.{metric}" + ("" if kind.startswith("Renorm") else "_ensemble")
    for run, metric in DATASETS
    for kind, split in KINDS
}


def _cell(row: str, column: str) -> dict:
    """The recipe of a cell: the row's Table 1 recipe with a 50-pass ensemble."""
    return lm_cell(column.split()[0], row, ensemble=PASSES)


def get_table() -> Table:
    return Table(
        key="ssa.table4",
        caption=(
            "Self-ensembling results by locally biased SSA with 4 windows on WikiText-103 and "
            "Enwik8 (dev/test perplexity and bits per byte), produced with 50 samples for each "
            "input segment; Renorm.: dense attention at inference."
        ),
        source="SSA paper Table 4; arXiv 2306.01705",
        rows=tuple(ROWS),
        columns=COLUMNS,
        cells=grid(
            {row: wikitext + enwik8 for row, (wikitext, enwik8) in ROWS.items()},
            COLUMNS,
            metric=lambda _, column: METRIC[column],
            scale=1.0,
            config=lambda row, column: _cell(row, column)["config"],
        ),
        higher_is_better={column: False for column in COLUMNS},
        notes=(
            "The Renorm. columns repeat Table 1 (ssa.table1), as the caption says; here they "
            "come from the ensemble runs (the same training, evaluated both ways).",
            "Ensembles use locally biased SSA with 4 windows for every model, also the densely "
            "trained S0; probabilities (not log-probabilities) are averaged over 50 samples. "
            "Unstated: whether S12-L4 models are sampled in 12 or 16 layers at inference, and the "
            "sigma used for S0 (Sec. 3.5 and 4.4 do not say).",
            "WikiText-103: every ensemble beats its Renorm.; Enwik8: none does (Table 4, Sec. "
            "4.4).",
        ),
    )
