"""EGT (`graphs.backbones.egt`): the whole model against a float64 numpy reference written from the
authors' equations (EGT-Simple and full, gates, clipping, degree scaler on and off, virtual
nodes), the SSA-gathered attention against the same reference restricted to the sampled
sources, padding and permutation invariance, SSA's sampler on graphs, jit and gradients, the
self-ensemble, +FT's dense pass, config errors, and the parameter count of SSA's EGT-small."""

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest
from flax import nnx

from attnbench import errors
from attnbench.nn import backbones
from graphs.backbones import egt
from graphs.data import batching

ATOM_DIMS, BOND_DIMS = (5, 3), (4, 2)
ATOM_OFF, BOND_OFF = 6, 5  # rows per feature: row 1 + off * f + value (the authors' layout)
HOPS = 2  # below the 6-ring's distance 3: the clipped distance row is exercised
NV = 2


def _ring(n):
    src = np.arange(n)
    return np.stack([np.r_[src, (src + 1) % n], np.r_[(src + 1) % n, src]])


def _graphs(seed=0):
    """A 6-ring (distance 3) and a 3-node graph with an isolated node (unreachable pairs)."""
    rng = np.random.default_rng(seed)
    out = []
    for n, e in ((6, _ring(6)), (3, np.array([[0, 1], [1, 0]]))):
        out.append(
            {
                "node_feat": np.stack([rng.integers(0, d, n) for d in ATOM_DIMS], 1),
                "edge_index": e,
                "edge_feat": np.stack([rng.integers(0, d, e.shape[1]) for d in BOND_DIMS], 1),
            }
        )
    return out


def _batch(graphs, nodes=7, edges=14):
    ds = batching.PackedGraphs(batching.pack(graphs))
    collate = batching.GraphCollate(node_buckets=(nodes,), edge_buckets=(edges,))
    return collate([ds[i] for i in range(len(ds))])


def _model(
    attn=None, *, variant="simple", impl="egt", clip=(-0.3, 0.3), layers_=2, seed=1, degree=True
):
    """A small EGT whose parameters are numpy draws (`_fill`): building it abstractly compiles
    nothing, where a real init compiles one random program per parameter shape (seconds). The
    degree scaler is on unless `degree=False` (the module's default, the small config, is off:
    on, the tests cover one more term of the reference)."""
    abstract = nnx.eval_shape(
        lambda: egt.EGT(
            num_layers=layers_, dim=8, edge_dim=4, num_heads=2,
            attention_cfg=attn or {"name": "softmax"}, ffn_multiplier=1.5,
            edge_ffn_multiplier=2.0, mlp_ratios=(0.5, 1.0), num_virtual_nodes=NV,
            upto_hop=HOPS, clip_logits=clip, variant=variant, attention_impl=impl,
            atom_dims=ATOM_DIMS, bond_dims=BOND_DIMS, feature_offset=ATOM_OFF,
            edge_feature_offset=BOND_OFF, scale_degree=degree, rngs=nnx.Rngs(params=0),
        )
    )  # fmt: skip
    graphdef, state = nnx.split(abstract)
    return nnx.merge(graphdef, _fill(state, seed))


def _fill(state, seed):
    """Every array of `state`: N(0, 0.5^2), LayerNorm scales 1 + N(0, 0.1^2)."""
    rng = np.random.default_rng(seed)
    flat = nnx.to_flat_state(state)
    values = []
    for path, var in flat:
        shape = var.get_value().shape
        x = rng.normal(size=shape) * (0.1 if path[-1] == "scale" else 0.5)
        values.append((path, var.replace(jnp.asarray(x + (path[-1] == "scale"), jnp.float32))))
    return nnx.from_flat_state(values)


_forward = nnx.jit(lambda model, batch: model(batch))  # one compile per model graph and shape
_train = nnx.jit(lambda model, batch, key: model(batch, train=True, key=key))


@nnx.jit
def _ensemble(model, batch, key):
    return egt.self_ensemble(model, batch, key=key, passes=4, members=True)


@pytest.fixture(scope="module")
def graphs():
    return _graphs()


@pytest.fixture(scope="module")
def batch(graphs):
    return _batch(graphs)


