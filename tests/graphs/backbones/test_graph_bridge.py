"""Graph-Bridge (`graphs.backbones.graph_bridge`): the tokeniser against a float64 loop reference
with fixed noise, the readout against numpy, padding invariance, the noise rules (fresh per key
in training, reproducible at evaluation), gradients of the learnable noise scales, and the
backbone built from a config with the softmax and SAMSA mechanisms."""

import functools
import math

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest
from flax import nnx

from attnbench import errors
from attnbench.nn import backbones
from graphs.backbones import graph_bridge
from graphs.data import batching

ATOM_DIMS, BOND_DIMS = (5, 3), (4, 2)
DIM, D_RF = 8, 3
SAMSA = {"name": "samsa", "k": 2, "mode": "hard"}
SOFTMAX = {"name": "softmax"}
MECHANISMS = {"softmax": SOFTMAX, "samsa": SAMSA}


def _graphs():
    """A 3-node path 0 - 1 - 2 (4 directed edges) and a 2-node graph (2 edges)."""
    rng = np.random.default_rng(0)
    out = []
    for edges in (np.array([[0, 1, 1, 2], [1, 0, 2, 1]]), np.array([[0, 1], [1, 0]])):
        n = int(edges.max()) + 1
        out.append(
            {
                "node_feat": np.stack([rng.integers(0, d, n) for d in ATOM_DIMS], 1),
                "edge_index": edges,
                "edge_feat": np.stack([rng.integers(0, d, edges.shape[1]) for d in BOND_DIMS], 1),
            }
        )
    return out


def _batch(node_bucket=4, edge_bucket=6, graphs=None):
    ds = batching.PackedGraphs(batching.pack(graphs or _graphs(), spd=False))
    collate = batching.GraphCollate(
        node_buckets=(node_bucket,), edge_buckets=(edge_bucket,), dense=False
    )
    return collate([ds[i] for i in range(len(ds))])


@functools.cache
def _built(name):
    """The model with the given mechanism, its parameters drawn with numpy: the module is
    traced abstractly (`nnx.eval_shape`) because running the real initialisers compiles one
    random kernel per parameter shape (seconds on 2 cores); the slow tier builds the real one.
    Kernels N(0, 1/fan_in), other arrays N(0, 0.3^2), norm scales and noise coefficients 1."""
    model = nnx.eval_shape(
        lambda: graph_bridge.GraphBridge(
            num_layers=1, dim=DIM, num_heads=2, mlp_dim=16, attention_cfg=MECHANISMS[name],
            atom_dims=ATOM_DIMS, bond_dims=BOND_DIMS, random_feature_dim=D_RF,
            rngs=nnx.Rngs(params=3),
        )
    )  # fmt: skip
    rng = np.random.default_rng(3)

    def draw(path, leaf):
        where = jax.tree_util.keystr(path)
        if any(name in where for name in ("['scale']", "['coef_l']", "['coef_r']")):
            return jnp.asarray(np.ones(leaf.shape, leaf.dtype))
        fan_in = leaf.size // leaf.shape[-1] if leaf.ndim > 1 else 1
        std = 1.0 / math.sqrt(fan_in) if "['kernel']" in where else 0.3
        return jnp.asarray((std * rng.standard_normal(leaf.shape)).astype(leaf.dtype))

    nnx.update(model, jax.tree_util.tree_map_with_path(draw, nnx.state(model, nnx.Param)))
    return model


def _model(name="softmax", *, residual=0.7, **options):
    """A copy of the one model built per mechanism (building compiles every initialiser), with
    the shared residual scale opened (at its initial 0 the encoder is the identity) and the
    plain options (`readout`, `readout_tokens`, `pe_noise_at_eval`) set."""
    model = nnx.clone(_built(name))
    model.encoder.residual_scale[...] = jnp.asarray(residual, jnp.float32)
    for option, value in options.items():
        setattr(model, option, value)
    return model


# ------------------------------------------------------------------------ float64 reference


def _f64(p):
    return np.asarray(p[...], np.float64)


def _mlp(mlp, x):
    erf = np.vectorize(math.erf)
    h = x @ _f64(mlp.fc1.kernel) + _f64(mlp.fc1.bias)
    h = 0.5 * h * (1.0 + erf(h / math.sqrt(2.0)))  # exact GELU
    return h @ _f64(mlp.fc2.kernel) + _f64(mlp.fc2.bias)


