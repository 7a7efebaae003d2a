"""The leaderboard: every mechanism run so far, ranked per task variant and on average.

`collect(roots)` reads every run below the run roots (the paper tables' runs, the `--attn` runs of
`scripts.reproduce`, single runs): each `summary.json`, the `config.json` beside it, and each
`failed.json` left instead of a summary. `render(...)` writes the markdown page.

Sections. One table per (task, preset, data source, task variant). The variant is read from the
run's recorded config (`config.json`, written by `scripts.train` before the first step; the
summary itself does not record it for every task): Pathfinder by `data.resolution` (32:
"Pathfinder-32", 64: "Pathfinder-64", 128: "Path-X"), every other LRA task by its sequence length
`data.max_length` ("ListOps, length 2000"), the vision tasks by `data.image_size` ("32x32 images"),
language modelling by its corpus `data.dataset` ("enwik8", "wikitext-103"); the other tasks have
one variant. A run of such a task without its `config.json`, or whose config
lacks the field, is an `errors.DataError` naming the file and the field: never a guess. Numbers at
different variants, presets or data are never ranked together.

Entries. Runs whose commands differ only by `--config.seed` are the seeds of one config (the config
is the command's `--config` plus its other `--config.*` overrides); one run per config and seed is
kept, the first found (roots in order, paths sorted), as the paper tables keep it. Each entry is
the task's primary test metric (`PRIMARY`: the best validation checkpoint's test number) over the
seeds: `mean ± std (n=K)`, std the sample standard deviation, shown for K >= 2 only. Each mechanism
shows its best config by mean (named beside it); mechanisms are ranked by mean, equal means share
a rank; then per preset the average rank over the sections each mechanism is in.

Failed runs. A `failed.json` (a run stopped by `RunFailedError`; placed by its `config.json`) or a
non-finite metric is a failed run: counted beside its config's mean ("n=2, 1 failed"), never
averaged; a config whose every run failed is shown as failed, unranked; failures of a mechanism's
other configs are listed under the section; a `failed.json` without a `config.json` (its task is
unknown) is listed at the end of the page.

Noise mark. For accuracy (`CHANCE_METRICS`), the chance rate p is the test set's majority-class
rate (`reference.majority_class_rate.test`, what predicting one class everywhere scores) when the
run recorded it, else the random rate 1/num_classes (`data.num_classes` of the summary, else of
`config.json`); with neither, no mark. An entry is marked `~chance` (within noise of chance) when

    |mean - p| <= 2 * sigma,   sigma = sqrt(p * (1 - p) / n_test + s**2 / K)

n_test the test examples (`metrics.test_best.num_examples`), s the sample std over the K seeds
(0 for K = 1). Why: the majority-class rate is what a model that learned nothing but the label
frequencies scores (a constant prediction), and it is at least 1/num_classes, so it is the stricter
reference. p(1-p)/n_test is the binomial variance of an accuracy of p measured on n_test examples:
a model whose true accuracy is p lands within 2 sigma of p about 95% of the time (normal
approximation); this term does not shrink with K because every seed is tested on the same test
set. s**2/K is the seed-to-seed variance of the mean over K seeds. A mean more than 2 sigma below
p is marked `<chance` (worse than predicting the majority class: no better than chance either).
Other metrics (AP, mIoU, MAE, perplexity, ...) have no chance rate and no mark.

Summaries are read as the tables read them (`attnbench.papers.summaries`): one that is not a run
summary (malformed JSON, a field absent or of another type) is an `errors.DataError` naming the file
and the field; the summaries of exact cells (`scripts.reproduce`'s computed numbers, no task) are
not runs and are left out.
"""

from __future__ import annotations

import math
import pathlib
import statistics

from attnbench import errors, io
from attnbench.papers import summaries

__all__ = ["collect", "render", "variant", "PRIMARY", "CHANCE_METRICS", "FAILED"]

# (metric in summary["metrics"]["test_best"], higher is better), the first one present is used
PRIMARY = (
    ("accuracy", True),
    ("ap", True),
    ("instance_miou", True),
    ("mae", False),
    ("perplexity", False),
    ("bpb", False),
    ("bpd", False),
)

# The metrics a chance rate applies to (the `~chance` mark).
CHANCE_METRICS = ("accuracy",)

# What a run stopped by a failure leaves instead of a summary (`attnbench.train.FAILED`; not
# imported: the tables need no jax).
FAILED = "failed.json"

_PATHFINDER = {32: "Pathfinder-32", 64: "Pathfinder-64", 128: "Path-X"}

