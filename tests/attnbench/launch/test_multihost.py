"""Several JAX processes train the run one process trains (`attnbench.launch.multihost`, issue 20).

Fast: the launcher with trivial child commands (environment, a killed or failing process named
in one line, the others stopped), the joining checks, the data path's per-process slices, and
an error in one trainer process only (~4 s). Slow (`make test-slow`): the ListOps smoke run as
2 processes x 2 devices against 1 x 4 (losses, parameters, metrics, evaluation counts, one
writer), and a process killed mid-run and the restart.
"""

import json
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import jax
import numpy as np
import orbax.checkpoint as ocp
import pytest

from attnbench import cli, errors
from attnbench.data import pipeline
from attnbench.launch import multihost
from scripts import launch_local
from tests.conftest import ROOT

# ---- the launcher, with trivial children ---------------------------------------------------


def _child(tmp_path, body: str) -> list[str]:
    """A python child that knows its process id as `i` and writes into `out`."""
    script = tmp_path / "child.py"
    script.write_text(
        "import os, pathlib, signal, sys, time\n"
        f"i = int(os.environ.get({multihost.PROCESS_ID_ENV!r}, '0'))\n"
        f"out = pathlib.Path({str(tmp_path)!r})\n"
        "(out / f'pid{i}').write_text(str(os.getpid()))\n" + textwrap.dedent(body)
    )
    return [sys.executable, str(script)]


def _run(cmd, tmp_path, processes=2, **kw):
    t0 = time.monotonic()
    code = multihost.run_local(cmd, processes=processes, log_dir=tmp_path / "logs", **kw)
    return code, time.monotonic() - t0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_launcher_gives_each_process_its_id_the_coordinator_and_cpu_devices(tmp_path):
    names = [
        multihost.COORDINATOR_ENV,
        multihost.NUM_PROCESSES_ENV,
        multihost.PROCESS_ID_ENV,
        "JAX_PLATFORMS",
        "JAX_NUM_CPU_DEVICES",
        "JAX_CPU_COLLECTIVES_IMPLEMENTATION",
    ]
    cmd = _child(
        tmp_path,
        f"(out / f'env{{i}}').write_text(repr([os.environ.get(n) for n in {names!r}]))\n"
        "print('from', i)\n",
    )
    code, _ = _run(cmd, tmp_path, processes=3, devices_per_process=2)
    assert code == 0
    envs = [eval((tmp_path / f"env{i}").read_text()) for i in range(3)]
    assert [e[2] for e in envs] == ["0", "1", "2"]
    assert {e[1] for e in envs} == {"3"} and {tuple(e[3:]) for e in envs} == {("cpu", "2", "gloo")}
    host, port = envs[0][0].rsplit(":", 1)
    assert host == "127.0.0.1" and 0 < int(port) < 65536 and {e[0] for e in envs} == {envs[0][0]}
    # processes 1 and 2 speak in their logs (after a line naming the start), process 0 on the
    # launcher's output
    for i in (1, 2):
        header, said = (tmp_path / "logs" / f"process{i}.log").read_text().splitlines()
        assert header.startswith("==== ") and f"process {i} of 3: " in header
        assert said == f"from {i}"
    assert not (tmp_path / "logs" / "process0.log").exists()


def test_one_process_is_a_plain_run_whatever_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(multihost.NUM_PROCESSES_ENV, "7")
    cmd = _child(tmp_path, f"assert {multihost.NUM_PROCESSES_ENV!r} not in os.environ\n")
    assert _run(cmd, tmp_path, processes=1, devices_per_process=4)[0] == 0


