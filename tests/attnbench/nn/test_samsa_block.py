"""The SAMSA encoder: shapes, the shared zero-initialised residual scalar, the block formula
(scores from the raw input, no drop-path at evaluation), the parameter count and drop-path.

One model is built for the whole file (module creation and compilation dominate the cost);
tests set its residual scalar, which changes values but not the compiled programs."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from attnbench.nn import samsa_block

B, N, DIM, HEADS, MLP, K, LAYERS = 2, 6, 8, 2, 16, 2, 2
CFG = {"name": "samsa", "k": K}


def _key(seed):
    # "rbg" keys compile far faster than threefry on CPU; the model accepts any key.
    return jax.random.key(seed, impl="rbg")


def _model(cfg=CFG, layers=LAYERS, drop_path=0.5):
    return samsa_block.SAMSAEncoder(
        layers, DIM, HEADS, MLP, drop_path, cfg, dropout_rate=0.1, rngs=nnx.Rngs(_key(0))
    )


@pytest.fixture(scope="module")
def model():
    return _model()


@nnx.jit(static_argnames=("train",))
def _run(model, x, mask, key, train):
    return model(x, mask=mask, train=train, key=key)


def _inputs():
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(B, N, DIM)), jnp.float32)
    mask = np.ones((B, N), bool)
    mask[0, -2:] = False
    return x, jnp.asarray(mask)


def test_zero_residual_scale_makes_the_encoder_its_final_norm_and_still_learns(model):
    model.residual_scale[...] = jnp.asarray(0.0)
    x, mask = _inputs()

    def loss(model):
        out = model(x, mask=mask, train=True, key=_key(1))  # noise, dropout and drop-path on
        return (out * x).sum(), out

    (_, out), grads = nnx.jit(nnx.value_and_grad(loss, has_aux=True))(model)
    assert out.shape == (B, N, DIM)
    np.testing.assert_allclose(out, model.norm(x), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(_run(model, x, mask, None, False), out, rtol=1e-6, atol=1e-6)
    # Exactly one scalar, shared: the blocks own none.
    scalars = [v for v in jax.tree.leaves(nnx.state(model, nnx.Param)) if v.shape == ()]
    assert len(scalars) == 1
    assert abs(float(grads.residual_scale[...])) > 0  # the scalar can move off zero


def test_eval_follows_the_formula_with_scores_from_the_raw_input_and_no_drop_path(model):
    alpha = 0.7
    model.residual_scale[...] = jnp.asarray(alpha)
    x, mask = _inputs()

    @nnx.jit
    def by_hand(model, x):
        for block in model.blocks:
            attn = block.attn
            params = jax.tree.map(lambda p: p[...], attn.mechanism_params)
            h = block.norm1(x)
            q, k, v = attn.query(h), attn.key(h), attn.value(h)
            x = x + alpha * attn.out(attn.mechanism.apply(params, q, k, v, mask=mask, x=x))
            x = x + alpha * block.mlp(block.norm2(x), train=False)
        return model.norm(x)

    expected = by_hand(model, x)
    got = [_run(model, x, mask, key, False) for key in (None, _key(2))]
    np.testing.assert_allclose(got[0], expected, rtol=2e-5, atol=2e-5)
    np.testing.assert_array_equal(got[0], got[1])  # evaluation ignores the key


def test_parameter_count_formula():
    layers, qkv, h = 3, DIM, HEADS
    abstract = nnx.eval_shape(lambda: _model(layers=layers))
    count = sum(v.size for v in jax.tree.leaves(nnx.state(abstract, nnx.Param)))
    scorer = 2 * (DIM * DIM + DIM) + DIM + DIM * h + h  # two d x d layers, RMSNorm, d -> h
    support = h * 2 * K + 2 * (2 * K * qkv)  # scores, keys and values of 2k vectors per head
    attention = 4 * DIM * qkv + scorer + support  # q, k, v, out (no biases)
    ffn = DIM * MLP + MLP + MLP * DIM + DIM
    block = 2 * DIM + attention + ffn  # two RMSNorms
    assert count == layers * block + 1 + DIM  # + the shared scalar + the final RMSNorm


def test_drop_path_drops_whole_branches_per_example_in_training_only():
    branch = jnp.ones((16, 3, 2))
    kept = samsa_block.drop_path(branch, 0.5, _key(0), True)
    per_example = np.asarray(kept).reshape(16, -1)
    assert set(np.unique(per_example)) <= {0.0, 2.0}  # dropped, or kept and scaled
    assert (per_example == per_example[:, :1]).all() and 0 < per_example[:, 0].sum() < 32
    other = np.asarray(samsa_block.drop_path(branch, 0.5, _key(1), True))
    assert not np.array_equal(other.reshape(16, -1), per_example)
    assert samsa_block.drop_path(branch, 0.5, None, False) is branch
    with pytest.raises(ValueError, match="needs a PRNG key"):
        samsa_block.drop_path(branch, 0.5, None, True)


def test_full_attention_baseline_in_the_same_block_and_config_errors():
    x, mask = _inputs()
    baseline = _model(cfg={"name": "softmax"}, layers=1, drop_path=0.0)
    baseline.residual_scale[...] = jnp.asarray(1.0)
    out = _run(baseline, x, mask, None, False)
    assert out.shape == (B, N, DIM) and np.isfinite(np.asarray(out)).all()
    with pytest.raises(ValueError, match="needs a `name`"):
        _model(cfg={"k": 2})
