"""Training runs as child processes, a few at a time, that never outlive their parent.

`run(jobs, parallel)` starts each job's command (`python -m scripts.train ...`) with its output
in `<workdir>/reproduce.log`, in its own process group (so Ctrl-C reaches only the parent, which
stops them), with a Linux parent-death signal and `$ATTNBENCH_PARENT_PID` (the trainer's own
watchdog): a parent killed with SIGKILL leaves no orphan behind. SIGINT/SIGTERM cancel the queue
and stop the running jobs; they resume from their last checkpoint when started again. A line
names each job when it starts (with its log) and when it ends (with the sweep's ETA); between
them the running jobs' step, loss and ETA (from their metrics.jsonl) are one line rewritten
every second on a terminal, or a line per job every 30 s in a log (no tqdm: its bars assume
one known total, where each job here reports its own).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

from attnbench import config as config_lib

__all__ = ["Job", "run", "train_command", "kill_with_parent", "PARENT_ENV"]

PARENT_ENV = "ATTNBENCH_PARENT_PID"  # read by scripts.train: exit when this parent is gone


@dataclasses.dataclass(frozen=True)
class Job:
    label: str  # what progress lines call it
    workdir: pathlib.Path
    cmd: tuple[str, ...]


def train_command(spec: str, workdir, *, seed: int = 0, overrides=None, imports=()) -> tuple:
    """`python -m scripts.train` for config `spec` in `workdir`. `seed` is the run's index: 0
    trains with the config's own `config.seed`, N > 0 with `config.seed + N` (a recipe that pins
    its seed, e.g. fairseq's 1, still gets N distinct seeds; index N alone would repeat seed 1
    at N = 1)."""
    overrides = dict(overrides or {})
    cmd = [sys.executable, "-m", "scripts.train", f"--config={spec}", f"--workdir={workdir}"]
    cmd += [f"--import={m}" for m in imports]
    cmd += [f"--config.{k}={v}" for k, v in overrides.items() if k != "seed"]
    if seed or "seed" in overrides:
        own = int(overrides["seed"]) if "seed" in overrides else int(config_lib.load(spec).seed)
        cmd.append(f"--config.seed={own + seed}")
    return tuple(cmd)


def _start(cmd, log) -> subprocess.Popen:
    env = dict(os.environ, **{PARENT_ENV: str(os.getpid())})
    return subprocess.Popen(
        list(cmd),
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
        preexec_fn=kill_with_parent if sys.platform.startswith("linux") else None,
    )


def kill_with_parent() -> None:
    """Asks Linux to SIGKILL this process when its parent dies (`preexec_fn` of a child:
    runs between fork and exec)."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG = 1


def _stop(procs, grace: float = 10.0) -> None:
    """SIGTERM to each process group, then SIGKILL to whatever is left after `grace` s."""
    for p in procs:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for p in procs:
        try:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def _last_error(path: pathlib.Path) -> str:
    """The log's last `error: ...` line (a user error of the trainer), or ''."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return next((ln[7:] for ln in reversed(lines) if ln.startswith("error: ")), "")[:300]


STATUS_EVERY = 30.0  # seconds between the running cells' progress lines


def _progress(workdir: pathlib.Path) -> str:
    """Where a running cell is, from its metrics.jsonl and config.json: "step 150/400, loss
    1.23", or what it is doing before its first record."""
    try:
        total = json.loads((workdir / "config.json").read_text()).get("total_steps")
    except (OSError, ValueError):
        return "building the data and the model"
    last = None
    try:
        with open(workdir / "metrics.jsonl") as f:
            for line in f:
                if '"split": "train"' in line:
                    last = line
    except OSError:
        pass
    if last is None:
        return f"compiling or before its first logged step (of {total})"
    try:
        record = json.loads(last)
    except ValueError:
        return f"of {total} steps"
    loss, step, rate = record.get("loss"), record.get("step"), record.get("steps_per_s")
    text = f"step {step}/{total}"
    if isinstance(loss, (int, float)):
        text += f", loss {loss:.4g}"
    numbers = all(isinstance(x, (int, float)) for x in (step, total, rate))
    if numbers and rate > 0 and total >= step:  # training steps only: evaluations add to it
        text += f", ETA {_duration((total - step) / rate)}"
    return text


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s"


