"""scripts.bench_compare: new / old ratios per cell, geometric means per mechanism and mode, the
flags at the threshold, and the user errors."""

import json
import math

import pytest

from attnbench import cli
from scripts import bench_compare


def _bench(path, times, rev, jax="0.12.0.1"):
    recs = [
        dict(mechanism=label.split(":")[0], label=label, mode=mode, length=n, time_s=t)
        for (label, mode, n), t in times.items()
    ]
    data = dict(records=recs, git_revision=rev, versions={"jax": jax}, matmul_flops_per_s=1e9)
    path.write_text(json.dumps(data))
    return str(path)


def test_ratios_geomeans_and_flags(tmp_path, capsys):
    old = _bench(
        tmp_path / "old.json",
        {
            ("linear", "forward", 1024): 1.0,
            ("linear", "forward", 2048): 2.0,
            ("grf", "forward", 1024): 1.0,
            ("grf", "forward", 2048): 1.0,
            ("grf", "forward", 4096): None,  # skipped on the old side: not compared
            ("gone", "forward", 1024): 1.0,  # only on the old side
        },
        "a" * 40,
        jax="0.10.2",
    )
    new = _bench(
        tmp_path / "new.json",
        {
            ("linear", "forward", 1024): 1.2,  # 1.2, flagged
            ("linear", "forward", 2048): 1.6,  # 0.8; geo-mean sqrt(0.96) = 0.98, not flagged
            ("grf", "forward", 1024): 1.06,
            ("grf", "forward", 2048): 1.06,  # geo-mean 1.06: flagged
            ("grf", "forward", 4096): 3.0,
        },
        "b" * 40,
    )
    out = tmp_path / "ab"
    argv = ["--old", old, "--new", new, "--out", str(out), "--title", "t"]
    assert cli.run(bench_compare.main, argv) == 0
    result = json.loads((tmp_path / "ab.json").read_text())
    cells = {(c["label"], c["length"]): c for c in result["cells"]}
    assert set(cells) == {("linear", 1024), ("linear", 2048), ("grf", 1024), ("grf", 2048)}
    assert (
        cells[("linear", 1024)]["ratio"] == pytest.approx(1.2)
        and cells[("linear", 1024)]["flagged"]
    )
    assert not cells[("linear", 2048)]["flagged"]
    means = {m["label"]: m for m in result["means"]}
    assert means["linear"]["geomean"] == pytest.approx(math.sqrt(1.2 * 0.8))
    assert not means["linear"]["flagged"] and means["grf"]["flagged"]
    md = (tmp_path / "ab.md").read_text()
    assert md == capsys.readouterr().out
    assert "| linear | 1.20 ** | 0.80 | 0.98 |" in md
    assert "Geometric means above 1.05: grf forward (1.06)." in md
    assert "git aaaaaaa, jax 0.10.2" in md and "git bbbbbbb, jax 0.12.0.1" in md


def test_nothing_in_common_and_bad_files_are_user_errors(tmp_path, capsys):
    a = _bench(tmp_path / "a.json", {("linear", "forward", 1024): 1.0}, "a")
    b = _bench(tmp_path / "b.json", {("linear", "forward", 2048): 1.0}, "b")
    argv = ["--old", a, "--new", b, "--out", str(tmp_path / "x")]
    assert cli.run(bench_compare.main, argv) == 2
    assert "measured on both sides" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text('{"rows": []}')
    argv = ["--old", str(tmp_path / "bad.json"), "--new", b, "--out", str(tmp_path / "x")]
    assert cli.run(bench_compare.main, argv) == 2
    assert "bad.json: not an attention bench record" in capsys.readouterr().err
    argv = ["--old", str(tmp_path / "missing.json"), "--new", b, "--out", str(tmp_path / "x")]
    assert cli.run(bench_compare.main, argv) == 2
    assert "missing.json" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()
