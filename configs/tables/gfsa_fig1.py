"""GFSA Figure 1: GFSA's relative improvement (%) over its backbone in six domains (bar chart
with printed values).

Numbers: the bar labels of GFSA (arXiv 2312.04234) Figure 1. Each bar is (GFSA - backbone) /
backbone of one cell pair of a results table (the error rates inverted: (backbone - GFSA) /
backbone). A bar is derived, never a run of its own: where both of its cells run here (CoLA
RoBERTa, Table 1; ImageNet-1k DeiT-S, Table 3; PTB GPT-2, Table 2; ZINC Graphormer, Table 4) the
bar names the command that runs them (`elsewhere`); the LibriSpeech and Devign bars need tasks
and models not built. List the cells:

    python -m scripts.reproduce gfsa.fig1 --list
"""

from __future__ import annotations

from attnbench.papers.tables import Table, grid

COLUMN = "Improvement (%)"

# row: (printed %, the table cell pair it comes from, what the bar needs, or the command that
# runs its two cells and how the bar follows from them)
ROWS = {
    "Language understanding (CoLA, RoBERTa)": (
        6.25,
        "Table 1, RoBERTa-base CoLA MCC: (64.11 - 60.34) / 60.34 = 6.25%",
        "python -m scripts.reproduce gfsa.table1 --cells RoBERTa-base/CoLA "
        "'RoBERTa-base + GFSA/CoLA' (the bar is 100 x (b - a) / a, a and b the RoBERTa-base "
        "and RoBERTa-base + GFSA MCCs)",
    ),
    "Causal language modelling (PTB, GPT-2)": (
        0.31,
        "Table 2, PTB perplexity 19.513 -> 19.450",
        "python -m scripts.reproduce gfsa.table2 --cells GPT2/PTB 'GPT2 + GFSA/PTB' (the bar "
        "is 100 x (a - b) / a, a and b the GPT2 and GPT2 + GFSA perplexities)",
    ),
    "Speech recognition (LibriSpeech 960h, Transformer)": (
        4.55,
        "Table 7, 960h test-clean WER: (2.42 - 2.31) / 2.42 = 4.55%",
        "the LibriSpeech 960h ASR task (speech domain) and a Transformer ASR model, not built yet",
    ),
    "Image classification (ImageNet-1k, DeiT-S)": (
        1.63,
        "Table 3, 12-layer DeiT-S top-1: (81.1 - 79.8) / 79.8 = 1.63%",
        "python -m scripts.reproduce gfsa.table3 --cells 'DeiT-S (12L)' 'DeiT-S + GFSA (12L)' "
        "(the bar is 100 x (b - a) / a, a and b the DeiT-S and DeiT-S + GFSA top-1)",
    ),
    "Code classification (Devign, RoBERTa)": (
        2.40,
        "Table 8, RoBERTa accuracy: (64.39 - 62.88) / 62.88 = 2.40%",
        "the Devign defect-detection task (code domain) and a RoBERTa model, not built yet",
    ),
    "Graph regression (ZINC, Graphormer)": (
        4.03,
        "Table 4, Graphormer MAE 0.1240 -> 0.1189",
        "python -m scripts.reproduce gfsa.table4 --cells Graphormer 'Graphormer + GFSA' (the "
        "bar is 100 x (a - b) / a, a and b the Graphormer and Graphormer + GFSA MAEs)",
    ),
}

CELL_NOTES = {
    "Causal language modelling (PTB, GPT-2)": "Printed 0.31% (also in Sec. 1); Table 2's numbers "
    "give (19.513 - 19.450) / 19.513 = 0.32% (our arithmetic).",
    "Speech recognition (LibriSpeech 960h, Transformer)": "Fig. 1 and Sec. 5.5 say 4.55% = 0.11 / "
    "2.42; the introduction says 4.76% = 0.11 / 2.31, relative to the GFSA WER (our arithmetic).",
    "Graph regression (ZINC, Graphormer)": "Printed 4.03% (also in Sec. 1); Table 4's numbers give "
    "(0.1240 - 0.1189) / 0.1240 = 4.11% (our arithmetic).",
}

NOTES = (
    "Each bar is derived from two runs of a results table, a baseline and its GFSA variant; "
    "scripts.tables does not compute derived cells: the bars whose two cells run here name the "
    "command (`elsewhere`) and the ratio to take by hand from those tables' numbers.",
    "Caption: 'We achieve these results with only tens to hundreds of additional parameters.'",
    "Where each bar comes from: "
    + "; ".join(f"{row}: {source}" for row, (_, source, _) in ROWS.items())
    + ".",
)


def _elsewhere(row: str) -> bool:
    """The bar's two cells run in another table: its third entry is that command."""
    return ROWS[row][2].startswith("python -m scripts.reproduce")


def get_table() -> Table:
    return Table(
        key="gfsa.fig1",
        caption="Performance improvements (%) of GFSA when integrated with different Transformer "
        "backbones in various domains (Figure 1's bar labels).",
        source="GFSA paper Figure 1; arXiv 2312.04234",
        rows=tuple(ROWS),
        columns=(COLUMN,),
        cells=grid(
            {row: paper for row, (paper, _, _) in ROWS.items()},
            (COLUMN,),
            metric="derived.improvement_pct",
            scale=1,
            needs=lambda row, _: None if _elsewhere(row) else ROWS[row][2],
            elsewhere=lambda row, _: ROWS[row][2] if _elsewhere(row) else None,
            note=lambda row, _: CELL_NOTES.get(row),
        ),
        notes=NOTES,
    )
