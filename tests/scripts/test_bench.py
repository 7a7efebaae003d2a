"""scripts.bench: the documented record layouts of `attention`, `train` and `pipeline`; and
every entry point in scripts/ stays thin."""

import json
import pathlib

import pytest

from attnbench.launch import isolate
from scripts import bench


@pytest.mark.slow  # ~25 s on 2 cores; `make test-slow`
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
            "--no-isolate",
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
    # analytic FLOPs: softmax's 4 N^2 d h matmul work (x3 with the backward) plus elementwise
    assert 3 * 4 * 64**2 * 32 * 4 <= fb[64]["analytic_flops"] <= 1.2 * 3 * 4 * 64**2 * 32 * 4
    assert fb[64]["analytic_fraction_of_matmul"] > 0
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
            "--no-isolate",
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
            "lra/listops.py:preset=smoke",
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


@pytest.mark.slow  # a subprocess per record, ~14 s; `make test-slow`
def test_isolated_attention_run_records_its_own_peak_rss_and_hparams(tmp_path):
    bench.main(
        ["attention", "--mechanisms", "samsa:k=8,mode='soft'", "--lengths", "32"]
        + ["--modes", "forward", "--repeats", "1", "--out", str(tmp_path), "--tag", "iso"]
    )
    (rec,) = json.loads((tmp_path / "attention_iso.json").read_text())["records"]
    assert rec["mechanism"] == "samsa" and rec["label"] == "samsa:k=8,mode='soft'"
    assert rec["hparams"]["k"] == 8 and rec["hparams"]["mode"] == "soft"
    assert rec["skipped"] is None and rec["time_s"] > 0
    assert rec["peak_rss_bytes"] > 50 * 2**20  # the child's own peak: a JAX process
    assert "| samsa:k=8,mode='soft' |" in (tmp_path / "attention_iso.md").read_text()


def test_a_crashing_measurement_is_recorded_as_skipped():
    got = isolate.run("os:abort", {})
    assert set(got) == {"skipped"} and "exit status" in got["skipped"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["attention", "--mechanisms", "nope"], "unknown attention 'nope'"),
        (["attention", "--mechanisms", "samsa:kk=3"], "kk"),
        (["train", "--config", "lra/text.py", "--mechanisms", "nope"], "nope"),
        (["train", "--config", "lra/image.py", "--lengths", "64"], "length=64"),
        (["train", "--config", "lra/text.py:nope=1"], "nope"),
    ],
)
def test_bad_arguments_fail_before_running_with_the_problem_named(argv, message, capsys):
    with pytest.raises(SystemExit):
        bench.main(argv)
    assert message in capsys.readouterr().err


@pytest.mark.slow  # ~40 s on 2 cores; `make test-slow`
def test_train_bench_writes_steps_per_s_and_memory_per_mechanism_and_length(tmp_path):
    bench.main(
        ["train", "--config", "lra/text.py:preset=smoke", "--mechanisms", "softmax"]
        + ["linear", "--lengths", "32", "64", "--modes", "train", "inference"]
        + ["--steps", "1", "--out", str(tmp_path), "--tag", "t", "--no-isolate"]
    )
    result = json.loads((tmp_path / "train_t.json").read_text())
    assert {"device", "versions", "git_revision", "records"} <= set(result)
    recs = result["records"]
    assert len(recs) == 2 * 2 * 2
    for r in recs:
        assert r["skipped"] is None and r["steps_per_s"] > 0 and r["peak_memory_bytes"] > 0
        assert r["task"] == "lra.text" and r["model"]["num_layers"] == 1
    by = {(r["mechanism"], r["length"], r["mode"]): r for r in recs}
    assert by[("linear", 64, "train")]["config"].endswith("attn=linear,length=64")
    # softmax's train step holds the [B, H, N, N] probabilities: memory grows with length
    assert (
        by[("softmax", 64, "train")]["peak_memory_bytes"]
        > by[("softmax", 32, "train")]["peak_memory_bytes"]
    )
    table = (tmp_path / "train_t.md").read_text()
    assert table.startswith("<!-- generated") and "| linear |" in table and "x)" in table
    assert (tmp_path / "train_t.png").read_bytes()[:4] == b"\x89PNG"


def test_train_bench_plans_any_domain_at_its_own_shapes():
    """Without --lengths (or with 0) a config runs at its own shapes: vision, graphs and point
    clouds have no `length=` argument (issue 37 item 5)."""
    from attnbench.bench import train as bench_train

    for config in ("vision/imagenet.py:preset=smoke", "graphs/zinc.py:preset=smoke"):
        for lengths in (None, [0]):
            [(label, spec, n)] = bench_train.plan(config, ["softmax"], lengths)
            assert (label, spec, n) == ("softmax", f"{config},attn=softmax", None)
    [(_, spec, n)] = bench_train.plan("language/enwik8.py:preset=smoke", None, None)
    assert n == 32 and "length=" not in spec  # the config's own data.length
    [(_, _, n)] = bench_train.plan("lra/text.py:preset=smoke", None, [64])
    assert n == 64


@pytest.mark.slow  # ~25 s on 2 cores; `make test-slow`
def test_train_bench_times_vision_graph_and_point_cloud_configs(tmp_path):
    for i, config in enumerate(
        ("vision/imagenet.py", "graphs/zinc.py", "pointcloud/modelnet40.py")
    ):
        tag = f"d{i}"
        bench.main(
            ["train", "--config", f"{config}:preset=smoke", "--modes", "train", "inference"]
            + ["--steps", "1", "--out", str(tmp_path), "--tag", tag, "--no-isolate"]
        )
        recs = json.loads((tmp_path / f"train_{tag}.json").read_text())["records"]
        assert len(recs) == 2 and all(r["length"] is None for r in recs)
        assert all(r["skipped"] is None and r["steps_per_s"] > 0 for r in recs)
        assert "| mechanism | own |" in (tmp_path / f"train_{tag}.md").read_text()
        assert (tmp_path / f"train_{tag}.png").read_bytes()[:4] == b"\x89PNG"


def test_every_script_is_a_thin_entry_point():
    """Measuring and rendering code lives in the library (attnbench/bench/,
    attnbench/papers/speed_tables/); a script parses arguments and calls it (issue 12)."""
    scripts = pathlib.Path(__file__).resolve().parents[2] / "scripts"
    lengths = {p.name: len(p.read_text().splitlines()) for p in scripts.glob("*.py")}
    assert {name: n for name, n in lengths.items() if n >= 150} == {}
