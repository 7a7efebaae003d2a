"""scripts.reproduce: runs the selected cells once, skips finished ones, lists what it cannot
run."""

import io
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import pytest

from attnbench.papers import runs
from scripts import reproduce
from tests.conftest import ROOT


def test_runs_one_cell_then_skips_it_and_lists_cells_it_cannot_run(tmp_path, capsys):
    argv = ["samsa.table1", "--preset", "smoke", "--runs", str(tmp_path)]
    assert reproduce.main(argv + ["--cells", "listops/128 hard"]) == 0
    summary = tmp_path / "samsa_table1/smoke/listops/128-hard/seed0/summary.json"
    s = json.loads(summary.read_text())
    assert s["task"] == "lra.listops" and s["preset"] == "smoke"
    assert s["attention"]["name"] == "samsa" and s["attention"]["mode"] == "hard"
    assert 0 <= s["metrics"]["test_best"]["accuracy"] <= 1
    out = capsys.readouterr().out
    log = summary.parent / "reproduce.log"
    assert "[start 1/1] " in out and f"(log: {log})" in out  # where to watch it, at its start
    text = log.read_text()
    assert "step 1: compiling the training step" in text and "step 1: compiled and done in" in text
    mtime = summary.stat().st_mtime
    assert reproduce.main(argv + ["--cells", "listops/128 hard"]) == 0
    out = capsys.readouterr().out
    assert "(1 finished)" in out and summary.stat().st_mtime == mtime  # not run again
    other = ["samsa.table6", "--preset", "smoke", "--runs", str(tmp_path), "--cells", "kpconv"]
    assert reproduce.main(other) == 0
    out = capsys.readouterr().out
    assert "not runnable: [KPConv / ModelNet40 OA] needs the KPConv model" in out


def test_a_word_naming_a_column_exactly_selects_that_column_only():
    from attnbench.papers import reproduce as library
    from attnbench.papers import tables

    t5 = tables.load("sliceformer.table5")
    assert {c.column for c in library.select(t5, ["CIFAR-10"])} == {"CIFAR-10"}
    cells = library.select(t5, ["vit/cifar-10"])
    assert [(c.row, c.column) for c in cells] == [("ViT", "CIFAR-10")]
    sizes = {c.column for c in library.select(t5, ["size"])}  # a part of a name: substring
    assert sizes == {"Size CIFAR-10 (M)", "Size CIFAR-100 (M)", "Size Tiny-ImageNet (M)"}


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
    assert s["exact"]["function"] == "attnbench.papers.exact:gfsa_extra_params"
    assert not list(d.glob(".*.tmp"))


def test_a_run_shared_by_two_tables_is_found_from_either(tmp_path):
    """SAMSA Table 2's ListOps cell reprints Table 1's run: a finished run of one serves both."""
    from attnbench.papers import tables

    t1, t2 = tables.load("samsa.table1"), tables.load("samsa.table2")
    c2 = t2.cell("hard-SAMSA", "ListOps")
    twin = next(c for c in t1.cells if c.config == c2.config)
    d = runs.run_dir(tmp_path, t1.key, "cpu", twin, 0)
    d.mkdir(parents=True)
    (d / "summary.json").write_text("{}")
    assert runs.finished(tmp_path, t2.key, "cpu", c2, 0) == d / "summary.json"
    assert runs.finished(tmp_path, t2.key, "cpu", c2, 1) is None


def _trainers(root) -> list[int]:
    """Pids of live `scripts.train` processes writing under `root` (from /proc)."""
    pids = []
    for proc in pathlib.Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
            state = (proc / "stat").read_text().split(") ")[-1][:1]
        except OSError:
            continue
        text = b" ".join(cmd).decode(errors="replace")
        if "scripts.train" in text and str(root) in text and state != "Z":
            pids.append(int(proc.name))
    return pids