# task -> (field under config.json's `data`, the variant's name from its value)
_VARIANTS = {
    "lra.pathfinder": ("resolution", lambda r: _PATHFINDER.get(r, f"Pathfinder-{r}")),
    "lra.listops": ("max_length", lambda n: f"ListOps, length {n}"),
    "lra.text": ("max_length", lambda n: f"Text, length {n}"),
    "lra.retrieval": ("max_length", lambda n: f"Retrieval, length {n}"),
    "lra.image": ("max_length", lambda n: f"Image, length {n}"),
    # one decoder task over every corpus: enwik8 bytes, WikiText words, CIFAR-10 sub-pixels ...
    "language.lm": ("dataset", lambda name: name),
}
_VISION = ("image_size", lambda n: f"{n}x{n} images")


def _variant_rule(task: str):
    if task in _VARIANTS:
        return _VARIANTS[task]
    if task.startswith("vision."):
        return _VISION
    return None


def variant(task: str, config: dict | None, path: pathlib.Path) -> tuple[str, int]:
    """`(name, order)` of the variant of a run of `task` whose `config.json` (None: absent) is
    beside `path` (its summary or failure record); `("", 0)` for a task with one variant.

    Raises:
      errors.DataError: the task has variants and the config is absent, or lacks the field (or
        holds one of another type); the message names the file and the field.
    """
    rule = _variant_rule(task)
    if rule is None:
        return "", 0
    name, namer = rule
    cpath = path.parent / "config.json"
    if config is None:
        raise errors.DataError(
            f"{path}: no config.json beside it, so the {task} variant (data.{name}) is unknown "
            "(scripts.train writes config.json in every run directory); copy the run's "
            "config.json beside it, or move its run out of the run roots"
        )
    read = summaries.string if name == "dataset" else summaries.integer
    value = read(config, cpath, "data", name)
    if value is None:
        raise errors.DataError(
            f"{cpath}: run config has no data.{name}, so the {task} variant is unknown "
            "(every config of the task has one); correct the file, or move its run out of the "
            "run roots"
        )
    return namer(value), value if isinstance(value, int) else 0


def _primary(summary: dict, path) -> tuple[str, bool, float] | None:
    """`(metric, higher is better, value)` of the first `PRIMARY` metric the run's
    `metrics.test_best` has (absent or null: it does not have it); None when it has none."""
    best = summaries.required(
        summaries.section(summary, path, "metrics", "test_best"), path, "metrics", "test_best"
    )
    for name, higher in PRIMARY:
        if name in best:
            value = summaries.number(summary, path, "metrics", "test_best", name)
            if value is not None:
                return name, higher, value
    return None


def _command(command: str | None, path: pathlib.Path) -> tuple[str, str]:
    """`(config label, seed)` from a run's command: the label is `--config` and every other
    `--config.*` override (runs with equal labels differ at most by seed); the seed is the
    `--config.seed` override ("" when there is none: the recipe's own). Without a command, the
    run directory's parent names the config."""
    parts = (command or "").split()
    spec, overrides, seed = None, [], ""
    i = 0
    while i < len(parts):
        part, value = parts[i], None
        if part.startswith("--config") and "=" in part:
            part, value = part.split("=", 1)
        elif part.startswith("--config") and i + 1 < len(parts):
            i += 1
            value = parts[i]
        if part == "--config":
            spec = value
        elif part == "--config.seed":
            seed = value or ""
        elif part.startswith("--config."):
            overrides.append(f"{part}={value}")
        i += 1
    if spec is None:
        return str(path.parent.parent), seed
    return " ".join([spec, *overrides]), seed


def _is_exact(summary: dict, path) -> bool:
    """An exact cell's summary (`attnbench.papers.reproduce.compute_exact`): no run."""
    return "exact" in summary or summaries.string(summary, path, "preset") == "exact"


def _config(path: pathlib.Path) -> dict | None:
    """The `config.json` beside `path`, None when there is none."""
    cpath = path.parent / "config.json"
    if not cpath.is_file():
        return None
    config = io.read_json(cpath, what="run config")
    if not isinstance(config, dict):
        raise errors.DataError(
            f"{cpath}: run config is not a JSON object; correct the file, or move its run out "
            "of the run roots"
        )
    return config


def _chance(summary: dict, path, config: dict | None) -> tuple[float, str] | None:
    """`(p, kind)`: the test set's majority-class rate ("majority") when recorded, else
    1/num_classes ("random"); None when neither is known."""
    p = summaries.number(summary, path, "reference", "majority_class_rate", "test")
    if p is not None and math.isfinite(p):
        return p, "majority"
    k = summaries.integer(summary, path, "data", "num_classes")
    if k is None and config is not None:
        k = summaries.integer(config, path.parent / "config.json", "data", "num_classes")
    if k:
        return 1.0 / k, "random"
    return None


