"""What the speed tables share: the paper tables each reports (`SOURCES`, `measured_cells`),
ratios, number formatting and the targets' table."""

from __future__ import annotations

from attnbench.papers import tables

__all__ = ["SOURCES", "measured_cells", "source", "ratio", "fmt", "target", "targets_md"]

# The paper tables whose measured cells each speed table reports.
SOURCES = {
    "samsa": ("samsa.table1",),
    "sliceformer": ("sliceformer.table3",),
    "gfsa": ("gfsa.table25", "gfsa.table12", "gfsa.table24", "gfsa.table26"),
    "ssa": ("ssa.table1", "ssa.table2"),
}


def measured_cells(name: str) -> list[tuple[str, tables.Cell]]:
    """`(table key, cell)` for every cell with a `measure` in the paper tables `name` reports."""
    return [(key, c) for key in SOURCES.get(name, ()) for c in tables.load(key).cells if c.measure]


def source(key: str) -> str:
    """`gfsa.table25` -> `GFSA Table 25`."""
    paper, _, table = key.partition(".")
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
