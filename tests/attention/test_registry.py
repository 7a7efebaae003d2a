"""The registry: every name resolves with its defaults, errors list what is valid."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attention


def test_names_include_softmax():
    assert "softmax" in attention.names()
    assert attention.names() == sorted(attention.names())


def _inputs(mech, b, n):
    """Plain values for the extra inputs a mechanism declares (None where optional)."""
    made = {
        "x": jnp.ones((b, n, 8)),
        "coords": jnp.asarray(np.random.default_rng(0).normal(size=(b, n, 3))),
    }
    return {name: made[name] for name in mech.inputs if name in made}


@pytest.mark.parametrize(
    "name",
    # SAMSA's defaults cost ~12 s of compilation; tests/attention/test_samsa.py covers them
    [pytest.param(n, marks=pytest.mark.slow) if n == "samsa" else n for n in attention.names()],
)
def test_every_mechanism_works_with_its_defaults(name):
    mech = attention.get(name)
    assert mech.name == name
    params = mech.init(jax.random.key(0), num_heads=2, head_dim=4, model_dim=8, max_len=16)
    q = jnp.asarray(np.random.default_rng(1).normal(size=(1, 16, 2, 4)), jnp.float32)
    qk = (q, q) if mech.needs_qk else (None, None)
    for train in (False, True):
        out = mech.apply(params, *qk, q, key=jax.random.key(1), train=train, **_inputs(mech, 1, 16))
        assert out.shape == (1, 16, 2, 4)
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


@pytest.mark.parametrize("name", attention.names())
def test_every_mechanism_registers_a_flop_formula_bound_by_get(name):
    formula = attention.flops_formula(name)
    assert formula is not None, f"{name} registered no FLOP formula (register(..., flops=...))"
    call = attention.cost.Call(n=16, m=16, h=2, dk=4, dv=4, d_model=8, masked=True)
    mm, ew = attention.get(name).flops(call)
    assert (mm, ew) == formula(call, attention.defaults(name))
    assert mm >= 0 and ew >= 0


def test_a_mechanism_without_a_formula_has_none(monkeypatch):
    # A copy of the table: the test's mechanism leaves the registry as it found it.
    monkeypatch.setattr(attention.registry, "_REGISTRY", dict(attention.registry._REGISTRY))
    attention.register("no_formula", apply=lambda params, q, k, v, **kw: v)
    assert attention.flops_formula("no_formula") is None
    assert attention.get("no_formula").flops is None
    with pytest.raises(attention.UnknownAttentionError, match="sofmax"):
        attention.flops_formula("sofmax")