def _reference_tokens(model, batch, noise):
    """Tokens by loops in float64: per node x_i, p_i = noise * softplus(c) + phi(x_i) split in
    (left, right), h_i = mlp_node([x_i, p_i^l, p_i^r]); per edge s -> t, p = p_s^l - p_t^r,
    h = mlp_edge([e, p])."""
    atoms, bonds = _f64(model.atom_embedding), _f64(model.bond_embedding)
    a_off, b_off = (0, 5), (0, 4)  # feature f's rows start after the earlier features' sizes
    softplus = lambda c: np.log1p(np.exp(c))
    scale = np.stack([softplus(_f64(model.coef_l)), softplus(_f64(model.coef_r))])
    b_size, n = batch["node_mask"].shape
    e_size = batch["edge_mask"].shape[1]
    out = np.zeros((b_size, n + e_size, DIM))
    for b in range(b_size):
        pe = {}
        for i in range(int(batch["node_mask"][b].sum())):
            x = sum(atoms[a_off[f] + v] for f, v in enumerate(batch["nodes"][b, i]))
            phi = _mlp(model.mlp_node_pe, x).reshape(2, D_RF)
            pe[i] = np.asarray(noise[b, i], np.float64) * scale + phi
            out[b, i] = _mlp(model.mlp_node, np.concatenate([x, pe[i][0], pe[i][1]]))
        for k in range(int(batch["edge_mask"][b].sum())):
            s, t = batch["edge_index"][b, k]
            e = sum(bonds[b_off[f] + v] for f, v in enumerate(batch["edges"][b, k]))
            out[b, n + k] = _mlp(model.mlp_edge, np.concatenate([e, pe[s][0] - pe[t][1]]))
    return out


@pytest.mark.slow  # the test budget: the readout reference stays fast
def test_tokens_match_float64_loops_with_fixed_noise():
    batch = _batch()
    model = _model()
    model.coef_l[...] = jnp.linspace(-1.0, 2.0, D_RF)  # distinct scales for the two halves
    model.coef_r[...] = jnp.linspace(0.5, -0.5, D_RF)
    noise = np.random.default_rng(1).standard_normal((2, 4, 2, D_RF)).astype(np.float32)
    tokens, mask = nnx.jit(lambda m, b, n: m.tokens(b, n))(model, batch, jnp.asarray(noise))
    want = _reference_tokens(model, batch, noise)
    assert tokens.shape == (2, 4 + 6, DIM)
    np.testing.assert_array_equal(
        mask, np.concatenate([batch["node_mask"], batch["edge_mask"]], axis=1)
    )
    np.testing.assert_allclose(np.asarray(tokens, np.float64), want, rtol=1e-5, atol=1e-5)
    assert not np.asarray(tokens)[~np.asarray(mask)].any()  # padded slots are zero
    # Edge direction matters: 0 -> 1 (slot 4) and 1 -> 0 (slot 5) get different PEs.
    assert np.abs(want[0, 4] - want[0, 5]).max() > 1e-3


def test_readout_matches_numpy_attention_pooling_and_node_mean():
    batch = _batch()
    h = np.random.default_rng(2).standard_normal((2, 10, DIM)).astype(np.float32)
    mask = np.concatenate([batch["node_mask"], batch["edge_mask"]], axis=1)
    model = _model()
    got = np.asarray(model.pool_tokens(jnp.asarray(h), jnp.asarray(mask), 4))
    w, c = _f64(model.pool.kernel)[:, 0], float(_f64(model.pool.bias)[0])
    for b in range(2):
        real = h[b][mask[b]].astype(np.float64)  # nodes and edges (the authors' REGHEAD)
        s = real @ w + c
        a = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
        np.testing.assert_allclose(got[b], a @ real, rtol=1e-5, atol=1e-6)
    nodes_mean = _model(readout="mean", readout_tokens="nodes")
    got = np.asarray(nodes_mean.pool_tokens(jnp.asarray(h), jnp.asarray(mask), 4))
    for b in range(2):
        want = h[b, :4][batch["node_mask"][b]].astype(np.float64).mean(0)
        np.testing.assert_allclose(got[b], want, rtol=1e-5, atol=1e-6)


def _padded_pair(model):
    """The model's evaluation output (key None) on the batch in its tight buckets and with extra
    node and edge padding slots, in one compiled call."""
    run = nnx.jit(lambda m, tight, wide: (m(tight), m(wide)))
    return run(model, _batch(4, 6), _batch(7, 11))


