"""Train and evaluate one experiment named by its config.

    python -m scripts.train --config configs/lra/listops.py:preset=cpu --workdir runs/listops
    python -m scripts.train --config configs/lra/listops.py:preset=smoke,attn=softmax \
        --workdir runs/x --config.optimizer.lr=1e-3

`--config.<section>.<field>=<value>` (or `... <value>`) overrides one field; the final config is
checked as a whole (`attnbench.validate`) before anything is built. Re-running with the same workdir
resumes from the latest checkpoint. `--config.total_steps=0` (with `--config.epochs=0` where the
recipe counts epochs) trains nothing and evaluates the model as built once, e.g. a released
checkpoint (`checkpoint=` of the vision recipes). A user error (bad config, missing data, unknown
name, a workdir in use) prints one line and exits with status 2.

`--processes N --devices-per-process D` rehearses a multi-host run on this machine: N JAX processes
on the CPU backend, D devices each (`attnbench.launch.multihost.run_local`); the output of processes
1..N-1 goes to `<workdir>/logs/process<i>.log`.
"""

from __future__ import annotations

import os
import pathlib
import sys
import threading
import time

from attnbench import cli, plugins
from attnbench import config as config_lib
from attnbench.launch import jobs

# Set by attnbench.launch.jobs (scripts.reproduce): this process stops when that parent is gone.
PARENT_ENV = jobs.PARENT_ENV
PREFIX = "--config."


def _parser() -> cli.ArgumentParser:
    p = cli.ArgumentParser(
        prog=cli.prog("scripts.train"),
        description=__doc__.split("\n")[0],
        epilog="--config.<field>=<value> overrides a field of the config, e.g. "
        "--config.optimizer.lr=1e-3",
        allow_abbrev=False,
    )
    p.add_argument("--config", required=True, help="config file[:key=value,...]")
    p.add_argument("--workdir", required=True, help="run directory (checkpoints, logs, summary)")
    p.add_argument("--verbose", action="store_true", help="show library INFO logs (orbax saves)")
    p.add_argument(
        "--processes",
        type=cli.positive_int,
        metavar="N",
        help="run as N JAX processes on this machine (CPU backend), as on N hosts",
    )
    p.add_argument(
        "--devices-per-process",
        type=cli.positive_int,
        metavar="D",
        help="CPU devices of each process with --processes (default 1)",
    )
    cli.add_import_argument(p)
    return p


def parse(argv):
    """`(args, overrides)`: the flags, and `{dotted field: raw text}` of `--config.X=V` /
    `--config.X V` in command-line order."""
    parser = _parser()
    args, rest = parser.parse_known_args(argv)
    overrides, i = {}, 0
    while i < len(rest):
        item = rest[i]
        if not item.startswith(PREFIX):
            parser.error(f"unrecognized argument {item!r}")
        key, sep, value = item[len(PREFIX) :].partition("=")
        if not sep:
            if i + 1 >= len(rest):
                parser.error(f"{item} needs a value ({item}=VALUE)")
            value, i = rest[i + 1], i + 1
        if not key:
            parser.error(f"{item!r} names no field")
        overrides[key] = value
        i += 1
    return args, overrides


def _die_with_parent() -> None:
    """Exits this process when the parent named by `$ATTNBENCH_PARENT_PID` is gone (the
    Linux parent-death signal covers most cases; this covers the rest, within a second)."""
    parent = int(os.environ.get(PARENT_ENV, "0") or 0)
    if not parent:
        return

    def watch():
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(143)

    threading.Thread(target=watch, name="die-with-parent", daemon=True).start()


def _launch(args, overrides) -> int:
    """Runs this training as `args.processes` processes of `args.devices_per_process` devices."""
    from attnbench import errors
    from attnbench.launch import multihost

    if not args.workdir.strip():
        raise errors.WorkdirError("--workdir is empty; name a run directory, e.g. runs/x")
    argv = [f"--config={args.config}", f"--workdir={args.workdir}"]
    argv += [f"--import={m}" for m in args.imports] + ["--verbose"] * args.verbose
    argv += [f"{PREFIX}{k}={v}" for k, v in overrides.items()]
    return multihost.run_local(
        [sys.executable, "-m", "scripts.train", *argv],
        processes=args.processes or 1,
        devices_per_process=args.devices_per_process or 1,
        log_dir=pathlib.Path(args.workdir) / "logs",
        hint="the same command resumes from the last checkpoint",
    )


def main(argv) -> int:
    args, overrides = parse(argv)
    if args.processes is not None or args.devices_per_process is not None:
        return _launch(args, overrides)
    _die_with_parent()
    plugins.import_modules(args.imports)
    config = config_lib.load(args.config)
    config_lib.override(config, overrides)

    from absl import logging

    from attnbench import train

    if not args.verbose:
        logging.set_verbosity(logging.WARNING)  # orbax logs every save at INFO
    train.train_and_evaluate(config, args.workdir)
    return 0


def run() -> None:
    """Console entry point (`attnbench-train`)."""
    from attnbench.launch import multihost

    multihost.exit_with(lambda: cli.run(main))


if __name__ == "__main__":
    run()
