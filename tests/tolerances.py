"""The test suite's tolerance policy: how float results are compared, stated once.

References. A reference is computed independently of the code under test and more precisely:
in float64 numpy (the `ref_*.py` loops, the finite differences), under `jax.enable_x64`, or,
when it is itself a float32 jax computation (e.g. `softmax` as the reference of `local` with
a window covering everything), inside `reference_precision()`, i.e.
`jax.default_matmul_precision("highest")`, so that a GPU does not compute it with TF32.

Comparisons of a computation with a reference, or of two different computations of the same
quantity (chunked vs unchunked, jit vs eager, the fast path vs the general path), go through
`assert_close`, whose tolerance depends on the dtype of the computation under test and on
`jax.default_backend()`:

    dtype      cpu                      gpu                      tpu
    float64    rtol 1e-10, atol 1e-12   rtol 1e-10, atol 1e-12   rtol 1e-10, atol 1e-12
    float32    rtol 1e-5,  atol 1e-6    rtol 5e-3,  atol 5e-3    rtol 2e-2,  atol 2e-2
    bfloat16   rtol 2e-2,  atol 2e-2    (the same on every backend)
    float16    rtol 5e-3,  atol 5e-3    (the same on every backend)

  * CPU float32 is tight: XLA:CPU computes float32 products in float32 and sums in a fixed
    order, so two formulations of one quantity agree to a few ulps (~1e-7 relative) and a
    float32 result is within ~1e-6 of a float64 reference for the small, well-conditioned
    inputs of these tests.
  * GPU float32 is loose enough for TF32, the GPU default for float32 matrix products
    (`jax_default_matmul_precision` unset): the operands are rounded to a 10-bit mantissa,
    2**-11 ~ 4.9e-4 relative each, so a product term is off by up to ~1e-3 relative. For the
    unit-scale attention inputs of these tests that puts logits and outputs up to ~1.5e-3
    (an estimate) from the exact values, hence 5e-3. Reductions in another order and fused
    kernels add only ~1e-7. XLA:GPU computes small dot products (below
    `--xla_gpu_gemm_rewrite_size_threshold` elements) with its own exact float32 emitter
    rather than cuBLAS, so small tests often meet the CPU tolerance anyway; the policy does
    not rely on that.
  * TPU float32 products default to one bfloat16 pass (8-bit mantissa), so TPU float32 gets
    the bfloat16 tolerance.
  * float64 never uses TF32 or bfloat16 passes; only the summation order differs between
    backends (~1e-16 relative), so float64 keeps one tight tolerance everywhere.

A test may pass its own `rtol`/`atol` (e.g. 1e-4 for a float32 result against a float64
reference after an ill-conditioned step, or 0 for two formulations that are bit-identical on
the CPU): those are its CPU tolerance, used as given on the CPU, where the test keeps its full
power; on other backends the table is a floor, `max(given, table)`. An omitted `rtol` or
`atol` takes the table's value on every backend.

Bit equality (`assert_identical`, or `np.testing.assert_array_equal`) is kept only where
equality is the property itself: the same function run twice on the same backend (train-mode
determinism per key), evaluation ignoring a key, integer and boolean outputs (indices, masks,
walk supports), sorting and other exact data movement, data pipelines. On a GPU this needs
XLA's deterministic ops (scatter-adds and some reductions are otherwise non-deterministic, and
autotuning may pick another kernel per compilation): `tests/conftest.py` appends
`--xla_gpu_deterministic_ops=true` to `XLA_FLAGS` before jax creates a backend (harmless on
CPU; an explicit `--xla_gpu_deterministic_ops=...` already in `XLA_FLAGS` is left as it is).
The determinism tests are therefore not loosened. (The flag also turns off autotuning and
makes select-and-scatter, the gradient of max pooling, fail to compile; nothing here uses it.)

Tests marked `gpu` (`@pytest.mark.gpu`) are skipped unless `jax.default_backend() == "gpu"`.
"""

