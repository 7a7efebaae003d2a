"""The accelerator target report: each target reads the right records and compares the right way
(synthetic records; the figures themselves come from a GPU run of `scripts.gpu_check`)."""

from __future__ import annotations

import jax
import pytest

from attnbench.bench import gpu_check


def _att(times):
    """`times[(label, n, mode)] = seconds` as bench_attention records."""
    recs = [
        dict(mechanism=label.split(":")[0], label=label, length=n, mode=mode, time_s=t)
        for (label, n, mode), t in times.items()
    ]
    return {"records": recs}


def _result(
    *, auto=1.1, grf16=0.4, grf64=0.15, slice8=0.9, listops=40.0, text_mem=12, ssa=2.5, bf=0.37
):
    times = {}
    for n in (1024, 4096, 8192, 16384, 65536):
        for mode in ("forward", "forward_backward"):
            times[(gpu_check.CUDNN, n, mode)] = 1.0
            times[("softmax", n, mode)] = auto
            times[("sliceformer", n, mode)] = slice8
    times[("grf", 16384, "forward_backward")] = grf16
    times[("grf", 65536, "forward_backward")] = grf64
    train = [
        dict(label="listops f32", steps_per_s=8.0),
        dict(label="listops bf16", steps_per_s=listops),
        dict(label="text 4k softmax", steps_per_s=10.0, peak_memory_bytes=text_mem * 2**30),
        dict(label="text 4k ssa 1/4", steps_per_s=10.0 * ssa),
    ]
    accuracy = [
        dict(dtype="float32", seed=0, test_accuracy=0.37),
        dict(dtype="float32", seed=1, test_accuracy=0.38),
        dict(dtype="bfloat16", seed=0, test_accuracy=bf),
        dict(dtype="bfloat16", seed=1, test_accuracy=bf + 0.01),
    ]
    return {"attention": _att(times), "train": {"records": train}, "accuracy": accuracy}


def test_every_target_holds_when_the_figures_meet_it():
    targets = gpu_check.evaluate(_result())
    assert len(targets) == 12
    assert all(t["holds"] for t in targets), [t["target"] for t in targets if not t["holds"]]


@pytest.mark.parametrize(
    "kw,failing",
    [
        (dict(auto=1.3), "within 1.2x of cuDNN"),
        (dict(grf16=0.6), "grf fwd+bwd at 16384"),
        (dict(grf64=0.25), "grf fwd+bwd at 65536"),
        (dict(slice8=1.0), "sliceformer forward at"),
        (dict(listops=36.0), "ListOps paper recipe"),
        (dict(text_mem=17), "within 16 GiB"),
        (dict(ssa=1.9), "SSA keep 1/4"),
        # seeds 0.37/0.38 each: the SE of the difference is 0.0071, two of them 0.0141
        (dict(bf=0.355), "ListOps bf16 test accuracy"),
    ],
)
def test_a_missed_target_is_reported_as_missed(kw, failing):
    targets = gpu_check.evaluate(_result(**kw))
    missed = [t["target"] for t in targets if not t["holds"]]
    assert missed and all(failing in m for m in missed), missed


def test_the_accuracy_target_compares_the_dtypes_means_with_their_seed_spread():
    value, holds, _ = gpu_check._accuracy_target(_result(bf=0.365)["accuracy"])
    assert value == pytest.approx(-0.005) and holds  # |diff| 0.005 <= 2 SE 0.0141
    one_seed = [r for r in _result()["accuracy"] if r["seed"] == 0]
    value, holds, detail = gpu_check._accuracy_target(one_seed)
    assert value is None and not holds and "2+ seeds" in detail
    result = _result()
    del result["accuracy"]  # not asked for (--accuracy 0)
    target = next(t for t in gpu_check.evaluate(result) if t["target"].startswith("ListOps bf16"))
    assert target["value"] is None and not target["holds"] and "--accuracy" in target["detail"]


