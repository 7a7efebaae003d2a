"""scripts.bench attention writes the documented record layout."""

import json

from scripts import bench


def test_attention_bench_writes_records_tables_and_plot(tmp_path):
    bench.main(
        [
            "attention",
            "--mechanisms",
            "softmax",
            "grf",  # integer walk buffers: the backward pass must skip them
            "--lengths",
            "16",
            "64",
            "--repeats",
            "1",
            "--out",
            str(tmp_path),
            "--tag",
            "t",
            "--max-memory-gb",
            "4",
        ]
    )
    result = json.loads((tmp_path / "attention_t.json").read_text())
    assert {"device", "versions", "git_revision", "records", "matmul_flops_per_s"} <= set(result)
    assert len(result["records"]) == 2 * 2 * 3
    for rec in result["records"]:
        assert {
            "mechanism",
            "hparams",
            "length",
            "batch",
            "heads",
            "head_dim",
            "mode",
            "time_s",
            "time_spread_s",
            "memory_bytes",
            "skipped",
        } <= set(rec)
        assert rec["skipped"] is None and rec["time_s"] > 0 and rec["memory_bytes"] > 0
    fb = {
        r["length"]: r
        for r in result["records"]
        if r["mode"] == "forward_backward" and r["mechanism"] == "softmax"
    }
    assert fb[64]["memory_bytes"] > fb[16]["memory_bytes"]
    assert (tmp_path / "attention_t.png").read_bytes()[:4] == b"\x89PNG"
    table = (tmp_path / "attention_t.md").read_text()
    assert "| softmax |" in table and "| grf |" in table
    # replot rebuilds the table and plot from the JSON alone
    (tmp_path / "attention_t.md").unlink()
    (tmp_path / "attention_t.png").unlink()
    bench.main(["replot", str(tmp_path / "attention_t.json")])
    assert (tmp_path / "attention_t.md").read_text() == table
    assert (tmp_path / "attention_t.png").read_bytes()[:4] == b"\x89PNG"


def test_oversized_configurations_are_skipped_with_a_reason(tmp_path):
    bench.main(
        [
            "attention",
            "--mechanisms",
            "softmax",
            "--lengths",
            "512",
            "--repeats",
            "1",
            "--modes",
            "forward",
            "--out",
            str(tmp_path),
            "--max-memory-gb",
            "0.000001",
        ]
    )
    rec = json.loads((tmp_path / "attention_scaling.json").read_text())["records"][0]
    assert rec["time_s"] is None and "GiB" in rec["skipped"]


def test_pipeline_bench_compares_with_training_rates(tmp_path):
    runs = tmp_path / "runs" / "a"
    runs.mkdir(parents=True)
    (runs / "summary.json").write_text(
        json.dumps(
            {"task": "lra.listops", "preset": "smoke", "throughput": {"examples_per_s": 10.0}}
        )
    )
    bench.main(
        [
            "pipeline",
            "--configs",
            "configs/lra/listops.py:preset=smoke",
            "--batches",
            "5",
            "--warmup",
            "1",
            "--compare",
            str(tmp_path / "runs"),
            "--out",
            str(tmp_path),
        ]
    )
    result = json.loads((tmp_path / "pipelines.json").read_text())
    (rec,) = result["records"]
    assert rec["task"] == "lra.listops" and rec["source"] == "generated"
    assert rec["pipeline_examples_per_s"] > 0 and rec["train_examples_per_s"] == 10.0
    assert rec["ratio"] == rec["pipeline_examples_per_s"] / 10.0
    table = (tmp_path / "pipelines.md").read_text()
    assert table.startswith("<!-- generated") and "lra/listops.py:preset=smoke" in table
