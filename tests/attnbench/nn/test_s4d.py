"""attnbench.nn.s4d: the S4D backbone against a float64 numpy reference written as explicit
recurrences (one complex state per channel and mode, stepped through time, forward and
backward), the paper's kernel identity (Vandermonde kernel = unrolled recurrence, FFT
convolution = direct convolution), the S4D-Lin / S4D-Inv initialisations, padding (no leak
backwards through the bidirectional kernel), gradients against finite differences, jit, float32
against float64, the config checks, and training on every LRA task at the smoke preset."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest
from flax import nnx
from scipy.special import erf

from attnbench import errors, steps, tasks
from attnbench.nn import backbones, s4d
from tests.lra.test_matrix import _batch, _check, _config, official  # noqa: F401

H, L, N = 4, 9, 6  # width, length, state size (3 conjugate-pair modes)
LENGTHS = (9, 5)  # real tokens of the two examples (padding after them, as LRA)


def _mask():
    return np.arange(L)[None] < np.array(LENGTHS)[:, None]


def _inputs(seed=0):
    return np.random.default_rng(seed).normal(size=(len(LENGTHS), L, H))


def _to64(module):
    nnx.update(module, jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), nnx.state(module)))


def _perturb(module, seed=1, scale=0.3):
    """Moves every parameter off its initial value (LayerNorm scales and biases included), so
    the reference comparison exercises all of them."""
    state = nnx.state(module)
    leaves, treedef = jax.tree.flatten(state)
    keys = jax.random.split(jax.random.key(seed), len(leaves))
    leaves = [
        a + scale * jax.random.normal(k, a.shape, a.dtype)
        for a, k in zip(leaves, keys, strict=True)
    ]
    nnx.update(module, jax.tree.unflatten(treedef, leaves))


def _encoder64(**kw):
    num_layers = kw.pop("num_layers", 2)
    opts = dict(dropout_rate=0.0, state=N, dtype=jnp.float64, param_dtype=jnp.float64)
    opts.update(kw)
    enc = s4d.S4DEncoder(num_layers, H, rngs=nnx.Rngs(0), **opts)
    _perturb(enc)
    return enc


# ------------------------------------------------------------------ float64 numpy reference


def _ssm_params(layer):
    """The layer's parameters as complex numpy arrays: A, B [H, M], C [dirs, H, M], dt, D [H]."""
    g = {k: np.asarray(getattr(layer, k)[...], np.float64) for k in ("log_A_real", "A_imag")}
    copies = layer.dim // layer.n_ssm
    A = np.tile(-np.exp(g["log_A_real"]) + 1j * g["A_imag"], (copies, 1))
    b = np.asarray(layer.B[...], np.float64)
    B = np.tile(b[..., 0] + 1j * b[..., 1], (copies, 1))
    c = np.asarray(layer.C[...], np.float64)
    C = c[..., 0] + 1j * c[..., 1]
    dt = np.exp(np.asarray(layer.log_dt[...], np.float64))
    return A, B, C, dt, np.asarray(layer.D[...], np.float64)


def _ref_ssm(u, layer):
    """y = SSM(u) by the ZOH recurrence, one channel and one time step at a time:
    x_t = A_bar x_{t-1} + B_bar u_t, y_t = 2 Re(C x_t) + D u_t; bidirectional: a second state
    run from the end, x^b_t = A_bar x^b_{t+1} + B_bar u_{t+1}, adding 2 Re(C_b x^b_t)."""
    A, B, C, dt, D = _ssm_params(layer)
    y = np.zeros_like(u)
    batch, length, width = u.shape
    for b in range(batch):
        for h in range(width):
            a_bar = np.exp(dt[h] * A[h])
            b_bar = (a_bar - 1.0) / A[h] * B[h]
            x = np.zeros(A.shape[1], complex)
            for t in range(length):
                x = a_bar * x + b_bar * u[b, t, h]
                y[b, t, h] = 2.0 * np.real(C[0, h] @ x) + D[h] * u[b, t, h]
            if layer.bidirectional:
                x = np.zeros(A.shape[1], complex)
                for t in reversed(range(length)):
                    y[b, t, h] += 2.0 * np.real(C[1, h] @ x)
                    x = a_bar * x + b_bar * u[b, t, h]
    return y


def _ref_layer_norm(x, norm):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    scale, bias = np.asarray(norm.scale[...]), np.asarray(norm.bias[...])
    return (x - mean) / np.sqrt(var + 1e-5) * scale + bias


