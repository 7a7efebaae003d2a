"""scripts.tables shows what the user asks for: one scale per table (`--preset`, else the largest
with runs, the others named in the header with the flag that shows them), and the `--runs` roots
read in order, each cell from the first root that has runs of it (the later roots' runs of that
cell ignored and listed, never mixed in or silently hidden). Fake runs of sliceformer.table5's
two trained CIFAR-10 cells, at two presets in two roots, rendered by `scripts.tables.main`."""

import copy
import json

import pytest

from attnbench.papers import runs
from attnbench.papers import tables as paper_tables
from scripts import tables

KEY = "sliceformer.table5"

# The fields of a real summary (results/tables/runs/sliceformer_table5/cpu/vit/cifar-10/seed0),
# trimmed of those the tables do not read; `_run` sets the preset, accuracy and revision.
TRAINED = {
    "attention": {"name": "softmax"},
    "best_step": 750,
    "command": "python -m scripts.train --config=configs/vision/cifar10.py:model=vit,preset=cpu",
    "data": {"dataset": "cifar10", "num_classes": 10, "source": "standin"},
    "device": {"count": 1, "cpu_count": 2, "kind": "cpu", "platform": "cpu", "process_count": 1},
    "git_revision": "a79efc88b257f46aa7308f480f6f97cdba152179",
    "metrics": {
        "test_best": {"accuracy": 0.738, "loss": 0.697, "num_examples": 5000},
        "val_best": {"accuracy": 0.7565, "loss": 0.673, "num_examples": 2000},
    },
    "num_params": 413578,
    "preset": "cpu",
    "schema_version": 1,
    "steps": 1000,
    "task": "vision.cifar10",
}
# The fields of that run's config.json the leaderboard reads (its task's variant).
CONFIG = {"data": {"dataset": "cifar10", "image_size": 32, "source": "standin"}}
EXACT = {
    "command": 'python -m scripts.reproduce sliceformer.table5 --cells "ViT/Size CIFAR-10 (M)"',
    "data": {"source": "computed"},
    "device": {"count": 1, "cpu_count": 2, "kind": "cpu", "platform": "cpu", "process_count": 1},
    "exact": {"function": "attnbench.papers.exact:model_params_m"},
    "git_revision": "a79efc88b257f46aa7308f480f6f97cdba152179",
    "metrics": {"exact": {"value": 9.603594}},
    "preset": "exact",
    "schema_version": 1,
}


def _cell(row, column):
    return paper_tables.load(KEY).cell(row, column)


def _run(root, row, preset, accuracy, revision, seed=0):
    s = copy.deepcopy(TRAINED)
    s["preset"], s["git_revision"] = preset, revision
    s["attention"]["name"] = "softmax" if row == "ViT" else "sliceformer"
    s["metrics"]["test_best"]["accuracy"] = accuracy
    d = runs.run_dir(root, KEY, preset, _cell(row, "CIFAR-10"), seed)
    d.mkdir(parents=True)
    (d / "summary.json").write_text(json.dumps(s))
    (d / "config.json").write_text(json.dumps(CONFIG))  # scripts.train writes it beside


def _exact(root):
    d = runs.run_dir(root, KEY, "exact", _cell("ViT", "Size CIFAR-10 (M)"), 0)
    d.mkdir(parents=True)
    (d / "summary.json").write_text(json.dumps(EXACT))


def _fixture(tmp_path):
    """The committed root: cpu runs of both cells and an exact cell; mine: a smoke run of ViT."""
    committed, mine = tmp_path / "committed", tmp_path / "mine"
    _run(committed, "ViT", "cpu", 0.70, "c0ffee0")
    _run(committed, "Sliceformer", "cpu", 0.72, "c0ffee0")
    _exact(committed)
    _run(mine, "ViT", "smoke", 0.40, "abcdef0")
    return str(committed), str(mine)


def _render(tmp_path, *argv) -> tuple[str, str]:
    out = tmp_path / "out"
    assert tables.main(["--tables", KEY, "--no-plots", "--out", str(out), *argv]) == 0
    stem = out / "sliceformer_table5"
    return (stem.with_suffix(".md")).read_text(), (stem.with_suffix(".csv")).read_text()


def _row(md, row) -> str:
    return next(line for line in md.splitlines() if line.startswith(f"| {row} |"))


def test_by_default_the_largest_scale_is_shown_and_the_others_named_with_their_flag(tmp_path):
    committed, mine = _fixture(tmp_path)
    md, text = _render(tmp_path, "--runs", mine, committed)
    assert _row(md, "ViT") == (
        "| ViT | 9.604= / 9.6 |  / 9.65 |  / 22.05 | 70.00*+ / 80.98 |  / 53.99 |  / 52.74 |"
    )
    assert "| 72.00*+ / 82.16 |" in _row(md, "Sliceformer")
    # the user's smoke run is not shown at cpu, and not silently hidden either
    assert (
        "Shown: `cpu` preset, the largest scale with runs (also: `smoke`, 1 cell, "
        "`--preset smoke`). Exact (`=`) cells are the same at every preset." in md
    )
    assert f"Runs: from `{mine}`, then `{committed}`: {runs.RULE}." in md
    assert (
        f"- 2 cell(s): `python -m scripts.reproduce {KEY} --preset cpu`; data: standin; device: "
        f"cpu x1 (2 CPU cores); revision c0ffee0; runs from `{committed}`" in md
    )
    assert "ViT,CIFAR-10,80.98,,,70.0,,1,0,cpu,standin,cpu x1 (2 CPU cores),c0ffee0," in text


