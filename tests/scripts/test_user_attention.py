"""The product's third promise: a mechanism in the user's own file, outside the package, gets
the paper tables (`--import FILE --attn NAME` on scripts.reproduce and scripts.tables)."""

import os
import pathlib
import subprocess
import sys

from tests.conftest import ROOT

# The README's worked example, written where a user would keep it: outside the repository.
MINE = '''
import jax.numpy as jnp

import attention


def apply(params, q, k, v, *, mask=None, key=None, train=False, temperature=1.0):
    """Every query gets the mean of the values it may attend to."""
    del params, key, train
    b, n, h, _ = q.shape
    allowed = jnp.ones((b, 1, 1, v.shape[1]), bool) if mask is None else mask
    if allowed.ndim == 2:
        allowed = allowed[:, None, None, :]
    w = jnp.broadcast_to(allowed, (b, h, n, v.shape[1])).astype(v.dtype) / temperature
    w = w / jnp.maximum(w.sum(-1, keepdims=True), 1e-9)
    return jnp.einsum("bhnm,bmhd->bnhd", w, v)


attention.register("mine", apply=apply, defaults={"temperature": 1.0}, doc="mean of values")
'''


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


def test_the_readme_shows_this_example():
    readme = (pathlib.Path(ROOT) / "README.md").read_text()
    assert MINE.strip() in readme
