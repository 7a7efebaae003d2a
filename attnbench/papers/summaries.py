"""Reading run summaries for the tables and the leaderboard: each field they use, checked.

    s = summaries.read(path)
    summaries.number(s, path, "metrics", "test_best", "accuracy")   # float, NaN kept, or None

A summary is read by `attnbench.papers.runs` (the paper tables) and `attnbench.papers.leaderboard`
with one rule: a summary that is not what `scripts.train` (`attnbench.summary`) or
`scripts.reproduce` (an exact cell) writes is a user error, `errors.DataError` naming the file and
the field (`runs/x/summary.json: metrics.test_best.accuracy is 'abc', not a number`), never a
table built without it. A field that is absent, or `null`, is absent: a metric the run does not
have, a device whose CPU count was unknown. A non-finite metric (`NaN`, as json writes it) is a
number: the run diverged, and the tables show it as failed.
"""

from __future__ import annotations

import math
import pathlib
from typing import Any

from attnbench import errors, io

__all__ = [
    "read",
    "field",
    "number",
    "string",
    "integer",
    "section",
    "required",
    "device",
    "revision",
]

_WHAT = {"number": "a number", "string": "a string", "integer": "an integer", "object": "an object"}


def read(path) -> dict:
    """The summary at `path` (a JSON object).

    Raises:
      errors.DataError: the file is missing, unreadable, malformed, or not a JSON object.
    """
    summary = io.read_json(path, what="run summary")
    if not isinstance(summary, dict):
        raise _error(path, None, summary, "object")
    return summary


def field(summary: dict, path, *keys: str, kind: str) -> Any:
    """`summary[keys[0]][keys[1]]...` checked to be of `kind` ("number": an int or float, NaN
    and inf included, returned as float; "integer", "string", "object"); None when it, or a
    section above it, is absent or null.

    Raises:
      errors.DataError: it, or a section above it, is of another type; the message names the
        file and the field (`metrics.test_best.accuracy`).
    """
    value: Any = summary
    for i, key in enumerate(keys):
        if value is None:
            return None
        if not isinstance(value, dict):
            raise _error(path, keys[:i], value, "object")
        value = value.get(key)
    if value is None:
        return None
    if kind == "number" and _is_number(value):
        return float(value)
    if kind == "integer" and isinstance(value, int) and not isinstance(value, bool):
        return value
    if kind == "string" and isinstance(value, str):
        return value
    if kind == "object" and isinstance(value, dict):
        return value
    raise _error(path, keys, value, kind)


def number(summary: dict, path, *keys: str) -> float | None:
    """The number at `keys` (NaN and inf kept), None when absent or null."""
    return field(summary, path, *keys, kind="number")


def string(summary: dict, path, *keys: str) -> str | None:
    """The string at `keys`, None when absent or null."""
    return field(summary, path, *keys, kind="string")


def integer(summary: dict, path, *keys: str) -> int | None:
    """The integer at `keys`, None when absent or null."""
    return field(summary, path, *keys, kind="integer")


def section(summary: dict, path, *keys: str) -> dict | None:
    """The object at `keys`, None when absent or null."""
    return field(summary, path, *keys, kind="object")


def required(value, path, *keys: str):
    """`value` (a field read by `field`), or a DataError naming the field a run summary of
    `scripts.train` always has when it is None."""
    if value is None:
        raise errors.DataError(
            f"{path}: run summary has no {'.'.join(keys)} (every summary scripts.train writes "
            "has one); correct the file, or move its run out of the run roots"
        )
    return value


def device(summary: dict, path) -> str:
    """The device a run used, as the tables print it: `cpu x1 (2 CPU cores)`, or
    `unknown device` when the summary has none (absent, null or empty)."""
    if not section(summary, path, "device"):
        return "unknown device"
    kind = string(summary, path, "device", "kind")
    count = integer(summary, path, "device", "count")
    cpus = integer(summary, path, "device", "cpu_count")
    text = f"{'?' if kind is None else kind} x{'?' if count is None else count}"
    return text + (f" ({cpus} CPU cores)" if cpus else "")


def revision(summary: dict, path) -> str:
    """The code a run came from, as tables print it: the git revision's first 7 characters, or
    `v<version>` for a run of an installed attnbench (no checkout, so no revision)."""
    rev = string(summary, path, "git_revision")
    rev = "unknown" if rev is None else rev
    version = string(summary, path, "versions", "attnbench")
    if rev == "unknown" and version:
        return f"v{version}"
    return rev[:7]


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _error(path, keys, value, kind: str) -> errors.DataError:
    where = f"{'.'.join(keys)} is" if keys else "run summary is"
    return errors.DataError(
        f"{pathlib.Path(path)}: {where} {_shown(value)}, not {_WHAT[kind]}; correct the file, "
        "or move its run out of the run roots"
    )


def _shown(value) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        text = repr(value)
        return f"a list {text}" if len(text) <= 40 else "a list"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