def test_a_killed_process_is_named_and_the_others_are_stopped_at_once(tmp_path, capfd):
    cmd = _child(
        tmp_path,
        """
        if i == 1:  # once every peer has started (on a loaded machine that takes a while)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not all(
                (out / f"pid{k}").exists() for k in (0, 2)
            ):
                time.sleep(0.05)
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(120)  # a peer waiting in a collective that never completes
        """,
    )
    code, took = _run(cmd, tmp_path, processes=3, hint="run it again")
    assert code == 1 and took < 60
    err = capfd.readouterr().err.strip().splitlines()
    assert err == [
        "error: process 1 of 3 was killed by SIGKILL; stopped the other 2 processes; run it "
        f"again (process 1's output: {tmp_path / 'logs' / 'process1.log'})"
    ]
    for i in (0, 2):
        assert not _alive(int((tmp_path / f"pid{i}").read_text()))


def test_a_user_error_in_one_process_is_its_one_line(tmp_path, capfd):
    cmd = _child(
        tmp_path,
        """
        if i == 1:
            print("error: config.x=3 is not a multiple of 2", file=sys.stderr)
            sys.exit(2)
        time.sleep(120)
        """,
    )
    code, took = _run(cmd, tmp_path, hint="run it again")
    assert code == 2 and took < 10
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "error: process 1 of 2 exited with status 2: config.x=3 is not a multiple of 2; stopped "
        "the other process (process 1's output: "
    )  # no resume hint for a user error


def test_process_0_speaks_its_own_user_error_and_a_crash_is_named_by_its_last_line(tmp_path, capfd):
    first = _child(
        tmp_path, "time.sleep(120 * i); print('error: bad', file=sys.stderr); sys.exit(2)\n"
    )
    assert _run(first, tmp_path)[0] == 2
    assert capfd.readouterr().err.strip().splitlines() == ["error: bad"]  # process 0's own
    crash = _child(tmp_path, "time.sleep(120 * (i == 0)); raise RuntimeError('gloo: peer gone')\n")
    assert _run(crash, tmp_path)[0] == 1
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "process 1 of 2 exited with status 1: RuntimeError: gloo" in err[0]


def test_launch_local_cli_errors_are_one_line(tmp_path, capsys):
    def run(*argv):
        with pytest.raises(SystemExit) as e:
            sys.exit(cli.run(launch_local.main, list(argv)))
        return e.value.code, capsys.readouterr().err.strip().splitlines()

    code, err = run("--processes", "0", "--", "true")
    assert code == 2 and len(err) == 1 and "0 is not a positive integer" in err[0]
    code, err = run("--processes", "2")
    assert code == 2 and len(err) == 1 and "command" in err[0]
    code, err = run("--processes", "2", "--log-dir", str(tmp_path), "--", "/no/such/program")
    assert code == 2 and err == ["error: cannot run '/no/such/program': No such file or directory"]
    code, err = run("--processes", "2", "--log-dir", str(tmp_path), "--", *_child(tmp_path, ""))
    assert code == 0 and err == []


def test_joining_needs_the_process_id_and_the_coordinator(monkeypatch):
    monkeypatch.delenv(multihost.COORDINATOR_ENV, raising=False)
    monkeypatch.delenv(multihost.PROCESS_ID_ENV, raising=False)
    monkeypatch.setenv(multihost.NUM_PROCESSES_ENV, "two")
    with pytest.raises(errors.ConfigError, match=r"\$ATTNBENCH_NUM_PROCESSES='two' is not an int"):
        multihost.initialize()
    monkeypatch.setenv(multihost.NUM_PROCESSES_ENV, "2")
    with pytest.raises(errors.ConfigError, match=r"\$ATTNBENCH_PROCESS_ID is not"):
        multihost.initialize()
    monkeypatch.setenv(multihost.PROCESS_ID_ENV, "0")
    with pytest.raises(errors.ConfigError, match=r"\$JAX_COORDINATOR_ADDRESS .* is not"):
        multihost.initialize()
    monkeypatch.setenv(multihost.COORDINATOR_ENV, "127.0.0.1:1")
    monkeypatch.setenv(multihost.PROCESS_ID_ENV, "2")
    with pytest.raises(errors.ConfigError, match=r"=2 is out of range \(at least 0 and below 2"):
        multihost.initialize()
    assert not jax.distributed.is_initialized()


