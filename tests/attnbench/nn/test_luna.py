"""attnbench.nn.luna: the Luna encoder against a float64 numpy reference written with explicit
loops (per layer and whole backbone, with key padding and the dynamic projection), padding,
gradients, jit, precision, Luna's properties (linear in n: no n x n array in the jaxpr at n = 2048;
the packed sequence carried between layers depends on the input; unpacking reads all l packed
rows, so information flows in both directions), config checks, the FLOP formula against XLA,
and training on every LRA task at the smoke preset."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from scipy.special import erf

from attnbench import config as config_lib
from attnbench import errors, steps, tasks
from attnbench.nn import backbones, flops, layers, luna
from tests.lra.test_matrix import _batch, _check, _config, official  # noqa: F401

ATTN = {"name": "softmax", "dropout_rate": 0.0, "implementation": "xla"}
EPS = 1e-5


# ------------------------------------------------------------------- numpy float64 reference


def _np(v):
    return np.asarray(v[...], np.float64)


def _linear(mod, x):
    """A LinearGeneral / Linear as an explicit `x @ W + b` with heads flattened."""
    w = _np(mod.kernel)
    fan_in = math.prod(w.shape[: len(getattr(mod, "in_features", (0,)))]) if w.ndim == 3 else None
    w = w.reshape(fan_in, -1) if fan_in else w
    return x @ w + _np(mod.bias).reshape(-1)


def _layer_norm(mod, x):
    out = np.empty_like(x)
    for i, row in enumerate(x):
        mu = row.sum() / row.size
        var = ((row - mu) ** 2).sum() / row.size
        out[i] = (row - mu) / math.sqrt(var + EPS) * _np(mod.scale) + _np(mod.bias)
    return out


def _attention(q, k, v, heads, key_ok):
    """Multi-head softmax attention, one query row and one head at a time; `key_ok[j]` False
    removes key j."""
    nq, width = q.shape
    hd = width // heads
    out = np.zeros((nq, v.shape[1]))
    for h in range(heads):
        cols = slice(h * hd, (h + 1) * hd)
        for i in range(nq):
            scores = [
                float(q[i, cols] @ k[j, cols]) / math.sqrt(hd)
                for j in range(k.shape[0])
                if key_ok[j]
            ]
            keys = [j for j in range(k.shape[0]) if key_ok[j]]
            top = max(scores)
            weights = [math.exp(s - top) for s in scores]
            total = sum(weights)
            for w, j in zip(weights, keys, strict=True):
                out[i, cols] += w / total * v[j, cols]
    return out


def _gelu(x):
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def ref_layer(block, x, p, x_ok, p_ok, heads):
    """One Luna layer on one example: x `[n, d]`, p `[l, d]`."""
    y_p = _attention(
        _linear(block.pack_query, p),
        _linear(block.pack_key, x),
        _linear(block.pack_value, x),
        heads,
        x_ok,
    )
    unpacked = _attention(
        _linear(block.query, x), _linear(block.key, y_p), _linear(block.value, y_p), heads, p_ok
    )
    y_x = _linear(block.out, unpacked)
    x_a = _layer_norm(block.norm_x, x + y_x)
    p_new = _layer_norm(block.norm_p, p + y_p)
    ffn = _linear(block.mlp.fc2, _gelu(_linear(block.mlp.fc1, x_a)))
    return _layer_norm(block.norm_ffn, x_a + ffn), p_new


def ref_encoder(enc, x, mask, heads):
    """The whole backbone on a batch, example by example (sinusoidal positions)."""
    b, n, d = x.shape
    plen = enc.proj_len
    pe = np.asarray(layers.sinusoidal_positions(enc.max_len, d), np.float64)
    ppe = np.asarray(layers.sinusoidal_positions(plen, d), np.float64)
    outs = []
    for e in range(b):
        xe = x[e] + pe[:n]
        pe_ = math.sqrt(d) * _np(enc.p_embedding) + ppe
        xe, pe_ = _layer_norm(enc.embed_norm_x, xe), _layer_norm(enc.embed_norm_p, pe_)
        real = int(mask[e].sum())
        xe = xe * mask[e][:, None]
        p_ok = [i < real for i in range(plen)]
        for block in enc.blocks:
            xe, pe_ = ref_layer(block, xe, pe_, list(mask[e]), p_ok, heads)
        outs.append(xe * mask[e][:, None])
    return np.stack(outs)


# ------------------------------------------------------------------------------- helpers


def _encoder(*, layers_=2, dim=16, heads=4, mlp=24, plen=6, max_len=12, dtype=jnp.float32, **kw):
    return luna.LunaEncoder(
        num_layers=layers_,
        dim=dim,
        num_heads=heads,
        mlp_dim=mlp,
        dropout_rate=kw.pop("dropout", 0.0),
        attention_cfg=kw.pop("attention_cfg", ATTN),
        max_len=max_len,
        proj_len=plen,
        dtype=dtype,
        rngs=nnx.Rngs(kw.pop("seed", 0)),
        **kw,
    )


def _to64(module):
    state = nnx.state(module)
    nnx.update(module, jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), state))
    return module


def _inputs(b=2, n=12, d=16, lengths=(12, 4), seed=1, dtype=np.float64):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(b, n, d)).astype(dtype)
    mask = np.arange(n)[None, :] < np.asarray(lengths)[:, None]
    return x, mask


# ------------------------------------------------------------------------ exactness (float64)


def test_layer_matches_reference_float64():
    with jax.enable_x64(True):
        enc = _to64(_encoder(layers_=1, dtype=jnp.float64))
        block = enc.blocks[0]
        x, mask = _inputs()
        rng = np.random.default_rng(2)
        p = rng.normal(size=(2, 6, 16))
        p_mask = np.arange(6)[None, :] < np.array([[6], [3]])
        got_x, got_p = block(jnp.asarray(x), jnp.asarray(p), mask=mask, p_mask=p_mask)
        for e in range(2):
            want_x, want_p = ref_layer(block, x[e], p[e], list(mask[e]), list(p_mask[e]), 4)
            # padded rows of x are free (nothing reads them): compare the real ones
            real = mask[e]
            np.testing.assert_allclose(np.asarray(got_x[e])[real], want_x[real], rtol=1e-9)
            np.testing.assert_allclose(np.asarray(got_p[e]), want_p, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("init", ["xavier", "bert"])
def test_encoder_matches_reference_float64(init):
    """Two layers, sinusoidal positions, one short example (4 real tokens < l = 6 packed rows:
    the dynamic projection masks rows 4, 5 of its unpack attention)."""
    with jax.enable_x64(True):
        enc = _to64(_encoder(dtype=jnp.float64, init=init))
        x, mask = _inputs()
        got = np.asarray(enc(jnp.asarray(x), mask=jnp.asarray(mask)))
        np.testing.assert_allclose(got, ref_encoder(enc, x, mask, 4), rtol=1e-9, atol=1e-12)


def test_dynamic_projection_changes_short_sequences_only():
    with jax.enable_x64(True):
        on = _to64(_encoder(dtype=jnp.float64))
        off = _to64(_encoder(dtype=jnp.float64, dynamic_projection=False))
        x, mask = _inputs()
        a, b = on(jnp.asarray(x), mask=mask), off(jnp.asarray(x), mask=mask)
        np.testing.assert_allclose(a[0], b[0], rtol=1e-12)  # 12 real tokens >= l: same
        assert not np.allclose(a[1], b[1])  # 4 real tokens < l: rows 4, 5 masked


def test_padding_does_not_influence_real_tokens():
    enc = _encoder()
    x, mask = _inputs(dtype=np.float32)
    base = np.asarray(enc(jnp.asarray(x), mask=mask))
    noisy = x.copy()
    noisy[~mask] = 100.0 * np.random.default_rng(5).normal(size=noisy[~mask].shape)
    out = np.asarray(enc(jnp.asarray(noisy), mask=mask))
    np.testing.assert_allclose(out[mask], base[mask], rtol=1e-6, atol=1e-6)
    assert np.all(out[~mask] == 0.0)
    # more padding after the real tokens changes nothing either (example 1, 4 real tokens)
    longer = np.concatenate([x[1:2, :4], np.ones((1, 8, 16), np.float32)], axis=1)
    short = np.concatenate([x[1:2, :4], np.zeros((1, 2, 16), np.float32)], axis=1)
    m_long = np.arange(12)[None] < 4
    m_short = np.arange(6)[None] < 4
    a = np.asarray(enc(jnp.asarray(longer), mask=m_long))[0, :4]
    b = np.asarray(enc(jnp.asarray(short), mask=m_short))[0, :4]
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.slow  # precision, dropout, FLOPs: `make test-slow` (test_table.py is fast)
def test_gradients_finite_and_match_finite_differences():
    with jax.enable_x64(True):
        enc = _to64(_encoder(dtype=jnp.float64))
        x, mask = _inputs()
        x = jnp.asarray(x)
        graphdef, state = nnx.split(enc)

        def loss(state):
            out = nnx.merge(graphdef, state)(x, mask=mask)
            return jnp.sum(jnp.sin(out))

        grads = jax.grad(loss)(state)
        assert all(bool(jnp.all(jnp.isfinite(g))) for g in jax.tree.leaves(grads))
        flat = dict(nnx.to_flat_state(state))
        gflat = dict(nnx.to_flat_state(grads))
        checked = 0
        for path in flat:
            name = "/".join(map(str, path))
            if not any(
                s in name
                for s in (
                    "p_embedding",
                    "pack_query/kernel",
                    "blocks/1/key/bias",
                    "blocks/0/norm_p/scale",
                    "mlp/fc1/kernel",
                )
            ):
                continue
            value = np.asarray(flat[path][...])
            idx = tuple(i // 2 for i in value.shape)
            h = 1e-6

            def shifted(delta, path=path, value=value, idx=idx):
                v = value.copy()
                v[idx] += delta
                s = jax.tree.map(lambda a: a, state)
                f = dict(nnx.to_flat_state(s))
                f[path].set_value(jnp.asarray(v))
                return float(loss(nnx.from_flat_state(f)))

            fd = (shifted(h) - shifted(-h)) / (2 * h)
            g = float(np.asarray(gflat[path][...])[idx])
            assert g == pytest.approx(fd, rel=1e-5, abs=1e-8), name
            checked += 1
        assert checked >= 5


@pytest.mark.slow  # precision, dropout, FLOPs: `make test-slow` (test_table.py is fast)
def test_jit_equals_eager_and_float32_close_to_float64():
    enc = _encoder()
    x, mask = _inputs(dtype=np.float32)
    eager = enc(jnp.asarray(x), mask=mask)
    jitted = nnx.jit(lambda m, x, mask: m(x, mask=mask))(enc, jnp.asarray(x), mask)
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(eager), rtol=1e-5, atol=1e-6)
    with jax.enable_x64(True):
        enc64 = _encoder(dtype=jnp.float64)  # the float32 model's parameters, in float64
        state32 = nnx.state(enc)
        nnx.update(enc64, jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), state32))
        out64 = np.asarray(enc64(jnp.asarray(x, jnp.float64), mask=mask))
    np.testing.assert_allclose(np.asarray(eager), out64, rtol=1e-4, atol=1e-4)


@pytest.mark.slow  # precision, dropout, FLOPs: `make test-slow` (test_table.py is fast)
def test_dropout_is_keyed():
    enc = _encoder(dropout=0.3, attention_cfg={**ATTN, "dropout_rate": 0.2})
    x, mask = _inputs(dtype=np.float32)
    a = enc(jnp.asarray(x), mask=mask, train=True, key=jax.random.key(0))
    b = enc(jnp.asarray(x), mask=mask, train=True, key=jax.random.key(0))
    c = enc(jnp.asarray(x), mask=mask, train=True, key=jax.random.key(1))
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert not np.allclose(np.asarray(a), np.asarray(c))


# --------------------------------------------------------------------- the paper's properties


def _largest_quadratic(fn, n, *args):
    """The largest number of axes of length `n` in any intermediate of `fn`'s jaxpr."""
    jaxpr = jax.make_jaxpr(fn)(*args)
    worst = 0

    def walk(jp):
        nonlocal worst
        for eqn in jp.eqns:
            for v in eqn.outvars:
                shape = getattr(v.aval, "shape", ())
                worst = max(worst, sum(1 for s in shape if s == n))
            for sub in jax.core.subjaxprs(eqn) if hasattr(jax.core, "subjaxprs") else ():
                walk(sub)
            for p in eqn.params.values():
                if hasattr(p, "jaxpr"):
                    walk(p.jaxpr if hasattr(p.jaxpr, "eqns") else p.jaxpr.jaxpr)

    walk(jaxpr.jaxpr)
    return worst


