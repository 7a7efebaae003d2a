"""The product's third promise: a mechanism in the user's own file, outside the package, gets
the paper tables (`--import FILE --attn NAME` on scripts.reproduce and scripts.tables)."""

import os
import pathlib
import subprocess
import sys

import numpy as np

from tests.conftest import ROOT


def _readme_example() -> str:
    """The README's worked example (the python block after "For example, `~/mine.py`:"), so
    that what the README shows is what this test runs."""
    text = (pathlib.Path(ROOT) / "README.md").read_text(encoding="utf-8")
    start = text.index("For example, `~/mine.py`:")
    block = text.index("```python\n", start) + len("```python\n")
    return text[block : text.index("```", block)]


# The README's worked example, written where a user would keep it: outside the repository.
MINE = _readme_example()


def _run(*args):
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    out = subprocess.run(
        [sys.executable, "-m", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    return out.stdout


def test_own_mechanism_from_a_file_gets_a_table_column(tmp_path):
    mine = tmp_path / "elsewhere" / "mine.py"
    mine.parent.mkdir()
    mine.write_text(MINE)
    assert not mine.resolve().is_relative_to(pathlib.Path(ROOT).resolve())
    runs, out = tmp_path / "runs", tmp_path / "tables"
    common = ["--import", str(mine), "--attn", "mine"]
    log = _run(
        "scripts.reproduce",
        "samsa.table1",
        *common,
        "--preset",
        "smoke",
        "--cells",
        "listops",
        "--runs",
        str(runs),
    )
    # the seven ListOps columns differ only in SAMSA's own k and sampler: one shared run
    assert "1 distinct configs x 1 seed(s), 0 finished, 1 to run" in log
    summaries = list(runs.glob("attn/mine/smoke/*/seed0/summary.json"))
    assert len(summaries) == 1
    assert '"name": "mine"' in summaries[0].read_text()
    _run(
        "scripts.tables",
        *common,
        "--tables",
        "samsa.table1",
        "--runs",
        str(runs),
        "--out",
        str(out),
        "--no-plots",
    )
    md = (out / "samsa_table1.md").read_text()
    listops = next(line for line in md.splitlines() if line.startswith("| ListOps |"))
    assert listops.count("· mine: ") == 7
    assert "· mine" not in next(ln for ln in md.splitlines() if ln.startswith("| Image |"))
    # run again: nothing left to do
    assert "1 finished, 0 to run" in _run(
        "scripts.reproduce",
        "samsa.table1",
        *common,
        "--preset",
        "smoke",
        "--cells",
        "listops",
        "--runs",
        str(runs),
    )


def test_the_example_is_what_it_says_and_its_hyper_parameter_matters(monkeypatch):
    """The example against a float64 softmax reference with masks, and its `temperature`
    changes the output (a hyper-parameter that cancels out would rerun a suite with identical
    numbers)."""
    import attention

    registered = {}
    monkeypatch.setattr(attention, "register", lambda name, **kw: registered.update(kw))
    namespace: dict = {}
    exec(compile(MINE, "mine.py", "exec"), namespace)  # the user's file, imported
    apply = registered["apply"]
    assert registered["defaults"] == {"temperature": 1.0}
    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=(2, 5, 3, 4)) for _ in range(3))
    mask = np.ones((2, 5), bool)
    mask[1, 3:] = False

    def reference(t):
        s = np.einsum("bnhd,bmhd->bhnm", q, k) / (t * 2.0)
        s = np.where(mask[:, None, None, :], s, -np.inf)
        w = np.exp(s - s.max(-1, keepdims=True))
        return np.einsum("bhnm,bmhd->bnhd", w / w.sum(-1, keepdims=True), v)

    for t in (1.0, 2.0):
        got = apply(None, *(x.astype(np.float32) for x in (q, k, v)), mask=mask, temperature=t)
        np.testing.assert_allclose(np.asarray(got), reference(t), rtol=1e-4, atol=1e-5)
    assert np.abs(reference(1.0) - reference(2.0)).max() > 1e-2
