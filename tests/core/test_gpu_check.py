"""The accelerator target report: each target reads the right records and compares the right way
(synthetic records; the figures themselves come from a GPU run of `scripts.gpu_check`)."""

from __future__ import annotations

import pytest

from core import gpu_check


def _att(times):
    """`times[(label, n, mode)] = seconds` as bench_attention records."""
    recs = [
        dict(mechanism=label.split(":")[0], label=label, length=n, mode=mode, time_s=t)
        for (label, n, mode), t in times.items()
    ]
    return {"records": recs}


def _result(*, auto=1.1, grf16=0.4, grf64=0.15, slice8=0.9, listops=40.0, text_mem=12, ssa=2.5):
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
    return {"attention": _att(times), "train": {"records": train}}


def test_every_target_holds_when_the_figures_meet_it():
    targets = gpu_check.evaluate(_result())
    assert len(targets) == 11
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
    ],
)
def test_a_missed_target_is_reported_as_missed(kw, failing):
    targets = gpu_check.evaluate(_result(**kw))
    missed = [t["target"] for t in targets if not t["holds"]]
    assert missed and all(failing in m for m in missed), missed


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
    from core import cli
    from scripts import gpu_check as script

    assert cli.run(script.main, ["--out", "/nonexistent"]) == 2
    assert "needs a GPU" in capsys.readouterr().err
