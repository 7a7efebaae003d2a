"""The registry: every name resolves with its defaults, errors list what is valid."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attention


def test_names_include_softmax():
    assert "softmax" in attention.names()
    assert attention.names() == sorted(attention.names())


@pytest.mark.parametrize("name", attention.names())
def test_every_mechanism_works_bare(name):
    mech = attention.get(name)
    assert mech.name == name
    params = mech.init(jax.random.key(0), num_heads=2, head_dim=4)
    q = jnp.ones((1, 6, 2, 4))
    out = mech.apply(params, q, q, q, key=jax.random.key(1))
    assert out.shape == (1, 6, 2, 4)
    assert np.all(np.isfinite(np.asarray(out)))


def test_unknown_name_lists_known_ones():
    with pytest.raises(attention.UnknownAttentionError) as err:
        attention.get("sofmax")
    assert "sofmax" in str(err.value) and "softmax" in str(err.value)


def test_unknown_hyper_parameter_is_an_error():
    with pytest.raises(TypeError, match="no hyper-parameter.*dropout.*valid: dropout_rate"):
        attention.get("softmax", dropout=0.1)


def test_bound_hyper_parameters_are_reported():
    assert attention.get("softmax", dropout_rate=0.2).hparams["dropout_rate"] == 0.2
    assert attention.defaults("softmax")["dropout_rate"] == 0.0