def _run(path: pathlib.Path) -> dict | None:
    """One run from its summary: `{"key", "mech", "label", "seed", "metric", "higher",
    "value", "chance", "n_test", "device", "revision"}`; None for an exact cell's summary or a
    run without a `PRIMARY` metric."""
    s = summaries.read(path)
    if _is_exact(s, path):
        return None
    task = summaries.required(summaries.string(s, path, "task"), path, "task")
    mech = summaries.string(s, path, "attention", "name")
    mech = summaries.required(mech, path, "attention", "name")
    preset = summaries.string(s, path, "preset") or "?"
    source = summaries.string(s, path, "data", "source")
    source = summaries.required(source, path, "data", "source")
    label, seed = _command(summaries.string(s, path, "command"), path)
    found = _primary(s, path)
    if found is None:
        return None
    metric, higher, value = found
    config = _config(path)
    name, order = variant(task, config, path)
    n_test = summaries.number(s, path, "metrics", "test_best", "num_examples")
    if n_test is None:
        n_test = summaries.number(s, path, "num_examples", "test")
    return dict(
        key=(task, preset, source, name),
        order=order,
        mech=mech,
        label=label,
        seed=seed,
        metric=metric,
        higher=higher,
        value=value,
        chance=_chance(s, path, config) if metric in CHANCE_METRICS else None,
        n_test=n_test,
        device=summaries.device(s, path),
        revision=summaries.revision(s, path),
    )


def _failed_run(path: pathlib.Path) -> dict:
    """One failed run from its `failed.json` and the `config.json` beside it: like `_run`'s,
    `value` None; `{"path", "error"}` only when there is no config (its task is unknown)."""
    record = io.read_json(path, what="failed-run record")
    if not isinstance(record, dict):
        raise errors.DataError(
            f"{path}: failed-run record is not a JSON object; correct the file, or move its run "
            "out of the run roots"
        )
    error = summaries.string(record, path, "error") or "failed"
    config = _config(path)
    if config is None:
        return dict(path=str(path), error=error)
    cpath = path.parent / "config.json"
    task = summaries.string(config, cpath, "task")
    if task is None:
        raise errors.DataError(
            f"{cpath}: run config has no task; correct the file, or move its run out of the "
            "run roots"
        )
    mech = summaries.string(config, cpath, "attention", "name") or "?"
    preset = summaries.string(config, cpath, "preset") or "?"
    source = summaries.string(config, cpath, "data", "source") or "unknown"
    name, order = variant(task, config, path)
    label, seed = _command(summaries.string(record, path, "command"), path)
    return dict(
        key=(task, preset, source, name),
        order=order,
        mech=mech,
        label=label,
        seed=seed,
        metric=None,
        higher=None,
        value=None,
        chance=None,
        n_test=None,
        device=None,
        revision=None,
    )


def _files(root: pathlib.Path) -> list[pathlib.Path]:
    """Every run's file under `root`, sorted: its summary, or where it has none the record of
    its failure."""
    found = {p.parent: p for p in root.rglob(FAILED)}
    found.update({p.parent: p for p in root.rglob("summary.json")})
    return [found[d] for d in sorted(found)]


def collect(roots) -> dict:
    """`{(task, preset, source, variant): {mechanism: entry}}`, the entry of each mechanism's
    best config (by mean over seeds); `variant` is "" for a task with one. An entry:
    `{"value": mean or None (every run failed), "std": sample std or None (fewer than two
    seeds), "seeds": K, "failed", "metric", "higher", "config", "order" (the variant's sort
    key), "chance": {"p", "kind", "n_test", "sigma", "marked"} or None, "devices",
    "revisions", "failed_elsewhere": [(config, failed runs) of the mechanism's other
    configs]}`. Failed runs without a config are under the key `"unplaced"`: `[{"path",
    "error"}]`.

    Raises:
      errors.DataError: a summary, config or failure record that is not what `scripts.train`
        writes, or a variant that cannot be read (`variant`); the message names the file.
    """
    groups: dict = {}
    seen: set = set()
    unplaced = []
    for root in map(pathlib.Path, roots):
        for path in _files(root):
            run = _run(path) if path.name == "summary.json" else _failed_run(path)
            if run is None:
                continue
            if "key" not in run:
                unplaced.append(run)
                continue
            ident = (run["key"], run["mech"], run["label"], run["seed"])
            if ident in seen:  # the same config and seed again: the first found wins
                continue
            seen.add(ident)
            groups.setdefault(run["key"], {}).setdefault(run["mech"], {}).setdefault(
                run["label"], []
            ).append(run)
    out: dict = {}
    for key, by_mech in groups.items():
        table = {}
        for mech, by_config in by_mech.items():
            entries = [_entry(label, runs) for label, runs in by_config.items()]
            best = min(entries, key=_badness)
            best["failed_elsewhere"] = sorted(
                (e["config"], e["failed"]) for e in entries if e is not best and e["failed"]
            )
            table[mech] = best
        out[key] = table
    if unplaced:
        out["unplaced"] = unplaced
    return out


