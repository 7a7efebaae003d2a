"""Test-wide settings: deterministic GPU ops, the `gpu` marker, and a per-session temporary
cache for generated data. The tolerance policy is in tests/tolerances.py."""

import os
import sys
import warnings

import pytest

from tests import tolerances

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Before jax creates a backend (this module is imported before any test module): determinism
# tests (the same step twice gives identical results) hold on a GPU only with XLA's
# deterministic ops. Harmless on CPU; an explicit setting in XLA_FLAGS is kept.
os.environ["XLA_FLAGS"] = tolerances.with_extra_xla_flag(os.environ.get("XLA_FLAGS"))
_bridge = sys.modules.get("jax._src.xla_bridge")
if _bridge is not None and _bridge.backends_are_initialized():
    warnings.warn(
        "jax created its backends before tests/conftest.py set XLA_FLAGS; on a GPU the "
        f"determinism tests need {tolerances.DETERMINISTIC_XLA_FLAG}",
        stacklevel=1,
    )


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "gpu: needs a GPU (jax.default_backend() == 'gpu'); skipped elsewhere"
    )


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if item.get_closest_marker("gpu") is not None]
    if not gpu_items or tolerances.backend() == "gpu":
        return
    skip = pytest.mark.skip(reason=f"needs a GPU; jax's backend is {tolerances.backend()!r}")
    for item in gpu_items:
        item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def data_cache(tmp_path_factory):
    path = tmp_path_factory.mktemp("attnbench-data")
    old = os.environ.get("ATTNBENCH_DATA")
    os.environ["ATTNBENCH_DATA"] = str(path)
    yield path
    if old is None:
        os.environ.pop("ATTNBENCH_DATA", None)
    else:
        os.environ["ATTNBENCH_DATA"] = old
