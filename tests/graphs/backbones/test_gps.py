"""GPS (`graphs.backbones.gps`): GatedGCN, GINE and one full GPS layer against float64 loop
references on a hand-made padded 2-graph batch, padding invariance, LapPE sign flips, gradients,
jit, the softmax and GFSA mechanisms, the encodings helper, and the Peptides-struct parameter
count."""

import functools
import itertools

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest
from flax import nnx

from attnbench import errors
from attnbench.nn import backbones
from graphs.backbones import gps
from graphs.data import batching, featurize, positional

ATOM_DIMS, BOND_DIMS = (5, 3), (4, 2)
DIM, HEADS = 8, 2


def _graphs(seed=0):
    """A 5-ring with a pendant node (6 nodes) and a 3-node path plus an isolated node (4 nodes),
    both edge directions listed, with random OGB-shaped features."""
    rng = np.random.default_rng(seed)
    ring = [(i, (i + 1) % 5) for i in range(5)] + [(0, 5)]
    path = [(0, 1), (1, 2)]
    graphs = []
    for n, und in ((6, ring), (4, path)):
        e = np.array([p for a, b in und for p in ((a, b), (b, a))]).T
        graphs.append(
            {
                "node_feat": np.stack([rng.integers(0, d, n) for d in ATOM_DIMS], 1),
                "edge_index": e,
                "edge_feat": np.stack([rng.integers(0, d, e.shape[1]) for d in BOND_DIMS], 1),
            }
        )
    return graphs


def _batch(graphs=None, nodes=8, edges=16, lap_k=3, rw_steps=4):
    graphs = gps.add_encodings(graphs or _graphs(), lap_k=lap_k, rw_steps=rw_steps)
    ds = batching.PackedGraphs(batching.pack(graphs, spd=False))
    collate = batching.GraphCollate(node_buckets=(nodes,), edge_buckets=(edges,), dense=False)
    return collate([ds[i] for i in range(len(ds))])


def _model(attn="softmax", **kw):
    """A small GPS model, built once per configuration (tests never change a model)."""
    items = tuple(sorted(attn.items())) if isinstance(attn, dict) else attn
    return _build(items, **kw)


@functools.cache
def _build(attn, *, mpnn="gatedgcn", layers=1, lap_dim=4, rwse_dim=0, dropout=0.0,
           pooling="mean", seed=1, real_init=False):  # fmt: skip
    """With `real_init`, the module's own initialisers; else (faster: building runs no eager
    random op per parameter shape) parameters drawn N(0, 0.5^2) with numpy, which also moves
    the LayerNorm scales and biases away from 1 and 0. The references read the parameters
    from the module either way."""
    make = lambda: gps.GPS(  # noqa: E731
        num_layers=layers, dim=DIM, num_heads=HEADS, dropout=dropout,
        attention_cfg={"name": attn} if isinstance(attn, str) else dict(attn),
        atom_dims=ATOM_DIMS, bond_dims=BOND_DIMS, mpnn=mpnn, lap_k=3, lap_dim=lap_dim,
        lap_layers=2, rw_steps=4, rwse_dim=rwse_dim, pooling=pooling, rngs=nnx.Rngs(params=seed),
    )  # fmt: skip
    if real_init:
        return make()
    graphdef, state = nnx.split(nnx.eval_shape(make))
    rng = np.random.default_rng(seed)
    state = jax.tree.map(lambda x: jnp.asarray(rng.normal(0, 0.5, x.shape), x.dtype), state)
    return nnx.merge(graphdef, state)


# ------------------------------------------------------------------ float64 numpy references

f64 = lambda p: np.asarray(p[...], np.float64)  # noqa: E731


@jax.jit
def _jit_call(module, *args):
    return module(*args)


def _call(module, *args):
    """`module(*args)` compiled once (much faster here than running its ops one by one), as
    numpy arrays (indexing a jax array runs, and compiles, one more op per index)."""
    return jax.tree.map(np.asarray, _jit_call(module, *args))


def _lin(lin, x):
    return x @ f64(lin.kernel) + f64(lin.bias)


def _ln(norm, x):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * f64(norm.scale) + f64(norm.bias)