@pytest.mark.slow  # ~5 s; the SAMSA padding test (slow too) covers padding with noise on
def test_padding_slots_do_not_change_the_output():
    # Without evaluation noise (its padding invariance is `node_noise`'s test; drawing it
    # doubles the compile time); the slow SAMSA variant below runs with it.
    tight, wide = _padded_pair(_model("softmax", pe_noise_at_eval=False))
    np.testing.assert_allclose(np.asarray(wide), np.asarray(tight), rtol=1e-5, atol=1e-5)
    assert tight.shape == (2, DIM) and np.isfinite(np.asarray(tight)).all()


@pytest.mark.slow
def test_padding_slots_do_not_change_the_samsa_output_with_evaluation_noise():
    tight, wide = _padded_pair(_model("samsa"))
    np.testing.assert_allclose(np.asarray(wide), np.asarray(tight), rtol=1e-5, atol=1e-5)
    assert tight.shape == (2, DIM) and np.isfinite(np.asarray(tight)).all()


@pytest.mark.parametrize(
    "partitionable",
    [pytest.param(True, marks=pytest.mark.slow), pytest.param(False, marks=pytest.mark.slow)],
    ids=["one-draw", "per-slot"],
)
def test_node_noise_depends_on_the_slot_only(partitionable):
    draw = jax.jit(graph_bridge.node_noise, static_argnums=(1, 2, 3))
    with jax.threefry_partitionable(partitionable):
        noise = np.asarray(draw(jax.random.key(0), 2, 4, D_RF))
        wider = np.asarray(draw(jax.random.key(0), 3, 9, D_RF))
        other = np.asarray(draw(jax.random.key(1), 3, 9, D_RF))[:2, :4]
    assert noise.shape == (2, 4, 2, D_RF)
    np.testing.assert_array_equal(noise, wider[:2, :4])  # independent of the padded sizes
    assert np.abs(noise - other).min() > 0.0 and np.abs(noise[0] - noise[1]).min() > 0.0
    assert abs(noise.mean()) < 1.0 and 0.3 < noise.std() < 2.0


def test_evaluation_noise_rules_and_training_needs_a_key():
    batch = _batch()
    model = _model()
    with pytest.raises(ValueError, match="needs `key`"):
        model(batch, train=True)
    # Evaluation without a key: the noise of the fixed key `eval_seed` (0), as in training.
    got = nnx.jit(lambda m, b: m.noise(b, train=False, key=None))(model, batch)
    want = jax.jit(graph_bridge.node_noise, static_argnums=(1, 2, 3))(jax.random.key(0), 2, 4, D_RF)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    # Without noise at evaluation the PE is its mean, whatever the key.
    quiet = _model(pe_noise_at_eval=False)
    np.testing.assert_array_equal(quiet.noise(batch, train=False, key=jax.random.key(3)), 0.0)


@pytest.mark.slow
def test_noise_is_fresh_per_key_in_training_and_reproducible_at_evaluation():
    batch = _batch()
    model = _model()
    train = nnx.jit(lambda m, b, k: m(b, train=True, key=k))
    a, a2 = train(model, batch, jax.random.key(0)), train(model, batch, jax.random.key(0))
    b = train(model, batch, jax.random.key(1))
    np.testing.assert_array_equal(np.asarray(a), np.asarray(a2))
    assert np.abs(np.asarray(a) - np.asarray(b)).max() > 1e-4
    # Evaluation draws noise too (the authors' code): reproducible without a key, and the key,
    # when given, changes it; with pe_noise_at_eval off the PE is its mean and keys do not matter.
    evaluate = nnx.jit(lambda m, b, k: m(b, key=k))
    e1, e2 = nnx.jit(lambda m, b: m(b))(model, batch), nnx.jit(lambda m, b: m(b))(model, batch)
    np.testing.assert_array_equal(np.asarray(e1), np.asarray(e2))
    assert np.abs(np.asarray(evaluate(model, batch, jax.random.key(5)) - e1)).max() > 1e-4
    quiet = _model(pe_noise_at_eval=False)
    q1, q2 = evaluate(quiet, batch, jax.random.key(5)), evaluate(quiet, batch, jax.random.key(6))
    np.testing.assert_array_equal(np.asarray(q1), np.asarray(q2))


@pytest.mark.slow
def test_gradients_reach_the_noise_scales_and_are_finite():
    batch = _batch()
    model = _model("samsa")

    def loss(m):
        return jnp.sum(m(batch, train=True, key=jax.random.key(0)) ** 2)

    grads = nnx.jit(nnx.grad(loss))(model)
    leaves = jax.tree.leaves(nnx.state(grads, nnx.Param))
    assert all(np.isfinite(np.asarray(g)).all() for g in leaves)
    for g in (grads.coef_l, grads.coef_r):
        g = np.asarray(g[...])
        assert g.shape == (D_RF,) and np.abs(g).max() > 0.0


