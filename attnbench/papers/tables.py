"""Paper tables as data: what each cell of a published table is, and how we reproduce it.

A table config `configs/tables/<paper>_<table>.py` defines `get_table() -> Table`: the caption,
where the numbers were read, and one `Cell` per (row, column) with the paper's number and, when
we can run it, the config string and the summary metric that reproduce it. `load("samsa.table1")`
imports it; `validate(table)` checks that every runnable cell names a config that loads, a
registered task and attention mechanism, and a metric a summary has.

    table = paper_tables.load("samsa.table1")
    for cell in table.cells:
        cell.row, cell.column, cell.paper, cell.config, cell.metric, cell.quoted
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.resources
import inspect
import re
from collections.abc import Mapping, Sequence

from attnbench import errors, evaluators

__all__ = [
    "Cell",
    "Table",
    "grid",
    "SPLITS",
    "METRICS",
    "load",
    "names",
    "validate",
    "compute",
    "measure_function",
    "TableError",
]

# summary["metrics"] sections; train_last: the training metrics of the last logged steps
SPLITS = ("train_last", "val_last", "val_best", "test_last", "test_best")
# What the trainer reports in each section: the tasks' own (accuracy, loss) and the metrics of
# the evaluators in attnbench/evaluators.py.
METRICS = evaluators.METRICS
# Metrics a table prints that no domain here evaluates (cells that can never run here).
NOT_EVALUATED = {
    "wer_test_clean": "word error rate: speech recognition (GFSA Table 7) is not a domain here",
    "wer_test_other": "word error rate: speech recognition (GFSA Table 7) is not a domain here",
}


class TableError(errors.UserError, ValueError):
    """A table config that names something that does not exist or does not parse."""


@dataclasses.dataclass(frozen=True)
class Cell:
    """One published number and how we reproduce it.

    Attributes:
      row, column: the cell's labels, as printed in the paper.
      paper: the published number (None where the paper prints "-": not run by the authors).
      config: `configs/<domain>/<task>.py:<args>` without `preset=` (the reproduce command adds
        it); None when we cannot run the cell yet, with the reason in `needs`.
      metric: `<section>.<name>` of the run summary, e.g. `test_best.accuracy`.
      scale: paper number = ours * scale (100 for accuracies printed in percent).
      quoted: set when the authors copied the number from another paper instead of running it
        (the source, e.g. "Ma et al. 2023b (MEGA)"); our run is still a comparison point.
      needs: why the cell is not runnable (the missing task or mechanism).
      paper_std: the paper's "± std" where it prints one.
      note: a remark on this cell (a correction of the printed number, text vs table conflict).
      exact: `module:function` computing the cell without training (parameter counts, analytic
        FLOPs, numerical tests); called with `exact_args`, it returns the number in the paper's
        units (`scale` is not applied). `scripts.reproduce` runs it in-process.
      elsewhere: the command that reproduces the cell outside this machinery (speed and memory
        tables: `python -m scripts.speed_tables ...`); the cell is then not run here.
      measure: `module:function` measuring our counterpart of a speed or memory cell on this
        machine (our model and sizes, named in its docstring); called with `measure_args` and
        `scale=` ("full" or "smoke"), it returns a record (steps/s, memory, ...).
        `scripts.speed_tables` calls it once for all the cells that share (measure,
        measure_args), e.g. the speed and the memory cell of one training step, and prints the
        paper's number beside ours. It is not run by `scripts.reproduce`; the cell still says
        where it is reported (`elsewhere`) or what a faithful reproduction needs (`needs`).
      mean_of: the columns of this row that this cell averages (an "Avg" column); ours is the
        mean of our numbers there once every one of them exists at the same preset.
    """

    row: str
    column: str
    paper: float | None
    config: str | None = None
    metric: str = "test_best.accuracy"
    scale: float = 100.0
    quoted: str | None = None
    needs: str | None = None
    paper_std: float | None = None
    note: str | None = None
    exact: str | None = None
    exact_args: dict = dataclasses.field(default_factory=dict)
    elsewhere: str | None = None
    measure: str | None = None
    measure_args: dict = dataclasses.field(default_factory=dict)
    mean_of: tuple[str, ...] = ()

    @property
    def runnable(self) -> bool:
        """Trained by `scripts.reproduce` (a config) or computed by it (`exact`)."""
        return self.config is not None or self.exact is not None


@dataclasses.dataclass(frozen=True)
class Table:
    """A published table: `key` is `<paper>.<table>` (e.g. `samsa.table1`)."""

    key: str
    caption: str
    source: str  # where the numbers were read (paper section and the notes' section)
    rows: tuple[str, ...]
    columns: tuple[str, ...]
    cells: tuple[Cell, ...]
    # per row or per column label (whichever holds one metric); default True
    higher_is_better: dict[str, bool] = dataclasses.field(default_factory=dict)
    notes: tuple[str, ...] = ()  # table-wide remarks (ambiguities, corrections, what is missing)
    plot: str = "scatter"  # "scatter": ours vs paper; "lines": one line per column over the rows

    def cell(self, row: str, column: str) -> Cell | None:
        return next((c for c in self.cells if c.row == row and c.column == column), None)


def grid(
    rows: Mapping[str, object],
    columns: Sequence[str],
    *,
    keep_blanks: bool = False,
    **fields: object,
) -> tuple[Cell, ...]:
    """The cells of a table typed in as data: one `Cell` per (row, column) the paper prints.

    A table config keeps the printed numbers as `{row: numbers in COLUMNS order}` and makes its
    cells with one call, naming the other `Cell` fields once:

        ROWS = {"GPT2": "19.513 20.966", "GPT2 + GFSA": "19.450 20.923"}
        cells = grid(
            ROWS,
            ("PTB", "WikiText-2"),
            metric="test_last.perplexity",
            scale=1,
            needs=lambda row, column: f"the {column} task, not built yet",
        )

    Args:
      rows: each row label, in table order, to its numbers in `columns` order: a tuple or list
        with one entry per column; a string of whitespace-separated entries, copied as printed
        ("19.513 20.966"); or, when there is a single column, the entry itself.
        An entry is a number or its printed string (the cell's `paper`, made a float); a
        (mean, std) pair or a printed "mean±std" (`paper` and `paper_std`); or a blank, None or
        "-" (the paper prints no number there).
      columns: the column labels.
      keep_blanks: a blank makes no cell unless this is set; then it makes a cell with
        `paper=None` (a cell we still run or measure, e.g. one the paper prints as FAIL or OOM).
      **fields: every other `Cell` field (config, metric, scale, quoted, needs, note, exact,
        exact_args, elsewhere, measure, measure_args, mean_of): one value for every cell, or a
        function `(row, column) -> value` where the value depends on the row or the column, e.g.
        `metric=lambda row, column: METRIC[column]`, `note=lambda row, column:
        NOTES.get((row, column))`.

    Returns the cells row by row, each row's in column order. Raises `TableError` for a row that
    has not one entry per column.
    """
    taken = {"row", "column", "paper", "paper_std"} & fields.keys()
    if taken:
        raise TypeError(f"grid() sets {', '.join(sorted(taken))} itself")
    cells = []
    for row, numbers in rows.items():
        if isinstance(numbers, str):
            entries = numbers.split()
        elif len(columns) == 1:
            entries = [numbers]
        else:
            entries = list(numbers)
        if len(entries) != len(columns):
            raise TableError(f"row {row!r}: {len(entries)} numbers for {len(columns)} columns")
        for column, entry in zip(columns, entries, strict=True):
            if isinstance(entry, str):
                mean, pm, std = entry.partition("±")
                entry = None if entry == "-" else (mean, std) if pm else mean
            if entry is None and not keep_blanks:
                continue
            if entry is None:
                paper = paper_std = None
            elif isinstance(entry, (tuple, list)):
                paper, paper_std = (float(x) for x in entry)
            else:
                paper, paper_std = float(entry), None
            values = {name: v(row, column) if callable(v) else v for name, v in fields.items()}
            cells.append(Cell(row=row, column=column, paper=paper, paper_std=paper_std, **values))
    return tuple(cells)


def _exact_function(cell: Cell, where: str = ""):
    """The function an `exact` cell names (`module:function`), or `TableError`."""
    return _function("exact", cell.exact, where)


def measure_function(cell: Cell, where: str = ""):
    """The function a speed cell's `measure` names (`module:function`), or `TableError`."""
    return _function("measure", cell.measure, where)


def _function(field: str, target: str | None, where: str):
    module, sep, name = (target or "").partition(":")
    try:
        fn = getattr(importlib.import_module(module), name, None) if sep else None
    except ImportError as e:
        raise TableError(f"{where}: {field} {target!r}: {e}") from e
    if not callable(fn):
        raise TableError(f"{where}: {field} {target!r} is not a `module:function` that exists")
    return fn


def compute(cell: Cell) -> float:
    """The value of an `exact` cell: its function called with `exact_args`."""
    return float(_exact_function(cell, cell.row + " / " + cell.column)(**cell.exact_args))


def names() -> list[str]:
    """Every table key with a config under `configs/tables/` (the installed `configs.tables`
    package)."""
    folder = importlib.resources.files("configs.tables")
    stems = [
        p.name.removesuffix(".py")
        for p in folder.iterdir()
        if p.name.endswith(".py") and "_" in p.name and not p.name.startswith("_")
    ]
    return sorted((stem.replace("_", ".", 1) for stem in stems), key=_natural)


def _natural(key: str) -> list:
    """Sort key putting `gfsa.table2` before `gfsa.table10`."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", key)]


def load(key: str) -> Table:
    """The table `key` (`<paper>.<table>`), from `configs/tables/<paper>_<table>.py`."""
    if key not in names():
        raise TableError(f"unknown table {key!r}; known: {', '.join(names())}")
    module = importlib.import_module(f"configs.tables.{key.replace('.', '_', 1)}")
    table = module.get_table()
    if table.key != key:
        raise TableError(f"configs/tables/{key.replace('.', '_', 1)}.py defines {table.key!r}")
    return table


def validate(table: Table) -> None:
    """Raises `TableError` naming the first cell that refers to something unknown: a config that
    does not load (at the `smoke` preset), an unregistered task or mechanism, a metric no summary
    has, a row or column outside the table's lists, or a duplicate cell."""
    import attention
    from attnbench import config as config_lib
    from attnbench import tasks

    seen = set()
    for c in table.cells:
        where = f"{table.key} [{c.row!r}, {c.column!r}]"
        if c.row not in table.rows or c.column not in table.columns:
            raise TableError(f"{where}: row or column not in the table's rows/columns")
        if (c.row, c.column) in seen:
            raise TableError(f"{where}: duplicate cell")
        seen.add((c.row, c.column))
        if c.config is not None and c.exact is not None:
            raise TableError(f"{where}: a cell is trained (config) or computed (exact), not both")
        if c.measure is not None:
            if c.runnable:
                raise TableError(f"{where}: a measured cell is not also trained or computed")
            try:  # the arguments must fit the function, so a typo fails here, not mid-run
                inspect.signature(measure_function(c, where)).bind(**c.measure_args, scale="full")
            except TypeError as e:
                raise TableError(f"{where}: measure_args {c.measure_args}: {e}") from e
        if c.exact is not None:
            _exact_function(c, where)
            continue
        if c.mean_of:
            parts = [table.cell(c.row, col) for col in c.mean_of]
            if c.runnable or not all(p is not None and p.runnable for p in parts):
                raise TableError(
                    f"{where}: mean_of {c.mean_of} must name runnable cells of the same row "
                    "(and the cell itself has no config)"
                )
            continue
        section, _, name = c.metric.partition(".")
        foreign = name in NOT_EVALUATED and not c.runnable
        if section in SPLITS and name not in METRICS and not foreign:
            # Checked before the cell can run, so a domain that lands later reports what the
            # table already reads.
            raise TableError(
                f"{where}: metric {c.metric!r}; known: <{'|'.join(SPLITS)}>.<{'|'.join(METRICS)}>"
            )
        if not c.runnable:
            if not (c.needs or c.elsewhere):
                raise TableError(
                    f"{where}: a cell without a config must say what it needs (or where it is "
                    "reproduced)"
                )
            continue
        if section not in SPLITS or name not in METRICS:
            raise TableError(
                f"{where}: metric {c.metric!r}; known: <{'|'.join(SPLITS)}>.<{'|'.join(METRICS)}>"
            )
        if "preset=" in c.config:
            raise TableError(f"{where}: the config names a preset; reproduce adds it")
        spec = c.config + ("," if ":" in c.config else ":") + "preset=smoke"
        try:
            config = config_lib.load(spec)
        except Exception as e:  # noqa: BLE001 (re-raised with the cell named)
            raise TableError(f"{where}: config {c.config!r} does not load: {e}") from e
        if config.task not in tasks.names():
            raise TableError(f"{where}: unknown task {config.task!r}")
        if config.attention.name not in attention.names():
            raise TableError(f"{where}: unknown attention {config.attention.name!r}")
