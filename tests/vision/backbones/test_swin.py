"""The Swin backbone against naive float64 references: window partition, the shifted-window
mask, the relative position index, one block (unshifted, shifted with a query-varying mask,
shifted by per-region calls), patch merging; gradients and jit; mechanisms without a bias
input or with key-padding masks only; the official Swin-T/S parameter counts; the registered
factory and its FLOP formula.

Models are tiny (8x8 grids, widths 8-16); the Swin-T/S counts are built with `nnx.eval_shape`.
"""

import math

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest
from flax import nnx

import attention
from attnbench import config as config_lib
from attnbench import errors
from attnbench.nn import backbones, flops
from tests import tolerances
from vision.backbones import swin

SOFTMAX = {"name": "softmax"}


def _key(seed):
    # "rbg" keys compile far faster than threefry on CPU; the modules accept any key.
    return jax.random.key(seed, impl="rbg")


def _encoder(cfg=SOFTMAX, *, grid=(8, 8), dim=8, depths=(2,), heads=(2,), **kw):
    """A tiny encoder; by default one stage of an unshifted and a shifted block."""
    return swin.SwinEncoder(
        grid=grid,
        dim=dim,
        depths=depths,
        num_heads=heads,
        window_size=kw.pop("window_size", 4),
        mlp_ratio=kw.pop("mlp_ratio", 2.0),
        attention_cfg=cfg,
        rngs=nnx.Rngs(_key(0)),
        **kw,
    )


def _perturb(module, seed=1, scale=0.2):
    """Adds `scale * normal` to every parameter (initial biases are zero and LayerNorm scales
    one, which would hide a misplaced bias or scale from the references). numpy draws: no
    per-shape compilation."""
    graphdef, state = nnx.split(module)
    rng = np.random.default_rng(seed)
    state = jax.tree.map(
        lambda x: x + jnp.asarray(scale * rng.normal(size=x.shape), x.dtype), state
    )
    return nnx.merge(graphdef, state)


def _normal(seed, shape):
    # numpy draws: a jax.random call would compile once per shape.
    return jnp.asarray(np.random.default_rng(seed).normal(size=shape), jnp.float32)


@nnx.jit
def _forward(model, x):
    return model(x)


def _np(v):
    return np.asarray(v[...], np.float64)


# ------------------------------------------------------------------------- naive references


def _naive_labels(height, width, shift):
    """`[H, W]` region of each position of the grid rolled by -shift: whether its row and
    column wrapped round the grid's edge (positions whose original row/column is < shift)."""
    lab = np.zeros((height, width), np.int64)
    for i in range(height):
        for j in range(width):
            oi, oj = (i + shift) % height, (j + shift) % width  # original position
            lab[i, j] = 2 * int(shift > 0 and oi < shift) + int(shift > 0 and oj < shift)
    return lab


