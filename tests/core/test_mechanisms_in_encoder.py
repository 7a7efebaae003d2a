"""Every registered mechanism inside the shared encoder on the ListOps smoke config: a jitted
training step runs with finite loss and gradients, and the parameter count is pinned."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attention
from core import config as config_lib
from core import tasks, train

# Parameter counts of the ListOps smoke model (1 layer, width 32, 4 heads, MLP 64) per
# mechanism. The shared part is 11,786 with softmax; a mechanism's own parameters (or the q/k
# projections it drops) show as the difference. Update deliberately, never to silence a failure.
PARAM_COUNTS = {
    "softmax": 11_786,
}


def _step(name):
    config = config_lib.load(f"configs/lra/listops.py:preset=smoke,attn={name}")
    task = tasks.get(config.task)
    mesh = train.make_mesh()
    replicated = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
    graphdef, state, optimizer, schedule = train.init_state(task, config, replicated)
    step, _ = train.make_steps(task, graphdef, optimizer, schedule, 0, state, mesh)
    rng = np.random.default_rng(0)
    n = config.data.max_length
    tokens = rng.integers(1, 16, size=(config.batch_size, n)).astype(np.uint8)
    tokens[: config.batch_size // 2, n // 2 :] = 0  # half the batch padded
    batch = {
        "tokens": jnp.asarray(tokens),
        "label": jnp.asarray(rng.integers(0, 10, 16)),
        "weight": jnp.ones(config.batch_size),
    }
    return state, step, batch


@pytest.mark.parametrize("name", attention.names())
def test_mechanism_trains_in_the_shared_encoder(name):
    state, step, batch = _step(name)
    count = int(sum(x.size for x in jax.tree.leaves(state["params"])))
    assert name in PARAM_COUNTS, f"pin the parameter count of {name!r}: {count}"
    assert count == PARAM_COUNTS[name]
    before = jax.tree.map(np.asarray, state["params"])
    for _ in range(2):
        state, metrics = step(state, batch)
    assert np.isfinite(float(metrics["train_loss"])) and np.isfinite(float(metrics["grad_norm"]))
    assert float(metrics["grad_norm"]) > 0
    changed = jax.tree.map(
        lambda a, b: not np.array_equal(a, np.asarray(b)), before, state["params"]
    )
    assert any(jax.tree.leaves(changed))


def test_dropping_qk_projections_shows_in_the_parameter_count():
    for name in attention.names():
        if not attention.get(name).needs_qk:
            graphdef_params = _step(name)[0]["params"]
            attn = graphdef_params["encoder"]["blocks"][0]["attn"]
            assert "query" not in attn and "key" not in attn
