"""scripts.compare_runs: the runs' own best metric (MAE, lower is better, for ZINC) orders the
table and labels the figure; runs that pick their best checkpoint differently are an error."""

import json

import pytest

from attnbench import errors
from scripts import compare_runs


def _run(path, name, mae, mode="min"):
    path.mkdir()
    config = {"attention": {"name": name}, "best_metric": "mae", "best_mode": mode}
    summary = {
        "metrics": {"test_best": {"mae": mae}, "test_last": {"mae": mae + 0.01}},
        "num_params": 10,
        "throughput": {"examples_per_s": 5.0},
        "wall_time_s": 60.0,
        "steps": 4,
        "data": {"source": "standin"},
        "device": {"kind": "cpu"},
        "git_revision": "abcdef0",
    }
    records = [
        {"step": 1, "split": "train", "loss": 1.0},
        {"step": 2, "split": "val", "loss": 0.9, "mae": mae},
    ]
    (path / "config.json").write_text(json.dumps(config))
    (path / "summary.json").write_text(json.dumps(summary))
    (path / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return str(path)


def test_lower_is_better_metrics_sort_ascending(tmp_path):
    runs = [_run(tmp_path / "a", "softmax", 0.30), _run(tmp_path / "b", "gfsa", 0.25)]
    out = tmp_path / "cmp"
    assert compare_runs.main([*runs, "--out", str(out)]) == 0
    table = (tmp_path / "cmp.md").read_text()
    assert "test mae (best val ckpt)" in table
    assert table.index("| gfsa | 0.2500") < table.index("| softmax | 0.3000")
    assert (tmp_path / "cmp.png").stat().st_size > 0


def test_runs_must_pick_their_best_checkpoint_alike(tmp_path):
    runs = [_run(tmp_path / "a", "softmax", 0.3), _run(tmp_path / "b", "gfsa", 0.2, mode="max")]
    with pytest.raises(errors.ConfigError, match="pick their best checkpoint differently"):
        compare_runs.main([*runs, "--out", str(tmp_path / "cmp")])