class _Status:
    """Where the running cells are: on a terminal one line rewritten every second; otherwise
    (a log file, CI) a line per running cell every `STATUS_EVERY` seconds."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stdout
        self.live = self.stream.isatty()
        self.every = 1.0 if self.live else STATUS_EVERY
        self.last = time.perf_counter()
        self.shown = False

    def clear(self) -> None:
        """Before a permanent line: the live line is erased."""
        if self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self.shown = False

    def update(self, running: list[Job], done: int, total: int) -> None:
        if not running or time.perf_counter() - self.last < self.every:
            return
        self.last = time.perf_counter()
        if not self.live:
            for job in running:
                print(
                    f"  running {job.label}: {_progress(job.workdir)}", file=self.stream, flush=True
                )
            return
        parts = [f"{job.label}: {_progress(job.workdir)}" for job in running]
        width = shutil.get_terminal_size((120, 20)).columns - 1
        line = f"[{done}/{total} done] " + " | ".join(parts)
        self.stream.write("\r\033[K" + line[:width])
        self.stream.flush()
        self.shown = True


def run(jobs: list[Job], parallel: int = 1) -> int:
    """Runs `jobs`, `parallel` at a time: 0 when all succeed, 1 when any failed, 128 + signal
    number when SIGINT/SIGTERM stopped them."""
    t0 = time.perf_counter()
    failed, finished, started = 0, 0, 0
    status = _Status()
    queue = list(jobs)
    running: dict[subprocess.Popen, tuple[Job, object]] = {}
    stop_signal: list[int] = []
    handlers = {
        sig: signal.signal(sig, lambda signum, _frame: stop_signal.append(signum))
        for sig in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        while (queue or running) and not stop_signal:
            while queue and len(running) < parallel and not stop_signal:
                job = queue.pop(0)
                job.workdir.mkdir(parents=True, exist_ok=True)
                log = open(job.workdir / "reproduce.log", "a")  # noqa: SIM115 (closed when done)
                running[_start(job.cmd, log)] = (job, log)
                started += 1
                status.clear()
                print(
                    f"[start {started}/{len(jobs)}] {job.label} (log: {job.workdir}/reproduce.log)",
                    flush=True,
                )
            status.update([job for job, _ in running.values()], finished, len(jobs))
            for p in [p for p in running if p.poll() is not None]:
                job, log = running.pop(p)
                log.close()
                finished += 1
                elapsed = time.perf_counter() - t0
                eta = elapsed / finished * (len(jobs) - finished)
                if p.returncode:
                    failed += 1
                    why = _last_error(job.workdir / "reproduce.log")
                    outcome = (
                        f"FAILED (exit {p.returncode}{': ' + why if why else ''}; see "
                        f"{job.workdir}/reproduce.log)"
                    )
                else:
                    outcome = "done"
                status.clear()
                print(
                    f"[{finished}/{len(jobs)} {elapsed:.0f}s, ETA {eta:.0f}s] {job.label}: "
                    f"{outcome}",
                    flush=True,
                )
            time.sleep(0.1)
    finally:
        status.clear()
        if running:
            _stop(list(running))
            for _, log in running.values():
                log.close()
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    if stop_signal:
        name = signal.Signals(stop_signal[0]).name
        print(
            f"{name}: stopped {len(running)} running and {len(queue)} queued run(s); the same "
            "command resumes them",
            file=sys.stderr,
            flush=True,
        )
        return 128 + stop_signal[0]
    if failed:
        print(f"{failed} run(s) failed", flush=True)
        return 1
    return 0