@pytest.fixture(scope="module")
def model():
    return _model(layers_=1)  # one layer keeps the fast tier's compile short


def _ssa(keep, layers_=2, **extra):
    attn = {"name": "ssa", "sampling": "graph", "keep": keep, "always_keep": NV, **extra}
    return _model(attn, layers_=layers_)


# ------------------------------------------------------------------ float64 reference (loops)


def _f64(p):
    return np.asarray(p[...], np.float64)


def _ln(x, mod):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * _f64(mod.scale) + _f64(mod.bias)


def _lin(x, mod):
    return x @ _f64(mod.kernel) + _f64(mod.bias)


def _elu(x):
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0)))


def _hops(n, edge_index):
    """Floyd-Warshall hop counts, inf where unreachable."""
    d = np.full((n, n), np.inf)
    np.fill_diagonal(d, 0)
    for i, j in edge_index.T:
        d[i, j] = min(d[i, j], 1)
    for k in range(n):
        for i in range(n):
            for j in range(n):
                d[i, j] = min(d[i, j], d[i, k] + d[k, j])
    return d


def _attention_ref(q, k, v, e, g, sources, clip, nv, gated=True, degree=True):
    """One graph, float64: q, k, v [T, H, D]; e, g [T, T, H]; loops over targets and heads."""
    t, h, d = q.shape
    out = np.zeros((t, h, d))
    for i in range(t):
        for a in range(h):
            s = np.array([q[i, a] @ k[j, a] / np.sqrt(d) for j in sources])
            if clip is not None:
                s = np.clip(s, *clip)
            s = s + np.array([e[i, j, a] for j in sources])
            p = np.exp(s - s.max())
            p /= p.sum()
            gate = 1 / (1 + np.exp(-np.array([g[i, j, a] for j in sources]))) if gated else 1.0
            w = p * gate
            out[i, a] = sum(w[c] * v[j, a] for c, j in enumerate(sources))
            if degree and gated and i >= nv:
                out[i, a] *= np.log(1 + np.sum(gate))
    return out


def _inputs(model, graph):
    """`(h [T, dim], e [T, T, edge_dim])` of one graph, virtual nodes first, in float64."""
    n = len(graph["node_feat"])
    x = sum(
        _f64(model.node_embed)[1 + ATOM_OFF * f + graph["node_feat"][:, f]]
        for f in range(len(ATOM_DIMS))
    )
    dist = _hops(n, graph["edge_index"])
    idx = np.where(np.isinf(dist), HOPS + 1, np.minimum(dist, HOPS + 1)).astype(int)
    e = _f64(model.dist_embed)[idx]
    for c, (i, j) in enumerate(graph["edge_index"].T):
        feats = graph["edge_feat"][c]
        e[i, j] += sum(_f64(model.bond_embed)[1 + BOND_OFF * f + feats[f]] for f in range(2))
    vn_h, vn_e = _f64(model.vn_nodes), _f64(model.vn_edges)
    t = n + NV
    h = np.concatenate([vn_h, x])
    ee = np.zeros((t, t, e.shape[-1]))
    ee[NV:, NV:] = e
    for a in range(NV):
        ee[a, NV:] = vn_e[a]
        ee[NV:, a] = vn_e[a]
        for b in range(NV):
            ee[a, b] = 0.5 * (vn_e[a] + vn_e[b])
    return h, ee


