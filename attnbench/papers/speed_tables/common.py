"""What the speed tables share: the paper tables each reports (`SOURCES`, `measured_cells`),
ratios, number formatting and the targets' table."""

from __future__ import annotations

from attnbench.papers import tables
from configs.tables import _gfsa_timing

__all__ = ["SOURCES", "measured_cells", "source", "ratio", "fmt", "target", "targets_md"]

# The paper tables whose measured cells each speed table reports.
SOURCES = {
    "samsa": ("samsa.table1",),
    "sliceformer": ("sliceformer.table3",),
    "ssa": ("ssa.table1", "ssa.table2"),
    # `gfsa` quotes cells of Tables 12 and 24-26 (`gfsa.QUOTED`) and measures none of them; the
    # timing groups time every timing cell of their tables on its recipe (`timing`)
    **_gfsa_timing.GROUPS,
}


def measured_cells(name: str) -> list[tuple[str, tables.Cell]]:
    """`(table key, cell)` for every cell with a `measure` in the paper tables `name` reports."""
    return [(key, c) for key in SOURCES.get(name, ()) for c in tables.load(key).cells if c.measure]


def source(key: str) -> str:
    """`gfsa.table25` -> `GFSA Table 25`."""
    paper, _, table = key.partition(".")
    if table.startswith("fig"):
        return f"{paper.upper()} Figure {table.removeprefix('fig')}"
    return f"{paper.upper()} Table {table.removeprefix('table')}"


def ratio(a, b):
    return None if not a or not b else a / b


def fmt(x, spec="{:.2f}", none="n/a"):
    return none if x is None else spec.format(x)


def target(desc, value, ok):
    return {"target": desc, "value": value, "met": None if value is None else bool(ok(value))}


def targets_md(targets):
    lines = ["| target | this run | met |", "|---|---|---|"]
    for t in targets:
        met = {True: "yes", False: "**no**", None: "not measured"}[t["met"]]
        lines.append(f"| {t['target']} | {fmt(t['value'])} | {met} |")
    return lines