def _wait_for(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


@pytest.mark.skipif(not pathlib.Path("/proc/self/cmdline").exists(), reason="needs /proc")
def test_interrupted_or_killed_reproduce_leaves_no_process_behind(tmp_path):
    """SIGINT cancels the queue and stops the running cell; SIGKILL of reproduce takes its
    training child with it, so a restart finds no orphan on its workdir."""
    cmd = [sys.executable, "-m", "scripts.reproduce", "samsa.table1", "--preset", "smoke"]
    cmd += ["--cells", "listops", "--runs", str(tmp_path)]
    env = dict(os.environ, JAX_PLATFORMS="cpu")

    # kill -9 of reproduce: the child goes with it
    parent = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    assert _wait_for(lambda: _trainers(tmp_path), 120), "no training child started"
    parent.kill()
    parent.wait()
    assert _wait_for(lambda: not _trainers(tmp_path), 10), "orphaned trainer"

    # Ctrl-C: the running cell is stopped and no queued cell starts
    parent = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert _wait_for(lambda: _trainers(tmp_path), 120), "no training child started"
    started = len(list(tmp_path.rglob("reproduce.log")))
    parent.send_signal(signal.SIGINT)
    out, err = parent.communicate(timeout=60)
    assert parent.returncode == 128 + signal.SIGINT, err[-2000:]
    assert "SIGINT: stopped 1 running and 6 queued run(s)" in err
    assert not _trainers(tmp_path)
    assert len(list(tmp_path.rglob("reproduce.log"))) == started


def test_cells_of_one_table_with_the_same_config_get_one_job(tmp_path, capsys):
    """GFSA Table 16's Top-1 and Top-5 columns read one ImageNet run per row: one job each."""
    from attnbench.papers import reproduce as library
    from attnbench.papers import tables

    t16 = tables.load("gfsa.table16")
    cells = [c for c in t16.cells if c.config == "vision/imagenet.py:model=deit_s"]
    assert len(cells) == 2
    todo = library.table_jobs(t16, cells, root=tmp_path, preset="cpu", seeds=2)
    assert len(todo) == 2  # one per seed, not one per (cell, seed)
    assert "4 runs (0 finished, 2 shared with another selected cell)" in capsys.readouterr().out
    mine = runs.run_dir(tmp_path, t16.key, "cpu", cells[0], 0)
    assert {j.workdir for j in todo} == {mine, mine.parent / "seed1"}
    # once it has finished, both cells find it
    (mine / "summary.json").parent.mkdir(parents=True)
    (mine / "summary.json").write_text("{}")
    assert all(
        runs.finished(tmp_path, t16.key, "cpu", c, 0) == mine / "summary.json" for c in cells
    )


def test_a_running_cells_progress_comes_from_its_records(tmp_path):
    from attnbench.launch import jobs

    assert jobs._progress(tmp_path) == "building the data and the model"
    (tmp_path / "config.json").write_text(json.dumps({"total_steps": 400}))
    assert jobs._progress(tmp_path) == "compiling or before its first logged step (of 400)"
    with open(tmp_path / "metrics.jsonl", "w") as f:
        f.write(json.dumps({"step": 100, "split": "train", "loss": 1.5}) + "\n")
        f.write(json.dumps({"step": 100, "split": "val", "accuracy": 0.5}) + "\n")
        f.write(json.dumps({"step": 150, "split": "train", "loss": 1.25}) + "\n")
    assert jobs._progress(tmp_path) == "step 150/400, loss 1.25"
    with open(tmp_path / "metrics.jsonl", "a") as f:  # 250 steps left at 2 steps/s
        f.write(json.dumps({"step": 150, "split": "train", "loss": 1.0, "steps_per_s": 2.0}))
        f.write("\n")
    assert jobs._progress(tmp_path) == "step 150/400, loss 1, ETA 2m05s"


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_on_a_terminal_the_running_cells_are_one_rewritten_line(tmp_path):
    from attnbench.launch import jobs

    workdir = tmp_path / "a"
    workdir.mkdir()
    (workdir / "config.json").write_text(json.dumps({"total_steps": 10}))
    record = {"step": 4, "split": "train", "loss": 0.5, "steps_per_s": 1.0}
    (workdir / "metrics.jsonl").write_text(json.dumps(record) + "\n")
    job = jobs.Job("cell A seed 0", workdir, ("true",))
    term = _Terminal()
    status = jobs._Status(term)
    status.last -= 2  # a second has passed
    status.update([job, job], 3, 7)
    assert (
        term.getvalue()
        == (
            "\r\033[K[3/7 done] cell A seed 0: step 4/10, loss 0.5, ETA 0m06s | "
            "cell A seed 0: step 4/10, loss 0.5, ETA 0m06s"
        )[: shutil.get_terminal_size((120, 20)).columns - 1 + 4]
    )
    status.clear()
    assert term.getvalue().endswith("\r\033[K") and not status.shown
    log = io.StringIO()  # not a terminal: a line per running cell, every STATUS_EVERY seconds
    status = jobs._Status(log)
    status.update([job], 0, 1)
    assert log.getvalue() == ""
    status.last -= jobs.STATUS_EVERY
    status.update([job], 0, 1)
    assert log.getvalue() == "  running cell A seed 0: step 4/10, loss 0.5, ETA 0m06s\n"
