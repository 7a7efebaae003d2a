"""Parameters and forward FLOPs per example of a model, analytically (`attnbench.nn.flops`).

    python -m scripts.flops --config configs/lra/text.py:preset=paper,model=samsa
    python -m scripts.flops --config configs/lra/text.py:preset=paper --lengths 1024 2048 4096
    python -m scripts.flops --config configs/lra/listops.py:attn=ssa --train
    python -m scripts.flops --import mine.py --config configs/lra/text.py:attn=mine

Prints the parameter count and the FLOPs breakdown by component (embedding, attention
mechanism, q/k/v/out projections, MLP, norms and other elementwise work, head); `--lengths`
adds a table of the count at other sequence lengths (mechanism hyper-parameters unchanged,
e.g. SAMSA's k; graph masks follow the length). The model is built abstractly (shapes only)
and nothing is run. A mechanism registered without a FLOP formula shows as nan.
"""

from __future__ import annotations

import copy
import math
import sys

from attnbench import cli, errors, plugins, validate
from attnbench import config as config_lib
from attnbench.nn import flops
from configs import common


def _at_length(config, length: int):
    c = copy.deepcopy(config)
    c.data.max_length = length
    common.sequence_attention(c.attention, length, cls=c.model.pool == "cls")
    return c


def main(argv=None) -> int:
    parser = cli.ArgumentParser(prog=cli.prog("scripts.flops"), description=__doc__.split("\n")[0])
    parser.add_argument("--config", required=True, help="config file[:args]")
    cli.add_import_argument(parser)
    parser.add_argument(
        "--lengths", type=cli.positive_int, nargs="*", default=[], help="sequence lengths"
    )
    parser.add_argument("--train", action="store_true", help="count the training forward")
    parser.add_argument(
        "--batch",
        type=cli.positive_int,
        default=None,
        help="batch for batch-shared work (default: config's)",
    )
    parser.add_argument(
        "--matmul-only", action="store_true", help="omit the approximate elementwise FLOPs"
    )
    args = parser.parse_args(argv)
    plugins.import_modules(args.imports)
    config = config_lib.load(args.config)
    validate.check(config)
    if args.lengths and "max_length" not in config.data:
        raise errors.ConfigError(
            f"--lengths: {config.task} has no sequence length (config.data.max_length); an "
            "image's tokens are its patches, so vary --config.data.image_size instead"
        )
    kw = dict(train=args.train, batch=args.batch, elementwise=not args.matmul_only)
    counts = flops.count(config, **kw)
    m = config.model
    print(f"config      {args.config}")
    print(
        f"model       {config.task}, {m.encoder} encoder, attention {config.attention.name}, "
        f"{m.num_layers} layers, dim {m.dim}, qkv {m.qkv_dim}, {m.num_heads} heads, "
        f"mlp {m.mlp_dim}"
    )
    print(
        f"per example {counts.sequences} sequence(s) of {counts.length} tokens, "
        f"{'training' if args.train else 'evaluation'} forward"
    )
    print(f"params      {counts.params:,} (+ {counts.buffers:,} buffer scalars)")
    print(
        f"FLOPs       {counts.flops:.4g} per example ({counts.matmul_flops:.4g} in matmuls; "
        "elementwise approximate)"
    )
    if math.isnan(counts.breakdown["attention"]):
        print(
            f"            attention {config.attention.name!r} has no FLOP formula "
            "(attention.register(..., flops=...)): its FLOPs are unknown (nan)"
        )
    print()
    print(counts.table())
    if args.lengths:
        print()
        print(f"{'length':>8}{'params':>14}{'GFLOPs/example':>16}{'attention':>11}")
        for length in args.lengths:
            c = flops.count(_at_length(config, length), **kw)
            share = c.breakdown["attention"] / c.flops
            print(f"{length:>8}{c.params:>14,}{c.flops / 1e9:>16.4g}{share:>11.1%}")
    return 0


def run() -> None:
    """Console entry point (`attnbench-flops`)."""
    sys.exit(cli.run(main))


if __name__ == "__main__":
    run()
