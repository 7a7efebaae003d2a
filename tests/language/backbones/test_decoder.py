"""The backbone "decoder" (`language.backbones.decoder`): ALiBi and the 2-D relative bias against
loops, and its registration with `attnbench.nn.backbones`. The language model around it, its
forward pass, causality, FLOPs and parameter counts: tests/language/test_models.py."""

from __future__ import annotations

import numpy as np
from flax import nnx

from attnbench.nn import backbones
from language.backbones import decoder

N = 12
LEARNED = dict(num_layers=1, dim=16, num_heads=2, mlp_dim=32, positions="learned", gelu="tanh")


# ------------------------------------------------------------------------------ positions


def test_alibi_slopes_by_hand():
    """Press et al. 2022 Sec. 3: 8 heads -> 1/2, 1/4, ..., 1/256; 6 heads (not a power of 2)
    -> the 4-head slopes 2^-2, 2^-4, 2^-6, 2^-8, then the 1st and 3rd of the 8-head ones."""
    np.testing.assert_array_equal(decoder.alibi_slopes(8), 2.0 ** -np.arange(1, 9))
    np.testing.assert_allclose(decoder.alibi_slopes(6), 2.0 ** -np.array([2, 4, 6, 8, 1, 3]))
    np.testing.assert_allclose(decoder.alibi_slopes(1), [2.0**-8])


def test_alibi_bias_and_relative_index_against_loops():
    bias = decoder.alibi_bias(4, 7)
    slopes = decoder.alibi_slopes(4)
    assert bias.shape == (1, 4, 7, 7)
    for h in range(4):
        for i in range(7):
            for j in range(7):
                want = -slopes[h] * (i - j) if j <= i else 0.0
                assert bias[0, h, i, j] == np.float32(want)
    grid = (3, 4, 2)  # rows, cols, channels
    index = decoder.relative_2d_index(grid, 24)
    for i in range(24):
        for j in range(24):
            ri, ci = divmod(i // 2, 4)  # pixel i // channels, row-major
            rj, cj = divmod(j // 2, 4)
            assert index[i, j] == (ri - rj + 2) * 7 + (ci - cj + 3)
    assert index.min() >= 0 and index.max() == 5 * 7 - 1


# ------------------------------------------------------------------------- registration


def test_backbone_is_registered():
    assert "decoder" in backbones.names()
    stack = nnx.eval_shape(
        lambda: backbones.build(
            "decoder", model_cfg=LEARNED, attention_cfg={"name": "softmax"}, max_len=N,
            rngs=nnx.Rngs(params=0),
        )
    )  # fmt: skip
    assert isinstance(stack, decoder.DecoderStack)