def _relu(x):
    return np.maximum(x, 0.0)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _ref_gatedgcn(conv, h, e, edges):
    """One graph, explicit loops over its edges (src -> dst): returns (h', e')."""
    n = len(h)
    num, den = np.zeros((n, h.shape[1])), np.zeros((n, h.shape[1]))
    e_hat = np.zeros_like(e)
    for k, (j, i) in enumerate(edges):
        e_hat[k] = _lin(conv.D, h[i]) + _lin(conv.E, h[j]) + _lin(conv.C, e[k])
        sigma = _sigmoid(e_hat[k])
        num[i] += sigma * _lin(conv.B, h[j])
        den[i] += sigma
    h_new = np.stack([_lin(conv.A, h[i]) + num[i] / (den[i] + 1e-6) for i in range(n)])
    return h + _relu(_ln(conv.norm_h, h_new)), e + _relu(_ln(conv.norm_e, e_hat))


def _ref_gine(conv, h, e, edges):
    agg = np.zeros_like(h)
    for k, (j, i) in enumerate(edges):
        agg[i] += _relu(h[j] + e[k])
    return _lin(conv.fc2, _relu(_lin(conv.fc1, h + agg)))


def _ref_attention(attn, h):
    """Multi-head softmax attention over one graph's real nodes, loops over heads and nodes."""
    proj = lambda p, x: np.einsum("nd,dhk->nhk", x, f64(p.kernel)) + f64(p.bias)  # noqa: E731
    q, k, v = proj(attn.query, h), proj(attn.key, h), proj(attn.value, h)
    n, heads, hd = q.shape
    out = np.zeros((n, heads, hd))
    for a in range(heads):
        for i in range(n):
            s = np.array([q[i, a] @ k[j, a] for j in range(n)]) / np.sqrt(hd)
            p = np.exp(s - s.max())
            p /= p.sum()
            out[i, a] = sum(p[j] * v[j, a] for j in range(n))
    return np.einsum("nhk,hkd->nd", out, f64(attn.out.kernel)) + f64(attn.out.bias)


def _ref_layer(layer, h, e, edges):
    """One GPS layer on one graph (GraphGPS's `GPSLayer.forward`, eval mode)."""
    if layer.mpnn == "gatedgcn":
        h_local, e = _ref_gatedgcn(layer.local, h, e, edges)
    else:
        h_local = h + _ref_gine(layer.local, h, e, edges)
    h_local = _ln(layer.norm_local, h_local)
    h_attn = _ln(layer.norm_attn, h + _ref_attention(layer.attn, h))
    x = h_local + h_attn
    x = _ln(layer.norm_ff, x + _lin(layer.ff2, _relu(_lin(layer.ff1, x))))
    return x, e


def _random_inputs(batch, seed=0):
    """Random node / edge states, padding slots included: the references read only the real
    ones, so the layer tests also check that padding does not leak into real outputs."""
    rng = np.random.default_rng(seed)
    b, n = batch["node_mask"].shape
    e = batch["edge_mask"].shape[1]
    return rng.normal(size=(b, n, DIM)), rng.normal(size=(b, e, DIM))


@functools.cache
def _layer_outputs(mpnn):
    """One compiled call giving both the MPNN's and the whole first layer's outputs on random
    inputs `h`, `e` of the padded 2-graph batch: `(batch, h, e, mpnn_out, layer_out)`."""
    batch = _batch()
    h, e = _random_inputs(batch)
    layer = _model(mpnn=mpnn).blocks[0]

    @jax.jit
    def both(layer, h, e):
        ends, edge_mask = batch["edge_index"], batch["edge_mask"]
        local = layer.local(h, e, ends, edge_mask)
        return local, layer(h, e, ends, edge_mask, batch["node_mask"])

    local, out = both(layer, jnp.asarray(h, jnp.float32), jnp.asarray(e, jnp.float32))
    return batch, h, e, jax.tree.map(np.asarray, local), jax.tree.map(np.asarray, out)


@pytest.mark.parametrize("mpnn", ["gatedgcn", pytest.param("gine", marks=pytest.mark.slow)])
def test_mpnn_matches_loop_reference(mpnn):
    batch, h, e, got, _ = _layer_outputs(mpnn)
    conv = _model(mpnn=mpnn).blocks[0].local
    got_h, got_e = got if mpnn == "gatedgcn" else (got, None)
    for b in range(2):
        n, m = batch["node_mask"][b].sum(), batch["edge_mask"][b].sum()
        edges = batch["edge_index"][b, :m]
        if mpnn == "gatedgcn":
            want_h, want_e = _ref_gatedgcn(conv, h[b, :n], e[b, :m], edges)
            np.testing.assert_allclose(got_e[b, :m], want_e, rtol=1e-4, atol=1e-4)
        else:
            want_h = _ref_gine(conv, h[b, :n], e[b, :m], edges)
        np.testing.assert_allclose(got_h[b, :n], want_h, rtol=1e-4, atol=1e-4)
    # The isolated node (graph 1, node 3) gets no message: GatedGCN's h' is A h alone.
    if mpnn == "gatedgcn":
        alone = _lin(conv.A, h[1, 3])
        np.testing.assert_allclose(
            got_h[1, 3], h[1, 3] + _relu(_ln(conv.norm_h, alone)), rtol=1e-4, atol=1e-4
        )