def _config(**kw):
    m = ml_collections.ConfigDict(
        {
            "encoder": "graph_bridge",
            "num_layers": 1,
            "dim": DIM,
            "qkv_dim": DIM,
            "num_heads": 2,
            "mlp_dim": 16,
            "dropout": 0.1,
            "drop_path": 0.1,
            "dtype": "float32",
            "positions": "none",
            "atom_dims": ATOM_DIMS,
            "bond_dims": BOND_DIMS,
            "random_feature_dim": D_RF,
        }
    )
    m.update(kw)
    return m


@pytest.mark.slow
@pytest.mark.parametrize("attention", [SOFTMAX, {**SAMSA, "mode": "soft"}], ids=["softmax", "soft"])
def test_backbone_from_config_trains_and_evaluates(attention):
    assert "graph_bridge" in backbones.names()
    batch = _batch()
    model = backbones.build(
        "graph_bridge", model_cfg=_config(), attention_cfg=attention, max_len=10,
        rngs=nnx.Rngs(params=0),
    )  # fmt: skip
    assert isinstance(model, graph_bridge.GraphBridge) and model.random_feature_dim == D_RF
    run = nnx.jit(lambda m, b, k: (m(b, train=True, key=k), m(b)))
    train, evaluation = run(model, batch, jax.random.key(0))
    assert train.shape == evaluation.shape == (2, DIM)
    assert np.isfinite(np.asarray(train)).all() and np.isfinite(np.asarray(evaluation)).all()


def test_default_random_feature_dim_and_bad_options():
    model_cfg = _config()
    del model_cfg["random_feature_dim"]
    model = nnx.eval_shape(
        lambda: backbones.build(
            "graph_bridge", model_cfg=model_cfg, attention_cfg=SOFTMAX, max_len=10,
            rngs=nnx.Rngs(0),
        )
    )  # fmt: skip
    assert model.coef_l.shape == (graph_bridge.DEFAULT_RANDOM_FEATURE_DIM,) == (128,)
    for bad, match in (
        ({"readout": "max"}, "config.model.readout='max'"),
        ({"readout_tokens": "edges"}, "config.model.readout_tokens"),
        ({"random_feature_dim": 0}, "config.model.random_feature_dim=0"),
    ):
        with pytest.raises(errors.ConfigError, match=match):
            backbones.build(
                "graph_bridge", model_cfg=_config(**bad), attention_cfg=SOFTMAX, max_len=10,
                rngs=nnx.Rngs(0),
            )  # fmt: skip


def test_flop_formula_matmuls_by_hand():
    """Matmul FLOPs of one graph of n = 30 tokens (10 nodes, 20 edges) with softmax: the three
    tokeniser MLPs, per layer the q/k/v/out projections, QK^T and AV, the FFN, and the
    attention-pooling score; the tokeniser's and the readout's parameters by hand."""
    from attnbench.nn import flops

    model_cfg = _config(num_layers=2, dim=16, qkv_dim=16, mlp_dim=24, random_feature_dim=4)
    model = nnx.eval_shape(
        lambda: backbones.build(
            "graph_bridge", model_cfg=model_cfg, attention_cfg=SOFTMAX, max_len=30,
            rngs=nnx.Rngs(0),
        )
    )  # fmt: skip
    tally = flops.Tally(train=False, examples=1, elementwise=False)
    backbones.count_flops("graph_bridge", model, tally, n=30, masked=True)
    d, h4, rf, nodes, edges, n = 16, 64, 4, 10, 20, 30
    tokens = nodes * 2 * (d * h4 + h4 * 2 * rf)  # mlp_node_pe
    tokens += nodes * 2 * ((d + 2 * rf) * h4 + h4 * d)  # mlp_node
    tokens += edges * 2 * ((d + rf) * h4 + h4 * d)  # mlp_edge
    layer = 2 * n * 4 * d * d + 4 * n * n * d + 2 * n * 2 * d * 24
    assert tally.matmul == tokens + 2 * layer + 2 * n * d
    assert tally.flops["embedding"] == tokens
    _, _, by_component = tally.parameters(model)
    tables = (5 + 3) * d + (4 + 2) * d + 2 * rf  # atom and bond tables, noise coefficients
    mlps = (d * h4 + h4 + h4 * 2 * rf + 2 * rf) + ((d + 2 * rf) * h4 + h4 + h4 * d + d)
    mlps += (d + rf) * h4 + h4 + h4 * d + d
    assert by_component["embedding"] == tables + mlps
    assert by_component["head"] == d + 1