def test_a_missing_measurement_is_not_a_pass():
    result = _result()
    result["attention"]["records"] = [
        r for r in result["attention"]["records"] if r["label"] != "grf"
    ]
    result["train"]["records"][1]["steps_per_s"] = None  # listops bf16 skipped
    targets = {t["target"]: t for t in gpu_check.evaluate(result)}
    grf = [t for name, t in targets.items() if name.startswith("grf")]
    assert grf and all(t["value"] is None and not t["holds"] for t in grf)
    assert not next(t for n, t in targets.items() if n.startswith("ListOps"))["holds"]


def test_scripts_gpu_check_refuses_a_cpu(capsys):
    from attnbench import cli
    from scripts import gpu_check as script

    assert cli.run(script.main, ["--out", "/nonexistent"]) == 2
    assert "needs a GPU" in capsys.readouterr().err


def test_a_measurement_that_fails_when_run_is_recorded_and_the_others_kept(monkeypatch):
    """One (mechanism, mode) failing at run time (a GPU out of memory) skips that record only,
    and a mechanism that cannot even be set up skips its modes: the run goes on either way."""
    from attnbench.bench import attention as bench_attention

    real = bench_attention._time
    calls = []

    def flaky(compiled, args, repeats):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("RESOURCE_EXHAUSTED: out of memory while trying to allocate")
        return real(compiled, args, repeats)

    real_measure = bench_attention.measure_mechanism

    def measure(mech, name, *args, **kw):
        if name == "performer":
            raise RuntimeError("RESOURCE_EXHAUSTED while building the inputs")
        return real_measure(mech, name, *args, **kw)

    monkeypatch.setattr(bench_attention, "matmul_flops", lambda **kw: 1e9)  # not timed here
    monkeypatch.setattr(bench_attention, "_time", flaky)
    monkeypatch.setattr(bench_attention, "measure_mechanism", measure)
    result = bench_attention.run(
        ["linear", "performer"],
        [16],
        batch=1,
        heads=1,
        head_dim=4,
        dtype="float32",
        modes=["forward", "forward_backward"],
        repeats=1,
        max_memory_gb=1.0,
        isolated=False,
    )
    by = {(r["label"], r["mode"]): r for r in result["records"]}
    assert by[("linear", "forward")]["time_s"] > 0
    bad = by[("linear", "forward_backward")]
    assert bad["time_s"] is None and "failed when run: RuntimeError: RESOURCE" in bad["skipped"]
    for mode in ("forward", "forward_backward"):
        rec = by[("performer", mode)]
        assert rec["time_s"] is None and rec["skipped"].startswith("failed: ")


def test_a_run_cut_short_keeps_what_it_measured_and_a_failed_step_is_a_missed_target(
    tmp_path, monkeypatch
):
    """gpu_check writes after the attention figures and after every training record; a training
    measurement that raises is recorded as skipped and its targets read as missed."""
    import json

    from attnbench.bench import train as bench_train

    seen = []

    def fake_measure(spec, *, batch, **kw):
        seen.append(spec)
        if len(seen) == 3:  # "text 4k softmax"
            raise RuntimeError("RESOURCE_EXHAUSTED")
        if len(seen) == 5:
            raise KeyboardInterrupt  # the run is killed here
        rec = bench_train.skipped_record(spec, "softmax", None, batch, "train", None)
        return rec | dict(steps_per_s=10.0 * len(seen), peak_memory_bytes=2**30)

    monkeypatch.setattr(bench_train, "measure", fake_measure)
    from attnbench import io

    prov = io.provenance("python -m scripts.gpu_check")
    with pytest.raises(KeyboardInterrupt):
        gpu_check.run(
            lengths=[16],
            mechanisms=[gpu_check.CUDNN, "softmax", "linear"],
            repeats=1,
            train_steps=1,
            train_batch=2,
            text_length=64,
            out=str(tmp_path),
            provenance=prov,
        )
    assert [s.split(":")[0] for s in seen] == ["lra/listops.py"] * 2 + ["lra/text.py"] + [
        "lra/listops.py"
    ] + ["lra/text.py"]
    assert "length=64" in seen[2] and "attn=softmax" in seen[2]
    att = json.loads((tmp_path / "attention_gpu.json").read_text())
    cudnn = {r["mode"]: r for r in att["records"] if r["label"] == gpu_check.CUDNN}
    assert set(cudnn) == {"forward", "forward_backward"}
    if jax.default_backend() != "gpu":  # no cuDNN here: recorded as not compiling, not raised
        assert all(r["skipped"] and r["time_s"] is None for r in cudnn.values())
    train = json.loads((tmp_path / "train_gpu.json").read_text())["records"]
    assert [r["label"] for r in train] == [
        "listops f32",
        "listops bf16",
        "text 4k softmax",
        "listops bf16 no attn dropout",
    ]
    assert "RESOURCE_EXHAUSTED" in train[2]["skipped"]
    targets = {
        t["target"]: t for t in json.loads((tmp_path / "targets.json").read_text())["targets"]
    }
    assert len(targets) == 12
    assert not targets["LRA Text at 4096, batch 32, softmax trains within 16 GiB"]["holds"]
    ssa = next(t for name, t in targets.items() if name.startswith("SSA"))
    assert ssa["value"] is None and not ssa["holds"]  # not measured before the kill
    assert "| ListOps paper recipe" in (tmp_path / "targets.md").read_text()


