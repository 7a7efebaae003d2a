"""What one mechanism call costs: the shape record a FLOP formula reads, and the op counts
every formula shares.

A mechanism registers its forward-FLOP formula beside itself
(`registry.register(..., flops=formula)`)::

    def formula(call: cost.Call, hparams: Mapping) -> tuple[float, float]:
        return matmul_flops, elementwise_flops     # per sequence

`hparams` are the bound hyper-parameters (the registry's defaults updated by the caller's).

Conventions (`attnbench.nn.flops` counts whole models with the same ones):
  * Forward FLOPs, 2 per multiply-add. Matmul FLOPs (every dot/einsum, including sparse ones
    written as gather + multiply + sum) are exact for the code as written: chunk and window
    padding, support vectors, loops counted for every iteration.
  * Elementwise FLOPs are approximate: a per-element op count read off the code (the constants
    below; about what XLA's cost analysis charges). exp/tanh/rsqrt are transcendentals, not
    FLOPs, as in XLA, except where XLA expands a function into arithmetic (erf: `GELU_ERF`).
    Per-row reductions, scalar work, random-number generation and dropout are omitted.
  * Data movement is 0 FLOPs: gathers, concatenation, top-k, sorting.
  * Work a call shares by its whole batch (a mask built once for a fixed graph) is divided by
    the call's batch, so that the count stays per sequence.
"""

from __future__ import annotations

import dataclasses

__all__ = [
    "Call",
    "SOFTMAX",
    "MASKED",
    "LAYERNORM",
    "RMSNORM",
    "GELU_TANH",
    "GELU_ERF",
    "softmax_elementwise",
]

# Elementwise ops per element (approximate; see the module docstring).
SOFTMAX = 5  # logit scale, max, subtract, sum, divide (exp is a transcendental)
MASKED = 2  # a masked score: select before the softmax and select after it
LAYERNORM = 7  # mean, centre, square, variance, normalise, scale, bias
RMSNORM = 4  # square, mean, normalise, scale
GELU_TANH = 8  # jax.nn.gelu (approximate=True): x^3, two scales, add, +1, two products
GELU_ERF = 64  # exact GELU: XLA expands float32 erf into a rational polynomial (~60 ops)


@dataclasses.dataclass(frozen=True)
class Call:
    """One mechanism call as a FLOP formula sees it.

    Attributes:
      n, m: queries and keys per sequence.
      h: heads; dk: query/key width per head; dv: value width per head.
      d_model: width of the layer input (e.g. SAMSA's importance scorer reads it).
      batch: sequences in the call (for work the whole batch shares).
      train: the training path (mechanisms that sample differ between train and eval).
      layer_index: 0-based depth of the layer.
      masked: a key-padding mask is passed.
    """

    n: int
    m: int
    h: int
    dk: int
    dv: int
    d_model: int
    batch: int = 1
    train: bool = False
    layer_index: int = 0
    masked: bool = False


def softmax_elementwise(call: Call, scores: float) -> float:
    """Elementwise FLOPs of a softmax over `scores` score entries (masking selects included)."""
    return scores * (SOFTMAX + MASKED * call.masked)
