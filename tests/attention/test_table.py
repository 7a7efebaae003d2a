"""Every registered mechanism against its float64 reference: outputs with masks, jit and no-jit,
gradients by finite differences. A registered name missing from the table fails."""

import importlib
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attention

_HERE = pathlib.Path(__file__).parent
CASES = {}
for _file in sorted(_HERE.glob("ref_*.py")):
    CASES.update(importlib.import_module(f"tests.attention.{_file.stem}").CASES)

B, H, D, MODEL_DIM = 2, 2, 3, 8


def test_every_registered_mechanism_has_a_reference_case():
    # a case "name:option=value" is the mechanism with a variant of its hyper-parameters
    registered = {key.partition(":")[0] for key in CASES}
    missing = sorted(set(attention.names()) - registered)
    assert not missing, f"registered mechanisms without a reference case: {missing}"
    unknown = sorted(registered - set(attention.names()))
    assert not unknown, f"cases for unregistered names: {unknown}"


def _mask(kind, n):
    if kind == "none":
        return None, None
    if kind == "key_padding":
        pad = np.ones((B, n), bool)
        pad[0, n - 2 :] = False
        return pad, np.broadcast_to(pad[:, None, None, :], (B, H, n, n))
    full = np.random.default_rng(5).random((B, H, n, n)) > 0.3
    full[..., 0] = True  # every query keeps at least one key
    return full, full


def _setup(name, case, seed=0):
    mech = attention.get(name.partition(":")[0], **case.hparams)
    rng = np.random.default_rng(seed)
    q, k, v = (rng.normal(size=(B, case.n, H, D)) for _ in range(3))
    inputs = case.inputs(rng, B, case.n, MODEL_DIM) if case.inputs else {}
    with jax.enable_x64(True):
        params = mech.init(
            jax.random.key(seed), num_heads=H, head_dim=D, model_dim=MODEL_DIM, max_len=case.n
        )
        params = jax.tree.map(
            lambda x: (
                jnp.asarray(x, jnp.float64)
                if jnp.issubdtype(jnp.asarray(x).dtype, jnp.floating)
                else x
            ),
            params,
        )
    return mech, params, q, k, v, inputs


_ALL = [(name, kind) for name, case in sorted(CASES.items()) for kind in case.masks]


# Eager (op by op) is the slow tier (`make test-slow`): ~35 s of the 10-minute budget.
@pytest.mark.parametrize(
    "use_jit", [pytest.param(False, marks=pytest.mark.slow), True], ids=["eager", "jit"]
)
@pytest.mark.parametrize("name,mask_kind", _ALL)
def test_matches_reference(name, mask_kind, use_jit):
    case = CASES[name]
    mech, params, q, k, v, inputs = _setup(name, case)
    api_mask, ref_mask = _mask(mask_kind, case.n)
    np_params = jax.tree.map(np.asarray, params)
    expected = case.reference(np_params, q, k, v, ref_mask, **inputs)
    fn = jax.jit(mech.apply, static_argnames=("train",)) if use_jit else mech.apply
    with jax.enable_x64(True):
        got = fn(
            params,
            jnp.asarray(q),
            jnp.asarray(k),
            jnp.asarray(v),
            mask=api_mask,
            train=False,
            **{k_: jnp.asarray(x) for k_, x in inputs.items()},
        )
    np.testing.assert_allclose(np.asarray(got), expected, rtol=case.rtol, atol=case.rtol)


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if c.grad))
def test_gradients_match_finite_differences(name):
    case = CASES[name]
    mech, params, q, k, v, inputs = _setup(name, case, seed=1)
    api_mask, ref_mask = _mask(case.masks[-1], case.n)
    w = np.random.default_rng(2).normal(size=(B, case.n, H, D))
    np_params = jax.tree.map(np.asarray, params)

    def ref_loss(q, k, v):
        return float((case.reference(np_params, q, k, v, ref_mask, **inputs) * w).sum())

    with jax.enable_x64(True):
        jin = {k_: jnp.asarray(x) for k_, x in inputs.items()}
        loss = lambda q, k, v: (mech.apply(params, q, k, v, mask=api_mask, **jin) * w).sum()
        grads = jax.jit(jax.grad(loss, (0, 1, 2)))(*(jnp.asarray(x) for x in (q, k, v)))
    eps = 1e-6
    rng = np.random.default_rng(3)
    for arg, (x, g) in enumerate(zip((q, k, v), grads, strict=True)):
        for _ in range(6):  # random coordinates keep this fast for every mechanism
            idx = tuple(rng.integers(0, s) for s in x.shape)
            args = [q, k, v]
            plus, minus = x.copy(), x.copy()
            plus[idx] += eps
            minus[idx] -= eps
            args[arg] = plus
            fp = ref_loss(*args)
            args[arg] = minus
            fm = ref_loss(*args)
            np.testing.assert_allclose(g[idx], (fp - fm) / (2 * eps), rtol=1e-5, atol=1e-7)
