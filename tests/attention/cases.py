"""The table every registered mechanism must appear in: its naive float64 reference.

Each family's `tests/attention/ref_<family>.py` defines `CASES = {name: Case(...)}`.
`test_table.py` collects them all and fails when a registered name has no case.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any


@dataclasses.dataclass(frozen=True)
class Case:
    """How to check one registered mechanism against its reference.

    Attributes:
      reference: `reference(params, q, k, v, mask, **inputs) -> out`, all numpy float64;
        `params` is the mechanism's init output converted to float64 numpy; `mask` is None or a
        boolean `[B, H, N, M]` array. Written in the plainest form (loops or explicit N x M
        matrices), independent of the implementation. It is compared with
        `apply(..., train=False)` (the deterministic evaluation path).
      hparams: bound with `attention.get(name, **hparams)` (small sizes, e.g. k=2).
      inputs: `inputs(rng, b, n, model_dim) -> dict` of extra numpy inputs (e.g. `x`), or None.
      masks: which of "none", "key_padding", "full_4d" the mechanism supports.
      grad: whether the output is differentiable in q, k, v (checked by finite differences of
        the reference).
      n: sequence length used (some mechanisms need e.g. a square grid).
      rtol: tolerance in float64.
    """

    reference: Callable[..., Any]
    hparams: dict = dataclasses.field(default_factory=dict)
    inputs: Callable[..., dict] | None = None
    masks: tuple[str, ...] = ("none", "key_padding", "full_4d")
    grad: bool = True
    n: int = 6
    rtol: float = 1e-9