# ---- the data path: each process's rows of the global batch --------------------------------


class _Ragged:
    """Examples 0..n-1 with `n % 7 + 1` tokens each, so a batch's bucket depends on which rows
    it holds."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"id": np.int32(i), "tokens": np.full(i % 7 + 1, i + 1, np.int32)}


def _bucketed(examples):
    length = pipeline.pad_to_bucket(max(len(e["tokens"]) for e in examples), (2, 4, 8))
    tokens = np.zeros((len(examples), length), np.int32)
    for row, e in enumerate(examples):
        tokens[row, : len(e["tokens"])] = e["tokens"]
    return {"id": np.array([e["id"] for e in examples]), "tokens": tokens}


def test_process_slices_are_the_rows_of_the_one_process_batch_shapes_included():
    def train(i, n):
        return pipeline.train_iterator(
            _Ragged(40),
            batch_size=8,
            seed=1,
            process_index=i,
            process_count=n,
            collate=_bucketed,
            transform=lambda e, rng: {**e, "tokens": rng.permutation(e["tokens"])},
            prefetch=0,
        )

    def evals(i, n):
        return list(
            pipeline.eval_batches(
                _Ragged(27), batch_size=8, process_index=i, process_count=n, collate=_bucketed
            )
        )

    whole, parts = train(0, 1), [train(i, 2) for i in range(2)]
    for _ in range(10):
        w, a, b = next(whole), next(parts[0]), next(parts[1])
        for k in w:  # the bucket is the global batch's: every process gets the same shapes
            np.testing.assert_array_equal(np.concatenate([a[k], b[k]]), w[k])
    for w, a, b in zip(evals(0, 1), evals(0, 2), evals(1, 2), strict=True):
        for k in w:
            np.testing.assert_array_equal(np.concatenate([a[k], b[k]]), w[k])
    # every evaluation example exactly once over the processes, padding with weight 0
    for n in (1, 2, 4):
        batches = [b for i in range(n) for b in evals(i, n)]
        ids = np.concatenate([b["id"][b["weight"] > 0] for b in batches])
        assert sorted(ids.tolist()) == list(range(27))
    with pytest.raises(ValueError, match="batch_size 8 is not divisible by 3 processes"):
        evals(0, 3)


# ---- checkpoints written by several processes, asynchronously ---------------------------------

CHECKPOINTS_CHILD = """
import json, pathlib, sys
from attnbench.launch import multihost
multihost.initialize()
import jax, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from attnbench import checkpoint

out, steps = pathlib.Path(sys.argv[1]), int(sys.argv[2])
mesh = Mesh(np.array(jax.devices()), ("d",))
local = np.full((8,), jax.process_index(), np.float32)
x = jax.make_array_from_process_local_data(NamedSharding(mesh, P("d")), local)
ckpts = checkpoint.Checkpoints(out, keep=2)  # the trainer's default: asynchronous saves
meta = {"best_step": None, "val_history": []}
for s in range(1, steps + 1):
    state = {
        "params": {"w": jax.jit(lambda a: a + s)(x)},
        "step": jax.device_put(np.int32(s), NamedSharding(mesh, P())),
    }
    meta["best_step"] = s
    meta["val_history"].append({"step": s})
    ckpts.save(s, state, {"next_index": s}, meta, best=True)  # best and latest, same step
