"""A user's mechanism that breaks the attention contract, through `--import` as a user loads it:
one `error:` line naming it and exit status 2, before the run writes anything (no traceback from
deep in the model, no run that silently trains on a broadcast output). In-process details (jit,
grad, dtypes, the same module imported twice): tests/attention/test_registry.py."""

import os
import subprocess
import sys

from tests.conftest import ROOT

PLUGIN = """
import attention


def one_token(params, q, k, v, *, mask=None, key=None, train=False):
    return v[:, :1]  # [B, 1, H, D] instead of [B, N, H, D]: broadcasts over every token


def softmax(params, q, k, v, *, mask=None, key=None, train=False):
    return v


attention.register("one_token", apply=one_token)
"""


def _train(tmp_path, plugin: str, attn: str | None = None, env=None):
    path = tmp_path / "elsewhere" / "mine.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text(plugin)
    config = "lra/listops.py:preset=smoke" + (f",attn={attn}" if attn else "")
    args = ["--import", str(path), f"--config={config}", f"--workdir={tmp_path / 'w'}"]
    args += ["--config.total_steps=1", "--config.eval_every=1"]
    return subprocess.run(
        [sys.executable, "-m", "scripts.train", *args],
        cwd=ROOT,
        env=dict(os.environ, JAX_PLATFORMS="cpu", **(env or {})),
        capture_output=True,
        text=True,
        timeout=300,
    ), path


def _one_error_line(out) -> str:
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert out.returncode == 2 and len(lines) == 1, out.stderr[-3000:]
    assert lines[0].startswith("error: ")
    return lines[0]


def test_a_mechanism_returning_the_wrong_shape_stops_the_run_at_its_start(tmp_path):
    out, _ = _train(tmp_path, PLUGIN, attn="one_token")
    line = _one_error_line(out)
    assert line.startswith("error: attention 'one_token' returned shape (1, 1, 4, 8), expected ")
    assert line.endswith(" [batch, queries, heads, head_dim]; fix its apply")
    assert not (tmp_path / "w" / "config.json").exists()  # corrected, the same command runs


def test_a_plugin_taking_a_builtin_name_is_one_line_naming_both(tmp_path):
    plugin = PLUGIN + '\nattention.register("softmax", apply=softmax)\n'
    # the same file named twice (here and in $ATTNBENCH_IMPORT) registers its "one_token" once:
    # the one error is the taken name
    twice = {"ATTNBENCH_IMPORT": str(tmp_path / "elsewhere" / "mine.py")}
    out, path = _train(tmp_path, plugin, env=twice)
    line = _one_error_line(out)
    assert line.startswith("error: attention 'softmax' is already registered by module ")
    assert "attention.softmax" in line and "register yours under another name" in line
    assert not (tmp_path / "w").exists()


BAD_REGISTRATION = """
import attention


def mine(params, q, k, v, *, mask=None, key=None, train=False):
    return v


attention.register("mine_bad", apply=mine, defaults={"temperature": 2.0})
"""


def test_a_registration_whose_arguments_contradict_is_one_line(tmp_path):
    out, _ = _train(tmp_path, BAD_REGISTRATION)
    line = _one_error_line(out)
    assert line == (
        "error: attention.register('mine_bad'): defaults ['temperature'] are accepted by "
        "neither its apply nor its init; add them to one of their keyword arguments or drop them"
    )