def _entry(label: str, runs: list[dict]) -> dict:
    """The entry of one config from its runs (seeds)."""
    done = [r for r in runs if r["metric"] is not None]
    finite = [r["value"] for r in done if math.isfinite(r["value"])]
    mean = statistics.fmean(finite) if finite else None
    std = statistics.stdev(finite) if len(finite) >= 2 else None
    entry = dict(
        value=mean,
        std=std,
        seeds=len(finite),
        failed=len(runs) - len(finite),
        metric=done[0]["metric"] if done else None,
        higher=done[0]["higher"] if done else True,
        config=label,
        order=runs[0]["order"],
        chance=None,
        devices=sorted({r["device"] for r in done}),
        revisions=sorted({r["revision"] for r in done}),
    )
    chances = [r["chance"] for r in done if math.isfinite(r["value"])]
    sizes = [r["n_test"] for r in done if math.isfinite(r["value"])]
    if mean is not None and all(chances) and all(n and n > 0 for n in sizes):
        p = statistics.fmean(c[0] for c in chances)
        kind = "majority" if all(c[1] == "majority" for c in chances) else "random"
        n_test = min(sizes)
        sigma = math.sqrt(p * (1 - p) / n_test + (std**2 / len(finite) if std else 0.0))
        below, within = mean - p < -2 * sigma, abs(mean - p) <= 2 * sigma
        mark = "<chance" if below else "~chance" if within else ""
        entry["chance"] = dict(p=p, kind=kind, n_test=int(n_test), sigma=sigma, mark=mark)
    return entry


def _badness(entry: dict) -> tuple:
    """Sort key of a mechanism's configs, best first: a mean before none, then by mean."""
    if entry["value"] is None:
        return (1, 0.0, entry["config"])
    return (0, -entry["value"] if entry["higher"] else entry["value"], entry["config"])


def _ranked(table: dict) -> list[tuple[str, dict]]:
    scored = [(m, e) for m, e in table.items() if e["value"] is not None]
    higher = scored[0][1]["higher"] if scored else True
    scored.sort(key=lambda me: (-me[1]["value"] if higher else me[1]["value"], me[0]))
    return scored + sorted((m, e) for m, e in table.items() if e["value"] is None)


def _value(e: dict) -> str:
    """`mean ± std (n=K)`, `mean (n=1)`, with the failed runs: `(n=2, 1 failed)`."""
    failed = f", {e['failed']} failed" if e["failed"] else ""
    if e["value"] is None:
        return f"failed (n=0{failed})"
    std = f" ± {e['std']:.4f}" if e["std"] is not None else ""
    return f"{e['value']:.4f}{std} (n={e['seeds']}{failed})"


def _vs_chance(e: dict) -> str:
    c = e["chance"]
    if c is None:
        return "-"
    text = f"{e['value'] - c['p']:+.4f} (2σ {2 * c['sigma']:.4f})"
    return text + (f" `{c['mark']}`" if c["mark"] else "")


def _chance_line(ranked: list[tuple[str, dict]]) -> str | None:
    chances = [e["chance"] for _, e in ranked if e["chance"] is not None]
    if not chances:
        return None
    parts = sorted(
        {
            (
                f"the test set's majority-class rate {c['p']:.4f}"
                if c["kind"] == "majority"
                else f"1/num_classes = {c['p']:.4f} (no test majority-class rate recorded)"
            )
            + f", {c['n_test']} test examples"
            for c in chances
        }
    )
    return "Chance rate p: " + "; ".join(parts) + "."


def _section_title(key: tuple) -> str:
    task, preset, source, name = key
    return f"{task}{': ' + name if name else ''} ({preset} preset, {source} data)"


def _sort_key(item) -> tuple:
    (task, preset, source, name), table = item
    order = next(iter(table.values()))["order"] if table else 0
    return (task, preset, source, order, name)


