"""Runs one benchmark measurement in its own Python process (`python -m attnbench.launch.isolate`).

A measurement in a fresh process has its own peak resident memory (`ru_maxrss` of the child:
the process peak of that configuration alone, not of everything measured before it), and a
configuration that exhausts memory or hangs kills only its own process: the parent records it
as skipped with the reason and goes on.

    record = isolate.run("attnbench.bench.train:measure", {"spec": ..., ...}, timeout_s=900)

The child prints its result as one JSON line after `MARKER`; everything else it prints
(progress) is passed through to the parent's stdout.
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import subprocess
import sys

__all__ = ["run", "call", "MARKER"]

MARKER = "@@attnbench-result@@ "


def run(target: str, kwargs: dict, *, timeout_s: float = 1800) -> dict:
    """`target` ("module:function") called with `kwargs` in a child process. Returns its
    result dict with `peak_rss_bytes` (the child's peak) added, or `{"skipped": reason}` when
    the child died or timed out."""
    cmd = [sys.executable, "-m", "attnbench.launch.isolate", target, json.dumps(kwargs)]
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout_s, env=dict(os.environ)
        )
    except subprocess.TimeoutExpired:
        return {"skipped": f"timed out after {timeout_s:.0f} s"}
    result = None
    for line in proc.stdout.splitlines():
        if line.startswith(MARKER):
            result = json.loads(line[len(MARKER) :])
        elif line.strip():
            print(line, flush=True)
    if proc.returncode != 0 or result is None:
        tail = proc.stderr.strip().splitlines()[-1:] or ["no output"]
        if proc.returncode in (-9, 137):
            why = "killed by signal 9 (out of memory?)"
        else:
            why = f"exit status {proc.returncode}"
        return {"skipped": f"child process failed: {why}: {tail[0][:300]}"}
    return result


def call(target: str, kwargs: dict) -> dict:
    """`target` ("module:function") called with `kwargs` in this process (what the child runs)."""
    module, func = target.split(":")
    return getattr(importlib.import_module(module), func)(**kwargs)


def _main(target: str, kwargs_json: str) -> None:
    result = call(target, json.loads(kwargs_json))
    result["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(MARKER + json.dumps(result), flush=True)


if __name__ == "__main__":
    _main(*sys.argv[1:3])
