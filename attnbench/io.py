"""Atomic file writes and run metadata (versions, git revision, devices)."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import tempfile
from importlib import metadata

from attnbench import errors

__all__ = [
    "write_json",
    "write_text",
    "read_json",
    "save_figure",
    "versions",
    "git_revision",
    "device_info",
    "provenance",
    "write_record",
    "format_metric",
]


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
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would survive the rename
        os.replace(tmp, path)
    except BaseException:
        pathlib.Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path, obj) -> None:
    write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=_jsonable) + "\n")


def read_json(path, *, what: str = "JSON file"):
    """Parses the JSON file `path`; a missing, unreadable or malformed file is a
    `attnbench.errors.DataError` naming the file (and the line and column of a syntax error)."""
    path = pathlib.Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise errors.DataError(f"{path}: {what} not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise errors.DataError(f"{path}: cannot read {what} ({e})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise errors.DataError(
            f"{path}:{e.lineno}:{e.colno}: malformed {what} ({e.msg}); "
            + ("the file is empty" if not text.strip() else "it may have been cut short")
        ) from None


def save_figure(fig, path, **savefig_kwargs) -> pathlib.Path:
    """Saves a matplotlib figure to `path` atomically (temp file in the same directory, then
    rename), so a reader never sees half a PNG; closes the figure."""
    import matplotlib.pyplot as plt

    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        fig.savefig(tmp, format=path.suffix.lstrip(".") or "png", **savefig_kwargs)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would survive the rename
        os.replace(tmp, path)
    except BaseException:
        pathlib.Path(tmp).unlink(missing_ok=True)
        raise
    finally:
        plt.close(fig)
    return path


def _jsonable(x):
    if hasattr(x, "tolist"):
        return x.tolist()
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


def attnbench_version() -> str:
    """The installed attnbench's version (the package's `__version__` in a plain checkout)."""
    try:
        return metadata.version("attnbench")
    except metadata.PackageNotFoundError:
        import attnbench

        return attnbench.__version__


def versions() -> dict[str, str]:
    out = {"attnbench": attnbench_version()}
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
    """The checkout's HEAD (with `-dirty` when the tree has changes) when attnbench runs from a
    git checkout of its repository, else "unknown" (an installed wheel: its version is in
    `versions()`; a virtual environment inside some other repository is not mistaken for one)."""
    root = pathlib.Path(__file__).resolve().parents[1]
    try:
        top = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
        if pathlib.Path(top).resolve() != root:
            return "unknown"
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


def provenance(command: str) -> dict:
    """What every benchmark record carries: device, library versions, git revision, command."""
    return dict(
        device=device_info(), versions=versions(), git_revision=git_revision(), command=command
    )


def format_metric(value: float) -> str:
    """A metric as logs and run tables print it: 4 decimals, or 4 significant digits below 0.01
    (position errors in squared scene units would all print as 0.0000)."""
    return f"{value:.4g}" if value and abs(value) < 0.01 else f"{value:.4f}"


def write_record(out, name: str, rec: dict, markdown, command: str) -> str:
    """A benchmark script's output: `rec` with `provenance(command)` added, written atomically to
    `<out>/<name>.json`, and `markdown(rec)` to `<out>/<name>.md`; returns the markdown."""
    rec.update(provenance(command.strip()))
    write_json(f"{out}/{name}.json", rec)
    text = markdown(rec)
    write_text(f"{out}/{name}.md", text)
    return text


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
