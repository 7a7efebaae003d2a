"""Mixup / CutMix with label smoothing on a batch, inside the jitted training step.

Follows timm's `Mixup` in its default 'batch' mode, which DeiT uses (Touvron et al. 2021:
mixup 0.8, cutmix 1.0, switch probability 0.5, label smoothing 0.1):

* with probability `prob` the batch is mixed, else left as is (lambda = 1);
* when both are enabled, CutMix is chosen with probability `switch_prob`, else Mixup; one
  lambda for the whole batch, drawn from Beta(alpha, alpha) of the chosen method (Zhang et al.
  2018 mixup; Yun et al. 2019 CutMix);
* every image is mixed with the batch reversed (`x[::-1]`): Mixup blends
  `lam * x + (1 - lam) * x[::-1]`; CutMix pastes one box of `x[::-1]` into every image. The box
  is timm's `rand_bbox`: side `int(H * sqrt(1 - lam))` by `int(W * sqrt(1 - lam))`, centre
  uniform over the pixels, extending `side // 2` each way and clipped to the image; lambda is
  then corrected to the fraction of pixels left unreplaced (timm `correct_lam=True`);
* the targets are `lam * y + (1 - lam) * y[::-1]` with `y` one-hot vectors smoothed before
  mixing (timm `mixup_target`): off value `smoothing / num_classes`, on value
  `1 - smoothing + off`.

Everything is traced: the choices are `jnp.where` selections, never Python branches on traced
values, so `mix` runs under `jax.jit` with only the hyper-parameters static.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["mix", "one_hot_smooth"]


def one_hot_smooth(labels: jax.Array, num_classes: int, smoothing: float = 0.0) -> jax.Array:
    """Label-smoothed one-hot targets, float32 [..., num_classes] from int labels [...]:
    `1 - smoothing + smoothing / num_classes` at the label, `smoothing / num_classes` elsewhere
    (timm's `one_hot(..., on_value, off_value)`; each row sums to 1)."""
    off = smoothing / num_classes
    on = 1.0 - smoothing + off
    hit = labels[..., None] == jnp.arange(num_classes)
    return jnp.where(hit, jnp.float32(on), jnp.float32(off))


def _box(key: jax.Array, lam: jax.Array, height: int, width: int):
    """timm `rand_bbox` (no margin): (y0, y1, x0, x1) of the CutMix box, int32 scalars."""
    k_y, k_x = jax.random.split(key)
    ratio = jnp.sqrt(1.0 - lam)
    cut_h = jnp.floor(height * ratio).astype(jnp.int32)  # int(H * ratio) for ratio >= 0
    cut_w = jnp.floor(width * ratio).astype(jnp.int32)
    cy = jax.random.randint(k_y, (), 0, height)
    cx = jax.random.randint(k_x, (), 0, width)
    y0 = jnp.clip(cy - cut_h // 2, 0, height)
    y1 = jnp.clip(cy + cut_h // 2, 0, height)
    x0 = jnp.clip(cx - cut_w // 2, 0, width)
    x1 = jnp.clip(cx + cut_w // 2, 0, width)
    return y0, y1, x0, x1


def mix(
    images: jax.Array,
    labels: jax.Array,
    key: jax.Array,
    *,
    num_classes: int,
    mixup_alpha: float = 0.8,
    cutmix_alpha: float = 1.0,
    switch_prob: float = 0.5,
    prob: float = 1.0,
    label_smoothing: float = 0.1,
) -> tuple[jax.Array, jax.Array]:
    """Mixup or CutMix of a batch, timm 'batch' mode (see the module docstring).

    Args:
      images: float [B, H, W, C] (or [B, H, W]); normalised images.
      labels: int [B].
      key: a PRNG key; the only source of randomness.
      num_classes: the number of classes of the targets.
      mixup_alpha, cutmix_alpha: Beta parameters; 0 disables that method (not both).
      switch_prob: probability of CutMix when both are enabled.
      prob: probability of mixing the batch at all.
      label_smoothing: smoothing of the one-hot targets, applied before mixing.
    Returns:
      (images, targets): images of the input's shape and dtype; targets float32
      [B, num_classes], each row summing to 1.
    """
    if mixup_alpha <= 0 and cutmix_alpha <= 0:
        raise ValueError("mix needs mixup_alpha > 0 or cutmix_alpha > 0")
    if images.ndim < 3:
        raise ValueError(f"images must be [B, H, W(, C)], got shape {images.shape}")
    height, width = images.shape[1], images.shape[2]
    k_apply, k_switch, k_lam, k_box = jax.random.split(key, 4)

    apply = jax.random.uniform(k_apply) < prob
    if mixup_alpha > 0 and cutmix_alpha > 0:
        use_cutmix = jax.random.uniform(k_switch) < switch_prob
    else:
        use_cutmix = jnp.asarray(cutmix_alpha > 0)
    # Both candidate lambdas from one Beta call: the gamma sampler behind jax.random.beta is a
    # rejection loop that is slow to compile, so it is traced once. A disabled method's slot
    # gets a placeholder alpha (its lambda is never selected).
    alphas = jnp.array([a if a > 0 else 1.0 for a in (mixup_alpha, cutmix_alpha)], jnp.float32)
    lam_mixup, lam_cutmix = jax.random.beta(k_lam, alphas, alphas)
    lam = jnp.where(apply, jnp.where(use_cutmix, lam_cutmix, lam_mixup), jnp.float32(1.0))
    use_cutmix = use_cutmix & apply

    # CutMix: the box, and lambda corrected to the unreplaced fraction (the box is clipped).
    y0, y1, x0, x1 = _box(k_box, lam, height, width)
    rows = jnp.arange(height)[:, None]
    cols = jnp.arange(width)[None, :]
    in_box = (rows >= y0) & (rows < y1) & (cols >= x0) & (cols < x1)
    in_box = in_box.reshape((1, height, width) + (1,) * (images.ndim - 3))
    box_area = ((y1 - y0) * (x1 - x0)).astype(jnp.float32)
    lam = jnp.where(use_cutmix, 1.0 - box_area / (height * width), lam)

    flipped = images[::-1]
    x = images.astype(jnp.float32)
    blended = (x * lam + flipped.astype(jnp.float32) * (1.0 - lam)).astype(images.dtype)
    pasted = jnp.where(in_box, flipped, images)
    mixed = jnp.where(use_cutmix, pasted, blended)

    y = one_hot_smooth(labels, num_classes, label_smoothing)
    targets = y * lam + y[::-1] * (1.0 - lam)
    return mixed, targets