@pytest.mark.parametrize(
    "stats, cap",
    [(None, 60.0), ({}, 60.0), ({"bytes_limit": 40 * 2**30}, 36.0), ({"bytes_limit": 2**40}, 60.0)],
)
def test_memory_cap_follows_the_allocator_pool(monkeypatch, stats, cap):
    """The request, or 90% of the pool the device reports (CPU reports none)."""

    class Device:
        def memory_stats(self):
            return stats

    monkeypatch.setattr(gpu_check.jax, "devices", lambda: [Device()])
    assert gpu_check.memory_cap_gb(60.0) == pytest.approx(cap)


@pytest.mark.slow  # ~1-2 min on 2 cores; `make test-slow`
def test_the_whole_check_runs_end_to_end_at_small_sizes(tmp_path):
    """`scripts.gpu_check --allow-cpu` at small sizes: every measurement the H100 run makes is
    made (the cuDNN baseline is skipped with its reason on a CPU) and every file is written."""
    import json

    from attnbench import cli
    from scripts import gpu_check as script

    argv = ["--allow-cpu", "--out", str(tmp_path), "--lengths", "64", "--repeats", "1"]
    argv += ["--train-steps", "1", "--train-batch", "2", "--listops-length", "64"]
    argv += ["--text-length", "64"]
    assert cli.run(script.main, argv) in (0, None)
    train = json.loads((tmp_path / "train_gpu.json").read_text())
    assert len(train["records"]) == 6 and train["git_revision"]
    for r in train["records"]:
        assert r["skipped"] is None and r["steps_per_s"] > 0, r
    att = json.loads((tmp_path / "attention_gpu.json").read_text())
    ran = {r["label"] for r in att["records"] if r["time_s"]}
    assert ran == set(gpu_check.MECHANISMS) - {gpu_check.CUDNN}
    assert (tmp_path / "targets.md").read_text().count("\n| ") == 12 + 1
    # the accuracy runs, at the smoke preset: two seeds of each dtype, then the target
    records = gpu_check.accuracy(
        str(tmp_path / "runs"), seeds=2, config="lra/listops.py:preset=smoke"
    )
    assert [(r["dtype"], r["seed"]) for r in records] == [
        (d, s) for d in ("float32", "bfloat16") for s in (0, 1)
    ]
    assert all(0 <= r["test_accuracy"] <= 1 for r in records)
    assert (tmp_path / "runs/listops_bfloat16/seed1/summary.json").exists()
    value, _, detail = gpu_check._accuracy_target(records)
    assert value is not None and "2 seeds each" in detail


def test_a_negative_seed_count_is_refused_before_anything_runs(capsys):
    from attnbench import cli
    from scripts import gpu_check as script

    assert cli.run(script.main, ["--accuracy", "-1", "--out", "/nonexistent"]) == 2
    assert "--accuracy -1: seeds per dtype" in capsys.readouterr().err
