"""Several JAX processes: joining them into one run (`initialize`, called by the trainer), and
starting them on one machine (`run_local`) to rehearse a multi-host run before paying for one.

A multi-host run is N copies of the same command, one per host (or per process), that find each
other through a coordinator (process 0's address and a port). `jax.distributed.initialize`
detects SLURM, Open MPI, Kubernetes and Cloud TPU by itself; anywhere else (a plain list of
hosts, or `run_local`) each process is told, in its environment:

    JAX_COORDINATOR_ADDRESS=host0:port   read by jax itself
    ATTNBENCH_NUM_PROCESSES=N            read here: jax has no environment variable for these two
    ATTNBENCH_PROCESS_ID=i               (0 <= i < N; process 0 runs the coordinator)

`run_local` starts N processes of a command on this machine, each a CPU backend with
`devices_per_process` devices, joined by gloo collectives through a coordinator on a free
loopback port. Process 0's output is the launcher's; the others' goes to
`<log_dir>/process<i>.log`. When one process ends with an error or is killed, the launcher kills
the others at once (a survivor would otherwise wait in a collective until jax's heartbeat
timeout, 100 s, then abort with a page of C++ log) and says in one line which process ended
and how. `exit_with` is the other half, in each process: one that fails exits at once instead of
waiting at jax's shutdown barrier for peers that are still training.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
import traceback
from collections.abc import Sequence
from typing import NoReturn

from attnbench import cli, errors
from attnbench.launch import jobs

__all__ = [
    "NUM_PROCESSES_ENV",
    "PROCESS_ID_ENV",
    "COORDINATOR_ENV",
    "requested",
    "initialize",
    "free_port",
    "run_local",
    "exit_with",
]

COORDINATOR_ENV = "JAX_COORDINATOR_ADDRESS"  # jax's own
NUM_PROCESSES_ENV = "ATTNBENCH_NUM_PROCESSES"
PROCESS_ID_ENV = "ATTNBENCH_PROCESS_ID"

EXIT_FAILED = 1  # a process crashed or was killed (not a user error)


def requested() -> bool:
    """Whether this process was started as one of several (`ATTNBENCH_NUM_PROCESSES` is set)."""
    return bool(os.environ.get(NUM_PROCESSES_ENV, "").strip())


def _env_int(name: str, lowest: int, below: int | None = None) -> int:
    text = os.environ.get(name, "").strip()
    try:
        value = int(text)
    except ValueError:
        raise errors.ConfigError(f"${name}={text!r} is not an integer") from None
    if value < lowest or (below is not None and value >= below):
        bound = f" and below {below}" if below is not None else ""
        raise errors.ConfigError(f"${name}={value} is out of range (at least {lowest}{bound})")
    return value


def initialize() -> None:
    """`jax.distributed.initialize`, before anything creates a jax backend: with the process
    count and id from `ATTNBENCH_NUM_PROCESSES` / `ATTNBENCH_PROCESS_ID` where they are set
    (the coordinator from `JAX_COORDINATOR_ADDRESS`), else what jax detects (SLURM, TPU...)."""
    import jax

    if not requested():
        try:
            jax.distributed.initialize()
        except ValueError as e:  # jax found no cluster: it names the first argument missing
            raise errors.ConfigError(
                f"config.multihost=True but jax detected no cluster to join ({e}); it detects "
                f"SLURM, Open MPI, Kubernetes and Cloud TPU, elsewhere set ${COORDINATOR_ENV}, "
                f"${NUM_PROCESSES_ENV} and ${PROCESS_ID_ENV} in each process (README: Multi-host)"
            ) from None
        return
    n = _env_int(NUM_PROCESSES_ENV, 1)
    if PROCESS_ID_ENV not in os.environ:
        raise errors.ConfigError(f"${NUM_PROCESSES_ENV} is set but ${PROCESS_ID_ENV} is not")
    if not os.environ.get(COORDINATOR_ENV, "").strip():
        raise errors.ConfigError(
            f"${NUM_PROCESSES_ENV} is set but ${COORDINATOR_ENV} (host:port of process 0) is not"
        )
    jax.distributed.initialize(num_processes=n, process_id=_env_int(PROCESS_ID_ENV, 0, n))


def free_port() -> int:
    """A TCP port on the loopback interface that is free now (the OS's pick). Another program
    could take it before process 0's coordinator binds it: that start then fails with jax's
    bind error, and the next start picks another port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _child_env(process_id: int, processes: int, devices: int, port: int) -> dict:
    env = dict(
        os.environ,
        JAX_PLATFORMS="cpu",
        # Takes precedence over --xla_force_host_platform_device_count in the caller's XLA_FLAGS.
        JAX_NUM_CPU_DEVICES=str(devices),
        **{jobs.PARENT_ENV: str(os.getpid())},  # scripts.train's watchdog: die with the launcher
    )
    for name in (NUM_PROCESSES_ENV, PROCESS_ID_ENV, COORDINATOR_ENV):
        env.pop(name, None)  # one process: a plain run, whatever the caller's environment says
    if processes > 1:
        address = f"127.0.0.1:{port}"
        env.update(
            {
                COORDINATOR_ENV: address,
                NUM_PROCESSES_ENV: str(processes),
                PROCESS_ID_ENV: str(process_id),
                # The coordinator listens on loopback only (jax's default: every interface).
                "JAX_COORDINATOR_BIND_ADDRESS": address,
                # jax's default on CPU; named so that a jax where it is not fails, never hangs.
                "JAX_CPU_COLLECTIVES_IMPLEMENTATION": "gloo",
            }
        )
    return env


def exit_with(main) -> NoReturn:
    """`sys.exit(main())`, except that a process of a multi-process run that fails (an error
    status or an uncaught exception, its traceback printed) exits at once: jax's exit handler
    would wait, up to its shutdown timeout (300 s), at a barrier that peers still training never
    reach, while they wait for this process in a collective. Its peers then stop too: the
    launcher stops them, or jax's heartbeat timeout (100 s) aborts them."""
    try:
        code = main()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        if not _distributed():
            raise
        traceback.print_exc()
        code = EXIT_FAILED
    if code and _distributed():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def _distributed() -> bool:
    jax = sys.modules.get("jax")  # never imported: never initialized
    return jax is not None and jax.distributed.is_initialized()


def _describe(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


def _last_line(path: pathlib.Path, offset: int) -> str:
    """The last `error: ...` line written to the log from `offset` on (this run's part), else
    its last non-empty line (a traceback's last)."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            lines = [ln.strip() for ln in f.read().decode(errors="replace").splitlines()]
    except OSError:
        return ""
    lines = [ln for ln in lines if ln]
    found = next((ln[len("error: ") :] for ln in reversed(lines) if ln.startswith("error: ")), "")
    return (found or (lines[-1] if lines else ""))[:300]


def run_local(
    cmd: Sequence[str],
    *,
    processes: int,
    devices_per_process: int = 1,
    log_dir,
    hint: str = "",
    poll_s: float = 0.1,
) -> int:
    """Runs `processes` copies of `cmd` on this machine as one multi-process jax job; returns 0
    when every process succeeds, 2 when the first to fail reported a user error (status 2),
    else 1, with one line on stderr naming the process that ended first and how (`hint`, what
    to do next, appended unless it was a user error); Ctrl-C raises KeyboardInterrupt. The
    others are then killed (`_kill`)."""
    log_dir = pathlib.Path(log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    procs: list[subprocess.Popen] = []
    logs: dict[int, tuple[pathlib.Path, int]] = {}  # process -> (log, where this run's part starts)

    def on_sigterm(signum, _frame):
        raise SystemExit(128 + signum)  # unwinds through `finally`: the children are stopped

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        for i in range(processes):
            out = None  # process 0 speaks for the run on the launcher's stdout and stderr
            if i:
                path = log_dir / f"process{i}.log"
                out = open(path, "a")  # noqa: SIM115 (the child holds it; closed below)
                started = time.strftime("%Y-%m-%d %H:%M:%S")
                out.write(f"==== {started} process {i} of {processes}: {' '.join(cmd)}\n")
                out.flush()
                logs[i] = (path, out.tell())
            try:
                procs.append(
                    subprocess.Popen(
                        list(cmd),
                        env=_child_env(i, processes, devices_per_process, port),
                        stdout=out,
                        stderr=subprocess.STDOUT if out else None,
                        # Own process group: Ctrl-C reaches the launcher, which stops them all.
                        start_new_session=True,
                        preexec_fn=jobs.kill_with_parent if sys.platform == "linux" else None,
                    )
                )
            except OSError as e:  # no such program, not executable
                raise errors.UserError(f"cannot run {cmd[0]!r}: {e.strerror or e}") from None
            finally:
                if out:
                    out.close()
        while True:
            codes = [p.poll() for p in procs]
            if all(c == 0 for c in codes):
                return 0
            failed = [i for i, c in enumerate(codes) if c not in (None, 0)]
            if failed:
                break
            time.sleep(poll_s)
    finally:
        _kill([p for p in procs if p.poll() is None])
        signal.signal(signal.SIGTERM, previous)
    first = min(failed, key=lambda i: (_cause_rank(codes[i]), i))
    code = codes[first]
    user_error = code == cli.EXIT_USER_ERROR
    if first == 0 and user_error:
        return code  # process 0 printed the one-line user error itself
    why = _describe(code)
    said = _last_line(*logs[first]) if first in logs and code > 0 else ""
    why += f": {said}" if said else ""
    if processes > 1:
        why += "; stopped " + (
            "the other process" if processes == 2 else f"the other {processes - 1} processes"
        )
    tail = f"; {hint}" if hint and not user_error else ""
    tail += f" (process {first}'s output: {logs[first][0]})" if first in logs else ""
    print(
        f"error: process {first} of {processes} {why}{tail}",
        file=sys.stderr,
        flush=True,
    )
    return code if user_error else EXIT_FAILED


def _cause_rank(code: int) -> int:
    """Which of several processes found ended together is named as the cause (lowest first):
    a SIGKILL comes from outside (a user, the OOM killer, a fault injection); a user error is
    never a consequence of another process ending; a crash may be, and an abort (jax's fatal
    "another task died") or other signal usually is."""
    if code == -signal.SIGKILL:
        return 0
    if code == cli.EXIT_USER_ERROR:
        return 1
    return 2 if code > 0 else 3


def _kill(procs: Sequence[subprocess.Popen]) -> None:
    """SIGKILL to each process group, at once: a process whose peer is gone can finish nothing
    (it waits in a collective), a multi-process run resumes from its checkpoints after a kill
    at any point, and SIGTERM would only be caught by jax's preemption notifier."""
    for p in procs:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)
    for p in procs:
        p.wait(timeout=60)  # a SIGKILLed process ends unless stuck in the kernel