def _reference(model, graph, *, variant="simple", clip=(-0.3, 0.3), native=True, degree=True):
    """The model's output for one graph, without padding, in float64 (`degree`: the degree
    scaler of the native attention)."""
    h, e = _inputs(model, graph)
    t = len(h)
    heads, dh = 2, 4
    for li, layer in enumerate(model.layers):
        hl, el = _ln(h, layer.ln_h), _ln(e, layer.ln_e)
        bias = _lin(el, layer.lin_e)
        if native:
            qkv = _lin(hl, layer.lin_qkv).reshape(t, 3, heads, dh)
            q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]
            gates = _lin(el, layer.lin_g)
            att = _attention_ref(q, k, v, bias, gates, range(t), clip, NV, degree=degree)
            a_out = _lin(att.reshape(t, -1), layer.lin_o)
        else:
            at = layer.attn
            proj = lambda x, m: np.einsum("ti,ihd->thd", x, _f64(m.kernel)) + _f64(m.bias)
            q, k, v = proj(hl, at.query), proj(hl, at.key), proj(hl, at.value)
            att = _attention_ref(q, k, v, bias, None, range(t), None, NV, gated=False)
            a_out = np.einsum("thd,hdo->to", att, _f64(at.out.kernel)) + _f64(at.out.bias)
        h = h + a_out
        h = h + _lin(_elu(_lin(_ln(h, layer.ffn_ln), layer.ffn_1)), layer.ffn_2)
        if variant == "full" and li < len(model.layers) - 1:
            s = np.einsum("ihd,jhd->ijh", q, k) / np.sqrt(dh)
            h_hat = np.clip(s, *clip) + bias
            e = e + _lin(h_hat, layer.lin_o_e)
            e = e + _lin(_elu(_lin(_ln(e, layer.ffn_ln_e), layer.ffn_e1)), layer.ffn_e2)
    h = _ln(h, model.final_ln)[:NV].reshape(-1)
    for lin in model.mlp:
        h = _elu(_lin(h, lin))
    return h


# ------------------------------------------------------------------------------------ tests


@pytest.mark.slow  # the test-budget: sampled attention against its reference stays fast
def test_forward_matches_float64_reference(model, graphs, batch):
    """Two graphs padded to 7 node slots (9 tokens with the virtual nodes); the float32 model
    (one layer; the slow tests run two) vs float64 loops, atol 2e-5. The clipping range
    (-0.3, 0.3) is narrow enough to be active (checked on the first layer's scores)."""
    out = np.asarray(_forward(model, batch))
    ref = np.stack([_reference(model, g) for g in graphs])
    assert out.shape == (2, 8)
    np.testing.assert_allclose(out, ref, atol=2e-5, rtol=1e-5)
    layer = model.layers[0]
    qkv = _lin(_ln(_inputs(model, graphs[0])[0], layer.ln_h), layer.lin_qkv).reshape(8, 3, 2, 4)
    scores = np.einsum("nhd,mhd->nmh", qkv[:, 0], qkv[:, 1]) / 2.0
    assert np.abs(scores).max() > 0.3


@pytest.mark.slow
def test_full_variant_matches_float64_reference(graphs, batch):
    """The full variant: the edge channel updated from H^ in every layer but the last."""
    full = _model(variant="full")
    out = np.asarray(_forward(full, batch))
    ref = np.stack([_reference(full, g, variant="full") for g in graphs])
    np.testing.assert_allclose(out, ref, atol=2e-5, rtol=1e-5)
    simple_ref = np.stack([_reference(full, g, variant="simple") for g in graphs])
    assert not np.allclose(out, simple_ref, atol=1e-4)


@pytest.mark.slow
def test_mechanism_impl_matches_reference(graphs, batch):
    """attention_impl="mechanism" with softmax: q/k/v/out with biases, E as the bias, no gates,
    no clipping, no degree scaler."""
    mech = _model(impl="mechanism")
    out = np.asarray(_forward(mech, batch))
    ref = np.stack([_reference(mech, g, native=False) for g in graphs])
    np.testing.assert_allclose(out, ref, atol=2e-5, rtol=1e-5)


@jax.jit
def _attention(q, k, v, e, g, mask, src):
    e, g = egt.take_pairs(e, src), egt.take_pairs(g, src)
    return egt.egt_attention(
        q, k, v, e, g, mask=mask, src=src, clip=(-0.5, 0.5), num_virtual_nodes=1,
        scale_degree=True,
    )  # fmt: skip


