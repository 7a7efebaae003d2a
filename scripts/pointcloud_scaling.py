"""Issue 16's scaling target: blocked k-NN (k = 3, 16) and asymmetric GRF attention forward +
backward from 4,096 to 32,768 points, time, log-log slope and peak memory
(`pointcloud.scaling`).

    python -m scripts.pointcloud_scaling                                  # 4k, 8k, 16k, 32k
    python -m scripts.pointcloud_scaling --sizes 256,512 --out /tmp/pcs   # seconds, a check

Writes `<out>/pointcloud_scaling.json`, `.md` and `.png` (device, command to reproduce).
"""

from __future__ import annotations

import argparse
import sys

from attnbench import cli, io


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(s) for s in text.split(",") if s.strip())
    except ValueError:
        sizes = ()
    if not sizes or min(sizes) < 17:
        raise argparse.ArgumentTypeError(
            f"--sizes {text!r}: a comma-separated list of point counts >= 17, e.g. 4096,8192"
        )
    return sizes


def main(argv) -> int:
    parser = cli.ArgumentParser(
        prog="scripts.pointcloud_scaling", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--sizes", type=_sizes, default="4096,8192,16384,32768")
    parser.add_argument("--dim", type=int, default=64, help="GRF attention width (one head)")
    parser.add_argument("--reps", type=int, default=3, help="timed calls per size (median)")
    parser.add_argument("--out", default="results/bench")
    args = parser.parse_args(argv)
    from pointcloud import scaling

    rec = scaling.measure(args.sizes, dim=args.dim, reps=args.reps)
    command = "python -m scripts.pointcloud_scaling " + " ".join(argv)
    text = io.write_record(
        args.out, "pointcloud_scaling", rec, lambda r: scaling.markdown(r, r["command"]), command
    )
    scaling.plot(rec, f"{args.out}/pointcloud_scaling.png")
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(cli.run(main))
