"""Dense softmax attention on CPU, side by side with PyTorch's fused CPU kernel (issue 37 item 2).

    python -m scripts.bench_dense_cpu --out results/bench            # needs torch importable
    python -m scripts.bench_dense_cpu --no-torch --lengths 1024 --out /tmp/b

Times, in one process and in alternating rounds (each round runs every candidate once per
length and mode; the figure is the minimum over rounds), B1 H8 D64 float32 by default:

  * `torch_sdpa`: `torch.nn.functional.scaled_dot_product_attention` (torch's fused CPU
    kernel; torch is not a dependency of attnbench: install it beside it to measure this);
  * `softmax`: our `softmax` mechanism as users run it (`implementation="auto"`: on CPU the
    blocked kernel from `attention.kernels.CHUNKED_FROM` tokens);
  * `softmax_xla`: the same mechanism with `implementation="xla"` (the default before);
  * `softmax_chunked`: the `softmax_chunked` mechanism (blocked, FlashAttention-2 backward).

Modes: `forward` and `forward_backward` (the gradient of sum(out * w) with respect to q, k, v).
Every JAX function is jitted and warmed up once; torch runs eagerly with `torch.no_grad()` for the
forward. Ratios are each candidate's time over torch's in the same run. Writes
`<out>/dense_cpu.{json,md}` (atomic) and prints the markdown.
"""

from __future__ import annotations

import sys

from attnbench import cli, errors, io
from attnbench.bench import dense_cpu


def _parser():
    p = cli.ArgumentParser(prog="scripts.bench_dense_cpu", description=__doc__.splitlines()[0])
    p.add_argument("--lengths", type=int, nargs="+", default=[1024, 2048, 4096])
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--head-dim", type=int, default=64)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--no-torch", action="store_true", help="skip the torch baseline")
    p.add_argument("--out", required=True, help="folder for dense_cpu.{json,md}")
    return p


def main(argv=None):
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    if args.rounds < 1 or min(args.lengths) < 1:
        raise errors.ConfigError("--rounds and --lengths must be positive")
    rec = dense_cpu.measure(
        args.lengths,
        heads=args.heads,
        head_dim=args.head_dim,
        batch=args.batch,
        rounds=args.rounds,
        torch_baseline=not args.no_torch,
    )
    argv_text = " ".join(sys.argv[1:] if argv is None else argv)
    command = f"python -m scripts.bench_dense_cpu {argv_text}"
    print(io.write_record(args.out, "dense_cpu", rec, dense_cpu.markdown, command), end="")


if __name__ == "__main__":
    sys.exit(cli.run(main))
