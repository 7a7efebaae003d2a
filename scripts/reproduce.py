"""Runs the cells of a paper table at a chosen scale.

    python -m scripts.reproduce samsa.table1 --preset cpu --cells listops
    python -m scripts.reproduce samsa.table1 --preset cpu --cells "text/128 hard" --seeds 3 --jobs 2
    python -m scripts.reproduce samsa.table1 --list

Each (cell, seed) is one `scripts.train` process with its own run directory
`<runs>/<paper>_<table>/<preset>/<row>/<column>/seed<N>/`: a finished cell (its `summary.json`
exists) is skipped, an interrupted one resumes from its last checkpoint (the trainer does that),
and `--jobs N` runs N cells at once. A cell whose config another table's cell shares (SAMSA
Table 2 reprints Table 1's runs) is trained once: a finished run of either serves both.
`--cells` keeps the cells whose row or column contains one of the given words, or with
`row/column` the matching cells (case-insensitive). Cells we cannot run yet (their task or
mechanism does not exist) are listed with what they need, never skipped silently. Seed N > 0
sets `config.seed = N` (seed 0 is the recipe's own seed).

Cells computed exactly (`Cell.exact`: parameter counts, analytic FLOPs, numerical tests) need
no training: they are recomputed in this process on every call, whatever the preset, and written
to `<runs>/<paper>_<table>/exact/<row>/<column>/seed0/summary.json`. Cells reproduced by
another command (`Cell.elsewhere`, the speed tables) are listed with that command.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import time

from core import cli, io, paper_tables
from scripts import train as train_script


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def run_dir(root, key: str, preset: str, cell, seed: int) -> pathlib.Path:
    return (
        pathlib.Path(root)
        / key.replace(".", "_")
        / preset
        / _slug(cell.row)
        / _slug(cell.column)
        / f"seed{seed}"
    )


@functools.lru_cache(maxsize=1)
def _by_config() -> dict[str, list]:
    index: dict[str, list] = {}
    for key in paper_tables.names():
        for c in paper_tables.load(key).cells:
            if c.config is not None:
                index.setdefault(c.config, []).append((key, c))
    return index


def run_dirs(root, key: str, preset: str, cell, seed: int) -> list[pathlib.Path]:
    """Where a run of `cell` may be: its own directory first, then those of the cells of other
    tables with the same config (one training run serves every table that prints it)."""
    own = run_dir(root, key, preset, cell, seed)
    twins = [
        run_dir(root, k, preset, c, seed)
        for k, c in _by_config().get(cell.config, [])
        if (k, c.row, c.column) != (key, cell.row, cell.column)
    ]
    return [own] + sorted(set(twins) - {own})


def finished(root, key: str, preset: str, cell, seed: int) -> pathlib.Path | None:
    """The summary of a finished run of `cell` (its own or a twin's), or None."""
    return next(
        (
            d / "summary.json"
            for d in run_dirs(root, key, preset, cell, seed)
            if (d / "summary.json").exists()
        ),
        None,
    )


def select(table, words) -> list:
    """The cells matching any of `words`: `word` matches a row or column containing it,
    `row/column` a cell whose row contains `row` and column contains `column` (case-insensitive)."""
    if not words:
        return list(table.cells)

    def match(c, word):
        row, sep, column = word.lower().partition("/")
        if sep:
            return row.strip() in c.row.lower() and column.strip() in c.column.lower()
        return row in c.row.lower() or row in c.column.lower()

    return [c for c in table.cells if any(match(c, w) for w in words)]


def command(cell, preset: str, seed: int, workdir: pathlib.Path) -> list[str]:
    spec = cell.config + ("," if ":" in cell.config else ":") + f"preset={preset}"
    cmd = [sys.executable, "-m", "scripts.train", f"--config={spec}", f"--workdir={workdir}"]
    if seed:
        cmd.append(f"--config.seed={seed}")
    return cmd


def compute_exact(table, cell, root) -> float:
    """Computes an exact cell and writes its summary (atomically); returns the value."""
    t0 = time.perf_counter()
    value = paper_tables.compute(cell)
    workdir = run_dir(root, table.key, "exact", cell, 0)
    io.write_json(
        workdir / "summary.json",
        {
            "schema_version": 1,
            "preset": "exact",
            "metrics": {"exact": {"value": value}},
            "exact": {"function": cell.exact, "args": dict(sorted(cell.exact_args.items()))},
            "data": {"source": "computed"},
            "command": f"python -m scripts.reproduce {table.key} --cells "
            + json.dumps(f"{cell.row}/{cell.column}"),
            "device": io.device_info(),
            "git_revision": io.git_revision(),
            "versions": io.versions(),
            "wall_time_s": round(time.perf_counter() - t0, 3),
        },
    )
    return value


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = cli.ArgumentParser(prog="scripts.reproduce", description=__doc__.split("\n")[0])
    parser.add_argument("table", help=f"one of: {', '.join(paper_tables.names())}")
    parser.add_argument("--preset", default="cpu", choices=["paper", "cpu", "smoke"])
    parser.add_argument("--cells", nargs="*", default=[], help="words matching rows or columns")
    parser.add_argument("--seeds", type=cli.positive_int, default=1, help="seeds 0..N-1 per cell")
    parser.add_argument(
        "--jobs", type=cli.positive_int, default=1, help="cells run at once (processes)"
    )
    parser.add_argument("--runs", default="runs/tables", help="root of the run directories")
    parser.add_argument("--list", action="store_true", help="list the cells and stop")
    args = parser.parse_args(argv)
    if not args.runs.strip():
        parser.error("--runs is empty; name the root of the run directories")
    try:
        table = paper_tables.load(args.table)
        paper_tables.validate(table)
    except paper_tables.TableError as e:
        parser.error(str(e))
    cells = select(table, args.cells)
    if not cells:
        parser.error(f"no cell of {args.table} matches {args.cells}")
    not_runnable = [c for c in cells if not (c.runnable or c.elsewhere or c.mean_of)]
    elsewhere = [c for c in cells if c.elsewhere]
    exact = [c for c in cells if c.exact is not None]
    jobs = [(c, s) for c in cells if c.config is not None for s in range(args.seeds)]
    todo = [(c, s) for c, s in jobs if finished(args.runs, table.key, args.preset, c, s) is None]
    print(
        f"{table.key}: {len(cells)} cells selected, {len(jobs)} runs ({len(jobs) - len(todo)} "
        f"finished), {len(exact)} computed exactly, {len(elsewhere)} reproduced elsewhere, "
        f"{len(not_runnable)} not runnable yet",
        flush=True,
    )
    for c in not_runnable:
        print(f"  not runnable: [{c.row} / {c.column}] needs {c.needs}", flush=True)
    for c in elsewhere:
        print(f"  elsewhere: [{c.row} / {c.column}] {c.elsewhere}", flush=True)
    if args.list:
        for c in exact:
            print(f"  exact: [{c.row} / {c.column}] {c.exact}({c.exact_args})")
        for c, s in jobs:
            done = finished(args.runs, table.key, args.preset, c, s)
            where = "" if done is None else f" ({done.parent})"
            state = "done" if done else "todo"
            print(f"  {state}: [{c.row} / {c.column}] seed {s}: {c.config}{where}")
        return 0
    for c in exact:
        paper = "-" if c.paper is None else f"{c.paper:g}"
        value = compute_exact(table, c, args.runs)
        print(f"  exact: [{c.row} / {c.column}] {value:.6g} (paper {paper})", flush=True)

    return _run_jobs(todo, table.key, args)


def _start(cmd: list[str], log) -> subprocess.Popen:
    """Starts a cell's trainer in its own process group (so Ctrl-C reaches only us and we stop
    it), told to die with this process (Linux parent-death signal, and the trainer's own
    watchdog on `$ATTNBENCH_PARENT_PID`): a killed reproduce leaves no orphan behind."""
    env = dict(os.environ, **{train_script.PARENT_ENV: str(os.getpid())})
    return subprocess.Popen(
        cmd,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
        preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
    )


def _die_with_parent() -> None:  # runs in the child between fork and exec
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


def _run_jobs(todo, key: str, args) -> int:
    """Runs `(cell, seed)` jobs, `args.jobs` at a time, with progress and ETA. SIGINT/SIGTERM
    cancel the queue and stop the running cells (they resume from their last checkpoint when
    the same command runs again)."""
    t0 = time.perf_counter()
    failed, finished_count = [], 0
    queue = list(todo)
    running: dict[subprocess.Popen, tuple] = {}
    stop_signal: list[int] = []
    handlers = {
        sig: signal.signal(sig, lambda signum, _frame: stop_signal.append(signum))
        for sig in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        while (queue or running) and not stop_signal:
            while queue and len(running) < args.jobs and not stop_signal:
                c, s = queue.pop(0)
                workdir = run_dir(args.runs, key, args.preset, c, s)
                workdir.mkdir(parents=True, exist_ok=True)
                log = open(workdir / "reproduce.log", "a")  # noqa: SIM115 (closed when done)
                running[_start(command(c, args.preset, s, workdir), log)] = (c, s, workdir, log)
            for p in [p for p in running if p.poll() is not None]:
                c, s, workdir, log = running.pop(p)
                log.close()
                finished_count += 1
                elapsed = time.perf_counter() - t0
                eta = elapsed / finished_count * (len(todo) - finished_count)
                if p.returncode:
                    failed.append((c, s))
                    why = _last_line(workdir / "reproduce.log")
                    status = (
                        f"FAILED (exit {p.returncode}{': ' + why if why else ''}; see "
                        f"{workdir}/reproduce.log)"
                    )
                else:
                    status = "done"
                print(
                    f"[{finished_count}/{len(todo)} {elapsed:.0f}s, ETA {eta:.0f}s] {c.row} / "
                    f"{c.column} seed {s}: {status}",
                    flush=True,
                )
            time.sleep(0.1)
    finally:
        if running:
            _stop(list(running))
            for _, _, _, log in running.values():
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
        print(f"{len(failed)} run(s) failed", flush=True)
        return 1
    return 0


def _last_line(path: pathlib.Path) -> str:
    """The log's last `error: ...` line (a user error of the trainer), or ''."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return next((ln[7:] for ln in reversed(lines) if ln.startswith("error: ")), "")[:300]


if __name__ == "__main__":
    sys.exit(cli.run(main))
