"""Where the runs of a paper table's cells live, and what their summaries say.

A trained cell's run is `<root>/<paper>_<table>/<preset>/<row>/<column>/seed<N>/`, an exact cell's
`<root>/<paper>_<table>/exact/<row>/<column>/seed0/`, and a run of the cell with another attention
(`attnbench.papers.substitute`) `<root>/attn/<NAME>/<preset>/<config digest>/seed<N>/`. A cell whose
config another table's cell shares (SAMSA Table 2 reprints Table 1's runs) is trained once: a
finished run of either serves both. `collect` turns the summaries of one table into per-cell results
(mean over seeds, provenance) for `attnbench.papers.render`. Summaries are read by
`attnbench.papers.summaries`: one that is not a run summary (malformed JSON, a field of another
type) is an `errors.DataError` naming the file and the field, never a cell left out.

What a table shows (`select`): one scale, the preset asked for or else the largest with runs
(`PRESETS` order: paper, cpu, smoke), plus its exact cells, which are the same at every preset.
Run roots are read in order, and each cell shows the runs of the first root that has runs of it
(at that preset); a later root's runs of that cell are ignored, and each entry names the root it
came from (`roots`) and the later roots it hides (`ignored`), so the tables can say so. Every
summary under every root is read, shown or not: a bad one is an error wherever it is.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import pathlib
import re
import statistics

from attnbench.papers import substitute, summaries, tables

__all__ = [
    "PRESETS",
    "EXACT",
    "RULE",
    "roots",
    "run_dir",
    "run_dirs",
    "finished",
    "Shown",
    "collect",
    "collect_presets",
    "results_at",
    "collect_substituted",
    "collect_substituted_presets",
    "select",
]

# Largest scale first: unless `--preset` asks for another, a table shows the first with runs.
PRESETS = ("paper", "cpu", "smoke")
EXACT = "exact"  # the preset directory of computed (exact) cells
# How the run roots, read in order, are combined (`collect_presets`), as the help and the tables'
# headers say it.
RULE = (
    "each cell shows the runs of the first root that has any of it at the shown preset, and a "
    "later root's runs of that cell are ignored (and listed as such)"
)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def roots(runs_root) -> list[pathlib.Path]:
    """One run root or a list of them, as a list of paths."""
    if isinstance(runs_root, (str, pathlib.Path)):
        return [pathlib.Path(runs_root)]
    return [pathlib.Path(r) for r in runs_root]


def run_dir(root, key: str, preset: str, cell, seed: int) -> pathlib.Path:
    """The run directory of `cell` of table `key` at `preset` and `seed`."""
    return (
        pathlib.Path(root)
        / key.replace(".", "_")
        / preset
        / _slug(cell.row)
        / _slug(cell.column)
        / f"seed{seed}"
    )


@functools.lru_cache(maxsize=1)
def _by_config() -> dict[str, list]:
    index: dict[str, list] = {}
    for key in tables.names():
        for c in tables.load(key).cells:
            if c.config is not None:
                index.setdefault(c.config, []).append((key, c))
    return index


def run_dirs(root, key: str, preset: str, cell, seed: int) -> list[pathlib.Path]:
    """Where a run of `cell` may be: its own directory first, then those of the cells of other
    tables with the same config (one training run serves every table that prints it)."""
    own = run_dir(root, key, preset, cell, seed)
    twins = [
        run_dir(root, k, preset, c, seed)
        for k, c in _by_config().get(cell.config, [])
        if (k, c.row, c.column) != (key, cell.row, cell.column)
    ]
    return [own] + sorted(set(twins) - {own})


def finished(root, key: str, preset: str, cell, seed: int) -> pathlib.Path | None:
    """The summary of a finished run of `cell` (its own or a twin's), or None."""
    return next(
        (
            d / "summary.json"
            for d in run_dirs(root, key, preset, cell, seed)
            if (d / "summary.json").exists()
        ),
        None,
    )


def _metric(summary: dict, path, metric: str) -> float | None:
    """The summary's `metrics.<section>.<name>` for `metric` = "<section>.<name>"; None when the
    run does not have it (absent or null)."""
    section, _, name = metric.partition(".")
    return summaries.number(summary, path, "metrics", section, name)


def _first(found: list[tuple[str, dict]]) -> dict | None:
    """The entry of the first root in `found` (`[(root, entry)]`, in root order), naming that
    root (`roots`) and the later roots whose runs of the cell it hides (`ignored`)."""
    if not found:
        return None
    (root, entry), rest = found[0], found[1:]
    return {**entry, "roots": [root], "ignored": [r for r, _ in rest]}


def collect_presets(table, runs_root) -> dict[str, dict]:
    """`{preset: {(row, column): entry}}` for `EXACT` (the exact cells) and each of `PRESETS`
    (the trained cells with runs at it), from one run root or a list of them: each cell's
    entry comes from the first root that has runs of it (see the module's docstring); within a
    root, a cell's own runs and those of other tables' cells with its config merge per seed."""
    paths = roots(runs_root)
    out: dict[str, dict] = {p: {} for p in (EXACT, *PRESETS)}
    for cell in table.cells:
        if not cell.runnable:
            continue
        exact = cell.exact is not None
        for preset in (EXACT,) if exact else PRESETS:
            found = []
            for root in paths:
                bases = (
                    [run_dir(root, table.key, preset, cell, 0).parent]
                    if exact
                    else [d.parent for d in run_dirs(root, table.key, preset, cell, 0)]
                )
                by_seed = {}
                for base in bases:  # its own runs, then those of the same config elsewhere
                    for seed, path in _seeds(base):
                        by_seed.setdefault(seed, path)
                entry = _entry(by_seed, cell, preset, exact)
                if entry is not None:
                    found.append((str(root), entry))
            entry = _first(found)
            if entry is not None:
                out[preset][(cell.row, cell.column)] = entry
    return out


def results_at(table, by_preset: dict, preset: str | None) -> dict:
    """The results shown at `preset` (None: none of the trained cells'): the exact cells, the
    trained cells' runs at `preset` from `collect_presets`, and the averages of those ("Avg"
    columns) whose every part has a number at one preset."""
    out = {**by_preset.get(EXACT, {}), **(by_preset.get(preset, {}) if preset else {})}
    for cell in table.cells:
        parts = [out.get((cell.row, col)) for col in cell.mean_of]
        if (
            cell.mean_of
            and all(p and p["values"] for p in parts)
            and len({p["preset"] for p in parts}) == 1
        ):
            out[(cell.row, cell.column)] = dict(
                preset=parts[0]["preset"],
                values=[statistics.fmean(statistics.fmean(p["values"]) for p in parts)],
                sources=sorted({s for p in parts for s in p["sources"]}),
                devices=sorted({d for p in parts for d in p["devices"]}),
                revisions=sorted({r for p in parts for r in p["revisions"]}),
                roots=sorted({r for p in parts for r in p["roots"]}),
                ignored=[],
                mean_of=len(parts),
            )
    return out


def _largest(available) -> str | None:
    """The largest of the presets in `available` (a set or dict of them), or None."""
    return next((p for p in PRESETS if p in available), None)


def collect(table, runs_root, preset: str | None = None) -> dict:
    """`{(row, column): {"preset", "values", "failed", "sources", "devices", "revisions",
    "roots", "ignored"}}` of one table at `preset` (None: the largest with runs of a trained
    cell), read from one run root or a list of them (`collect_presets`, `results_at`)."""
    by_preset = collect_presets(table, runs_root)
    return results_at(table, by_preset, preset or _largest({p for p in PRESETS if by_preset[p]}))


# What a run that stopped on a failure (diverged training, non-finite evaluation outputs)
# leaves instead of a summary (`attnbench.train.FAILED`; not imported: tables need no jax).
FAILED = "failed.json"


def _seeds(base: pathlib.Path) -> list[tuple[str, pathlib.Path]]:
    """`(seed dir name, file)` of each run under `base`: its summary, or where it has none the
    record of its failure."""
    out = []
    for d in sorted(base.glob("seed*")):
        for name in ("summary.json", FAILED):
            if (d / name).is_file():
                out.append((d.name, d / name))
                break
    return out


def _entry(by_seed: dict, cell, preset: str, exact: bool = False) -> dict | None:
    """`{"preset", "values", "failed", "sources", "devices", "revisions"}` from the summaries
    `{seed name: path}` of one cell at one preset; None when none has the cell's metric.

    Raises:
      errors.DataError: a summary that cannot be read, or whose fields used here are of another
        type (`attnbench.papers.summaries`).
    """
    values, sources, devices, revisions, failed = [], set(), set(), set(), 0
    for seed in sorted(by_seed, key=lambda s: int(s[4:]) if s[4:].isdigit() else 0):
        path = by_seed[seed]
        if path.name == FAILED:
            failed += 1  # stopped without a summary: shown as failed, never as a number
            continue
        s = summaries.read(path)
        v = _metric(s, path, "exact.value" if exact else cell.metric)
        if v is None:
            continue
        if not math.isfinite(v):
            failed += 1  # a diverged run: shown as failed, never as a number
        else:
            values.append(v if exact else v * cell.scale)
        source = summaries.string(s, path, "data", "source")
        sources.add("unknown" if source is None else source)
        devices.add(summaries.device(s, path))
        revisions.add(summaries.revision(s, path))
    if not (values or failed):
        return None
    return dict(
        preset=preset,
        values=values,
        failed=failed,
        sources=sorted(sources),
        devices=sorted(devices),
        revisions=sorted(revisions),
    )


def collect_substituted_presets(table, runs_root, sub) -> dict[str, dict]:
    """Like `collect_presets`, for the runs of `scripts.reproduce --attn`
    (`attnbench.papers.substitute`): `{preset: {(row, column): entry}}` for each of `PRESETS`,
    each runnable cell whose model has an attention, with `sub`'s mechanism in it."""
    paths = roots(runs_root)
    out: dict[str, dict] = {p: {} for p in PRESETS}
    for preset in PRESETS:
        if not any(
            substitute.run_dir(r, sub, preset, "x", 0).parent.parent.is_dir() for r in paths
        ):
            continue  # no run of the mechanism at this preset: no config to resolve
        for cell in table.cells:
            if not cell.runnable or cell.config is None:
                continue
            digest = sub.digest(cell.config, preset)
            if digest is None:
                continue
            found = []
            for root in paths:
                base = substitute.run_dir(root, sub, preset, digest, 0).parent
                entry = _entry(dict(_seeds(base)), cell, preset)
                if entry is not None:
                    found.append((str(root), entry))
            entry = _first(found)
            if entry is not None:
                out[preset][(cell.row, cell.column)] = entry
    return out


def collect_substituted(table, runs_root, sub, preset: str | None = None) -> dict:
    """Like `collect`, for the runs of `scripts.reproduce --attn`: `sub`'s results at `preset`
    (None: the largest at which it has runs of this table)."""
    by_preset = collect_substituted_presets(table, runs_root, sub)
    return by_preset.get(preset or _largest({p for p in PRESETS if by_preset[p]}), {})


@dataclasses.dataclass(frozen=True)
class Shown:
    """What one table shows: the preset (None when no trained cell has runs and none was asked
    for), whether `--preset` asked for it, `{preset: cells with runs}` for every preset with
    runs of the table (ours or, with `--attn`, the mechanism's), and the run roots in order."""

    preset: str | None
    asked: bool
    available: dict
    roots: tuple


def select(table, runs_root, preset: str | None = None, sub=None) -> tuple[Shown, dict, dict]:
    """`(shown, results, extra)`: the table at `preset` (None: the largest with runs of ours or,
    with `sub`, of `sub`'s mechanism), our results there (`results_at`) and `sub`'s (`{}`
    without `sub`)."""
    ours = collect_presets(table, runs_root)
    theirs = collect_substituted_presets(table, runs_root, sub) if sub else {}
    available = {}
    for p in PRESETS:
        n = len(set(ours[p]) | set(theirs.get(p, {})))
        if n:
            available[p] = n
    chosen = preset or _largest(available)
    shown = Shown(chosen, preset is not None, available, tuple(str(r) for r in roots(runs_root)))
    return shown, results_at(table, ours, chosen), theirs.get(chosen, {}) if chosen else {}