def test_linear_in_n_no_n_by_n_array():
    n = 2048
    enc = _encoder(max_len=n, plen=16)
    graphdef, state = nnx.split(enc)
    x = jax.ShapeDtypeStruct((1, n, 16), jnp.float32)
    mask = jax.ShapeDtypeStruct((1, n), jnp.bool_)
    fn = lambda s, x, m: nnx.merge(graphdef, s)(x, mask=m)  # noqa: E731
    assert _largest_quadratic(fn, n, state, x, mask) == 1
    # the check can fail: the softmax transformer materialises n x n scores
    tr = layers.TransformerEncoder(
        num_layers=1,
        dim=16,
        num_heads=4,
        qkv_dim=16,
        mlp_dim=24,
        dropout_rate=0.0,
        attention_cfg=ATTN,
        max_len=n,
        rngs=nnx.Rngs(0),
    )
    g2, s2 = nnx.split(tr)
    fn2 = lambda s, x, m: nnx.merge(g2, s)(x, mask=m)  # noqa: E731
    assert _largest_quadratic(fn2, n, s2, x, mask) >= 2


def test_packed_sequence_depends_on_input_and_is_carried():
    enc = _encoder()
    x, mask = _inputs(dtype=np.float32)
    _, p1 = enc(jnp.asarray(x), mask=mask, return_p=True)
    y = x.copy()
    y[0, 3] += np.random.default_rng(7).normal(size=16)  # not a constant: LayerNorm drops that
    _, p2 = enc(jnp.asarray(y), mask=mask, return_p=True)
    assert p1.shape == (2, 6, 16)
    assert not np.allclose(np.asarray(p1[0]), np.asarray(p2[0]), atol=1e-4)  # input changed
    np.testing.assert_allclose(p1[1], p2[1], rtol=1e-6)  # the other example's P did not
    assert not np.allclose(np.asarray(p1[0]), np.asarray(p1[1]), atol=1e-4)
    # the second layer reads the first layer's P: replacing it changes the output
    x32 = jnp.asarray(x)
    base = enc(x32, mask=mask)
    blocks = enc.blocks
    h = layers.add_sinusoid(x32, enc.max_len)
    p0 = jnp.broadcast_to(enc.initial_p(), (2, 6, 16))
    h, p = enc.embed_norm_x(h) * mask[..., None], enc.embed_norm_p(p0)
    p_mask = np.arange(6)[None] < mask.sum(1)[:, None]
    h1, p1_ = blocks[0](h, p, mask=mask, p_mask=p_mask)
    carried, _ = blocks[1](h1, p1_, mask=mask, p_mask=p_mask)
    np.testing.assert_allclose(carried * mask[..., None], base, rtol=1e-5, atol=1e-6)
    fresh, _ = blocks[1](h1, p, mask=mask, p_mask=p_mask)
    assert not np.allclose(np.asarray(fresh * mask[..., None]), np.asarray(base), atol=1e-4)


