"""`scripts.graph_pe_timing` (SAMSA Table 4 on this machine) at smoke scale: the record and
its markdown, with all three timings measured on the same graphs."""

import json

import pytest

from scripts import graph_pe_timing


@pytest.mark.slow  # ~40 s: generates a few peptides and compiles a small Graph-Bridge
def test_smoke_writes_the_three_timings(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path / "data"))
    assert graph_pe_timing.main(["--scale", "smoke", "--out", str(tmp_path)]) == 0
    rec = json.loads((tmp_path / "samsa_table4.json").read_text())
    assert rec["data"]["train_graphs"] >= rec["epoch_graphs"] > 0
    for key in ("lap_pe", "rwse", "epoch"):
        assert rec["per_graph_s"][key] > 0
        assert rec["lrgb_epoch_extrapolated_s"][key] == pytest.approx(
            rec["per_graph_s"][key] * 10_873
        )
    text = (tmp_path / "samsa_table4.md").read_text()
    assert "| LapPE | 73 |" in text and "| SAMSA (whole model) | 35 |" in text
