"""Mask helpers shared by the mechanisms.

Masks are boolean (`True` = attend). The API accepts any shape broadcastable to `[B, H, N, M]`
and, as a convenience, a key-padding mask `[B, M]`.
"""

from __future__ import annotations

import jax.numpy as jnp

__all__ = ["as_4d"]


def as_4d(mask, batch: int, heads: int, n: int, m: int):
    """Returns `mask` as a boolean array broadcast to `[B, H, N, M]`, or None.

    A 2-D mask is read as key padding `[B, M]`. Raises ValueError naming the shapes when the
    mask cannot broadcast, instead of failing inside XLA.
    """
    if mask is None:
        return None
    mask = jnp.asarray(mask)
    if mask.dtype != jnp.bool_:
        raise ValueError(f"attention mask must be boolean (True = attend), got {mask.dtype}")
    if mask.ndim == 2:
        if mask.shape != (batch, m):
            raise ValueError(
                f"a 2-D attention mask is key padding [B, M] = {(batch, m)}, got {mask.shape}"
            )
        mask = mask[:, None, None, :]
    if mask.ndim != 4:
        raise ValueError(f"attention mask must be [B, M] or 4-D [B, H, N, M], got {mask.shape}")
    target = (batch, heads, n, m)
    try:
        return jnp.broadcast_to(mask, target)
    except ValueError:
        raise ValueError(
            f"attention mask of shape {mask.shape} does not broadcast to [B, H, N, M] = {target}"
        ) from None
