"""Atomic file writes and run metadata (versions, git revision, devices)."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import tempfile
from importlib import metadata

__all__ = ["write_json", "write_text", "versions", "git_revision", "device_info"]


def write_text(path, text: str) -> None:
    """Writes `text` to `path` atomically (temp file in the same directory, then rename)."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        pathlib.Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path, obj) -> None:
    write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=_jsonable) + "\n")


def _jsonable(x):
    if hasattr(x, "tolist"):
        return x.tolist()
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


def versions() -> dict[str, str]:
    out = {}
    for pkg in (
        "jax",
        "jaxlib",
        "flax",
        "optax",
        "orbax-checkpoint",
        "grain",
        "numpy",
        "ml-collections",
    ):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    import platform

    out["python"] = platform.python_version()
    return out


def git_revision() -> str:
    """The repository's HEAD (with `-dirty` when the tree has changes), or "unknown"."""
    root = pathlib.Path(__file__).resolve().parents[1]
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout
        return rev + ("-dirty" if dirty.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def device_info() -> dict:
    import jax

    devices = jax.devices()
    return {
        "platform": devices[0].platform,
        "kind": devices[0].device_kind,
        "count": len(devices),
        "process_count": jax.process_count(),
        "cpu_count": os.cpu_count(),
    }