def test_unpacking_is_not_causal():
    """Every token reads all packed rows, which read every token: the first token's output
    depends on the last one (bidirectional; a causal Luna would not)."""
    enc = _encoder()
    x, mask = _inputs(dtype=np.float32)
    y = x.copy()
    y[0, 11] += np.random.default_rng(7).normal(size=16)
    a = np.asarray(enc(jnp.asarray(x), mask=mask))
    b = np.asarray(enc(jnp.asarray(y), mask=mask))
    assert np.abs(a[0, 0] - b[0, 0]).max() > 1e-4
    np.testing.assert_allclose(a[1], b[1], rtol=1e-6)  # other examples untouched


# ---------------------------------------------------------------------------- configuration


def _lra(task, **model):
    c = config_lib.load(f"lra/{task}.py:preset=smoke")
    with c.unlocked():
        c.model.encoder = "luna"
        for k, v in model.items():
            setattr(c.model, k, v)
    return c


def test_registered_and_config_checks():
    assert "luna" in backbones.names()
    c = _lra("listops", proj_len=8)
    enc = backbones.build(
        "luna", model_cfg=c.model, attention_cfg=c.attention, max_len=20, rngs=nnx.Rngs(0)
    )
    assert enc.proj_len == 8 and enc.positions == c.model.positions
    with c.unlocked():
        c.model.qkv_dim = 16
    with pytest.raises(errors.ConfigError, match="qkv_dim"):
        backbones.build(
            "luna", model_cfg=c.model, attention_cfg=c.attention, max_len=20, rngs=nnx.Rngs(0)
        )
    c = _lra("listops")
    with c.unlocked():
        c.attention.name = "linear"
    with pytest.raises(errors.ConfigError, match="softmax"):
        backbones.build(
            "luna", model_cfg=c.model, attention_cfg=c.attention, max_len=20, rngs=nnx.Rngs(0)
        )


