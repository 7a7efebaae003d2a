"""Run a command as several JAX processes on this machine, as a multi-host job would run it.

    python -m scripts.launch_local --processes 2 --devices-per-process 2 -- \\
        python -m scripts.train --config configs/lra/listops.py:preset=smoke --workdir runs/x

Each process gets the CPU backend with D devices, gloo collectives and a coordinator on a free
loopback port (`attnbench.launch.multihost`); process 0's output is this command's, the others' goes
to `--log-dir` (default: a new temporary directory). When a process fails or is killed the others
are stopped, with one line naming it. For training, `python -m scripts.train ... --processes N` does
the same with the logs in the workdir.
"""

from __future__ import annotations

import sys
import tempfile

from attnbench import cli
from attnbench.launch import multihost


def _parser() -> cli.ArgumentParser:
    p = cli.ArgumentParser(
        prog="scripts.launch_local",
        description=__doc__.split("\n")[0],
        usage="%(prog)s --processes N [--devices-per-process D] [--log-dir DIR] -- COMMAND ...",
        allow_abbrev=False,
    )
    p.add_argument("--processes", type=cli.positive_int, required=True, metavar="N")
    p.add_argument(
        "--devices-per-process", type=cli.positive_int, default=1, metavar="D", help="default 1"
    )
    p.add_argument("--log-dir", help="output of processes 1..N-1 (process<i>.log)")
    p.add_argument("command", nargs="+", help="the command each process runs")
    return p


def main(argv) -> int:
    args = _parser().parse_args(argv)
    log_dir = args.log_dir or tempfile.mkdtemp(prefix="attnbench-launch-")
    return multihost.run_local(
        args.command,
        processes=args.processes,
        devices_per_process=args.devices_per_process,
        log_dir=log_dir,
    )


if __name__ == "__main__":
    sys.exit(cli.run(main))