from __future__ import annotations

import numpy as np

DETERMINISTIC_XLA_FLAG = "--xla_gpu_deterministic_ops=true"

_EVERYWHERE = {"float64": (1e-10, 1e-12), "bfloat16": (2e-2, 2e-2), "float16": (5e-3, 5e-3)}
TOLERANCES = {
    "cpu": {**_EVERYWHERE, "float32": (1e-5, 1e-6)},
    "gpu": {**_EVERYWHERE, "float32": (5e-3, 5e-3)},
    "tpu": {**_EVERYWHERE, "float32": (2e-2, 2e-2)},
}


def backend() -> str:
    """`jax.default_backend()` ("cpu", "gpu" or "tpu")."""
    import jax

    return jax.default_backend()


def _dtype_name(dtype) -> str:
    return np.dtype(dtype).name


def tolerance(dtype, backend_name: str | None = None) -> tuple[float, float]:
    """`(rtol, atol)` of the policy for a computation in `dtype` on `backend_name` (default:
    the running backend). Unknown backends get the GPU row, unknown float dtypes float32's."""
    name = _dtype_name(dtype)
    row = TOLERANCES.get(backend_name or backend(), TOLERANCES["gpu"])
    return row.get(name, row["float32"])


def with_extra_xla_flag(existing: str | None, flag: str = DETERMINISTIC_XLA_FLAG) -> str:
    """`existing` XLA_FLAGS with `flag` appended, unless the flag (any value) is already set."""
    existing = (existing or "").strip()
    name = flag.split("=", 1)[0]
    if any(part.split("=", 1)[0] == name for part in existing.split()):
        return existing
    return f"{existing} {flag}".strip()


def reference_precision():
    """Context for a float32 jax reference: full float32 matrix products on every backend."""
    import jax

    return jax.default_matmul_precision("highest")


def _as_array(x):
    return np.asarray(x)


def assert_close(actual, expected, *, dtype=None, rtol=None, atol=None, what: str = "") -> None:
    """`actual` (a computation in `dtype`, default `actual`'s dtype) is `expected` within the
    policy's tolerance for that dtype on the running backend.

    `rtol`/`atol`, when given, are the test's CPU tolerance (0 for bit-identical on the CPU);
    on other backends the policy is a floor. Integer and boolean results must be equal.
    """
    a, e = _as_array(actual), _as_array(expected)
    dt = np.dtype(dtype) if dtype is not None else a.dtype
    label = f"{what + ': ' if what else ''}"
    if not (np.issubdtype(dt, np.floating) or dt.name in ("bfloat16", "float16")):
        np.testing.assert_array_equal(a, e, err_msg=f"{label}{dt} results must be equal")
        return
    name = backend()
    policy_rtol, policy_atol = tolerance(dt, name)
    if name == "cpu":
        r = policy_rtol if rtol is None else rtol
        t = policy_atol if atol is None else atol
    else:
        r = policy_rtol if rtol is None else max(rtol, policy_rtol)
        t = policy_atol if atol is None else max(atol, policy_atol)
    np.testing.assert_allclose(
        a.astype(np.float64),
        e.astype(np.float64),
        rtol=r,
        atol=t,
        err_msg=f"{label}{dt.name} on {name}: rtol={r:g}, atol={t:g} (tests/tolerances.py)",
    )


def assert_identical(actual, expected, *, what: str = "") -> None:
    """Bit equality, where it is the property itself (the same computation twice on one
    backend, with deterministic ops on a GPU; integer outputs; exact data movement)."""
    np.testing.assert_array_equal(_as_array(actual), _as_array(expected), err_msg=what)


__all__ = [
    "DETERMINISTIC_XLA_FLAG",
    "TOLERANCES",
    "assert_close",
    "assert_identical",
    "backend",
    "reference_precision",
    "tolerance",
    "with_extra_xla_flag",
]
