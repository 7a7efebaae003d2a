"""Every user error an entry point can meet: exit status 2, exactly one line on stderr naming
the field, file or value (no traceback); and the behaviours that used to be silently wrong.

Each case is one subprocess, as a user would run it (`python -m scripts.<name> ...`).
"""

import os
import pathlib
import subprocess
import sys

import pytest

from tests.conftest import ROOT

SMOKE = "lra/listops.py:preset=smoke"


def _run(args, *, env=None, timeout=300):
    env = dict(os.environ, JAX_PLATFORMS="cpu", **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _listops_dir(root: pathlib.Path, *, bad_line: bool = False) -> pathlib.Path:
    """A ListOps directory in the release format (`Source\\tTarget` TSVs) with sources of about
    60-150 tokens: longer than the smoke preset's 40."""
    from lra.data import listops

    d = listops.ensure_generated(
        root / "gen", seed=0, sizes=dict(train=32, val=8, test=8), min_length=60, max_length=150
    )
    if bad_line:
        text = (d / "basic_val.tsv").read_text().splitlines()
        text[3] = "( [MAX 2 3 ]\tnot-a-label"
        (d / "basic_val.tsv").write_text("\n".join(text) + "\n")
    return d


def _train(workdir, *extra, config=SMOKE):
    return ["scripts.train", f"--config={config}", f"--workdir={workdir}", *extra]


# (id, argv builder(tmp) -> argv, what the one line must contain)
CASES = [
    ("unknown-attention", lambda t: _train(t / "w", config=SMOKE + ",attn=sofmax"), "'sofmax'"),
    ("unknown-config-arg", lambda t: _train(t / "w", config=SMOKE + ",atn=linear"), "'atn'"),
    (
        "unknown-preset",
        lambda t: _train(t / "w", config="lra/listops.py:preset=huge"),
        "'huge'",
    ),
    ("config-file-missing", lambda t: _train(t / "w", config="configs/nope.py"), "configs/nope.py"),
    (
        "misspelt-field",
        lambda t: _train(t / "w", "--config.optimizer.lrr=1"),
        "'optimizer.lrr' (did you mean 'lr'?)",
    ),
    ("misspelt-section", lambda t: _train(t / "w", "--config.optimiser.lr=1"), "'optimiser'"),
    ("wrong-type", lambda t: _train(t / "w", "--config.seed=abc"), "config.seed='abc'"),
    (
        "override-k-above-tokens",
        lambda t: _train(t / "w", "--config.attention.k=1000", config=SMOKE + ",attn=samsa"),
        "k=1000",
    ),
    (
        "pool-vs-grf",
        lambda t: _train(t / "w", "--config.model.pool=mean", config=SMOKE + ",attn=grf"),
        "config.model.pool='mean'",
    ),
    (
        "zero-heads",
        lambda t: _train(t / "w", "--config.model.num_heads=0"),
        "config.model.num_heads=0",
    ),
    (
        "heads-not-dividing",
        lambda t: _train(t / "w", "--config.model.num_heads=3"),
        "config.model.qkv_dim=32",
    ),
    ("eval-every-zero", lambda t: _train(t / "w", "--config.eval_every=0"), "config.eval_every=0"),
    (
        "total-steps-negative",  # 0 is an evaluation-only run (attnbench.train)
        lambda t: _train(t / "w", "--config.total_steps=-1"),
        "config.total_steps=-1",
    ),
    (
        "negative-lr",
        lambda t: _train(t / "w", "--config.optimizer.lr=-0.1"),
        "config.optimizer.lr=-0.1",
    ),
    (
        "dropout-above-one",
        lambda t: _train(t / "w", "--config.model.dropout=1.5"),
        "config.model.dropout=1.5",
    ),
    (
        "unknown-pool",
        lambda t: _train(t / "w", "--config.model.pool=max"),
        "config.model.pool='max'",
    ),
    (
        "unknown-data-source",
        lambda t: _train(t / "w", "--config.data.source=foo"),
        "config.data.source='foo'",
    ),
    (
        "unknown-schedule",
        lambda t: _train(t / "w", "--config.schedule.name=cosine"),
        "config.schedule.name='cosine'",
    ),
    ("empty-workdir", lambda t: _train(""), "--workdir is empty"),
    ("stray-argument", lambda t: _train(t / "w", "--lr=1"), "'--lr=1'"),
    (
        "official-dir-missing",
        lambda t: _train(t / "w", "--config.data.source=official", f"--config.data.dir={t}/none"),
        "/none: ListOps data directory not found",
    ),
    (
        "official-too-long-for-smoke",
        lambda t: _train(
            t / "w", "--config.data.source=official", f"--config.data.dir={_listops_dir(t)}"
        ),
        "--config.data.max_length=2000",
    ),
    (
        "official-malformed-line",
        lambda t: _train(
            t / "w",
            "--config.data.source=official",
            "--config.data.max_length=200",
            f"--config.data.dir={_listops_dir(t, bad_line=True)}",
        ),
        "basic_val.tsv:4",
    ),
    (
        "unknown-best-metric",
        lambda t: _train(t / "w", "--config.best_metric=f1"),
        "config.best_metric='f1'",
    ),
    (
        "non-finite-loss",
        lambda t: _train(
            t / "w", "--config.optimizer.lr=1e30", "--config.eval_every=1", "--config.log_every=1"
        ),
        "non-finite",
    ),
    (
        "reproduce-negative-seeds",
        lambda t: ["scripts.reproduce", "samsa.table1", "--seeds", "-1"],
        "--seeds: -1 is not a positive integer",
    ),
    (
        "reproduce-zero-jobs",
        lambda t: ["scripts.reproduce", "samsa.table1", "--jobs", "0"],
        "--jobs: 0 is not a positive integer",
    ),
    (
        "reproduce-unknown-table",
        lambda t: ["scripts.reproduce", "samsa.table99"],
        "'samsa.table99'",
    ),
    (
        "reproduce-unknown-attn",
        lambda t: ["scripts.reproduce", "samsa.table1", "--attn", "nope"],
        "unknown attention 'nope'",
    ),
    (
        "reproduce-report-with-attn",
        lambda t: ["scripts.reproduce", "--all", "--attn", "softmax", "--report", f"{t}/c"],
        "--report covers the papers' own cells; leave out --attn",
    ),
    (
        "import-missing-file",
        lambda t: _train(t / "w", "--import", f"{t}/mine.py"),
        "mine.py: file not found",
    ),
    (
        "import-missing-module",
        lambda t: _train(t / "w", "--import", "no_such_pkg.attn"),
        "no module named 'no_such_pkg'",
    ),
    (
        "reproduce-no-cell",
        lambda t: ["scripts.reproduce", "samsa.table1", "--cells", "zzz"],
        "no cell of samsa.table1",
    ),
    (
        "flops-negative-length",
        lambda t: ["scripts.flops", f"--config={SMOKE}", "--lengths", "-5"],
        "--lengths: -5 is not a positive integer",
    ),
    ("flops-bad-config", lambda t: ["scripts.flops", f"--config={SMOKE},attn=sofmax"], "'sofmax'"),
    (
        "flops-lengths-for-images",
        lambda t: ["scripts.flops", "--config=configs/vision/cifar10.py", "--lengths", "64"],
        "vary --config.data.image_size",
    ),
    ("tables-missing-runs", lambda t: ["scripts.tables", "--runs", f"{t}/nowhere"], "nowhere"),
    (
        "tables-unknown-table",
        lambda t: ["scripts.tables", "--tables", "gfsa.table99"],
        "'gfsa.table99'",
    ),
]


# Cases that fail after training started (the run and its config.json are real).
STARTED = {"non-finite-loss"}


# Cases whose check is one more rule of a path the fast cases already cross (the config checker
# of attnbench/validate.py, unit-tested rule by rule in tests/attnbench/test_validate.py; argument
# parsing): a subprocess each, ~3 s, so they are the slow tier (`make test-slow`).
SLOW_CASES = {
    "non-finite-loss",  # ~16 s; in-process in tests/attnbench/test_train.py
    "dropout-above-one",
    "zero-heads",
    "negative-lr",
    "total-steps-zero",
    "eval-every-zero",
    "unknown-pool",
    "override-k-above-tokens",
    "unknown-schedule",
    "flops-negative-length",
    "reproduce-negative-seeds",
    "reproduce-zero-jobs",
    "wrong-type",
    "official-too-long-for-smoke",
}
_TIERED = [pytest.param(*c, marks=pytest.mark.slow) if c[0] in SLOW_CASES else c for c in CASES]


@pytest.mark.parametrize("case,build,expected", _TIERED, ids=[c[0] for c in CASES])
def test_user_error_is_one_line_and_exit_2(tmp_path, case, build, expected):
    out = _run(build(tmp_path))
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert out.returncode == 2, out.stderr[-3000:]
    assert len(lines) == 1, out.stderr[-3000:]
    assert lines[0].startswith("error: ") and expected in lines[0], lines[0]
    # a start that fails leaves no config behind (the corrected command is not "different")
    assert (tmp_path / "w" / "config.json").exists() == (case in STARTED)


@pytest.mark.slow  # four subprocesses, ~25 s; in-process: tests/attnbench/test_train.py
def test_failed_start_then_corrected_run_then_other_config_on_the_finished_workdir(tmp_path):
    """A start that fails leaves no config behind, so the corrected command runs; a finished
    workdir started again with a different config is refused, not answered with the old
    summary."""
    w = tmp_path / "w"
    bad = _run(_train(w, "--config.data.source=official", f"--config.data.dir={tmp_path}/none"))
    assert bad.returncode == 2 and not (w / "config.json").exists()
    good = _run(_train(w))
    assert good.returncode == 0, good.stderr[-3000:]
    assert (w / "summary.json").exists() and (w / "config.json").exists()
    other = _run(_train(w, config=SMOKE + ",attn=linear"))
    assert other.returncode == 2
    assert "different config (sections differ: attention)" in other.stderr
    again = _run(_train(w))
    assert again.returncode == 0 and "is finished" in again.stdout


def test_a_second_process_on_a_workdir_is_refused_naming_the_holder(tmp_path):
    from attnbench import workdir_lock

    w = tmp_path / "w"
    w.mkdir()
    with workdir_lock.hold(w):
        out = _run(_train(w))
    assert out.returncode == 2, out.stderr[-3000:]
    assert f"is in use by process {os.getpid()}" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    with workdir_lock.hold(w):  # released when the holder is done
        pass


def test_an_internal_error_keeps_its_traceback(tmp_path):
    """Only user errors are shortened: a bug of ours must show where it happened."""
    from attnbench import cli

    def main(argv):
        raise ZeroDivisionError("a bug")

    with pytest.raises(ZeroDivisionError):
        cli.run(main, [])