ckpts.wait()
restored = ckpts.restore_latest(checkpoint.abstract(state))
ckpts.close()
(out / f"meta{jax.process_index()}.json").write_text(json.dumps(restored[2]))
"""


def test_asynchronous_best_and_latest_saves_of_two_processes_complete(tmp_path):
    """Every evaluation that improves saves the best params and the latest state of one step,
    both in the background. With the barrier names orbax derives from the step directory
    shared by the two writers, two processes met at the other writer's barrier ("Barrier
    ... is already ongoing", or a step finalised with one process's array metadata): this
    sequence failed or hung on every try before each writer got its own prefix."""
    script = tmp_path / "child.py"
    script.write_text(CHECKPOINTS_CHILD)
    out = tmp_path / "checkpoints"
    cmd = [sys.executable, "-m", "scripts.launch_local", "--processes=2"]
    cmd += [f"--log-dir={tmp_path / 'logs'}", "--", sys.executable, str(script), str(out), "12"]
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:  # a barrier mismatch can hang until orbax's timeout: the test stops it first
        _, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail("two processes saving asynchronously hung (barrier mismatch)")
    assert proc.returncode == 0, err[-3000:]
    for i in (0, 1):
        meta = json.loads((out / f"meta{i}.json").read_text())
        assert meta["best_step"] == 12 and len(meta["val_history"]) == 12
    assert sorted(int(p.name) for p in (out / "latest").iterdir() if p.name.isdigit()) == [11, 12]
    assert [p.name for p in (out / "best").iterdir() if p.name.isdigit()] == ["12"]


# ---- the trainer as several processes (slow) -----------------------------------------------

SMOKE = "lra/listops.py:preset=smoke"
# Eval batches of 32: validation 50 = 32 + 18 (process 1 gets 2 examples and 14 padding rows),
# test 40 = 32 + 8 (process 1's rows of the last batch are all padding).
OVERRIDES = ("--config.data.num_val=50", "--config.data.num_test=40")


def _train(workdir, processes, devices, *extra, env=None):
    cmd = [sys.executable, "-m", "scripts.train", f"--config={SMOKE}", f"--workdir={workdir}"]
    cmd += [*OVERRIDES, *extra, f"--processes={processes}", f"--devices-per-process={devices}"]
    env = dict(os.environ, **(env or {}))
    t0 = time.monotonic()
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=400)
    out.seconds = time.monotonic() - t0
    return out


def _records(workdir):
    lines = pathlib.Path(workdir, "metrics.jsonl").read_text().splitlines()
    return [json.loads(ln) for ln in lines]


def _params(workdir, step=12):
    """The checkpoint's params as numpy, whatever devices wrote them."""
    path = pathlib.Path(workdir, "checkpoints", "latest", str(step), "state").absolute()
    ckptr = ocp.PyTreeCheckpointer()
    tree = ckptr.metadata(path).item_metadata.tree
    args = jax.tree.map(lambda _: ocp.RestoreArgs(restore_type=np.ndarray), tree)
    return ckptr.restore(path, args=ocp.args.PyTreeRestore(restore_args=args))["params"]