def _ref_block(x, mask, block):
    u = _ref_layer_norm(x, block.norm) if block.prenorm else x
    u = u * mask[..., None]
    y = _ref_ssm(u, block.ssm)
    y = 0.5 * y * (1.0 + erf(y / math.sqrt(2.0)))  # exact GELU
    z = y @ np.asarray(block.out.kernel[...]) + np.asarray(block.out.bias[...])
    y = z[..., :H] / (1.0 + np.exp(-z[..., H:]))  # GLU: a * sigmoid(b)
    x = x + y
    return x if block.prenorm else _ref_layer_norm(x, block.norm)


def _ref_encoder(x, mask, enc):
    for block in enc.blocks:
        x = _ref_block(x, mask, block)
    if enc.norm is not None:
        x = _ref_layer_norm(x, enc.norm)
    return x * mask[..., None]


# ------------------------------------------------------------------------ reference tests


@pytest.mark.parametrize(
    "opts",
    [
        dict(prenorm=True, bidirectional=True, init="lin"),
        dict(prenorm=False, bidirectional=True, init="inv"),
        dict(prenorm=True, bidirectional=False, init="inv", n_ssm=2),
        dict(prenorm=False, bidirectional=False, init="lin", n_ssm=0),
    ],
)
def test_layer_block_and_encoder_match_float64_reference(opts):
    with jax.enable_x64(True):
        enc = _encoder64(**opts)
        x, mask = _inputs(), _mask()
        u = x * mask[..., None]
        layer = enc.blocks[0].ssm
        np.testing.assert_allclose(
            np.asarray(layer(jnp.asarray(u))), _ref_ssm(u, layer), rtol=1e-9, atol=1e-12
        )
        block = enc.blocks[0]
        got = block(jnp.asarray(x), mask=jnp.asarray(mask))
        np.testing.assert_allclose(
            np.asarray(got), _ref_block(x, mask, block), rtol=1e-9, atol=1e-12
        )
        got = enc(jnp.asarray(x), mask=jnp.asarray(mask))
        assert got.dtype == jnp.float64
        np.testing.assert_allclose(
            np.asarray(got), _ref_encoder(x, mask, enc), rtol=1e-9, atol=1e-12
        )


def test_kernel_equals_unrolled_recurrence_and_fft_equals_direct_convolution():
    """S4D Sec. 3: K = (C B_bar, C A_bar B_bar, ..., C A_bar^{L-1} B_bar) by the Vandermonde
    product; the FFT convolution of the two-sided kernel equals the direct sums."""
    with jax.enable_x64(True):
        layer = _encoder64(num_layers=1).blocks[0].ssm
        A, B, C, dt, _ = _ssm_params(layer)
        k = np.asarray(layer.kernels(L))  # [2, H, L]
        for d in range(2):
            for h in range(H):
                a_bar = np.exp(dt[h] * A[h])
                state = (a_bar - 1.0) / A[h] * B[h]  # A_bar^0 B_bar
                for lag in range(L):
                    want = 2.0 * np.real(C[d, h] @ state)
                    np.testing.assert_allclose(k[d, h, lag], want, rtol=1e-9, atol=1e-12)
                    state = a_bar * state
        u = _inputs(3)
        got = np.asarray(s4d.fft_conv(jnp.asarray(u), s4d.bidirectional_kernel(k[0], k[1])))
        want = np.zeros_like(u)
        for t in range(L):
            for s in range(L):
                want[:, t] += (k[0, :, t - s] if s <= t else k[1, :, s - t - 1]) * u[:, s]
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
        causal = np.asarray(s4d.fft_conv(jnp.asarray(u), jnp.asarray(k[0])))
        want = np.stack([np.convolve(u[0, :, h], k[0, h])[:L] for h in range(H)], -1)
        np.testing.assert_allclose(causal[0], want, rtol=1e-9, atol=1e-12)


