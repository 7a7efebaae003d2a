"""SAMSA Table 5 on this machine: the whole ModelNet40 test split through hard and soft SAMSA,
full attention, PointNet and DGCNN at batch 32, timed side by side (`pointcloud.inference_timing`).

    python -m scripts.samsa_table5                          # generated test shapes (2,468)
    python -m scripts.samsa_table5 --source official --data-dir /data/modelnet40_normal_resampled
    python -m scripts.samsa_table5 --num-clouds 64 --num-points 128 --out /tmp/x   # seconds

Writes `<out>/samsa_table5.json` and `.md` (the paper's seconds beside ours, with the device).
"""

from __future__ import annotations

import sys

from attnbench import cli, io


def main(argv) -> int:
    parser = cli.ArgumentParser(prog="scripts.samsa_table5", description=__doc__.split("\n")[0])
    parser.add_argument("--source", default="standin", choices=("standin", "official"))
    parser.add_argument("--data-dir", default="")
    parser.add_argument("--k", type=int, default=128, help="SAMSA's sampled tokens (not stated)")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--num-points", type=int, default=1024)
    parser.add_argument("--num-clouds", type=int, default=2468, help="0: the whole split")
    parser.add_argument("--models", default="hard,soft,full,pointnet,dgcnn")
    parser.add_argument("--repeats", type=int, default=1, help="best of this many timed passes")
    parser.add_argument("--out", default="results/bench")
    args = parser.parse_args(argv)
    from pointcloud import inference_timing as timing

    models = tuple(m for m in args.models.split(",") if m)
    unknown = [m for m in models if m not in timing.MODELS]
    if unknown:
        parser.error(f"unknown models {unknown}; known: {', '.join(timing.MODELS)}")
    rec = timing.measure(
        models=models,
        k=args.k,
        batch=args.batch,
        num_points=args.num_points,
        num_clouds=args.num_clouds,
        source=args.source,
        data_dir=args.data_dir,
        repeats=args.repeats,
    )
    command = "python -m scripts.samsa_table5 " + " ".join(argv)
    print(io.write_record(args.out, "samsa_table5", rec, timing.markdown, command))
    return 0


if __name__ == "__main__":
    sys.exit(cli.run(main))
