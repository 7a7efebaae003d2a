"""attnbench.papers.leaderboard: mechanisms ranked per task from summaries, ties shared, failures
last."""

import json

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
    (tmp_path / "broken" / "seed0").mkdir(parents=True)
    (tmp_path / "broken" / "seed0" / "summary.json").write_text("{")
    results = leaderboard.collect([tmp_path])
    assert "skipping" in capsys.readouterr().err
    assert results[("t1", "cpu", "generated")]["linear"]["config"] == "lin-small"
    md = leaderboard.render(results)
    t1 = md.split("## t1 (cpu preset")[1].split("##")[0]
    assert t1.index("`linear` | 0.7000") < t1.index("`softmax` | 0.5000")
    assert "| - | `mine` | failed (non-finite) | 0 (1 failed) |" in t1
    t2 = md.split("## t2 (cpu preset")[1].split("##")[0]
    assert "| 1 | `linear` |" in t2 and "| 1 | `softmax` |" in t2
    t3 = md.split("## t3 (cpu preset")[1].split("##")[0]
    assert "| 1 | `linear` | 0.1000 |" in t3 and "test mae" in t3
    average = md.split("## Average rank (cpu preset")[1].split("##")[0]
    assert "| `linear` | 1.00 | 3 |" in average and "| `softmax` | 1.67 | 3 |" in average
    assert "`mine`" not in average
    assert "## t1 (smoke preset" in md
