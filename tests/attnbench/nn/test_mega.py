"""MEGA (Ma et al. 2023, arXiv 2209.10655) as a backbone: a float64 numpy reference of the
block in its plainest form (the EMA as its recurrence over time steps, the attention as loops
over chunks and positions), compared with the module under x64; the paper's properties (the
closed-form EMA kernel equals the recurrence; chunked attention equals full attention when the
chunk covers the sequence); padding; gradients; jit; dtypes; LRA smoke training."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from attnbench import config as config_lib
from attnbench import errors
from attnbench.nn import backbones, mega

D, Z, H, NDIM, FFN = 6, 4, 10, 3, 12


def _np(p):
    return np.asarray(p[...], np.float64)


def _silu(x):
    return x / (1.0 + np.exp(-x))


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# ------------------------------------------------------------------------- numpy reference


def ref_ema(ema, x, mask, truncation=None):
    """x [N, d] one sequence; the recurrence h_t = a beta x_t + (1 - a delta) h_{t-1} forward
    and backward (or, with truncation, the explicit truncated kernel sum)."""
    n, d = x.shape
    a, dl = _sigmoid(_np(ema.alpha)), _sigmoid(_np(ema.delta))
    beta, eta, omega = _np(ema.beta), _np(ema.eta), _np(ema.omega)
    scale = math.sqrt(1.0 / a.shape[1])
    xm = x * mask[:, None]
    y = np.zeros((n, d))
    if truncation is None:
        for half, order in ((slice(0, d), range(n)), (slice(d, 2 * d), range(n - 1, -1, -1))):
            h = np.zeros((d, a.shape[1]))
            for t in order:
                h = a[half] * beta[half] * xm[t][:, None] + (1 - a[half] * dl[half]) * h
                y[t] += scale * (eta[half] * h).sum(1)
    else:
        for t in range(n):
            for j in range(min(truncation, n)):
                kf = scale * (eta[:d] * a[:d] * beta[:d] * (1 - a[:d] * dl[:d]) ** j).sum(1)
                kb = scale * (eta[d:] * a[d:] * beta[d:] * (1 - a[d:] * dl[d:]) ** j).sum(1)
                if t - j >= 0:
                    y[t] += kf * xm[t - j]
                if t + j < n:
                    y[t] += kb * xm[t + j]
    return _silu(y + omega * x)


def ref_norm(norm, x, mask):
    """x [B, N, d]."""
    if norm.kind == "scalenorm":
        return x * _np(norm.scale) / np.sqrt((x**2).mean(-1, keepdims=True) + 1e-5)
    if norm.kind == "layernorm":
        mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    else:
        real = x[mask]  # [tokens, d]
        mean, var = real.mean(0), real.var(0)
    return (x - mean) / np.sqrt(var + 1e-5) * _np(norm.scale) + _np(norm.bias)


def ref_bias(rel, n):
    out = np.zeros((n, n))
    if isinstance(rel, mega.SimpleRelPos):
        w, m = _np(rel.weight), rel.max_positions
        for i in range(n):
            for j in range(n):
                out[i, j] = w[j - i + m - 1]
        return out
    a, b = _np(rel.a), _np(rel.b)
    half = a.shape[0] // 2

    def rot(v, p):
        r = np.zeros_like(v)
        for f in range(half):
            th = p * 10000.0 ** (-f / half)
            r[f] = v[f] * math.cos(th) - v[f + half] * math.sin(th)
            r[f + half] = v[f + half] * math.cos(th) + v[f] * math.sin(th)
        return r

    for i in range(n):
        for j in range(n):
            out[i, j] = rot(a, i) @ rot(b, j)
    return out


def _laplace(x):
    from scipy.special import erf

    mu, sigma = math.sqrt(0.5), math.sqrt(0.25 / math.pi)
    return 0.5 * (1 + erf((x - mu) / (sigma * math.sqrt(2))))


def ref_attention(layer, q, k, v, mask):
    """One sequence: explicit loops over chunks, queries and keys."""
    n, z = q.shape
    c = n if layer.chunk_size <= 0 or n <= layer.chunk_size else layer.chunk_size
    out = np.zeros((n, v.shape[1]))
    for start in range(0, n, c):
        idx = list(range(start, min(start + c, n)))
        bias = ref_bias(layer.rel_pos, c)
        real = [j for j in idx if mask[j]]
        for i in idx:
            if layer.attention == "softmax":
                keys = real if real else idx
                s = np.array(
                    [q[i] @ k[j] / math.sqrt(z) + bias[i - start, j - start] for j in keys]
                )
                w = np.exp(s - s.max())
                w /= w.sum()
            else:
                keys = real
                length = max(len(real), 1)
                w = np.array(
                    [_laplace(q[i] @ k[j] / length + bias[i - start, j - start]) for j in keys]
                )
            for wj, j in zip(w, keys, strict=True):
                out[i] += wj * v[j]
    return out


def _lin(lin, x):
    return x @ _np(lin.kernel) + _np(lin.bias)


def ref_layer(layer, x, mask):
    """x [B, N, d], mask [B, N] bool."""
    residual = x
    if layer.prenorm:
        x = ref_norm(layer.norm, x, mask)
    out = np.zeros_like(x)
    for bi in range(x.shape[0]):
        xb = x[bi]
        v = _silu(_lin(layer.v_proj, xb))
        mx = ref_ema(layer.ema, xb, mask[bi], layer.ema.truncation)
        base = _lin(layer.mx_proj, mx)
        d, z, h = layer.dim, layer.zdim, layer.hdim
        u = _sigmoid(base[:, :d])
        zz = _silu(base[:, d : d + z])
        r = _silu(base[:, d + z : d + z + h])
        hx = base[:, d + z + h :]
        sc, off = _np(layer.qk_scale), _np(layer.qk_offset)
        q, k = zz * sc[0] + off[0], zz * sc[1] + off[1]
        o = ref_attention(layer, q, k, v, mask[bi])
        hh = _silu(hx + _lin(layer.h_proj, o * r))
        out[bi] = residual[bi] + u * (hh - residual[bi])
    if not layer.prenorm:
        out = ref_norm(layer.norm, out, mask)
    return out


def ref_nffn(ffn, x, mask):
    residual = x
    if ffn.prenorm:
        x = ref_norm(ffn.norm, x, mask)
    x = _lin(ffn.fc2, _silu(_lin(ffn.fc1, x))) + residual
    return x if ffn.prenorm else ref_norm(ffn.norm, x, mask)


def ref_encoder(enc, x, mask):
    x = x * mask[..., None]
    for block in enc.blocks:
        x = ref_nffn(block.nffn, ref_layer(block.mega, x, mask), mask)
    if enc.final_norm is not None:
        x = ref_norm(enc.final_norm, x, mask)
    return x * mask[..., None]


# ---------------------------------------------------------------------------------- helpers


def _inputs(b=2, n=7, d=D, seed=0, lengths=(7, 4)):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(b, n, d))
    mask = np.arange(n)[None] < np.asarray(lengths)[:, None]
    return x, mask


def _layer(dtype=jnp.float64, max_len=8, seed=0, **kw):
    return mega.MegaLayer(D, Z, H, NDIM, max_len=max_len, dtype=dtype, rngs=nnx.Rngs(seed), **kw)


def _encoder(dtype=jnp.float64, max_len=8, seed=0, num_layers=2, **kw):
    return mega.MegaEncoder(
        num_layers=num_layers,
        dim=D,
        zdim=Z,
        hdim=H,
        ndim=NDIM,
        ffn_dim=FFN,
        max_len=max_len,
        dtype=dtype,
        rngs=nnx.Rngs(seed),
        **kw,
    )


LAYER_CASES = [
    dict(),  # LRA text defaults: softmax, simple bias, layernorm, postnorm, full attention
    dict(attention="laplace", norm="batchnorm", prenorm=True),  # LRA image/pathfinder style
    dict(norm="scalenorm", rel_pos="rotary"),
    dict(chunk_size=3, attention="laplace"),  # 7 tokens: chunks 3, 3, 1 (+2 padded inside)
    dict(chunk_size=4, prenorm=True, norm="scalenorm"),
    dict(truncation=3),
]


# -------------------------------------------------------------------------------- properties


def test_ema_closed_form_kernel_equals_recurrence():
    """Sec. 3.1: the kernel K_j = sum_n eta alpha beta (1 - alpha delta)^j convolved with x
    (FFT, both directions) equals the unrolled recurrence."""
    with jax.enable_x64(True):
        ema = mega.MultiDimEMA(D, NDIM, rngs=nnx.Rngs(3))
        x, mask = _inputs(n=9, lengths=(9, 5))
        got = np.asarray(ema(jnp.asarray(x), jnp.asarray(mask)))
        for b in range(2):
            np.testing.assert_allclose(got[b], ref_ema(ema, x[b], mask[b]), rtol=1e-10, atol=1e-12)
        # and the kernel itself: impulse response of the forward recurrence
        k = np.asarray(ema.kernel(9, jnp.float64))[:D]
        a, dl = _sigmoid(_np(ema.alpha))[:D], _sigmoid(_np(ema.delta))[:D]
        beta, eta = _np(ema.beta)[:D], _np(ema.eta)[:D]
        h = a * beta  # impulse at t = 0
        for j in range(9):
            np.testing.assert_allclose(k[:, j], (eta * h).sum(1) / math.sqrt(NDIM), rtol=1e-12)
            h = (1 - a * dl) * h


def test_chunk_covering_the_sequence_equals_full_attention():
    """Sec. 3.5: Mega-chunk with one chunk over the whole sequence is Mega."""
    with jax.enable_x64(True):
        x, mask = _inputs(n=8, lengths=(8, 5))
        for rel in ("simple", "rotary"):
            full = _layer(max_len=8, rel_pos=rel)
            chunked = _layer(max_len=8, rel_pos=rel, chunk_size=8)
            big = _layer(max_len=8, rel_pos=rel, chunk_size=16)
            ref = np.asarray(full(jnp.asarray(x), mask=jnp.asarray(mask)))
            for m in (chunked, big):
                got = m(jnp.asarray(x), mask=jnp.asarray(mask))
                np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-12, atol=1e-12)
            # and a smaller chunk does change it (the check can fail)
            small = _layer(max_len=8, rel_pos=rel, chunk_size=4)
            if rel == "rotary":  # same parameters (the simple bias's table is chunk-sized)
                got = np.asarray(small(jnp.asarray(x), mask=jnp.asarray(mask)))
                assert np.abs(got - ref).max() > 1e-6


# -------------------------------------------------------------------------- vs. the reference


@pytest.mark.parametrize(
    "kw", LAYER_CASES, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()) or "default"
)
def test_layer_matches_numpy_reference(kw):
    with jax.enable_x64(True):
        layer = _layer(**kw)
        x, mask = _inputs()
        got = np.asarray(layer(jnp.asarray(x), mask=jnp.asarray(mask)))
        np.testing.assert_allclose(got, ref_layer(layer, x, mask), rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize(
    "kw", [dict(), dict(prenorm=True, norm="batchnorm", attention="laplace", chunk_size=4)]
)
def test_encoder_matches_numpy_reference(kw):
    with jax.enable_x64(True):
        enc = _encoder(**kw)
        x, mask = _inputs()
        got = np.asarray(enc(jnp.asarray(x), mask=jnp.asarray(mask)))
        np.testing.assert_allclose(got, ref_encoder(enc, x, mask), rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("kw", LAYER_CASES[:3] + [dict(chunk_size=4)])
def test_padding_never_reaches_real_tokens(kw):
    """Padding after the real tokens (as LRA pads) cannot leak backwards through the
    bidirectional EMA or into the attention: the real tokens' outputs equal those of the
    unpadded sequence, whatever the padded embeddings hold."""
    with jax.enable_x64(True):
        enc = _encoder(max_len=10, **kw)
        rng = np.random.default_rng(1)
        x = rng.normal(size=(1, 10, D))
        mask = np.arange(10)[None] < 6
        out = np.asarray(enc(jnp.asarray(x), mask=jnp.asarray(mask)))
        x2 = x.copy()
        x2[:, 6:] = 100 * rng.normal(size=(1, 4, D))
        out2 = np.asarray(enc(jnp.asarray(x2), mask=jnp.asarray(mask)))
        alone = np.asarray(enc(jnp.asarray(x[:, :6]), mask=jnp.asarray(mask[:, :6])))
        np.testing.assert_allclose(out2[:, :6], out[:, :6], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(out[:, :6], alone, rtol=1e-9, atol=1e-11)
        # without the mask the padding does leak (so the checks above can fail)
        leaky = np.asarray(enc(jnp.asarray(x2), mask=None))
        assert np.abs(leaky[:, :6] - out[:, :6]).max() > 1e-6


@pytest.mark.slow  # precision, dropout, FLOPs: `make test-slow` (test_table.py is fast)
def test_gradients_finite_and_match_finite_differences():
    with jax.enable_x64(True):
        enc = _encoder(prenorm=True, attention="laplace", chunk_size=4)
        x, mask = _inputs()
        x, mask = jnp.asarray(x), jnp.asarray(mask)
        graphdef, state = nnx.split(enc)

        def loss(state):
            out = nnx.merge(graphdef, state)(x, mask=mask)
            return (out * jnp.sin(jnp.arange(out.size).reshape(out.shape))).sum()

        grads = jax.grad(loss)(state)
        flat = dict(nnx.to_flat_state(grads))
        for g in flat.values():
            assert np.all(np.isfinite(np.asarray(g[...])))
        checked = 0
        for path, g in flat.items():
            name = "/".join(map(str, path))
            if not any(
                s in name
                for s in ("ema/alpha", "ema/delta", "qk_scale", "rel_pos", "mx_proj/kernel")
            ):
                continue
            value = np.asarray(dict(nnx.to_flat_state(state))[path][...])
            idx = (0,) * value.ndim
            eps = 1e-6

            def shifted(sign, path=path, value=value, idx=idx, eps=eps):
                v = value.astype(np.float64)
                v[idx] += sign * eps
                s = nnx.from_flat_state(
                    {**dict(nnx.to_flat_state(state)), path: nnx.Param(jnp.asarray(v))}
                )
                return float(loss(s))

            fd = (shifted(1) - shifted(-1)) / (2 * eps)
            np.testing.assert_allclose(float(np.asarray(g[...])[idx]), fd, rtol=1e-5, atol=1e-8)
            checked += 1
        assert checked >= 5


@pytest.mark.slow  # precision, dropout, FLOPs: `make test-slow` (test_table.py is fast)
def test_jit_equals_eager_and_float32_tracks_float64():
    x, mask = _inputs()
    with jax.enable_x64(True):
        enc64 = _encoder(prenorm=True, norm="batchnorm", attention="laplace")
        ref = np.asarray(enc64(jnp.asarray(x), mask=jnp.asarray(mask)))
    enc = _encoder(dtype=jnp.float32, prenorm=True, norm="batchnorm", attention="laplace")
    xs, ms = jnp.asarray(x, jnp.float32), jnp.asarray(mask)
    eager = np.asarray(enc(xs, mask=ms))
    jitted = np.asarray(nnx.jit(lambda m, x, k: m(x, mask=k))(enc, xs, ms))
    assert eager.dtype == np.float32
    np.testing.assert_allclose(jitted, eager, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(eager, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.slow  # precision, dropout, FLOPs: `make test-slow` (test_table.py is fast)
def test_dropout_in_training_only():
    enc = _encoder(dtype=jnp.float32, dropout=0.3, attention_dropout=0.2, hidden_dropout=0.1)
    x, mask = _inputs()
    x, mask = jnp.asarray(x, jnp.float32), jnp.asarray(mask)
    ev = enc(x, mask=mask)
    a = enc(x, mask=mask, train=True, key=jax.random.key(1))
    b = enc(x, mask=mask, train=True, key=jax.random.key(1))
    c = enc(x, mask=mask, train=True, key=jax.random.key(2))
    np.testing.assert_array_equal(a, b)
    assert np.abs(np.asarray(a - c)).max() > 1e-4
    assert np.abs(np.asarray(a - ev)).max() > 1e-4
    assert np.all(np.isfinite(np.asarray(a)))


# -------------------------------------------------------------------------------- registry


def _config(task="listops", **fields):
    c = config_lib.load(f"lra/{task}.py:preset=smoke")
    with c.unlocked():
        c.model.encoder = "mega"
        c.model.pool = "mean"  # MEGA's LRA models mean-pool ("mp")
        for k, v in fields.items():
            c.model[k] = v
    return c


def test_registered_and_config_fields_checked():
    assert "mega" in backbones.names()
    c = _config(mega_ndim=4, mega_chunk_size=8, mega_norm="scalenorm", mega_prenorm=True)
    enc = backbones.build(
        "mega", model_cfg=c.model, attention_cfg=c.attention, max_len=20, rngs=nnx.Rngs(0)
    )
    assert isinstance(enc, mega.MegaEncoder) and enc.final_norm is not None
    layer = enc.blocks[0].mega
    assert layer.ema.alpha.shape == (2 * c.model.dim, 4) and layer.chunk_size == 8
    assert layer.rel_pos.weight.shape == (2 * 8 - 1,)
    for bad in (dict(mega_norm="groupnorm"), dict(mega_attention="relu2"), dict(mega_chunk_size=0)):
        with pytest.raises(errors.ConfigError):
            backbones.build(
                "mega",
                model_cfg=_config(**bad).model,
                attention_cfg=c.attention,
                max_len=20,
                rngs=nnx.Rngs(0),
            )


# ------------------------------------------------------------------------- LRA smoke training

_LRA_FIELDS = {
    # The official per-task choices at smoke size
    # (facebookresearch/mega examples/mega/README.lra.md)
    "listops": dict(mega_attention="softmax", mega_norm="layernorm"),
    "text": dict(mega_attention="softmax", mega_norm="scalenorm"),
    "retrieval": dict(mega_attention="softmax", mega_norm="scalenorm"),
    "image": dict(
        mega_attention="laplace", mega_norm="batchnorm", mega_prenorm=True, mega_chunk_size=128
    ),
    "pathfinder": dict(
        mega_attention="laplace", mega_norm="batchnorm", mega_prenorm=True, mega_chunk_size=128
    ),
}


def _losses(task, official):
    from tests.lra import test_matrix

    c = test_matrix._config(task, "", official, deterministic=True)
    with c.unlocked():
        c.model.encoder = "mega"
        c.model.pool = "mean"
        c.model.mega_ndim = 4
        for k, v in _LRA_FIELDS[task].items():
            c.model[k] = v
    from attnbench import steps, tasks

    task_obj = tasks.get(c.task)
    batch = test_matrix._batch(task, c)
    built = steps.setup(task_obj, c)
    step, state = built.train_step(0), built.state
    out = []
    for _ in range(test_matrix._STEPS):
        state, metrics = step(state, batch)
        out.append(float(metrics["train_loss"]))
    return out


@pytest.fixture(scope="module")
def official(tmp_path_factory):
    from tests.lra import test_matrix

    tmp = tmp_path_factory.mktemp("lra-official")
    rng = np.random.default_rng(0)
    return {
        "text": str(test_matrix._write_aclimdb(tmp / "imdb", rng)),
        "retrieval": str(test_matrix._write_aan(tmp / "aan", rng)),
        "image": str(test_matrix._write_cifar(tmp / "cifar", rng)),
    }


@pytest.mark.parametrize(
    "task",
    [pytest.param(t, marks=() if t == "listops" else pytest.mark.slow) for t in _LRA_FIELDS],
)
def test_trains_on_lra_smoke(task, official):
    from tests.lra import test_matrix

    losses = _losses(task, official)
    test_matrix._check(losses)
