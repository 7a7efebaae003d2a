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
