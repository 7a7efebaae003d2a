"""Point-cloud models: DGCNN's feature-space k-NN against brute force, readouts against numpy,
the permutation properties that make them point-set models (a point Transformer without
positions is equivariant, the classifiers invariant), masks, the segmenter's category input,
and the PointNet / DGCNN parameter counts against their papers."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from configs import common
from configs.pointcloud import common as pc
from pointcloud import models


def _model_cfg(encoder="samsa"):
    m = pc.samsa_model(2)
    m.dim, m.qkv_dim, m.mlp_dim, m.num_heads = 16, 16, 32, 2
    m.dropout = m.drop_path = 0.0
    m.dtype, m.encoder = "float32", encoder
    m.dgcnn_k = 4
    return m


def _jit(model):
    """`model(*args, **kwargs)` compiled (eager NNX calls dispatch op by op: seconds)."""
    graphdef, state = nnx.split(model)

    @jax.jit
    def apply(state, *args, **kwargs):
        return nnx.merge(graphdef, state)(*args, **kwargs)

    return lambda *args, **kwargs: apply(state, *args, **kwargs)


def _cloud(b=2, n=24, seed=0):
    rng = np.random.default_rng(seed)
    xyz = rng.standard_normal((b, n, 3))
    nrm = rng.standard_normal((b, n, 3))
    nrm /= np.linalg.norm(nrm, axis=-1, keepdims=True)
    return jnp.asarray(np.concatenate([xyz, nrm], -1), jnp.float32)


def test_knn_features_match_brute_force_and_skip_padding():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 15, 4))
    mask = np.ones((2, 15), bool)
    mask[1, 11:] = False
    idx = np.asarray(models.knn_features(jnp.asarray(x, jnp.float32), 4, jnp.asarray(mask)))
    for b in range(2):
        for i in range(15):
            d = ((x[b] - x[b, i]) ** 2).sum(-1)
            d[~mask[b]] = np.inf
            d[i] = -1.0  # the point itself first, as DGCNN's knn
            assert set(idx[b, i]) == set(np.argsort(d)[:4]), (b, i)
    assert (idx[1, :11] < 11).all()  # no real point picks a padded one


def test_attention_readout_is_a_masked_softmax_average():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 6, 3))
    mask = np.array([[1, 1, 1, 1, 1, 1], [1, 1, 0, 1, 0, 0]], bool)
    w = rng.standard_normal(3)
    got = models._readout(
        jnp.asarray(x), jnp.asarray(mask), "attention", lambda v: (v @ jnp.asarray(w))[..., None]
    )
    for b in range(2):
        s = x[b] @ w
        p = np.where(mask[b], np.exp(s - s[mask[b]].max()), 0.0)
        np.testing.assert_allclose(got[b], (p / p.sum()) @ x[b], rtol=1e-5, atol=1e-6)
    mx = models._readout(jnp.asarray(x), jnp.asarray(mask), "max")
    np.testing.assert_allclose(mx[1], x[1][mask[1]].max(0), rtol=1e-6)


@pytest.mark.parametrize(
    "attn",
    ["softmax", pytest.param("samsa", marks=pytest.mark.slow)],  # ~4 s each
)
def test_point_transformer_is_permutation_equivariant_without_positions(attn):
    hp = {"k": 8, "mode": "soft"} if attn == "samsa" else {}
    body = models.PointTransformer(
        in_features=6,
        num_points=24,
        model_cfg=_model_cfg(),
        attention_cfg=common.attention_config(attn, **hp),
        rngs=nnx.Rngs(0),
    )
    x = _cloud()
    perm = np.random.default_rng(3).permutation(24)
    body = _jit(body)
    y = body(x)
    y_perm = body(x[:, perm])
    if attn == "softmax":
        np.testing.assert_allclose(y_perm, y[:, perm], rtol=1e-4, atol=1e-5)
    else:  # SAMSA's soft sampler at eval is deterministic and order-free up to ties
        np.testing.assert_allclose(y_perm, y[:, perm], rtol=1e-3, atol=1e-4)


@pytest.mark.slow  # 4-6 s each on 2 cores (compiles)
@pytest.mark.parametrize("encoder", ["transformer", "pointnet", "dgcnn"])
def test_classifiers_are_permutation_invariant_and_ignore_padding(encoder):
    model = models.build_classifier(
        in_features=6,
        num_points=32,
        num_classes=5,
        model_cfg=_model_cfg(encoder),
        attention_cfg=common.attention_config("softmax"),
        rngs=nnx.Rngs(0),
    )
    x = _cloud(n=24)
    perm = np.random.default_rng(4).permutation(24)
    model = _jit(model)
    a = model(x)
    np.testing.assert_allclose(model(x[:, perm]), a, rtol=1e-4, atol=1e-5)
    # 8 padded points of garbage, masked: the same logits as the 24 real points alone
    garbage = jnp.full((2, 8, 6), 50.0)
    padded = jnp.concatenate([x, garbage], axis=1)
    mask = jnp.arange(32)[None, :] < 24
    np.testing.assert_allclose(model(padded, mask=jnp.broadcast_to(mask, (2, 32))), a,
                               rtol=1e-4, atol=1e-5)  # fmt: skip
    assert np.isfinite(np.asarray(a)).all()


@pytest.mark.slow  # ~10 s (compiles a gradient); GRF itself is tested in tests/attention
def test_grf_on_the_knn_graph_of_the_cloud_trains_under_jit():
    """`coords` reach GRF: its k-NN mask depends on the geometry, not only on the features."""
    att = common.attention_config("grf", graph="knn", resample=True, knn_k=3, n_walks=4)
    model = models.build_classifier(
        in_features=6, num_points=24, num_classes=3, model_cfg=_model_cfg("transformer"),
        attention_cfg=att, rngs=nnx.Rngs(0),
    )  # fmt: skip
    x = _cloud()
    graphdef, state = nnx.split(model)

    @jax.jit
    def loss(state, x, key):
        return (nnx.merge(graphdef, state)(x, train=True, key=key) ** 2).sum()

    g = jax.grad(loss)(state, x, jax.random.key(0))
    assert all(np.isfinite(np.asarray(v)).all() for v in jax.tree.leaves(g))
    moved = x.at[..., :3].multiply(jnp.linspace(0.1, 3.0, 24)[None, :, None])
    key = jax.random.key(1)
    assert not np.allclose(loss(state, x, key), loss(state, moved.at[..., 3:].set(x[..., 3:]), key))


def test_segmenter_reads_the_category():
    seg = models.PointSegmenter(
        in_features=6, num_points=24, num_parts=7, num_categories=3, model_cfg=_model_cfg(),
        attention_cfg=common.attention_config("softmax"), rngs=nnx.Rngs(0),
    )  # fmt: skip
    x = _cloud()
    seg = _jit(seg)
    a = seg(x, jnp.array([0, 0]))
    b = seg(x, jnp.array([2, 0]))
    assert a.shape == (2, 24, 7)
    assert not np.allclose(a[0], b[0]) and np.allclose(a[1], b[1])


def test_baseline_sizes_match_their_papers():
    """PointNet 3.5M parameters (Qi et al. 2017 Table 6), DGCNN 1.84M (Wang et al. 2019
    Table 6) with 40 classes and 3 inputs; our LayerNorms replace BatchNorm one for one."""
    cfg = _model_cfg("pointnet")
    cfg.dgcnn_k = 20
    pn = nnx.eval_shape(  # shapes only: no 3.5M random draws
        lambda: models.build_classifier(in_features=3, num_points=64, num_classes=40,
                                        model_cfg=cfg, attention_cfg=None, rngs=nnx.Rngs(0))
    )  # fmt: skip
    assert models.param_count(pn) == pytest.approx(3.5e6, rel=0.02)
    cfg.encoder = "dgcnn"
    dg = nnx.eval_shape(
        lambda: models.build_classifier(in_features=3, num_points=64, num_classes=40,
                                        model_cfg=cfg, attention_cfg=None, rngs=nnx.Rngs(0))
    )  # fmt: skip
    assert models.param_count(dg) == pytest.approx(1.84e6, rel=0.02)
