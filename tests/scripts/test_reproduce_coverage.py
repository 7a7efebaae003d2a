"""Every paper table runs at the smoke preset without official data: one cell of every table here
(cells chosen so that runs shared between tables are trained once), every cell in the slow tier
(`scripts.reproduce --all --preset smoke`), and the coverage report that says what ran."""

import json
import math

import pytest

from attnbench.launch import jobs
from attnbench.papers import coverage, reproduce, runs, tables
from scripts import reproduce as reproduce_script


def _cover() -> list[tuple[str, list[tuple[str, str, str]]]]:
    """Configs whose runs reach one trainable cell of every table, greedily (most tables
    first): `[(config, [(table, row, column), ...]), ...]`."""
    by_config: dict[str, dict[str, tuple[str, str]]] = {}
    for key in tables.names():
        for c in tables.load(key).cells:
            if c.config is not None and c.runnable:
                by_config.setdefault(c.config, {}).setdefault(key, (c.row, c.column))
    left = {key for found in by_config.values() for key in found}
    out = []
    while left:
        config = max(sorted(by_config), key=lambda k: len(left & set(by_config[k])))
        keys = sorted(left & set(by_config[config]))
        out.append((config, [(key, *by_config[config][key]) for key in keys]))
        left -= set(keys)
    return out


COVER = _cover()


def test_the_cover_reaches_every_table_with_a_trainable_cell():
    trainable = {k for k in tables.names() if any(c.config for c in tables.load(k).cells)}
    assert {key for _, found in COVER for key, _, _ in found} == trainable
    assert len(COVER) < len(trainable)  # shared recipes are trained once


@pytest.mark.parametrize("config, found", COVER, ids=[c for c, _ in COVER])
def test_one_cell_of_each_table_trains_at_smoke_on_offline_data(config, found, tmp_path):
    key, row, column = found[0]
    table = tables.load(key)
    todo = reproduce.table_jobs(
        table, [table.cell(row, column)], root=tmp_path, preset="smoke", seeds=1
    )
    assert jobs.run(todo, 1) == 0, tmp_path / "reproduce.log"
    for key, row, column in found:  # every table this config reaches reads the same run
        t = tables.load(key)
        entry = coverage.rows([(t, [t.cell(row, column)])], root=tmp_path, preset="smoke")[0]
        assert entry["status"] == "ok", entry
        assert entry["data"] in ("standin", "generated") and math.isfinite(entry["value"])


def test_peptides_cells_run_on_the_standin_with_an_empty_data_root(tmp_path, monkeypatch, capsys):
    """The issue's case: a SAMSA Table 1 Peptides cell at smoke with no data fetched (the cover
    above trains a Peptides-func cell; the full row of 14 cells is in the slow tier)."""
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path / "empty-data-root"))
    cells = ["Peptides-struct (MAE)/Full SA"]
    argv = ["samsa.table1", "--preset", "smoke", "--runs", str(tmp_path / "runs")]
    assert reproduce_script.main(argv + ["--cells", *cells, "--report", str(tmp_path / "cov")]) == 0
    report = json.loads((tmp_path / "cov.json").read_text())
    assert report["counts"]["ok"] == 1 and report["counts"]["failed"] == 0
    for entry in report["cells"]:
        assert entry["data"] == "standin" and math.isfinite(entry["value"])
    assert "1 of 1 trainable cells ok" in (tmp_path / "cov.md").read_text()


def test_a_failed_run_is_reported_with_its_one_line_reason(tmp_path):
    table = tables.load("samsa.table1")
    ok, failed, nan = (table.cell("ListOps", c) for c in ("128 Hard", "128 Soft", "256 Hard"))
    for cell, value in ((ok, 0.5), (nan, float("nan"))):
        d = runs.run_dir(tmp_path, table.key, "smoke", cell, 0)
        d.mkdir(parents=True)
        summary = {
            "schema_version": 1,
            "preset": "smoke",
            "metrics": {"test_best": {"accuracy": value}},
            "data": {"source": "generated"},
            "wall_time_s": 3.5,
        }
        (d / "summary.json").write_text(json.dumps(summary))
    d = runs.run_dir(tmp_path, table.key, "smoke", failed, 0)
    d.mkdir(parents=True)
    (d / "reproduce.log").write_text("step 1: compiling\nerror: config.data.dir: no such folder\n")
    entries = coverage.rows([(table, [ok, failed, nan])], root=tmp_path, preset="smoke")
    assert [e["status"] for e in entries] == ["ok", "failed", "failed"]
    assert entries[0]["value"] == 0.5 and entries[0]["seconds"] == 3.5
    assert entries[1]["reason"] == "config.data.dir: no such folder"
    assert entries[2]["reason"] == "test_best.accuracy is missing or not finite"
    json_path, md_path = coverage.write(entries, tmp_path / "c", preset="smoke", command="x")
    assert json.loads(json_path.read_text())["counts"]["failed"] == 2
    assert "1 of 3 trainable cells ok, 2 failed" in md_path.read_text()


@pytest.mark.slow  # every trainable cell of every table at smoke (about an hour on 2 cores)
def test_every_trainable_cell_runs_at_smoke(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path / "data"))
    argv = ["--all", "--preset", "smoke", "--jobs", "2", "--runs", str(tmp_path / "runs")]
    reproduce_script.main(argv + ["--report", str(tmp_path / "cov")])
    report = json.loads((tmp_path / "cov.json").read_text())
    failed = [e for e in report["cells"] if e["status"] == "failed"]
    assert not failed, failed[:5]
    assert report["counts"]["ok"] >= 494