HEADER = (
    "Every mechanism run so far. Built by `python -m scripts.tables` from the run summaries "
    "(`summary.json`, with the `config.json` and `failed.json` beside them); reduced presets "
    "(`cpu`, `smoke`) and stand-in or generated data are not the papers' settings.",
    "",
    "- **Sections**: one per task variant, preset and data source, never ranked together. The "
    "variant is read from each run's `config.json`: Pathfinder by `data.resolution` "
    "(Pathfinder-32, Pathfinder-64, Path-X = 128), the other LRA tasks by their sequence length "
    "`data.max_length`, vision by `data.image_size`. Each section names its runs' devices and "
    "code revisions.",
    "- **Entries**: the test metric of the best validation checkpoint as `mean ± std (n=K)` over "
    "the K seeds of one config (runs whose commands differ only by `--config.seed`; std the "
    "sample standard deviation, shown for K ≥ 2), each mechanism's best config by mean, named "
    "beside it. Ranked by mean; equal means share a rank.",
    "- **Failed runs** (a `failed.json`, or a non-finite metric) are counted beside the mean "
    "(`n=2, 1 failed`), never averaged; a config whose every run failed is listed unranked.",
    "- **`~chance`**: an accuracy within noise of the chance rate p, the test set's "
    "majority-class rate when the run recorded it, else 1/num_classes: marked when "
    "|mean − p| ≤ 2σ, σ = sqrt(p(1 − p)/n_test + s²/K) (the binomial standard error of an "
    "accuracy of p on the n_test test examples, which more seeds on the same test set do not "
    "reduce, and the seed std s of the mean over K seeds, 0 for K = 1); `<chance` when "
    "mean − p < −2σ. The `vs chance` column gives mean − p and 2σ; metrics without a chance "
    "rate (AP, mIoU, MAE, perplexity, ...) show `-`.",
)


def render(results: dict, header: str = "") -> str:
    """The leaderboard page (markdown)."""
    lines = [header, "# Leaderboard", ""] if header else ["# Leaderboard", ""]
    lines += [*HEADER, ""]
    ranks: dict[str, dict[str, list[int]]] = {}
    sections = [(k, t) for k, t in results.items() if k != "unplaced"]
    for key, table in sorted(sections, key=_sort_key):
        ranked = _ranked(table)
        if not ranked:
            continue
        preset = key[1]
        metric = next((e["metric"] for _, e in ranked if e["metric"]), "metric")
        lines += [
            f"## {_section_title(key)}",
            "",
            f"| rank | attention | test {metric} | vs chance | config |",
            "|---|---|---|---|---|",
        ]
        rank_of, previous = {}, None
        for i, (mech, e) in enumerate(ranked, 1):
            if e["value"] is not None:
                rank_of[mech] = (
                    rank_of[previous]
                    if previous and (table[previous]["value"] == e["value"])
                    else i
                )
                previous = mech
        for mech, e in ranked:
            i = rank_of.get(mech)
            rank = str(i) if i is not None else "-"
            lines.append(f"| {rank} | `{mech}` | {_value(e)} | {_vs_chance(e)} | `{e['config']}` |")
            if e["value"] is not None:
                ranks.setdefault(preset, {}).setdefault(mech, []).append(i)
        lines.append("")
        chance = _chance_line(ranked)
        if chance:
            lines.append(chance)
        devices = sorted({d for _, e in ranked for d in e["devices"]})
        revisions = sorted({r for _, e in ranked for r in e["revisions"]})
        if devices:
            lines.append(
                f"Runs: {key[1]} preset, {key[2]} data; device: {', '.join(devices)}; "
                f"revision: {', '.join(revisions)}."
            )
        elsewhere = [
            f"`{mech}` `{config}` ({n} failed)"
            for mech, e in ranked
            for config, n in e.get("failed_elsewhere", [])
        ]
        if elsewhere:
            lines.append("Failed runs of configs not shown: " + ", ".join(elsewhere) + ".")
        lines.append("")
    for preset, by_mech in sorted(ranks.items()):
        lines += [
            f"## Average rank ({preset} preset, over the sections above)",
            "",
            "| attention | mean rank | sections |",
            "|---|---|---|",
        ]
        for mech, rs in sorted(by_mech.items(), key=lambda mr: (statistics.fmean(mr[1]), mr[0])):
            lines.append(f"| `{mech}` | {statistics.fmean(rs):.2f} | {len(rs)} |")
        lines.append("")
    unplaced = results.get("unplaced", [])
    if unplaced:
        lines += [
            "## Failed runs without a config",
            "",
            "Runs that stopped with a `failed.json` and no `config.json` (their task is unknown):",
            "",
            *[f"- `{u['path']}`: {u['error']}" for u in sorted(unplaced, key=str)],
            "",
        ]
    return "\n".join(lines)