def test_preset_smoke_shows_the_users_smoke_run_beside_the_exact_cells(tmp_path):
    committed, mine = _fixture(tmp_path)
    md, text = _render(tmp_path, "--runs", mine, committed, "--preset", "smoke")
    assert _row(md, "ViT") == (
        "| ViT | 9.604= / 9.6 |  / 9.65 |  / 22.05 | 40.00*+ / 80.98 |  / 53.99 |  / 52.74 |"
    )
    assert "|  / 82.16 |" in _row(md, "Sliceformer")  # no smoke run of it: empty, not its cpu run
    assert "Shown: `smoke` preset, as asked (also: `cpu`, 2 cells, `--preset cpu`)." in md
    assert (
        f"- 1 cell(s): `python -m scripts.reproduce {KEY} --preset smoke`; data: standin; device: "
        f"cpu x1 (2 CPU cores); revision abcdef0; runs from `{mine}`" in md
    )
    row = f"ViT,CIFAR-10,80.98,,,40.0,,1,0,smoke,standin,cpu x1 (2 CPU cores),abcdef0,{mine},"
    assert row in text


def test_only_the_users_root_shows_its_runs_with_or_without_preset(tmp_path):
    _, mine = _fixture(tmp_path)
    for argv in (["--runs", mine], ["--runs", mine, "--preset", "smoke"]):
        md, _ = _render(tmp_path, *argv)
        assert "| 40.00*+ / 80.98 |" in _row(md, "ViT"), argv
        assert f"Runs: from `{mine}`." in md
        assert "c0ffee0" not in md and "also:" not in md  # the committed runs are not read
    md, _ = _render(tmp_path, "--runs", mine, "--preset", "cpu")
    assert _row(md, "ViT").startswith("| ViT |  / 9.6 |  / 9.65 |  / 22.05 |  / 80.98 |")
    assert (
        "Shown: `cpu` preset, as asked, which has no runs of this table yet (also: `smoke`, "
        "1 cell, `--preset smoke`)." in md
    )


def test_a_cell_with_runs_in_both_roots_shows_the_first_roots_and_lists_the_other(tmp_path):
    committed, mine = _fixture(tmp_path)
    _run(mine, "Sliceformer", "cpu", 0.80, "abcdef0")
    _run(mine, "Sliceformer", "cpu", 0.82, "abcdef0", seed=1)
    md, _ = _render(tmp_path, "--runs", mine, committed)
    assert "| 81.00 ± 1.41 (n=2)*+ / 82.16 |" in _row(md, "Sliceformer")  # never a 3-seed mix
    assert "| 70.00*+ / 80.98 |" in _row(md, "ViT")  # in the committed root only
    assert f"revision abcdef0; runs from `{mine}`" in md
    assert (
        f"- 1 of these cell(s) also have runs under `{committed}`, ignored: an earlier run root "
        f"has runs of them (`--runs {committed} --preset cpu` shows those)" in md
    )
    md, _ = _render(tmp_path, "--runs", committed, mine)  # the order decides
    assert "| 72.00*+ / 82.16 |" in _row(md, "Sliceformer")
    assert f"also have runs under `{mine}`, ignored" in md


def test_the_default_roots_show_your_runs_under_runs_tables(tmp_path, monkeypatch):
    """Without --runs: runs/tables (where scripts.reproduce writes) first, then the committed
    results/tables/runs; the user's smoke run is named by default, shown with --preset smoke."""
    _run(tmp_path / "results/tables/runs", "ViT", "cpu", 0.70, "c0ffee0")
    _run(tmp_path / "runs/tables", "ViT", "smoke", 0.40, "abcdef0")
    monkeypatch.chdir(tmp_path)
    md, _ = _render(tmp_path)
    assert "| 70.00*+ / 80.98 |" in _row(md, "ViT")
    assert "(also: `smoke`, 1 cell, `--preset smoke`)" in md
    assert "Runs: from `runs/tables`, then `results/tables/runs`:" in md
    md, _ = _render(tmp_path, "--preset", "smoke")
    assert "| 40.00*+ / 80.98 |" in _row(md, "ViT")
    assert "runs from `runs/tables`" in md
    assert not (tmp_path / "results/tables/sliceformer_table5.md").exists()  # --out was given


def test_the_help_and_the_docstring_say_the_rule(capsys):
    with pytest.raises(SystemExit):
        tables.main(["--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert " ".join(runs.RULE.split()) in help_text
    assert "--preset {paper,cpu,smoke}" in help_text
    assert " ".join(runs.RULE.split()) in " ".join(tables.__doc__.split())


def test_index_counts_every_preset_with_runs(tmp_path):
    from attnbench.papers import render

    committed, mine = _fixture(tmp_path)
    line = next(ln for ln in render.index([mine, committed]).splitlines() if f"[`{KEY}`]" in ln)
    assert line.endswith("| 2 cpu, 1 exact, 1 smoke |")


def test_the_index_page_is_the_same_whatever_the_preset(tmp_path):
    committed, mine = _fixture(tmp_path)
    out = tmp_path / "out"
    pages = []
    for argv in ([], ["--preset", "smoke"]):
        tables.main(
            ["--tables", KEY, "--no-plots", "--out", str(out), "--runs", mine, committed, *argv]
        )
        pages.append((out / "index.md").read_text())
    assert pages[0] == pages[1]


def test_a_table_without_trained_runs_says_so_and_shows_its_exact_cells(tmp_path):
    root = tmp_path / "exact-only"
    _exact(root)
    md, _ = _render(tmp_path, "--runs", str(root))
    assert (
        "Shown: no runs of the trained cells at any preset yet (`python -m scripts.reproduce "
        f"{KEY} --preset cpu` makes some). Exact (`=`) cells are the same at every preset." in md
    )
    assert _row(md, "ViT").startswith("| ViT | 9.604= / 9.6 |  / 9.65 |")