def _cost(fn, *args) -> float:
    analysis = jax.jit(fn).lower(*args).compile().cost_analysis()
    analysis = analysis[0] if isinstance(analysis, list) else analysis
    return float(analysis.get("flops", 0.0))


@pytest.mark.parametrize("task", ["text", "retrieval"])
def test_flops_match_compiled_forward_and_params_exact(task):
    """The paper-size model (Luna-256) on one example: analytic vs XLA's compiled forward,
    with test_flops.py's tolerance; every parameter claimed."""
    config = config_lib.load(f"lra/{task}.py:preset=paper")
    with config.unlocked():
        config.model.encoder = "luna"
        config.model.proj_len = 256
    task_obj = tasks.get(config.task)
    model = nnx.eval_shape(lambda: task_obj.build_model(config, nnx.Rngs(params=0)))
    counts = flops.count(config, batch=1)
    assert counts.params == sum(x.size for x in jax.tree.leaves(nnx.state(model, nnx.Param)))
    graphdef, state = nnx.split(model)
    tokens = jax.ShapeDtypeStruct((1, config.data.max_length), jnp.int32)
    if task == "retrieval":
        compiled = _cost(lambda s, a, b: nnx.merge(graphdef, s)(a, b), state, tokens, tokens)
    else:
        compiled = _cost(lambda s, a: nnx.merge(graphdef, s)(a), state, tokens)
    assert counts.flops - counts.matmul_flops <= 0.1 * counts.flops
    assert counts.matmul_flops <= compiled
    assert abs(compiled - counts.flops) <= (counts.flops - counts.matmul_flops) + 0.005 * compiled
    assert sum(counts.breakdown.values()) == pytest.approx(counts.flops)


# ------------------------------------------------------------------------- LRA smoke training

TASKS = [
    pytest.param(t, marks=() if t == "listops" else pytest.mark.slow)
    for t in ("listops", "text", "retrieval", "image", "pathfinder")
]


@pytest.mark.parametrize("task", TASKS)
def test_trains_on_lra_task(task, official):  # noqa: F811
    config = _config(task, "", official, deterministic=True)
    with config.unlocked():
        config.model.encoder = "luna"
        config.model.proj_len = 16
    task_obj = tasks.get(config.task)
    if task == "retrieval":
        from lra.models import DualEncoderClassifier

        model = task_obj.build_model(config, nnx.Rngs(params=0))
        assert isinstance(model, DualEncoderClassifier)
        assert isinstance(model.encoder.encoder, luna.LunaEncoder)
    batch = _batch(task, config)
    built = steps.setup(task_obj, config)
    step, state = built.train_step(0), built.state
    losses = []
    for _ in range(4):
        state, metrics = step(state, batch)
        losses.append(float(metrics["train_loss"]))
    _check(losses)
