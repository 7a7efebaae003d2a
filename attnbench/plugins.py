"""Your own code, without touching the package: `--import` on every entry point.

    python -m scripts.train --import ~/work/my_attention.py \
        --config configs/lra/listops.py:preset=cpu,attn=mine --workdir runs/mine
    python -m scripts.reproduce samsa.table1 --import mypkg.attn --attn mine --preset cpu

A module registers what it defines when it is imported (`attention.register("mine", ...)`,
`attnbench.tasks.register(...)`, `attnbench.evaluators.register(...)`). `--import` takes a dotted
module name on `sys.path` or a path to a `.py` file anywhere; every module named in the environment
variable `ATTNBENCH_IMPORT` (separated by `:` or `,`) is imported too, and modules advertised under
the `attnbench.plugins` entry-point group of installed packages are imported by
`load_entry_points()`.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import pathlib
import sys
from collections.abc import Iterable
from importlib import metadata

from attnbench import errors

__all__ = ["import_modules", "load_entry_points", "resolve", "ENV", "GROUP"]

ENV = "ATTNBENCH_IMPORT"
GROUP = "attnbench.plugins"
_LOADED: dict[str, str] = {}


def resolve(spec: str) -> str:
    """`spec` as another process should be given it: a file path made absolute."""
    spec = spec.strip()
    if spec.endswith(".py") or os.sep in spec:
        return str(pathlib.Path(spec).expanduser().resolve())
    return spec


def _import_one(spec: str) -> None:
    spec = resolve(spec)
    if spec in _LOADED:
        return
    if spec.endswith(".py"):
        path = pathlib.Path(spec)
        if not path.is_file():
            raise errors.ConfigError(f"--import {spec}: file not found")
        name = f"attnbench_user_{path.stem}_{abs(hash(spec)) % 10**8}"
        module_spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        try:
            module_spec.loader.exec_module(module)
        except Exception:
            sys.modules.pop(name, None)
            raise
    else:
        try:
            importlib.import_module(spec)
        except ModuleNotFoundError as e:
            if e.name and spec.startswith(e.name):
                raise errors.ConfigError(
                    f"--import {spec}: no module named {e.name!r} on the Python path (give a "
                    "path to a .py file, or install the package)"
                ) from None
            raise
    _LOADED[spec] = spec


def import_modules(specs: Iterable[str] = ()) -> list[str]:
    """Imports every module in `specs` and in `$ATTNBENCH_IMPORT`; returns their resolved
    specs (to pass on to child processes)."""
    load_entry_points()
    env = [s for part in os.environ.get(ENV, "").replace(",", ":").split(":") if (s := part)]
    out = []
    for spec in [*env, *specs]:
        _import_one(spec)
        out.append(resolve(spec))
    return out


def load_entry_points() -> list[str]:
    """Imports the modules of installed packages' `attnbench.plugins` entry points."""
    names = []
    for ep in metadata.entry_points(group=GROUP):
        if f"entry point {ep.name}" not in _LOADED:
            ep.load()
            _LOADED[f"entry point {ep.name}"] = ep.value
        names.append(ep.name)
    return names
