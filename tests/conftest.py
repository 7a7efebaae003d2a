"""Test-wide settings: generated data goes to a per-session temporary cache."""

import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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
