"""scripts.bench_dense_cpu: the side-by-side dense CPU benchmark writes its record and table, and
asks for torch (or --no-torch) where torch is missing."""

import importlib.util
import json

import pytest

from attnbench import cli
from scripts import bench_dense_cpu


def test_without_torch_it_times_our_kernels_and_writes_the_record(tmp_path, capsys):
    argv = ["--no-torch", "--lengths", "64", "--heads", "2", "--head-dim", "8", "--rounds", "2"]
    assert cli.run(bench_dense_cpu.main, argv + ["--out", str(tmp_path)]) == 0
    rec = json.loads((tmp_path / "dense_cpu.json").read_text())
    got = {(c["candidate"], c["mode"]) for c in rec["cells"]}
    names = ("softmax", "softmax_xla", "softmax_chunked")
    assert got == {(n, m) for n in names for m in ("forward", "forward_backward")}
    assert all(c["ms"] > 0 and c["length"] == 64 for c in rec["cells"])
    assert rec["command"].startswith("python -m scripts.bench_dense_cpu --no-torch")
    md = (tmp_path / "dense_cpu.md").read_text()
    assert "## forward_backward" in md and "| 64 |" in md and "/ torch" not in md


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="torch is installed")
def test_the_torch_baseline_without_torch_is_one_clear_error(tmp_path, capsys):
    assert cli.run(bench_dense_cpu.main, ["--lengths", "64", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "needs PyTorch" in err and "--no-torch" in err and "attnbench[torch-baseline]" in err
    assert "Traceback" not in err
    assert not (tmp_path / "dense_cpu.json").exists()