def test_sampled_attention_matches_reference_on_sources():
    """`egt_attention` on SSA sources equals the float64 attention over those sources only
    (a padded source drawn for a short graph gets no weight and no gate)."""
    rng = np.random.default_rng(3)
    b, t, h, d = 2, 6, 2, 3
    q, k, v = (rng.normal(size=(b, t, h, d)) for _ in range(3))
    e, g = rng.normal(size=(b, t, t, h)), rng.normal(size=(b, t, t, h))
    mask = np.array([[1, 1, 1, 1, 1, 0], [1, 1, 1, 0, 0, 0]], bool)
    src = np.array([[0, 4, 2], [0, 2, 5]], np.int32)  # graph 1 draws a padded source (5)
    f32 = lambda x: jnp.asarray(x, jnp.float32)
    out, h_hat = _attention(f32(q), f32(k), f32(v), f32(e), f32(g), mask, src)
    assert h_hat.shape == (b, t, 3, h)
    for i in range(b):
        real = [j for j in src[i] if mask[i, j]]
        ref = _attention_ref(q[i], k[i], v[i], e[i], g[i], real, (-0.5, 0.5), 1)
        np.testing.assert_allclose(np.asarray(out[i]), ref, atol=1e-5, rtol=1e-5)


@jax.jit
def _dense_attention(q, k, v, e, g, mask):
    off, _ = egt.egt_attention(q, k, v, e, g, mask=mask, num_virtual_nodes=2)  # the default
    on, _ = egt.egt_attention(q, k, v, e, g, mask=mask, num_virtual_nodes=2, scale_degree=True)
    return off, on


def test_degree_scaler_off_by_default_and_on_as_the_naive_reference():
    """EGT's degree scaler (`scale_degree`; off by default, as the small config): off, the
    attention is the gated softmax alone; on, each non-virtual target row is that times
    log(1 + the sum of its gates over the real sources), written here as plain loops; the
    virtual nodes' rows (the first 2) are never scaled."""
    rng = np.random.default_rng(4)
    b, t, h, d = 2, 5, 2, 3
    q, k, v = (rng.normal(size=(b, t, h, d)) for _ in range(3))
    e, g = rng.normal(size=(b, t, t, h)), rng.normal(size=(b, t, t, h))
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 1, 0]], bool)
    f32 = lambda x: jnp.asarray(x, jnp.float32)
    off, on = (np.asarray(x) for x in _dense_attention(*map(f32, (q, k, v, e, g)), mask))
    scaled = 0
    for i in range(b):
        real = [j for j in range(t) if mask[i, j]]
        plain = _attention_ref(q[i], k[i], v[i], e[i], g[i], real, None, 2, degree=False)
        np.testing.assert_allclose(off[i], plain, atol=1e-5, rtol=1e-5)
        for n in range(t):
            for a in range(h):
                gates = [1 / (1 + np.exp(-g[i, n, j, a])) for j in real]
                factor = 1.0 if n < 2 else np.log(1 + sum(gates))
                np.testing.assert_allclose(on[i, n, a], factor * plain[n, a], atol=1e-5)
                scaled += n >= 2 and abs(factor - 1) > 0.05
    assert scaled > 0  # the scaler is not a no-op on this draw


def test_scale_degree_config_field_reaches_every_layer():
    """`config.model.scale_degree` (absent: off, the small config's) sets every layer's scaler;
    the count of FLOPs drops the scaler's products with it."""
    from attnbench.nn import flops

    def build(**extra):
        cfg = ml_collections.ConfigDict(
            {"num_layers": 2, "dim": 8, "edge_dim": 4, "num_heads": 2, **extra}
        )
        return nnx.eval_shape(
            lambda: backbones.build(
                "egt", model_cfg=cfg, attention_cfg={"name": "softmax"}, max_len=8,
                rngs=nnx.Rngs(0),
            )
        )  # fmt: skip

    counts = {}
    for name, extra in (("absent", {}), ("off", {"scale_degree": False}),
                        ("on", {"scale_degree": True})):  # fmt: skip
        model = build(**extra)
        assert [layer.scale_degree for layer in model.layers] == [name == "on"] * 2
        tally = flops.Tally(train=False, examples=1, elementwise=True)
        backbones.count_flops("egt", model, tally, n=6, masked=True)
        counts[name] = sum(tally.flops.values())
    assert counts["absent"] == counts["off"] == counts["on"] - 2 * 6 * 8  # n x heads x head_dim