def _naive_mask(height, width, window, shift):
    """`[nW, 1, w², w²]` bool: tokens p, q of a window attend iff they share a region."""
    lab = _naive_labels(height, width, shift)
    n = window * window
    out = []
    for a in range(height // window):
        for b in range(width // window):
            m = np.zeros((n, n), bool)
            for p in range(n):
                for q in range(n):
                    pi, pj = a * window + p // window, b * window + p % window
                    qi, qj = a * window + q // window, b * window + q % window
                    m[p, q] = lab[pi, pj] == lab[qi, qj]
            out.append(m[None])
    return np.stack(out)


def _layernorm(x, scale, bias, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * scale + bias


def _gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


def _ref_block(block, x):
    """One Swin block in float64 numpy, window by window and head by head."""
    x = np.asarray(x, np.float64)
    batch, _, c = x.shape
    height, width = block.grid
    w, s, heads = block.window_size, block.shift, block.num_heads
    d = c // heads
    a = block.attn
    wq, wk, wv, wo = (_np(p.kernel) for p in (a.query, a.key, a.value, a.out))
    bq, bk, bv, bo = (_np(p.bias) for p in (a.query, a.key, a.value, a.out))
    table = _np(block.relative_position_bias_table)
    labels = _naive_labels(height, width, s)
    h = _layernorm(x, _np(block.ln1.scale), _np(block.ln1.bias))
    y = np.zeros_like(x)
    for b in range(batch):
        img = np.roll(h[b].reshape(height, width, c), (-s, -s), axis=(0, 1))
        out = np.zeros_like(img)
        for wi in range(height // w):
            for wj in range(width // w):
                rows, cols = slice(wi * w, (wi + 1) * w), slice(wj * w, (wj + 1) * w)
                tok = img[rows, cols].reshape(w * w, c)
                lab = labels[rows, cols].reshape(w * w)
                q = np.einsum("nc,chd->nhd", tok, wq) + bq
                k = np.einsum("nc,chd->nhd", tok, wk) + bk
                v = np.einsum("nc,chd->nhd", tok, wv) + bv
                o = np.zeros((w * w, heads, d))
                for hd in range(heads):
                    logits = np.zeros((w * w, w * w))
                    for i in range(w * w):
                        for j in range(w * w):
                            dy, dx = i // w - j // w, i % w - j % w
                            bias = table[(dy + w - 1) * (2 * w - 1) + dx + w - 1, hd]
                            logits[i, j] = q[i, hd] @ k[j, hd] / np.sqrt(d) + bias
                            if lab[i] != lab[j]:
                                logits[i, j] = -np.inf
                    p = np.exp(logits - logits.max(-1, keepdims=True))
                    p /= p.sum(-1, keepdims=True)
                    o[:, hd] = p @ v[:, hd]
                out[rows, cols] = (np.einsum("nhd,hdc->nc", o, wo) + bo).reshape(w, w, c)
        y[b] = np.roll(out, (s, s), axis=(0, 1)).reshape(-1, c)
    x = x + y
    m = block.mlp
    h = _layernorm(x, _np(block.ln2.scale), _np(block.ln2.bias))
    h = _gelu_tanh(h @ _np(m.fc1.kernel) + _np(m.fc1.bias)) @ _np(m.fc2.kernel) + _np(m.fc2.bias)
    return x + h


# ------------------------------------------------------------------------------ the tests


def test_window_partition_round_trip():
    x = np.random.default_rng(0).normal(size=(2, 8, 12, 3)).astype(np.float32)
    windows = swin.window_partition(jnp.asarray(x), 4)
    assert windows.shape == (2 * 2 * 3, 16, 3)
    # Window 3 is the first window of the second window row of image 0 (row-major windows).
    tolerances.assert_identical(windows[3], x[0, 4:8, 0:4].reshape(16, 3))
    tolerances.assert_identical(windows[6 + 5], x[1, 4:8, 8:12].reshape(16, 3))
    tolerances.assert_identical(swin.window_reverse(windows, 4, 8, 12), x)


@pytest.mark.parametrize("grid", [(8, 8), (8, 12)])
def test_shifted_window_mask_matches_naive(grid):
    mask = swin.shifted_window_mask(*grid, 4, 2)
    tolerances.assert_identical(mask, _naive_mask(*grid, 4, 2))
    assert mask[0].all() and not mask[-1].all()  # interior window free, corner split


@pytest.mark.parametrize("window", [2, 3, 7])
def test_relative_position_index_matches_double_loop(window):
    n = window * window
    expected = np.zeros((n, n), np.int64)
    for i in range(n):
        for j in range(n):
            dy, dx = i // window - j // window, i % window - j % window
            expected[i, j] = (dy + window - 1) * (2 * window - 1) + (dx + window - 1)
    tolerances.assert_identical(swin.relative_position_index(window), expected)


@pytest.mark.parametrize("shift,shift_masks", [(0, "auto"), (2, "auto"), (2, "regions")])
def test_block_matches_float64_reference(shift, shift_masks):
    block = swin.SwinBlock(
        8,
        2,
        grid=(8, 8),
        window_size=4,
        shift=shift,
        mlp_ratio=2.0,
        dropout_rate=0.0,
        mechanism=attention.get("softmax"),
        shift_masks=shift_masks,
        rngs=nnx.Rngs(_key(0)),
    )
    expected_mode = {0: "none", 2: "pairwise" if shift_masks == "auto" else shift_masks}[shift]
    assert block.shift_masks == expected_mode
    block = _perturb(block)
    x = _normal(2, (2, 64, 8))
    tolerances.assert_close(_forward(block, x), _ref_block(block, x), dtype=jnp.float32)


def test_block_jit_matches_eager():
    block = swin.SwinBlock(
        8,
        2,
        grid=(8, 8),
        window_size=4,
        shift=2,
        mlp_ratio=2.0,
        dropout_rate=0.0,
        mechanism=attention.get("softmax"),
        rngs=nnx.Rngs(_key(0)),
    )
    x = _normal(8, (2, 64, 8))
    tolerances.assert_close(_forward(block, x), block(x), what="jit vs eager")


def test_patch_merging_matches_naive():
    merge = _perturb(swin.PatchMerging(4, (4, 6), rngs=nnx.Rngs(_key(0))))
    x = np.random.default_rng(1).normal(size=(2, 24, 4)).astype(np.float32)
    img = x.astype(np.float64).reshape(2, 4, 6, 4)
    expected = np.zeros((2, 2, 3, 8))
    for b in range(2):
        for i in range(2):
            for j in range(3):
                cat = np.concatenate(
                    [
                        img[b, 2 * i, 2 * j],
                        img[b, 2 * i + 1, 2 * j],
                        img[b, 2 * i, 2 * j + 1],
                        img[b, 2 * i + 1, 2 * j + 1],
                    ]
                )
                cat = _layernorm(cat, _np(merge.norm.scale), _np(merge.norm.bias))
                expected[b, i, j] = cat @ _np(merge.reduction.kernel)
    tolerances.assert_close(merge(jnp.asarray(x)), expected.reshape(2, 6, 8), dtype=jnp.float32)


def test_encoder_gradients_under_jit():
    enc = _encoder(dropout_rate=0.1, drop_path=0.2)
    graphdef, state = nnx.split(enc)
    x = _normal(3, (2, 64, 8))

    def loss(state, x, key):
        return jnp.sum(nnx.merge(graphdef, state)(x, train=True, key=key) ** 2)

    value, grads = jax.jit(jax.value_and_grad(loss))(state, x, _key(4))
    assert np.isfinite(float(value))
    leaves = jax.tree.leaves(grads)
    assert leaves and all(bool(jnp.all(jnp.isfinite(g))) for g in leaves)
    # Block 0 has drop-path rate 0, so its bias table always receives a gradient.
    assert float(jnp.abs(grads["stages"][0][0]["relative_position_bias_table"][...]).sum()) > 0


def test_encoder_shapes_drop_path_rates_and_mask():
    enc = _encoder(depths=(2, 2), heads=(2, 4), drop_path=0.2)
    assert (enc.out_dim, enc.out_grid) == (16, (4, 4))
    rates = [b.drop_path for stage in enc.stages for b in stage]
    assert rates == pytest.approx([0.0, 0.2 / 3, 0.4 / 3, 0.2])  # linear over all blocks
    x = jnp.ones((2, 64, 8))
    # Traced only (the two-stage forward runs for real in test_window_as_large_as_the_grid).
    assert nnx.eval_shape(lambda m, x: m(x), enc, x).shape == (2, 16, 16)
    with pytest.raises(ValueError, match="mask must be None"):
        enc(x, mask=jnp.ones((2, 64), bool))


def test_mechanism_without_bias_input():
    with pytest.raises(errors.ConfigError, match=r"'linear'.*relative_position_bias=False"):
        _encoder({"name": "linear"})
    enc = _encoder({"name": "linear"}, relative_position_bias=False)
    # linear attention takes key padding only: shifted windows run one call per region.
    assert enc.stages[0][1].shift_masks == "regions"
    assert not hasattr(enc.stages[0][0], "relative_position_bias_table")
    y = _forward(enc, _normal(5, (2, 64, 8)))
    assert y.shape == (2, 64, 8) and bool(jnp.all(jnp.isfinite(y)))
    # The FLOP formula counts every call: the shifted block's 2x2 windows hold 1 (interior),
    # 2, 2 and 4 (corner) regions, so 9 window calls of 16 tokens through the 4 projections.
    tally = flops.Tally(train=False, examples=1, elementwise=False)
    backbones.count_flops("swin", enc, tally, n=64, masked=False)
    assert tally.flops["projections"] == (64 + 9 * 16) * 4 * 2 * 8 * 8


@pytest.mark.parametrize("name,mode", [("linear", "regions"), ("softmax", "pairwise")])
def test_shifted_block_keeps_regions_apart(name, mode):
    """Tokens that wrapped round the grid's edge never reach the others: after the roll by -2,
    the original rows 0-1 x columns 0-1 form the corner window's "both wrapped" region, so
    changing the token at (0, 0) changes the block's output there and nowhere else (exactly:
    masked keys contribute exact zeros)."""
    block = swin.SwinBlock(
        8,
        2,
        grid=(8, 8),
        window_size=4,
        shift=2,
        mlp_ratio=2.0,
        dropout_rate=0.0,
        mechanism=attention.get(name),
        relative_position_bias=False,
        rngs=nnx.Rngs(_key(0)),
    )
    assert block.shift_masks == mode
    block = _perturb(block)
    x = _normal(6, (1, 8, 8, 8))
    # One channel only: a shift of all channels of a token would vanish in its LayerNorm.
    x2 = x.at[0, 0, 0, 0].add(5.0)
    ya, yb = (_forward(block, v.reshape(1, 64, 8)).reshape(8, 8, 8) for v in (x, x2))
    region = np.zeros((8, 8), bool)
    region[:2, :2] = True
    tolerances.assert_close(ya[~region], yb[~region], rtol=0, atol=0, what="other regions")
    assert not np.allclose(ya[0, 1], yb[0, 1])  # a neighbour inside the region does change


@pytest.mark.parametrize(
    "cfg,bias",
    [({"name": "sliceformer"}, False), ({"name": "gfsa"}, True), ({"name": "softmax"}, False)],
)
def test_other_mechanisms_run_in_windows(cfg, bias):
    enc = _encoder(cfg, relative_position_bias=bias)
    y = _forward(enc, _normal(7, (2, 64, 8)))
    assert y.shape == (2, 64, 8) and bool(jnp.all(jnp.isfinite(y)))


def test_window_as_large_as_the_grid():
    """The official rule: a resolution no larger than the window is one unshifted window."""
    enc = _encoder(grid=(4, 4), window_size=7, depths=(2, 2), heads=(2, 2))
    assert [(b.window_size, b.shift) for stage in enc.stages for b in stage] == [(4, 0)] * 2 + [
        (2, 0)
    ] * 2
    assert enc.stages[0][0].relative_position_bias_table.shape == (49, 2)
    assert _forward(enc, jnp.ones((1, 16, 8))).shape == (1, 4, 16)
    with pytest.raises(errors.ConfigError, match="window_size"):
        _encoder(grid=(8, 12), window_size=3, depths=(2, 2, 2), heads=(1, 1, 1))


def _params(model) -> int:
    return sum(math.prod(v.shape) for v in jax.tree.leaves(nnx.state(model, nnx.Param)))


@pytest.mark.parametrize(
    "depths,expected", [((2, 2, 6, 2), 28_288_354), ((2, 2, 18, 2), 49_606_258)]
)
def test_parameter_counts_match_official(depths, expected):
    enc = nnx.eval_shape(
        lambda: swin.SwinEncoder(
            grid=(56, 56),
            dim=96,
            depths=depths,
            num_heads=(3, 6, 12, 24),
            window_size=7,
            attention_cfg=SOFTMAX,
            rngs=nnx.Rngs(0),
        )
    )
    assert enc.out_dim == 768 and enc.out_grid == (7, 7)
    patch_embed = 4 * 4 * 3 * 96 + 96  # Conv 4x4, 3 -> 96, with bias
    patch_norm = 2 * 96
    head = 768 * 1000 + 1000
    assert _params(enc) + patch_embed + patch_norm + head == expected


def test_registered_factory_and_flops():
    cfg = ml_collections.ConfigDict(
        dict(
            grid=(8, 8),
            dim=8,
            depths=(2, 2),
            swin_heads=(2, 2),
            window_size=4,
            mlp_ratio=2.0,
            dropout=0.0,
            drop_path=0.1,
            dtype="float32",
        )
    )
    enc = backbones.build(
        "swin", model_cfg=cfg, attention_cfg=SOFTMAX, max_len=64, rngs=nnx.Rngs(0)
    )
    assert "swin" in backbones.names() and isinstance(enc, swin.SwinEncoder)
    with pytest.raises(errors.ConfigError, match="max_len"):
        backbones.build("swin", model_cfg=cfg, attention_cfg=SOFTMAX, max_len=65, rngs=None)
    tally = flops.Tally(train=False, examples=1, elementwise=True)
    backbones.count_flops("swin", enc, tally, n=64, masked=False)
    # Matmuls, by hand: per block q/k/v/out 2·N·4C², MLP 2·N·2·C·2C, attention per window
    # 4·n²·C over N/n windows; the merge 2·(N/4)·4C·2C.
    n, expected = 16, 0
    for tokens, c in ((64, 8), (16, 16)):
        expected += 2 * (2 * tokens * 4 * c * c + 2 * tokens * 2 * c * 2 * c + 4 * tokens * n * c)
    expected += 2 * 16 * 4 * 8 * 2 * 8
    assert tally.matmul == expected
    total, buffers, by_component = tally.parameters(enc)
    assert total == _params(enc) and buffers == 0
    # Everything but the LayerNorms is claimed by a formula.
    norms = sum(_params(m) for _, m in nnx.iter_graph(enc) if isinstance(m, nnx.LayerNorm))
    assert by_component["norms/other"] == norms
    assert by_component["attention"] == 4 * 49 * 2  # the bias tables
    assert all(math.isfinite(v) for v in tally.flops.values())


# ---------------------------------------------------------------- SSA in Swin (SSA Tables 2, 9)

SSA = {
    "name": "ssa",
    "keep": 0.25,
    "sampling": "grid_2d",
    "tiles": (2, 2),
    "sigma_first": 0.75,
    "sigma_last": 0.75,
}


def test_ssa_in_shifted_windows_samples_inside_its_region_only():
    """SSA (four 2 x 2 sub-windows of a 4 x 4 window, a quarter of the sources each) in a
    shifted block, training: the shifted-window mask is gathered with the sources, so the
    wrapped corner token still reaches nothing outside its region, and targets whose sampled
    sources all lie in other regions get zeros, not NaN."""
    block = swin.SwinBlock(
        8,
        2,
        grid=(8, 8),
        window_size=4,
        shift=2,
        mlp_ratio=2.0,
        dropout_rate=0.0,
        mechanism=attention.get("ssa", **{k: v for k, v in SSA.items() if k != "name"}),
        rngs=nnx.Rngs(_key(0)),
    )
    assert block.shift_masks == "pairwise"
    block = _perturb(block)
    x = _normal(6, (1, 8, 8, 8))
    x2 = x.at[0, 0, 0, 0].add(5.0)

    @nnx.jit
    def train_forward(model, v, key):
        return model(v.reshape(1, 64, 8), train=True, key=key).reshape(8, 8, 8)

    region = np.zeros((8, 8), bool)
    region[:2, :2] = True
    for seed in range(3):
        ya, yb = (train_forward(block, v, _key(seed)) for v in (x, x2))
        assert bool(jnp.all(jnp.isfinite(ya)))
        tolerances.assert_close(ya[~region], yb[~region], rtol=0, atol=0, what="other regions")
    # the pattern is resampled per key: two keys give different outputs
    assert not np.allclose(train_forward(block, x, _key(0)), train_forward(block, x, _key(1)))


def test_attention_layers_pick_the_blocks_and_ssa_evaluates_densely():
    """`attention_layers=(1,)`: block 0 is softmax, block 1 SSA. At evaluation SSA is dense
    softmax attention (renormalisation), so the encoder equals the all-softmax one with the
    same weights; in training only block 1 samples."""
    enc = _encoder(SSA, attention_layers=(1,))
    assert [b.attn.mechanism.name for b in enc.stages[0]] == ["softmax", "ssa"]
    dense = _encoder(SOFTMAX)
    x = _normal(8, (2, 64, 8))
    tolerances.assert_close(_forward(enc, x), _forward(dense, x), what="SSA at evaluation")
    with pytest.raises(errors.ConfigError, match=r"attention_layers=\(2,\).*0\.\.1"):
        _encoder(SSA, attention_layers=(2,))


def test_ssa_swin_recipes():
    """SSA Tables 2 and 9's Swin-T rows: W14 windows, SSA in stages 1-3 (S10) or stage 3 (S6),
    locally biased (sigma 0.75 of the window side) or unbiased, +FT the last 10%."""
    c = config_lib.load("vision/imagenet.py:model=swin_t,window=14,ssa=S10")
    assert c.model.window_size == 14 and c.model.attention_layers == tuple(range(10))
    assert (c.attention.name, c.attention.keep, tuple(c.attention.tiles)) == ("ssa", 0.25, (2, 2))
    assert c.attention.sigma_first == c.attention.sigma_last == 0.75
    assert c.dense_finetune_fraction == 0.0
    c = config_lib.load("vision/imagenet.py:model=swin_t,window=14,ssa=S6,ft=1,sampling=unbiased")
    assert c.model.attention_layers == (4, 5, 6, 7, 8, 9) and c.dense_finetune_fraction == 0.1
    assert c.attention.sigma_first == float("inf")
    assert config_lib.load("vision/imagenet.py:model=swin_t,window=14").attention.name == (
        "softmax"
    )
    smoke = config_lib.load("vision/imagenet.py:preset=smoke,model=swin_t,window=14,ssa=S10")
    assert smoke.model.window_size == 8 and smoke.model.attention_layers == (0, 1)
    for bad, message in (
        ("model=deit_s,window=14", "window= and ssa= are Swin's"),
        ("model=swin_t,ft=1", "ft=1 is SSA's"),
        ("model=swin_t,ssa=S8", "unknown SSA layers ssa='S8'"),
        ("model=swin_t,ssa=S6,sampling=biased", "unknown SSA sampling='biased'"),
    ):
        with pytest.raises(errors.ConfigError, match=message):
            config_lib.load(f"vision/imagenet.py:{bad}")