@pytest.mark.parametrize("mpnn", ["gatedgcn", pytest.param("gine", marks=pytest.mark.slow)])
def test_gps_layer_matches_loop_reference(mpnn):
    batch, h, e, _, (got_h, got_e) = _layer_outputs(mpnn)
    layer = _model(mpnn=mpnn).blocks[0]
    for b in range(2):
        n, m = batch["node_mask"][b].sum(), batch["edge_mask"][b].sum()
        want_h, want_e = _ref_layer(layer, h[b, :n], e[b, :m], batch["edge_index"][b, :m])
        np.testing.assert_allclose(got_h[b, :n], want_h, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(got_e[b, :m], want_e, rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_full_model_matches_reference_and_is_padding_invariant():
    """Embeddings (atom table, LapPE DeepSet, RWSE linear), one layer and mean pooling by hand
    for each graph alone; the same output from a batch padded to other buckets and from each
    graph batched alone; jit gives the same."""
    batch = _batch()
    model = _model(rwse_dim=2)
    out = np.asarray(_call(model, batch))
    for b in range(2):
        n, m = batch["node_mask"][b].sum(), batch["edge_mask"][b].sum()
        atoms = batch["nodes"][b, :n] + np.array(model.atom_offsets)
        x = f64(model.atom_table)[atoms].sum(1)
        vec, val = batch["lap_vec"][b, :n].astype(np.float64), batch["lap_val"][b, :n]
        pe = np.zeros((n, 4))
        for j in range(vec.shape[1]):
            if not np.any(vec[:, j]):  # a padding eigenpair
                continue
            z = np.stack([vec[:, j], val[:, j]], 1)
            for lin in model.lap.linears:
                z = _relu(_lin(lin, z))
            pe += z
        rw = _lin(model.rwse, batch["rwse"][b, :n].astype(np.float64))
        h = np.concatenate([x, pe, rw], 1)
        bonds = batch["edges"][b, :m] + np.array(model.bond_offsets)
        e = f64(model.bond_table)[bonds].sum(1)
        h, _ = _ref_layer(model.blocks[0], h, e, batch["edge_index"][b, :m])
        np.testing.assert_allclose(out[b], h.mean(0), rtol=1e-4, atol=1e-4)
    # The 4-node graph has 4 eigenpairs of which lap_k = 3 are kept; none is padding. A
    # 2-node graph has only 2: the third column is padding and must not count.
    assert np.all(np.abs(batch["lap_vec"][1, :4]).sum(0) > 0)
    bigger = _batch(nodes=12, edges=24)
    np.testing.assert_allclose(_call(model, bigger), out, rtol=1e-5, atol=1e-5)
    graphs = _graphs()
    for b in range(2):
        alone = _batch([graphs[b]])
        np.testing.assert_allclose(_call(model, alone)[0], out[b], rtol=1e-5, atol=1e-5)


def test_lap_pe_padding_eigenpairs_are_ignored():
    """A 2-node graph has 2 eigenpairs; with lap_k = 3 its third column is zero padding, and
    the encoder's output equals the sum over the two real eigenpairs."""
    g = {"node_feat": np.zeros((2, 2), int), "edge_index": np.array([[0, 1], [1, 0]]),
         "edge_feat": np.zeros((2, 2), int)}  # fmt: skip
    batch = _batch([g], nodes=4, edges=4)
    assert np.all(batch["lap_vec"][0, :, 2] == 0)
    enc = _model().lap
    got = _call(enc, batch["lap_vec"], batch["lap_val"], batch["node_mask"])
    vec, val = batch["lap_vec"][0, :2].astype(np.float64), batch["lap_val"][0, :2]
    want = np.zeros((2, 4))
    for j in range(2):
        z = np.stack([vec[:, j], val[:, j]], 1)
        for lin in enc.linears:
            z = _relu(_lin(lin, z))
        want += z
    np.testing.assert_allclose(got[0, :2], want, rtol=1e-5, atol=1e-6)


@pytest.mark.slow  # the test budget: the layer references stay fast
def test_lap_pe_sign_flips_only_in_training():
    batch = _batch()
    enc = _model().lap
    vec, val, mask = batch["lap_vec"], batch["lap_val"], batch["node_mask"]
    jitted = jax.jit(
        lambda m, v, key, train: m(v, val, mask, train=train, key=key), static_argnums=3
    )
    run = lambda *a: np.asarray(jitted(*a))  # noqa: E731
    plain = run(enc, vec, None, False)
    np.testing.assert_array_equal(run(enc, vec, jax.random.key(5), False), plain)
    # Each training output is the eval output of one sign pattern per graph, and over a few keys
    # more than one pattern occurs.
    patterns = [np.array(s) for s in itertools.product((1.0, -1.0), repeat=vec.shape[-1])]
    by_pattern = [run(enc, vec * s, None, False) for s in patterns]
    seen = set()
    for seed in range(6):
        out = run(enc, vec, jax.random.key(seed), True)
        for b in range(2):
            hits = [
                i for i, ref in enumerate(by_pattern)
                if np.allclose(out[b], ref[b], rtol=1e-6, atol=1e-6)
            ]  # fmt: skip
            assert hits, "a training output matches no sign pattern"
            seen.add((b, hits[0]))
    assert len(seen) > 2
    with pytest.raises(ValueError, match="need a PRNG key"):
        enc(vec, val, mask, train=True)


@pytest.mark.slow
def test_training_without_lap_pe_or_dropout_changes_nothing():
    batch = _batch()
    model = _model(lap_dim=0, rwse_dim=2)
    run = jax.jit(lambda m, b, key: m(b, train=key is not None, key=key))
    np.testing.assert_allclose(
        run(model, batch, jax.random.key(0)), run(model, batch, None), rtol=1e-6, atol=1e-6
    )


@pytest.mark.slow
@pytest.mark.parametrize("attn", ["softmax", "gfsa"])
def test_mechanisms_gradients_and_jit(attn):
    """Two layers with attention dropout (GraphGPS: 0.5; its other dropout is 0), LapPE sign
    flips and RWSE, under jit: finite output and gradients
    (every parameter gets one), padding slots do not leak into the output."""
    batch = _batch()
    model = _model(
        {"name": attn, "dropout_rate": 0.5}, layers=2, rwse_dim=2, dropout=0.0, real_init=True
    )
    graphdef, params = nnx.split(model, nnx.Param)

    @jax.jit
    def loss(params, batch, key):
        m = nnx.merge(graphdef, params)
        return jnp.sum(m(batch, train=True, key=key) ** 2)

    value, grads = jax.value_and_grad(loss)(params, batch, jax.random.key(0))
    assert np.isfinite(value)
    leaves = jax.tree.leaves(grads)
    assert all(np.all(np.isfinite(g)) for g in leaves)
    assert sum(int(np.any(g != 0)) for g in leaves) >= len(leaves) - 2
    # Garbage in the padding slots changes nothing.
    noisy = dict(batch)
    pad = ~batch["node_mask"]
    noisy["lap_vec"] = np.where(pad[..., None], 7.0, batch["lap_vec"]).astype(np.float32)
    noisy["rwse"] = np.where(pad[..., None], 3.0, batch["rwse"]).astype(np.float32)
    noisy["nodes"] = np.where(pad[..., None], 1, batch["nodes"]).astype(np.int32)
    same = jax.jit(lambda m, b: m(b))
    np.testing.assert_allclose(same(model, noisy), same(model, batch), rtol=1e-5, atol=1e-5)
    if attn == "gfsa":
        wk = model.blocks[0].attn.mechanism_params
        assert any(np.any(g != 0) for g in jax.tree.leaves(grads["blocks"][0]["attn"]))
        assert jax.tree.leaves(wk)  # GFSA's per-head coefficient is a parameter


@pytest.mark.slow
def test_sum_pooling_and_gine_model():
    batch = _batch()
    mean = _model(mpnn="gine", pooling="mean")
    total = _model(mpnn="gine", pooling="sum")
    counts = batch["node_mask"].sum(1, keepdims=True)
    got = _call(total, batch)
    np.testing.assert_allclose(got, _call(mean, batch) * counts, rtol=1e-5, atol=1e-5)


def test_add_encodings_match_positional():
    """GraphGPS's Peptides LapPE (combinatorial Laplacian, trivial eigenpair kept) and RWSE,
    checked against their definitions: L v = lambda v in float64, eigenvalues as
    `positional.laplacian_pe`, return probabilities as `positional.random_walk_se`."""
    graphs = gps.add_encodings(_graphs(), **dict(gps.PE_RECIPES["peptides"], rw_steps=5))
    for g in graphs:
        n = len(g["node_feat"])
        assert g["lap_vec"].shape == g["lap_val"].shape == (n, 10)
        assert g["lap_vec"].dtype == np.float32 and g["rwse"].shape == (n, 5)
        lap = positional.laplacian(g["edge_index"], n, "none")
        _, vals = positional.laplacian_pe(g["edge_index"], n, 10, normalization="none",
                                          include_trivial=True)  # fmt: skip
        np.testing.assert_allclose(g["lap_val"], np.broadcast_to(vals, (n, 10)), atol=1e-5)
        for j in range(n):  # real eigenpairs: unit vectors with L v = lambda v
            v = g["lap_vec"][:, j].astype(np.float64)
            np.testing.assert_allclose(np.linalg.norm(v), 1.0, atol=1e-5)
            np.testing.assert_allclose(lap @ v, vals[j] * v, atol=1e-4)
        assert np.all(g["lap_vec"][:, n:] == 0)
        np.testing.assert_allclose(
            g["rwse"], positional.random_walk_se(g["edge_index"], n, 5), atol=1e-6
        )
    zinc = gps.add_encodings(_graphs(), **gps.PE_RECIPES["zinc"])
    assert "lap_vec" not in zinc[0] and zinc[0]["rwse"].shape == (6, 20)


def test_missing_fields_and_bad_config():
    batch = _batch()
    del batch["lap_vec"]
    with pytest.raises(errors.ConfigError, match=r"batch\['lap_vec'\].*add_encodings"):
        _model()(batch)
    with pytest.raises(errors.ConfigError, match="has 5 columns; the model was built for 3"):
        _model()(_batch(lap_k=5))
    with pytest.raises(errors.ConfigError, match="config.model.mpnn='gcn'"):
        _model(mpnn="gcn")
    with pytest.raises(errors.ConfigError, match="leave room for the atom embedding"):
        _model(lap_dim=6, rwse_dim=2)


def _peptides_struct_cfg():
    """GraphGPS `configs/GPS/peptides-struct-GPS.yaml`, as a model section."""
    return ml_collections.ConfigDict(
        {
            "encoder": "gps", "num_layers": 4, "dim": 96, "qkv_dim": 96, "num_heads": 4,
            "dropout": 0.0, "mpnn": "gatedgcn", "lap_k": 10, "lap_dim": 16, "lap_layers": 2,
            "rwse_dim": 0, "pooling": "mean", "dtype": "float32",
            "atom_dims": featurize.atom_feature_dims(), "bond_dims": featurize.bond_feature_dims(),
        }
    )  # fmt: skip


def test_peptides_struct_parameter_count():
    """The Peptides-struct build plus the task's Linear(96, 11) head against GraphGPS's modules
    for that config counted by hand (BatchNorm's affine pair counted as LayerNorm's)."""
    from attnbench.nn import flops

    cfg = _peptides_struct_cfg()
    abstract = nnx.eval_shape(
        lambda: backbones.build(
            "gps", model_cfg=cfg, attention_cfg={"name": "softmax", "dropout_rate": 0.5},
            max_len=64, rngs=nnx.Rngs(0),
        )
    )  # fmt: skip
    d, atoms, bonds = 96, sum(featurize.atom_feature_dims()), sum(featurize.bond_feature_dims())
    assert (atoms, bonds) == (174, 13)  # OGB's AtomEncoder / BondEncoder rows
    lin = lambda i, o: i * o + o  # noqa: E731
    lap = lin(2, 32) + lin(32, 16)
    gated = 5 * lin(d, d) + 2 * 2 * d
    mha = 3 * lin(d, d) + lin(d, d)
    per_layer = gated + mha + 2 * 2 * d + lin(d, 2 * d) + lin(2 * d, d) + 2 * d
    want = atoms * (d - 16) + lap + bonds * d + 4 * per_layer
    tally = flops.Tally(train=False, examples=1, elementwise=True)
    backbones.count_flops("gps", abstract, tally, n=150, masked=True)
    params, _, by_component = tally.parameters(abstract)
    assert params == want == 503_472
    assert params + lin(d, 11) == 504_539  # with the Peptides-struct head: ~500K budget
    assert by_component["norms/other"] == 4 * 5 * 2 * d  # 5 norms a layer; all claimed ...
    assert sum(by_component.values()) == params
    assert by_component.get("other", 0) == 0  # ... none left unclaimed
    # Matmul FLOPs of one layer's attention projections on 150 nodes appear in the tally.
    assert tally.flops["projections"] >= 4 * 2 * 150 * 4 * d * d