def test_forward_without_degree_scaler_matches_float64_reference(graphs, batch):
    """The whole model with the scaler off against the float64 reference without it; the same
    parameters with it on give other outputs. Two layers: the readout reads the virtual nodes,
    whose own rows are never scaled, so only a second layer passes the scaler on to it."""
    off = _model(layers_=2, degree=False)
    out = np.asarray(_forward(off, batch))
    ref = np.stack([_reference(off, g, degree=False) for g in graphs])
    np.testing.assert_allclose(out, ref, atol=2e-5, rtol=1e-5)
    with_scaler = np.stack([_reference(off, g, degree=True) for g in graphs])
    assert not np.allclose(out, with_scaler, atol=1e-3)


@pytest.mark.slow
def test_padding_and_permutation_invariance(model, graphs, batch):
    base = np.asarray(_forward(model, batch))
    wider = np.asarray(_forward(model, _batch(graphs, nodes=12, edges=20)))
    np.testing.assert_allclose(wider, base, atol=2e-6)
    perm = np.array([3, 0, 5, 1, 4, 2])  # new node i is old node perm[i]
    inv = np.argsort(perm)
    g = dict(graphs[0])
    g["node_feat"] = graphs[0]["node_feat"][perm]
    g["edge_index"] = inv[graphs[0]["edge_index"]]
    permuted = np.asarray(_forward(model, _batch([g, graphs[1]])))
    np.testing.assert_allclose(permuted, base, atol=2e-6)


_sources = jax.jit(egt.sample_sources, static_argnames=("keep", "always_keep"))


def test_sample_sources_keeps_virtual_nodes_and_skips_padding():
    mask = np.zeros((3, 12), bool)
    mask[0, :12] = True
    mask[1, :8] = True
    mask[2, :3] = True  # shorter than S = 6: all its real tokens, then padded ones
    seen = set()
    for seed in range(20):
        src = np.asarray(_sources(jax.random.key(seed), mask, keep=0.5, always_keep=2))
        assert src.shape == (3, 6)
        for i, n in enumerate((12, 8, 3)):
            assert len(set(src[i])) == 6
            assert {0, 1} <= set(src[i])
            assert len([j for j in src[i] if j < n]) == min(n, 6)
            if n >= 6:
                assert all(j < n for j in src[i])
        seen |= set(src[0])
    assert seen == set(range(12))  # every real source of the full graph gets drawn


@pytest.mark.slow
def test_ssa_training_pass_is_stochastic_and_ignores_padding(graphs, batch):
    """A sampled pass changes with the key; with keep=1 a subsampled training pass equals the
    dense pass whatever the padding."""
    model = _ssa(0.5)
    o1 = np.asarray(_train(model, batch, jax.random.key(0)))
    o2 = np.asarray(_train(model, batch, jax.random.key(1)))
    assert not np.allclose(o1, o2, atol=1e-5)
    full = _ssa(1.0)
    dense = np.asarray(_forward(full, batch))
    sampled = np.asarray(_train(full, _batch(graphs, 12, 20), jax.random.key(2)))
    np.testing.assert_allclose(sampled, dense, atol=2e-6)


@pytest.mark.slow
def test_jit_and_finite_gradients_under_ssa(batch):
    model = _ssa(0.6)
    b = {k: jnp.asarray(v) for k, v in batch.items()}
    graphdef, params = nnx.split(model)

    def loss(p, key):
        return jnp.sum(nnx.merge(graphdef, p)(b, train=True, key=key) ** 2)

    value, grads = jax.jit(jax.value_and_grad(loss))(params, jax.random.key(0))
    np.testing.assert_allclose(float(value), float(loss(params, jax.random.key(0))), rtol=1e-5)
    leaves = jax.tree.leaves(grads)
    assert all(bool(jnp.all(jnp.isfinite(x))) for x in leaves)
    assert sum(float(jnp.abs(x).sum()) for x in leaves) > 0


@pytest.mark.slow
def test_self_ensemble_keep_one_equals_dense(batch):
    model = _ssa(1.0)
    dense = np.asarray(egt.renormalized(model, batch))
    mean, members = _ensemble(model, batch, jax.random.key(0))
    for m in np.asarray(members):
        np.testing.assert_allclose(m, dense, atol=2e-6)
    np.testing.assert_allclose(np.asarray(mean), dense, atol=2e-6)


