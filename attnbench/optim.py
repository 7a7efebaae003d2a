"""Optimizers and learning-rate schedules (optax).

The LRA schedule is a product of named factors, exactly as the LRA code builds it:
`constant * linear_warmup * rsqrt_decay` gives `lr * min(1, t/w) / sqrt(max(t, w))`, so LRA's
"lr 0.05" peaks at 0.05/sqrt(1000) = 1.58e-3 for ListOps.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_collections
import optax

from attnbench import errors

__all__ = ["DECAY_ON", "make_schedule", "make_optimizer", "decay_mask"]

_FACTORS = (
    "constant",
    "linear_warmup",
    "rsqrt_decay",
    "rsqrt_normalized_decay",
    "cosine_decay",
    "linear_decay",
    "piecewise_constant",
)


def _factor_schedule(cfg: ml_collections.ConfigDict, lr: float, total_steps: int):
    factors = [f.strip() for f in cfg.name.split("*")]
    unknown = [f for f in factors if f not in _FACTORS]
    if unknown:
        raise errors.ConfigError(
            f"config.schedule.name={cfg.name!r}: unknown factor(s) {unknown}; known: "
            f"{', '.join(_FACTORS)} (joined by *) or warmup_cosine"
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
            elif name == "linear_decay":
                frac = jnp.clip((step - warmup) / max(total_steps - warmup, 1), 0.0, 1.0)
                lr = lr * (1.0 - frac)
            elif name == "piecewise_constant":  # optax.piecewise_constant_schedule's rule
                for boundary, s in zip(boundaries, scales, strict=True):
                    lr = lr * jnp.where(step >= boundary, s, 1.0)
        return lr

    return schedule


def make_schedule(cfg: ml_collections.ConfigDict, lr: float, total_steps: int) -> optax.Schedule:
    """Builds the schedule named by `cfg.name`.

    `cfg.name` is `warmup_cosine` (optax: linear warmup to `lr`, cosine to `lr * end_factor`)
    or a `*`-product of LRA factors (`constant`, `linear_warmup`, `rsqrt_decay`,
    `rsqrt_normalized_decay`, `cosine_decay`, `linear_decay`) and `piecewise_constant`: the lr
    times `cfg.scales[i]` from step `cfg.boundaries[i]` on, cumulatively (a step drop).
    """
    if cfg.name == "warmup_cosine":
        return optax.warmup_cosine_decay_schedule(
            init_value=0.0,
            peak_value=lr,
            warmup_steps=cfg.warmup_steps,
            decay_steps=total_steps,
            end_value=lr * cfg.end_factor,
        )
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
