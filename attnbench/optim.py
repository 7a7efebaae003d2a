"""Optimizers and learning-rate schedules (optax).

The LRA schedule is a product of named factors, exactly as the LRA code builds it:
`constant * linear_warmup * rsqrt_decay` gives `lr * min(1, t/w) / sqrt(max(t, w))`, so LRA's
"lr 0.05" peaks at 0.05/sqrt(1000) = 1.58e-3 for ListOps.

The named schedules `warmup_cosine` and `warmup_linear` warm up linearly from
`lr * start_factor` to `lr` in `warmup_steps`, then decay (cosine or linearly) to
`lr * end_factor` at `total_steps`: timm's `warmup_lr` and `min_lr` (DeiT: 1e-6 and 1e-5)
are these two factors times the peak.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_collections
import optax

from attnbench import errors

__all__ = ["DECAY_ON", "NAMED", "make_schedule", "make_optimizer", "decay_mask"]

NAMED = ("warmup_cosine", "warmup_linear")  # schedules with a name of their own
_FACTORS = (
    "constant",
    "linear_warmup",
    "rsqrt_decay",
    "rsqrt_normalized_decay",
    "cosine_decay",
    "quarter_cosine_decay",
    "linear_decay",
    "piecewise_constant",
)


def _factor_schedule(cfg: ml_collections.ConfigDict, lr: float, total_steps: int):
    factors = [f.strip() for f in cfg.name.split("*")]
    unknown = [f for f in factors if f not in _FACTORS]
    if unknown:
        raise errors.ConfigError(
            f"config.schedule.name={cfg.name!r}: unknown factor(s) {unknown}; known: "
            f"{', '.join(_FACTORS)} (joined by *), or one of {', '.join(NAMED)}"
        )
    warmup = float(cfg.warmup_steps)
    boundaries = tuple(cfg.get("boundaries", ()))
    scales = tuple(cfg.get("scales", ()))
    if "piecewise_constant" in factors and (
        not boundaries
        or len(boundaries) != len(scales)
        or any(b <= a for a, b in zip(boundaries, boundaries[1:], strict=False))
    ):
        raise errors.ConfigError(
            f"config.schedule: piecewise_constant needs increasing config.schedule.boundaries "
            f"(steps) and as many config.schedule.scales; got {boundaries} and {scales}"
        )

    base = lr

    def schedule(step):
        step = jnp.asarray(step, jnp.float32)
        lr = jnp.ones_like(step)
        for name in factors:
            if name == "constant":
                lr = lr * base
            elif name == "linear_warmup":
                lr = lr * jnp.minimum(1.0, step / warmup) if warmup > 0 else lr
            elif name == "rsqrt_decay":
                lr = lr / jnp.sqrt(jnp.maximum(step, warmup))
            elif name == "rsqrt_normalized_decay":
                lr = lr * jnp.sqrt(warmup) / jnp.sqrt(jnp.maximum(step, warmup))
            elif name == "cosine_decay":
                cycle = cfg.steps_per_cycle or max(total_steps - warmup, 1)
                progress = jnp.maximum(0.0, (step - warmup) / cycle)
                lr = lr * 0.5 * (1.0 + jnp.cos(jnp.pi * (progress % 1.0)))
            elif name == "quarter_cosine_decay":
                # EGT's WarmUpAndCosine (shamim-hussain/egt lib/base/genutil/warmup.py, min_lr
                # 0): lr * cos(pi/2 * progress), a quarter period from the peak to 0 at the end.
                frac = jnp.clip((step - warmup) / max(total_steps - warmup, 1), 0.0, 1.0)
                lr = lr * jnp.cos(0.5 * jnp.pi * frac)
            elif name == "linear_decay":
                frac = jnp.clip((step - warmup) / max(total_steps - warmup, 1), 0.0, 1.0)
                lr = lr * (1.0 - frac)
            elif name == "piecewise_constant":  # optax.piecewise_constant_schedule's rule
                for boundary, s in zip(boundaries, scales, strict=True):
                    lr = lr * jnp.where(step >= boundary, s, 1.0)
        return lr

    return schedule


def _warmup_linear(lr: float, start: float, end: float, warmup: int, total_steps: int):
    """Linear from `start` to `lr` in `warmup` steps, then linear to `end` at `total_steps`."""

    def schedule(step):
        step = jnp.asarray(step, jnp.float32)
        up = start + (lr - start) * step / max(warmup, 1)
        frac = jnp.clip((step - warmup) / max(total_steps - warmup, 1), 0.0, 1.0)
        return jnp.where(step < warmup, up, lr + (end - lr) * frac)

    return schedule


def make_schedule(cfg: ml_collections.ConfigDict, lr: float, total_steps: int) -> optax.Schedule:
    """Builds the schedule named by `cfg.name`.

    `cfg.name` is `warmup_cosine` (optax: linear warmup from `lr * start_factor` to `lr`, cosine
    to `lr * end_factor` at `total_steps`), `warmup_linear` (the same warm-up, then linear to
    `lr * end_factor`) or a `*`-product of LRA factors (`constant`, `linear_warmup`,
    `rsqrt_decay`, `rsqrt_normalized_decay`, `cosine_decay`, `quarter_cosine_decay`: lr times
    cos(pi/2 * progress) after the warm-up, `linear_decay`) and `piecewise_constant`: the lr
    times `cfg.scales[i]` from step `cfg.boundaries[i]` on, cumulatively (a step drop).
    `start_factor` and `end_factor` apply to the named schedules only (absent: 0).
    """
    start_factor = float(cfg.get("start_factor", 0.0))
    if not 0.0 <= start_factor <= 1.0:
        raise errors.ConfigError(
            f"config.schedule.start_factor={cfg.start_factor!r}: must be in [0, 1] (the first lr "
            "of the warm-up as a fraction of the peak)"
        )
    start = lr * start_factor
    end = lr * float(cfg.get("end_factor", 0.0))
    if cfg.name == "warmup_cosine":
        return optax.warmup_cosine_decay_schedule(
            init_value=start,
            peak_value=lr,
            warmup_steps=cfg.warmup_steps,
            decay_steps=total_steps,
            end_value=end,
        )
    if cfg.name == "warmup_linear":
        return _warmup_linear(lr, start, end, int(cfg.warmup_steps), total_steps)
    return _factor_schedule(cfg, lr, total_steps)


DECAY_ON = ("all", "kernels")


def decay_mask(params, decay_on: str):
    """Which parameters weight decay applies to: every one ("all"), or only the weight
    matrices of linear and convolution layers, the `kernel` leaves ("kernels": timm's rule for
    ViT / DeiT / Swin, which exempts biases, norms, position embeddings, class tokens, relative
    position bias tables and LayerScale)."""
    if decay_on not in DECAY_ON:
        raise errors.ConfigError(
            f"config.optimizer.decay_on={decay_on!r}: unknown; known: {', '.join(DECAY_ON)}"
        )
    if decay_on == "all":
        return jax.tree.map(lambda _: True, params)
    return jax.tree_util.tree_map_with_path(
        lambda path, _: getattr(path[-1], "key", None) == "kernel", params
    )


def make_optimizer(cfg: ml_collections.ConfigDict, total_steps: int):
    """AdamW (decoupled decay, scaled by the lr as flax.optim and optax both do; on the
    parameters `config.optimizer.decay_on` names, `decay_mask`) with optional global-norm
    clipping. Returns `(optimizer, schedule)`."""
    opt = cfg.optimizer
    schedule = make_schedule(cfg.schedule, opt.lr, total_steps)
    if opt.name != "adamw":
        raise errors.ConfigError(
            f"config.optimizer.name={opt.name!r}: unknown optimizer; known: adamw"
        )
    decay_on = opt.get("decay_on", "all")
    decay_mask(None, decay_on)  # an unknown value fails here, not at the first step
    chain = []
    if opt.grad_clip_norm:
        chain.append(optax.clip_by_global_norm(opt.grad_clip_norm))
    chain.append(
        optax.adamw(
            schedule,
            b1=opt.b1,
            b2=opt.b2,
            eps=opt.eps,
            weight_decay=opt.weight_decay,
            mask=None if decay_on == "all" else lambda params: decay_mask(params, decay_on),
        )
    )
    return optax.chain(*chain), schedule