@pytest.mark.slow
def test_self_ensemble_passes_differ_and_average(batch):
    """keep=0.5 (one layer, to keep the compile short): the passes differ from each other and
    from the dense pass; the ensemble is their mean."""
    model = _ssa(0.5, layers_=1)
    mean, members = _ensemble(model, batch, jax.random.key(0))
    members = np.asarray(members)
    assert members.shape == (4, 2, 8)
    assert not np.allclose(members[0], members[1], atol=1e-5)
    dense = np.stack([_reference(model, g) for g in _graphs()])
    assert not np.allclose(members[0], dense, atol=1e-5)
    np.testing.assert_allclose(np.asarray(mean), members.mean(0), atol=1e-6)


@pytest.mark.slow
def test_plus_ft_phase_is_dense(batch):
    """`subsample=False` (the trainer's +FT phase) in training gives the dense pass (no
    dropout here), and a traced flag selects between the two."""
    model = _ssa(0.5)
    dense = np.asarray(egt.renormalized(model, batch))
    np.testing.assert_allclose(np.asarray(_forward(model, batch)), dense, atol=1e-6)  # eval
    ft = np.asarray(model(batch, train=True, key=jax.random.key(0), subsample=False))
    np.testing.assert_allclose(ft, dense, atol=1e-6)
    graphdef, state = nnx.split(model)

    @jax.jit
    def run(flag, key):
        return nnx.merge(graphdef, state)(batch, train=True, key=key, subsample=flag)

    np.testing.assert_allclose(np.asarray(run(False, jax.random.key(0))), dense, atol=1e-6)
    sampled = np.asarray(_train(model, batch, jax.random.key(0)))
    np.testing.assert_allclose(np.asarray(run(True, jax.random.key(0))), sampled, atol=1e-6)


@pytest.mark.slow
def test_layer_ensemble_eval_mode(batch):
    """eval_mode="ensemble": every layer averages its subsampled passes; keep=1 is dense."""
    model = _ssa(1.0, eval_mode="ensemble", ensemble_samples=2)
    out = np.asarray(model(batch, key=jax.random.key(0)))
    np.testing.assert_allclose(out, np.asarray(egt.renormalized(model, batch)), atol=2e-6)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"variant": "full", "attn": {"name": "ssa", "sampling": "graph"}}, "egt_variant"),
        ({"impl": "mechanism", "variant": "full"}, "egt_variant"),
        ({"attn": {"name": "performer"}}, "attention_impl"),
        ({"attn": {"name": "ssa", "sampling": "local_1d"}}, "sampling"),
        ({"variant": "partial"}, "egt_variant"),
        ({"impl": "flash"}, "attention_impl"),
    ],
)
def test_config_errors(kwargs, match):
    attn = kwargs.pop("attn", None)
    with pytest.raises(errors.ConfigError, match=match):
        _model(attn, **kwargs)


def test_mlp_width_must_match_head():
    with pytest.raises(errors.ConfigError, match="mlp_ratios"):
        egt.EGT(num_layers=1, dim=8, edge_dim=4, num_heads=2, mlp_ratios=(1.0, 0.5),
                attention_cfg={"name": "softmax"}, rngs=nnx.Rngs(0))  # fmt: skip


def test_parameter_count_of_ssa_egt_small():
    """SSA Table 3: EGT-small, 6 layers, "11M". Counted on the abstract model built by name:
    embeddings (1153 x 512 atoms, 18 x 128 distances, 25 x 128 bonds), 4 virtual nodes (node
    and edge vectors), 6 EGT-Simple layers (2 LN, W_qkv, W_E, W_G, W_O, FFN LN and 2 linears,
    all with biases: 1,586,496 each), final LN, MLP 2048 -> 512 -> 512, plus the task's
    512 -> 1 head (513)."""
    cfg = ml_collections.ConfigDict(
        {"num_layers": 6, "dim": 512, "edge_dim": 128, "num_heads": 32, "dropout": 0.1}
    )
    attn = {"name": "ssa", "sampling": "graph", "keep": 0.7, "always_keep": 4}
    abstract = nnx.eval_shape(
        lambda: backbones.build(
            "egt", model_cfg=cfg, attention_cfg=attn, max_len=64, rngs=nnx.Rngs(0)
        )
    )
    count = sum(x.size for x in jax.tree.leaves(nnx.state(abstract, nnx.Param)))
    per_layer = 2 * 512 + 2 * 128 + 2 * (128 * 32 + 32) + 512 * 1536 + 1536
    per_layer += 3 * (512 * 512 + 512) + 2 * 512
    assert per_layer == 1_586_496
    embeddings = 1153 * 512 + 18 * 128 + 25 * 128 + 4 * (512 + 128)
    readout = 2 * 512 + (2048 * 512 + 512) + (512 * 512 + 512)
    assert count == 6 * per_layer + embeddings + readout
    assert count + 513 == 11_430_657


