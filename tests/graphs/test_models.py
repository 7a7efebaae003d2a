"""`graphs.models.GraphPredictor`: SSA's model-level self-ensemble is the mean of subsampled
passes."""

import numpy as np
import pytest

from attnbench import config as config_lib


@pytest.mark.slow  # ~23 s (compiles several Graphormer + SSA passes)
def test_self_ensemble_is_the_mean_of_subsampled_passes():
    """SSA Sec. 3.5 at model level: evaluation with `ensemble_passes = S` averages S full
    forward passes with subsampling on; S = 0 is the dense ("renormalized") pass."""
    import jax
    from flax import nnx

    from graphs import models
    from tests.graphs.backbones.test_graphormer import ATOM_DIMS, BOND_DIMS, _batch

    m = config_lib.load("graphs/zinc.py:preset=smoke").model
    m.atom_dims, m.bond_dims, m.num_layers = ATOM_DIMS, BOND_DIMS, 2
    ssa = {"name": "ssa", "keep": 0.5, "sampling": "graph", "always_keep": 1}

    def build(passes):
        return models.GraphPredictor(
            model_cfg=m, attention_cfg=ssa, max_len=7, out_dim=1, rngs=nnx.Rngs(0),
            ensemble_passes=passes, ensemble_seed=3,
        )  # fmt: skip

    batch = _batch()
    dense = np.asarray(build(0)(batch))
    model = build(4)
    got = np.asarray(model(batch))
    keys = jax.random.split(jax.random.key(3), 4)
    passes = np.stack(
        [np.asarray(model.forward(batch, train=False, key=k, subsample=True)) for k in keys]
    )
    np.testing.assert_allclose(got, passes.mean(0), rtol=1e-5, atol=1e-6)
    assert np.abs(passes - dense).max() > 1e-4  # the members are subsampled, not dense
    assert np.abs(passes[0] - passes[1]).max() > 1e-4