def _leaves(tree):
    return jax.tree.leaves(tree)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The same run as 1 process x 4 devices and as 2 processes x 2 devices."""
    root = tmp_path_factory.mktemp("multihost")
    one, two = root / "1x4", root / "2x2"
    a = _train(one, 1, 4)
    assert a.returncode == 0, a.stderr[-3000:]
    b = _train(two, 2, 2)
    assert b.returncode == 0, b.stderr[-3000:]
    print(f"1x4 {a.seconds:.0f}s, 2x2 {b.seconds:.0f}s")
    return one, two, b


@pytest.mark.slow  # ~50 s on 2 cores (both runs)
def test_two_processes_of_two_devices_train_the_one_process_run(runs):
    one, two, out = runs
    r1, r2 = _records(one), _records(two)
    # one metrics log: each record once, from process 0
    assert [(r["step"], r["split"]) for r in r2] == [(r["step"], r["split"]) for r in r1]
    assert len({(r["step"], r["split"]) for r in r2}) == len(r2) == 9
    for a, b in zip(r1, r2, strict=True):
        for k, v in a.items():
            if k in ("steps_per_s", "examples_per_s") or not isinstance(v, float):
                continue
            np.testing.assert_allclose(b[k], v, rtol=1e-5, err_msg=f"step {a['step']} {k}")
    for x, y in zip(_leaves(_params(one)), _leaves(_params(two)), strict=True):
        np.testing.assert_allclose(y, x, rtol=1e-5, atol=1e-6)
    s1, s2 = (json.loads((w / "summary.json").read_text()) for w in (one, two))
    assert s1["best_step"] == s2["best_step"]
    for split, m in s1["metrics"].items():
        for k, v in m.items():
            np.testing.assert_allclose(s2["metrics"][split][k], v, rtol=1e-5, err_msg=k)
    # every evaluation example counted once across the processes, padding not at all
    assert [r["num_examples"] for r in r2 if r["split"] == "val"] == [50, 50, 50]
    for split, n in (("val_last", 50), ("val_best", 50), ("test_last", 40), ("test_best", 40)):
        assert s2["metrics"][split]["num_examples"] == n
    assert s2["device"]["count"] == 4 and s2["device"]["process_count"] == 2
    assert s1["device"]["count"] == 4 and s1["device"]["process_count"] == 1
    # logs from process 0 only: the summary on the launcher's output, none in process 1's log
    assert out.stdout.count("summary (lra.listops") == 1
    log1 = (two / "logs" / "process1.log").read_text()
    assert "step 2/12" not in log1 and "summary" not in log1
    # the checkpoint layout of a one-process run, no half-written step left behind
    for kind in ("latest", "best"):
        names = {p.name for p in (two / "checkpoints" / kind).iterdir()}
        assert names == {p.name for p in (one / "checkpoints" / kind).iterdir()}, kind


@pytest.mark.slow  # ~50 s on 2 cores
def test_a_killed_process_stops_the_run_and_the_restart_ends_identical(runs, tmp_path):
    _, two, _ = runs
    w = tmp_path / "killed"
    env = {"ATTNBENCH_KILL_AT_STEP": "6", "ATTNBENCH_KILL_PROCESS": "1"}
    killed = _train(w, 2, 2, env=env)
    assert killed.returncode == 1, killed.stderr[-3000:]
    last = killed.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "error: process 1 of 2 was killed by SIGKILL; stopped the other process; the same "
        "command resumes from the last checkpoint"
    )
    assert "step 6/12" in killed.stdout and "step 8/12" not in killed.stdout
    assert not (w / "summary.json").exists()
    done = _train(w, 2, 2)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "resumed from step 4" in done.stdout
    for x, y in zip(_leaves(_params(two)), _leaves(_params(w)), strict=True):
        np.testing.assert_array_equal(y, x)
    strip = lambda rs: [{k: v for k, v in r.items() if not k.endswith("_per_s")} for r in rs]
    assert strip(_records(w)) == strip(_records(two))
    s, t = (json.loads((d / "summary.json").read_text()) for d in (two, w))
    assert s["metrics"] == t["metrics"] and s["best_step"] == t["best_step"]


@pytest.mark.slow  # ~20 s each on 2 cores
@pytest.mark.parametrize("attempt", range(8))
def test_two_process_runs_with_the_default_asynchronous_checkpoints_finish(tmp_path, attempt):
    """Uninterrupted 2 x 1 runs with the default settings failed about one time in three
    before the checkpoint writers' barriers had their own names: eight runs catch that rate
    with probability 1 - (2/3)^8 = 96%."""
    out = _train(tmp_path / "w", 2, 1)
    assert out.returncode == 0, out.stderr[-3000:]
    summary = json.loads((tmp_path / "w" / "summary.json").read_text())
    assert summary["device"]["process_count"] == 2 and summary["steps"] == 12


def test_an_error_in_one_process_only_stops_the_run_in_one_line(tmp_path):
    """Process 1's workdir lock is held by someone else: it fails alone, exits at once (not at
    jax's shutdown barrier, which process 0, training, would never reach) and is named."""
    import fcntl

    w = tmp_path / "w"
    w.mkdir()
    with open(w / ".lock.process1", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        out = _train(w, 2, 1)
    assert out.returncode == 2 and out.seconds < 60, out.stderr[-3000:]
    err = out.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: process 1 of 2 exited with status 2: ")
    assert "is in use by" in err[0]
