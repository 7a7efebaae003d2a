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


# ---- the output contract: every call of a mechanism from `get` checks its shape ------------


@pytest.fixture
def registry_copy(monkeypatch):
    """A copy of the table: the test's mechanisms leave the registry as it found it."""
    monkeypatch.setattr(attention.registry, "_REGISTRY", dict(attention.registry._REGISTRY))


def _one_token(params, q, k, v, *, mask=None, key=None, train=False):
    return v[:, :1]  # [B, 1, H, D]: would broadcast over every token and train


def _flat(params, q, k, v, *, mask=None, key=None, train=False):
    return v.reshape(v.shape[0], v.shape[1], -1)  # [B, N, H * D]


def _tuple(params, q, k, v, *, mask=None, key=None, train=False):
    return v, None


def _integer(params, q, k, v, *, mask=None, key=None, train=False):
    return v.astype(jnp.int32)


@pytest.mark.parametrize(
    "apply,expected",
    [
        (_one_token, "returned shape (2, 1, 3, 4), expected (2, 8, 3, 4) "),
        (_flat, "returned shape (2, 8, 12), expected (2, 8, 3, 4) "),
        (_tuple, "returned a tuple, expected an array of shape (2, 8, 3, 4) "),
        (_integer, "returned an array of dtype int32, expected a floating dtype"),
    ],
    ids=["one-token", "flat", "tuple", "integer"],
)
def test_a_wrong_output_is_named_under_jit_and_grad(registry_copy, apply, expected):
    from attnbench import errors

    attention.register("mine", apply=apply)
    mech = attention.get("mine")
    q = jnp.ones((2, 8, 3, 4))

    def call(q):
        return mech.apply({}, q, q, q)

    for run in (call, jax.jit(call), jax.grad(lambda q: jnp.sum(call(q)))):
        with pytest.raises(attention.AttentionOutputError) as err:
            run(q)
        assert str(err.value).startswith("attention 'mine' ") and expected in str(err.value)
        assert str(err.value).endswith("; fix its apply")
    assert errors.is_user_error(err.value)  # one line and exit 2 at every entry point


def test_the_expected_shape_is_the_queries_and_the_values_heads_and_width():
    """q's batch and queries (CaiT's class attention: one query), v's heads and width (Dv may
    differ from Dk); v's tokens when a mechanism takes no q (Sliceformer)."""
    q, k, v = jnp.ones((2, 1, 3, 4)), jnp.ones((2, 8, 3, 4)), jnp.ones((2, 8, 3, 5))
    assert attention.get("softmax").apply({}, q, k, v).shape == (2, 1, 3, 5)
    assert attention.get("sliceformer").apply({}, None, None, v).shape == (2, 8, 3, 5)


def test_a_model_with_a_wrong_mechanism_fails_when_it_is_built(registry_copy):
    """The attention layer traces the mechanism abstractly when it is built, so a run fails
    before it writes anything (tests/scripts/test_user_attention_errors.py, through the CLI)."""
    from flax import nnx

    from attnbench.nn import layers

    attention.register("mine", apply=_one_token)
    with pytest.raises(attention.AttentionOutputError, match=r"'mine' returned shape \(1, 1,"):
        layers.Attention(8, 2, 8, attention.get("mine"), max_len=16, rngs=nnx.Rngs(0))
    layers.Attention(8, 2, 8, attention.get("softmax"), max_len=16, rngs=nnx.Rngs(0))


# ---- one registration per name ------------------------------------------------------------


def test_a_taken_name_is_refused_naming_who_registered_it_and_what_to_do(registry_copy):
    from attnbench import errors

    with pytest.raises(attention.DuplicateAttentionError) as err:
        attention.register("softmax", apply=_one_token)
    text = str(err.value)
    assert text.startswith("attention 'softmax' is already registered by module attention.softmax")
    assert "register yours under another name" in text and "\n" not in text
    assert errors.is_user_error(err.value) and isinstance(err.value, ValueError)
    attention.register("mine", apply=_one_token)
    with pytest.raises(attention.DuplicateAttentionError, match=f"by module {__name__} "):
        attention.register("mine", apply=_flat)


def test_the_same_registration_again_is_harmless(registry_copy, tmp_path):
    """A module imported twice registers the same function (or, executed again, the same
    definition): nothing changes, nothing is refused."""
    import importlib.util

    attention.register("mine", apply=_one_token)
    attention.register("mine", apply=_one_token)
    source = tmp_path / "plugin_twice.py"
    source.write_text(
        "import attention\n"
        "def apply(params, q, k, v, *, mask=None, key=None, train=False):\n"
        "    return v\n"
        'attention.register("twice", apply=apply)\n'
    )
    for name in ("plugin_twice_a", "plugin_twice_b"):  # two module objects, one file
        spec = importlib.util.spec_from_file_location(name, source)
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    assert "twice" in attention.names()
