"""attnbench.papers.leaderboard: mechanisms ranked per task from summaries, ties shared, failures
last; a summary that is not a run summary is an error naming the file and the field. (Task
variants, seeds, the chance mark and failed.json: test_leaderboard_variants.py.)"""

import json

import pytest

from attnbench import errors
from attnbench.papers import leaderboard


def _summary(
    root,
    name,
    task,
    attn,
    value,
    *,
    preset="cpu",
    source="generated",
    metric="accuracy",
    config=None,
):
    d = root / name / "seed0"
    d.mkdir(parents=True)
    s = {
        "task": task,
        "attention": {"name": attn},
        "preset": preset,
        "data": {"source": source},
        "metrics": {"test_best": {metric: value, "num_examples": 10}},
        "command": f"python -m scripts.train --config={config or task + '/' + attn} --workdir=x",
    }
    (d / "summary.json").write_text(json.dumps(s))


def test_ranks_per_task_with_ties_failures_and_the_best_config(tmp_path, capsys):
    _summary(tmp_path, "a", "t1", "softmax", 0.5)
    _summary(tmp_path, "b", "t1", "linear", 0.7, config="lin-small")
    _summary(tmp_path, "c", "t1", "linear", 0.6, config="lin-big")  # a worse config of linear
    _summary(tmp_path, "d", "t1", "mine", float("nan"))
    _summary(tmp_path, "e", "t2", "softmax", 0.9)
    _summary(tmp_path, "f", "t2", "linear", 0.9)  # tie
    _summary(tmp_path, "g", "t3", "softmax", 0.2, metric="mae")  # lower is better
    _summary(tmp_path, "h", "t3", "linear", 0.1, metric="mae")
    _summary(tmp_path, "i", "t1", "softmax", 0.99, preset="smoke")  # never ranked with cpu
    _summary(tmp_path, "j", "t1", "nothing", None)  # null: the run has no such metric
    exact = tmp_path / "exact" / "seed0"  # an exact cell's summary: no run, left out
    exact.mkdir(parents=True)
    (exact / "summary.json").write_text(
        json.dumps({"preset": "exact", "metrics": {"exact": {"value": 1.0}}, "exact": {}})
    )
    results = leaderboard.collect([tmp_path])
    assert capsys.readouterr().err == ""
    t1_key = ("t1", "cpu", "generated", "")  # a task with one variant
    assert "nothing" not in results[t1_key]
    assert results[t1_key]["linear"]["config"] == "lin-small"
    md = leaderboard.render(results)
    t1 = md.split("## t1 (cpu preset")[1].split("##")[0]
    assert t1.index("`linear` | 0.7000") < t1.index("`softmax` | 0.5000")
    assert "| - | `mine` | failed (n=0, 1 failed) | - |" in t1
    t2 = md.split("## t2 (cpu preset")[1].split("##")[0]
    assert "| 1 | `linear` |" in t2 and "| 1 | `softmax` |" in t2
    t3 = md.split("## t3 (cpu preset")[1].split("##")[0]
    assert "| 1 | `linear` | 0.1000 (n=1) | - |" in t3 and "test mae" in t3
    average = md.split("## Average rank (cpu preset")[1].split("##")[0]
    assert "| `linear` | 1.00 | 3 |" in average and "| `softmax` | 1.67 | 3 |" in average
    assert "`mine`" not in average
    assert "## t1 (smoke preset" in md


# (what the summary holds instead of a good one, the field the error names)
HOSTILE = [
    ("metric-string-number", {"metrics": {"test_best": {"accuracy": "0.5"}}}, "accuracy is '0.5'"),
    ("metric-string", {"metrics": {"test_best": {"accuracy": "abc"}}}, "accuracy is 'abc'"),
    ("metric-bool", {"metrics": {"test_best": {"accuracy": True}}}, "accuracy is True"),
    ("metrics-list", {"metrics": [1, 2]}, "metrics is a list [1, 2], not an object"),
    ("test-best-string", {"metrics": {"test_best": "x"}}, "metrics.test_best is 'x', not an obj"),
    ("no-test-best", {"metrics": {}}, "no metrics.test_best"),
    ("data-string", {"data": "generated"}, "data is 'generated', not an object"),
    ("data-list", {"data": ["generated"]}, "data is a list ['generated'], not an object"),
    ("source-number", {"data": {"source": 3}}, "data.source is 3, not a string"),
    ("no-task", {"task": None}, "no task"),
    ("task-list", {"task": ["t1"]}, "task is a list ['t1'], not a string"),
    ("attention-string", {"attention": "softmax"}, "attention is 'softmax', not an object"),
    ("command-list", {"command": ["python"]}, "command is a list ['python'], not a string"),
    ("not-an-object", [], "run summary is a list [], not an object"),
    ("cut-short", "{", "malformed run summary"),
]


@pytest.mark.parametrize("case,change,expected", HOSTILE, ids=[c[0] for c in HOSTILE])
def test_a_summary_that_is_not_a_run_summary_is_an_error_naming_file_and_field(
    tmp_path, case, change, expected
):
    _summary(tmp_path, "good", "t1", "softmax", 0.5)
    _summary(tmp_path, "bad", "t1", "linear", 0.7)
    path = tmp_path / "bad" / "seed0" / "summary.json"
    if isinstance(change, dict):
        path.write_text(json.dumps({**json.loads(path.read_text()), **change}))
    else:
        path.write_text(change if isinstance(change, str) else json.dumps(change))
    with pytest.raises(errors.DataError) as err:
        leaderboard.collect([tmp_path])
    assert str(err.value).startswith(f"{path}:") and expected in str(err.value), str(err.value)