@pytest.mark.slow
def test_registered_backbone_runs_on_ogb_features():
    """Built by name from a config section with the OGB feature tables (the defaults)."""
    from graphs.data import featurize

    rng = np.random.default_rng(0)
    e = _ring(5)
    graph = {
        "node_feat": np.stack([rng.integers(0, d, 5) for d in featurize.atom_feature_dims()], 1),
        "edge_index": e,
        "edge_feat": np.stack(
            [rng.integers(0, d, e.shape[1]) for d in featurize.bond_feature_dims()], 1
        ),
    }
    cfg = ml_collections.ConfigDict(
        {"num_layers": 1, "dim": 8, "edge_dim": 4, "num_heads": 2, "num_virtual_nodes": 1}
    )
    model = backbones.build(
        "egt", model_cfg=cfg, attention_cfg={"name": "softmax"}, max_len=8, rngs=nnx.Rngs(0)
    )
    assert model.node_embed.shape == (9 * 128 + 1, 8) and model.bond_embed.shape == (25, 4)
    for lin in (model.layers[0].lin_qkv, model.layers[0].ffn_2, model.mlp[0]):
        bound = 1 / np.sqrt(lin.in_features)  # PyTorch's nn.Linear default init
        for p in (lin.kernel, lin.bias):
            assert float(jnp.abs(p[...]).max()) <= bound
    assert 0.5 < float(jnp.std(model.node_embed[...])) < 1.5  # N(0, 1) embeddings
    out = _forward(model, _batch([graph, graph], nodes=8, edges=10))
    assert out.shape == (2, 8) and bool(jnp.all(jnp.isfinite(out)))


@pytest.mark.parametrize("train, keep", [(False, 0.7), (True, 0.7), (True, 1.0)])
def test_flop_formula_matmuls(train, keep):
    """Matmul FLOPs of EGT-small on one graph of T = 24 tokens, by hand: per layer the QKV, O
    and FFN projections on T tokens, the edge bias and gates (128 -> 32) on T x S pairs, and
    QK^T and AV on T x S scores (S = round(keep T) with SSA in training, T otherwise); the
    readout MLP once."""
    from attnbench.nn import flops

    cfg = ml_collections.ConfigDict({"num_layers": 6, "dim": 512, "edge_dim": 128, "num_heads": 32})
    attn = {"name": "ssa", "sampling": "graph", "keep": keep, "always_keep": 4}
    abstract = nnx.eval_shape(
        lambda: backbones.build(
            "egt", model_cfg=cfg, attention_cfg=attn, max_len=64, rngs=nnx.Rngs(0)
        )
    )
    t = 24
    tally = flops.Tally(train=train, examples=1, elementwise=False)
    backbones.count_flops("egt", abstract, tally, n=t, masked=True)
    s = round(keep * t) if train else t
    per_layer = 2 * t * (512 * 1536 + 512 * 512 + 2 * 512 * 512)
    per_layer += 2 * 2 * t * s * 128 * 32 + 2 * 2 * t * s * 512
    readout = 2 * (2048 * 512 + 512 * 512)
    assert tally.matmul == 6 * per_layer + readout
    assert sum(tally.flops.values()) == tally.matmul  # elementwise off
    params = tally.parameters(abstract)[0]
    assert params == 11_430_144  # every parameter, claimed or not, is counted once
