"""scripts.reproduce: runs the selected cells once, skips finished ones, lists what it cannot
run."""

import json

import pytest

from scripts import reproduce


def test_runs_one_cell_then_skips_it_and_lists_cells_it_cannot_run(tmp_path, capsys):
    argv = ["samsa.table1", "--preset", "smoke", "--runs", str(tmp_path)]
    assert reproduce.main(argv + ["--cells", "listops/128 hard"]) == 0
    summary = tmp_path / "samsa_table1/smoke/listops/128-hard/seed0/summary.json"
    s = json.loads(summary.read_text())
    assert s["task"] == "lra.listops" and s["preset"] == "smoke"
    assert s["attention"]["name"] == "samsa" and s["attention"]["mode"] == "hard"
    assert 0 <= s["metrics"]["test_best"]["accuracy"] <= 1
    capsys.readouterr()
    mtime = summary.stat().st_mtime
    assert reproduce.main(argv + ["--cells", "listops/128 hard", "modelnet"]) == 0
    out = capsys.readouterr().out
    assert "(1 finished)" in out and summary.stat().st_mtime == mtime  # not run again
    assert "not runnable: [ModelNet40 / 128 Hard] needs the ModelNet40 task" in out


def test_unknown_table_and_empty_selection_are_errors(tmp_path):
    with pytest.raises(SystemExit):
        reproduce.main(["samsa.nope"])
    with pytest.raises(SystemExit):
        reproduce.main(["samsa.table1", "--cells", "nothing-matches-this"])


def test_exact_cells_are_computed_and_written_atomically(tmp_path, capsys):
    assert reproduce.main(["gfsa.params", "--runs", str(tmp_path), "--cells", "deit"]) == 0
    out = capsys.readouterr().out
    assert "2 computed exactly" in out and "72 (paper 72)" in out
    d = tmp_path / "gfsa_params/exact/deit-s-12-layers-6-heads/w-k-per-head-as-released/seed0"
    s = json.loads((d / "summary.json").read_text())
    assert s["metrics"]["exact"]["value"] == 72 and s["data"]["source"] == "computed"
    assert s["exact"]["function"] == "core.paper_exact:gfsa_extra_params"
    assert not list(d.glob(".*.tmp"))


def test_a_run_shared_by_two_tables_is_found_from_either(tmp_path):
    """SAMSA Table 2's ListOps cell reprints Table 1's run: a finished run of one serves both."""
    from core import paper_tables

    t1, t2 = paper_tables.load("samsa.table1"), paper_tables.load("samsa.table2")
    c2 = t2.cell("hard-SAMSA", "ListOps")
    twin = next(c for c in t1.cells if c.config == c2.config)
    d = reproduce.run_dir(tmp_path, t1.key, "cpu", twin, 0)
    d.mkdir(parents=True)
    (d / "summary.json").write_text("{}")
    assert reproduce.finished(tmp_path, t2.key, "cpu", c2, 0) == d / "summary.json"
    assert reproduce.finished(tmp_path, t2.key, "cpu", c2, 1) is None
