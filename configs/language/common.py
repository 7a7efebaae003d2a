"""Pieces shared by SSA's autoregressive recipes (`wikitext103.py`, `enwik8.py`, `cifar10.py`):
the `ssa=`, `sampling=`, `ft=` and `ensemble=` arguments, SSA's attention section, and the
self-ensemble's evaluator. Sources: [ssa] SSA (arXiv:2306.01705) Sec. 3.5, 4.1, 4.2, App. B;
[fairseq] the `transformer_lm_wiki103` architecture the decoders are built on (GitHub
ofirpress/attention_with_linear_biases, `fairseq/models/transformer_lm.py`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import ml_collections

from attnbench import config as config_lib
from configs import common

__all__ = ["SSA_ARGS", "parse", "ssa_layers", "ssa_attention", "finish"]

# The SSA arguments every recipe takes, with their defaults: ssa=S<l>-L<w> (the last l of 16
# layers subsample 1/w of the sources), sampling=local|unbiased, ft=1 (+FT, the last 10% of
# the steps dense), ensemble=S (S subsampled passes averaged at evaluation).
SSA_ARGS = {"ssa": "", "sampling": "local", "ft": 0, "ensemble": 0}


def parse(
    arg: str | None,
    rows: Sequence[str],
    *,
    extra: Mapping | None = None,
    choices: Mapping | None = None,
    samplings: Sequence[str] = ("local", "unbiased"),
    dense_ensemble: bool = True,
) -> ml_collections.ConfigDict:
    """`common.parse` with the SSA arguments (`rows`: the recipe's S<l>-L<w> rows) and their
    cross-checks: `ft=1` needs `ssa=`; `ensemble=` over a dense model (no `ssa=`, when
    `dense_ensemble`: Table 4's S0 row) cannot also swap the attention.

    Raises:
      ConfigError: any of those, or what `common.parse` raises.
    """
    args = common.parse(
        arg,
        extra={**common.DATA_SOURCE, **SSA_ARGS, "sampling": samplings[0], **(extra or {})},
        choices={
            "source": (("standin", "official"), "data"),
            "ssa": (("", *rows), "SSA"),
            "sampling": (tuple(samplings), "SSA"),
            **(choices or {}),
        },
    )
    given = "|".join(rows)
    if args.ft and not args.ssa:
        raise config_lib.ConfigError(f"ft=1 is SSA's dense fine-tuning: give ssa={given}")
    if args.ensemble < 0:
        raise config_lib.ConfigError(f"ensemble={args.ensemble}: the number of passes, >= 0")
    if args.ensemble and not args.ssa:
        if not dense_ensemble:
            raise config_lib.ConfigError(
                f"ensemble={args.ensemble} averages SSA's subsampled passes: give ssa={given}"
            )
        if args.attn:
            raise config_lib.ConfigError(
                f"ensemble={args.ensemble} without ssa= ensembles SSA passes over the dense "
                f"model; drop attn={args.attn} or give ssa="
            )
    return args


def ssa_layers(row: str, num_layers: int) -> tuple[int, ...]:
    """The blocks (0-based) of S<l>-L<w> in a stack of `num_layers`: the last l of 16 in the
    paper's model, the same share (rounded, at least one) in a scaled one."""
    sampled = int(row.split("-")[0][1:])
    if num_layers == 16:
        count = sampled
    else:
        count = max(1, round(num_layers * sampled / 16))
    return tuple(range(num_layers - count, num_layers))


def ssa_attention(c, args, *, default_row: str = "S16-L4", **hparams) -> None:
    """Before scaling: SSA's attention section for `ssa=` (or, for `ensemble=` over a dense
    model, `default_row`'s, used only by the ensemble's passes), with the recipe's `hparams`
    (samplers, sigmas, dropout); `ft=1` is [ssa]'s +FT, the last 10% of the steps dense."""
    row = args.ssa or (default_row if args.ensemble else "")
    if not row:
        return
    windows = int(row.split("-L")[1])
    sampling = hparams.pop("sampling", None) or (
        "local_1d" if args.sampling == "local" else "unbiased"
    )
    c.attention = common.attention_config(
        "ssa", keep=1.0 / windows, sampling=sampling, causal=True, **hparams
    )  # [ssa] L<w>: 1/w of the sources
    if args.ft:
        c.dense_finetune_fraction = 0.1  # [ssa] +FT: the last 10% dense
    if not args.ssa:  # S0 with an ensemble: SSA only in the ensemble's passes
        c.dense_finetune_fraction = 1.0


def finish(c, args, unit: str, *, layers: bool = True) -> None:
    """After scaling: the blocks `ssa=` subsamples in (`layers`), and the self-ensemble's
    passes and evaluator (its metrics beside the dense pass's: `loss_ensemble`,
    `<perplexity|bpb|bpd>_ensemble`)."""
    if args.ssa and layers:
        c.model.attention_layers = ssa_layers(args.ssa, int(c.model.num_layers))
    if args.ensemble:
        c.model.ensemble_passes = args.ensemble
        c.evals.lm_ensemble = ml_collections.ConfigDict(
            {"type": "language_model", "unit": unit, "nll": "nll_ensemble", "suffix": "_ensemble"}
        )