def test_initialisation_is_s4d_lin_and_s4d_inv():
    for init, imag in [
        ("lin", np.pi * np.arange(N // 2)),
        ("inv", N / np.pi * (N / (2 * np.arange(N // 2) + 1) - 1)),
    ]:
        layer = s4d.S4DLayer(H, state=N, init=init, dt_min=1e-3, dt_max=1e-1, rngs=nnx.Rngs(0))
        np.testing.assert_allclose(np.asarray(layer.A_imag[...])[0], imag, rtol=1e-6)
        np.testing.assert_allclose(np.exp(np.asarray(layer.log_A_real[...])), 0.5, rtol=1e-6)
        np.testing.assert_array_equal(np.asarray(layer.B[...])[..., 0], 1.0)
        np.testing.assert_array_equal(np.asarray(layer.B[...])[..., 1], 0.0)
    wide = s4d.S4DLayer(512, state=N, dt_min=1e-3, dt_max=1e-1, rngs=nnx.Rngs(0))
    dt = np.exp(np.asarray(wide.log_dt[...]))
    assert dt.min() >= 1e-3 * (1 - 1e-6) and dt.max() <= 1e-1 * (1 + 1e-6)
    # log-uniform: the median of log dt is the midpoint of the log range
    assert abs(np.median(np.log(dt)) - 0.5 * (math.log(1e-3) + math.log(1e-1))) < 0.3
    c = np.asarray(wide.C[...])
    assert c.shape == (2, 512, N // 2, 2) and abs(c.var() - 0.5) < 0.05


@pytest.mark.parametrize("prenorm", [True, False])
def test_padding_does_not_leak_into_real_tokens(prenorm):
    """Changing the padded tokens (after the real ones) leaves every real output unchanged, in
    the bidirectional encoder; without the mask the backward kernel would carry them back."""
    enc = s4d.S4DEncoder(2, H, state=N, prenorm=prenorm, rngs=nnx.Rngs(0))
    x, mask = jnp.asarray(_inputs(), jnp.float32), jnp.asarray(_mask())
    noisy = jnp.where(mask[..., None], x, 50.0 * jax.random.normal(jax.random.key(5), x.shape))
    y, y_noisy = enc(x, mask=mask), enc(noisy, mask=mask)
    np.testing.assert_allclose(np.asarray(y_noisy), np.asarray(y), rtol=1e-6, atol=1e-6)
    assert np.all(np.asarray(y)[~np.asarray(mask)] == 0.0)  # padded outputs are zero
    real = np.asarray(mask)
    unmasked = np.asarray(enc(noisy) - enc(x))[real]
    assert np.abs(unmasked).max() > 1e-3  # the test can fail: unmasked padding does leak


@pytest.mark.slow  # precision, dropout, FLOPs: `make test-slow` (test_table.py is fast)
def test_gradients_finite_and_match_finite_differences():
    with jax.enable_x64(True):
        enc = _encoder64(prenorm=True)
        x, mask = jnp.asarray(_inputs()), jnp.asarray(_mask())
        graphdef, state = nnx.split(enc)
        w = jnp.asarray(np.random.default_rng(7).normal(size=(len(LENGTHS), L, H)))

        def loss(state):
            return jnp.sum(w * nnx.merge(graphdef, state)(x, mask=mask))

        grads = jax.grad(loss)(state)
        assert all(np.all(np.isfinite(g)) for g in jax.tree.leaves(grads))
        flat = dict(nnx.to_flat_state(state))
        gflat = dict(nnx.to_flat_state(grads))
        ssm = ("blocks", 0, "ssm")
        checked = 0
        for path, index in [
            (ssm + ("log_dt",), (1,)),
            (ssm + ("A_imag",), (0, 2)),
            (ssm + ("log_A_real",), (0, 1)),
            (ssm + ("C",), (1, 2, 0, 1)),
            (ssm + ("B",), (0, 1, 1)),
            (ssm + ("D",), (3,)),
            (("blocks", 1, "out", "kernel"), (2, 5)),
        ]:
            value = flat[path][...]
            eps = 1e-6

            def at(delta, path=path, value=value, index=index):
                new = dict(flat)
                var = flat[path].replace(value.at[index].add(delta))
                new[path] = var
                return loss(nnx.from_flat_state(new))

            fd = (at(eps) - at(-eps)) / (2 * eps)
            np.testing.assert_allclose(gflat[path][...][index], fd, rtol=1e-5, atol=1e-8)
            checked += 1
        assert checked == 7


@pytest.mark.slow  # precision, dropout, FLOPs: `make test-slow` (test_table.py is fast)
def test_jit_equals_eager_and_dropout_is_used():
    enc = s4d.S4DEncoder(2, H, state=N, dropout_rate=0.3, tie_dropout=True, rngs=nnx.Rngs(0))
    x, mask = jnp.asarray(_inputs(), jnp.float32), jnp.asarray(_mask())
    eager = enc(x, mask=mask)
    jitted = nnx.jit(lambda m, x, mask: m(x, mask=mask))(enc, x, mask)
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(eager), rtol=1e-5, atol=1e-6)
    key = jax.random.key(3)
    train = enc(x, mask=mask, train=True, key=key)
    train_jit = nnx.jit(lambda m, x, mask, k: m(x, mask=mask, train=True, key=k))(enc, x, mask, key)
    np.testing.assert_allclose(np.asarray(train_jit), np.asarray(train), rtol=1e-5, atol=1e-6)
    assert np.abs(np.asarray(train - eager)).max() > 1e-3


@pytest.mark.slow  # precision, dropout, FLOPs: `make test-slow` (test_table.py is fast)
def test_float32_matches_float64():
    with jax.enable_x64(True):
        enc64 = _encoder64()
        x, mask = _inputs(), _mask()
        want = np.asarray(enc64(jnp.asarray(x), mask=jnp.asarray(mask)))
        enc32 = s4d.S4DEncoder(2, H, state=N, rngs=nnx.Rngs(0))
        nnx.update(enc32, jax.tree.map(lambda a: jnp.asarray(a, jnp.float32), nnx.state(enc64)))
        got = enc32(jnp.asarray(x, jnp.float32), mask=jnp.asarray(mask))
        assert got.dtype == jnp.float32
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-4)


@pytest.mark.slow  # precision, dropout, FLOPs: `make test-slow` (test_table.py is fast)
def test_bfloat16_compute_keeps_float32_kernel():
    enc = s4d.S4DEncoder(1, H, state=N, dtype=jnp.bfloat16, rngs=nnx.Rngs(0))
    x, mask = jnp.asarray(_inputs(), jnp.float32), jnp.asarray(_mask())
    y = enc(x, mask=mask)
    assert y.dtype == jnp.bfloat16
    assert enc.blocks[0].ssm.kernels(L).dtype == jnp.float32
    assert np.all(np.isfinite(np.asarray(y, np.float32)))


# --------------------------------------------------------------------------- config checks


def _model_cfg(**fields):
    m = ml_collections.ConfigDict(
        dict(num_layers=1, dim=8, dropout=0.0, positions="none", dtype="float32")
    )
    for k, v in fields.items():
        m[k] = v
    return m


def _build(m):
    return backbones.build("s4d", model_cfg=m, attention_cfg={}, max_len=16, rngs=nnx.Rngs(0))


def test_factory_reads_fields_and_refuses_bad_ones():
    enc = _build(_model_cfg(s4d_state=4, s4d_init="inv", s4d_prenorm=False, s4d_n_ssm=0))
    layer = enc.blocks[0].ssm
    assert layer.state == 4 and layer.n_ssm == 8 and enc.norm is None
    assert layer.A_imag[...].shape == (8, 2)
    assert "s4d" in backbones.names()
    for bad in (
        dict(positions="sinusoidal"),
        dict(s4d_norm="batch"),
        dict(s4d_init="legs"),
        dict(s4d_state=5),
        dict(s4d_n_ssm=3),
        dict(s4d_dt_min=0.1, s4d_dt_max=0.01),
    ):
        with pytest.raises(errors.ConfigError):
            _build(_model_cfg(**bad))


# ------------------------------------------------------------------------ LRA at smoke scale

TASKS = [
    pytest.param(t, marks=() if t == "listops" else pytest.mark.slow)
    for t in ("listops", "text", "retrieval", "image", "pathfinder")
]


@pytest.mark.parametrize("task", TASKS)
def test_trains_on_lra_task(task, official):  # noqa: F811
    config = _config(task, "", official, deterministic=True)
    with config.unlocked():
        config.model.encoder = "s4d"
        config.model.positions = "none"
        config.model.s4d_state = 4
    task_obj = tasks.get(config.task)
    model = task_obj.build_model(config, nnx.Rngs(params=0))
    if task == "retrieval":
        from lra.models import DualEncoderClassifier

        assert isinstance(model, DualEncoderClassifier)
    assert isinstance(model.encoder.encoder, s4d.S4DEncoder)
    batch = _batch(task, config)
    built = steps.setup(task_obj, config)
    step, state = built.train_step(0), built.state
    losses = []
    for _ in range(4):
        state, metrics = step(state, batch)
        losses.append(float(metrics["train_loss"]))
    _check(losses)
