"""One process per run directory: an advisory lock (`flock`) on `<workdir>/.lock`.

The kernel releases the lock when its holder exits, however it exits (SIGKILL included), so a
killed run never leaves a stale lock. While it is held, the file names the holder (pid, host,
start time, command), and a second process on the same workdir stops with a `WorkdirError`
naming it. With several JAX processes (multi-host) each takes its own file (`.lock.process<i>`),
so a shared file system never makes them exclude each other.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os
import pathlib
import socket
import sys

from attnbench import errors

__all__ = ["hold", "lock_path"]


def lock_path(workdir, process_index: int = 0) -> pathlib.Path:
    name = ".lock" if process_index == 0 else f".lock.process{process_index}"
    return pathlib.Path(workdir) / name


def _holder(path: pathlib.Path) -> str:
    try:
        info = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        return "another process"
    when = info.get("since", "?")
    return (
        f"process {info.get('pid', '?')} on {info.get('host', '?')} since {when} "
        f"({info.get('command', '?')})"
    )


@contextlib.contextmanager
def hold(workdir, *, process_index: int = 0):
    """Holds the workdir's lock for the `with` block; a held lock is a `WorkdirError`."""
    path = lock_path(workdir, process_index)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise errors.WorkdirError(
                f"{pathlib.Path(workdir)} is in use by {_holder(path)}; wait for it to finish or "
                "stop it, or use another --workdir"
            ) from None
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": datetime.datetime.now().isoformat(timespec="seconds"),
            "command": " ".join([pathlib.Path(sys.argv[0]).name, *sys.argv[1:]])[:300],
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
        try:
            yield path
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
