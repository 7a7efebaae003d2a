"""Config plumbing: `path:arg` loading, the `k=v,k=v` argument string, strict overrides.

Config is code: `configs/<domain>/<task>.py` defines `get_config(arg: str | None)`. This module
parses `arg`, loads a config file, and applies dotted overrides. A misspelt key is an error
everywhere (ml_collections `FieldReference`s are locked so assignment to an unknown field raises
as well).

Config files are named the same way from any directory: a relative path is looked up first in the
installed `configs` package (`lra/listops.py`; a leading `configs/` is optional, so
`lra/listops.py` works too), then relative to the current directory (a config of your
own); an absolute path, or one starting with `./`, `../` or `~`, names a file. `canonical(spec)`
is the name recorded in summaries and table cells: the path inside the configs package where the
file is one of ours.
"""

from __future__ import annotations

import ast
import copy
import difflib
import importlib.resources
import importlib.util
import pathlib
from collections.abc import Mapping
from typing import Any

import ml_collections

from attnbench.errors import ConfigError

__all__ = [
    "ConfigError",
    "parse_arg",
    "find",
    "canonical",
    "load",
    "override",
    "resolve",
    "compute_dtype",
    "to_dict",
]

PACKAGE = "configs"
# Backends (`jax.default_backend()`, or a device's `platform`) on which dtype "auto" is bfloat16.
ACCELERATOR_PLATFORMS = ("gpu", "cuda", "rocm", "tpu")


def _coerce(raw: str, like: Any, key: str, field_type: type | None = None) -> Any:
    """`raw` (command-line text) as a value of `like`'s type (or `field_type` where the field
    holds None); the message names the field and the value typed."""
    kind = field_type if like is None and field_type is not None else type(like)
    if kind is bool:
        if raw.lower() in ("1", "true", "yes"):
            return True
        if raw.lower() in ("0", "false", "no"):
            return False
        raise ConfigError(f"{key}={raw!r}: expected a boolean (true or false)")
    if kind is int:
        try:
            return int(raw)
        except ValueError:
            raise ConfigError(f"{key}={raw!r}: expected an integer") from None
    if kind is float:
        if like is None and raw.lower() == "none":
            return None
        try:
            return float(raw)
        except ValueError:
            raise ConfigError(f"{key}={raw!r}: expected a number") from None
    if kind is str or (like is None and field_type is None):
        return raw
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        raise ConfigError(f"{key}={raw!r}: cannot parse as a Python literal") from None
    if kind is tuple and isinstance(value, list):
        value = tuple(value)
    if value is not None and not isinstance(value, kind):
        raise ConfigError(f"{key}={raw!r}: expected a {kind.__name__}")
    return value


def _did_you_mean(word: str, options) -> str:
    close = difflib.get_close_matches(word, list(options), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def parse_arg(arg: str | None, defaults: Mapping[str, Any]) -> ml_collections.ConfigDict:
    """Parses `"k=v,k=v"` against `defaults`; values take the type of the default.

    Raises:
      ConfigError: a key that `defaults` lacks (the message lists the valid keys) or a value
        that does not parse as its default's type.
    """
    out = dict(defaults)
    for item in filter(None, (arg or "").split(",")):
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep:
            raise ConfigError(f"config argument {item!r} is not of the form key=value")
        if key not in defaults:
            raise ConfigError(
                f"unknown config argument {key!r}{_did_you_mean(key, defaults)}; valid: "
                f"{', '.join(sorted(defaults))}"
            )
        out[key] = _coerce(raw.strip(), defaults[key], key)
    return ml_collections.ConfigDict(out)


def _package_dir() -> pathlib.Path:
    """The folder of the installed `configs` package."""
    return pathlib.Path(importlib.resources.files(PACKAGE))


def _explicit(path: str) -> bool:
    """An absolute path, or one that says it is relative to the current directory."""
    return pathlib.Path(path).is_absolute() or path.startswith(("./", "../", "~", ".\\", "..\\"))


def find(path: str) -> pathlib.Path:
    """The config file `path` names (see the module docstring); `ConfigError` if none."""
    if not path.strip():
        raise ConfigError("--config is empty; name a config file, e.g. lra/listops.py:preset=smoke")
    if _explicit(path):
        file = pathlib.Path(path).expanduser()
        if file.is_file():
            return file
        raise ConfigError(f"config file not found: {path}")
    inner = path.removeprefix(f"{PACKAGE}/")
    packaged = _package_dir() / inner
    if packaged.is_file() and packaged.suffix == ".py":
        return packaged
    local = pathlib.Path(path)
    if local.is_file():
        return local
    domains = sorted(
        p.name for p in _package_dir().iterdir() if p.is_dir() and (p / "__init__.py").exists()
    )
    raise ConfigError(
        f"config file not found: {path} (looked in the configs package, whose folders are "
        f"{', '.join(d + '/' for d in domains if d != 'tables')}, and in the current directory)"
    )


def canonical(spec: str) -> str:
    """`spec` (`path[:arg]`) with its path as summaries record it: the path inside the configs
    package for one of ours (`lra/listops.py:preset=cpu`), else the file relative to the current
    directory where it lies below it, else as given."""
    path, sep, arg = spec.partition(":")
    file = find(path).resolve()
    try:
        name = file.relative_to(_package_dir().resolve()).as_posix()
    except ValueError:
        try:
            name = file.relative_to(pathlib.Path.cwd().resolve()).as_posix()
        except ValueError:
            name = path
    return f"{name}{sep}{arg}"


def load(spec: str) -> ml_collections.ConfigDict:
    """Loads `path/to/config.py[:arg]` and returns its locked `get_config(arg)`."""
    path, _, arg = spec.partition(":")
    file = find(path)
    name = "_attnbench_config_" + "".join(c if c.isalnum() else "_" for c in str(file))
    spec_ = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec_)
    spec_.loader.exec_module(module)
    if not callable(getattr(module, "get_config", None)):
        raise ConfigError(f"{path} defines no get_config(arg): it is not a config file")
    config = module.get_config(arg or None)
    config.lock()
    return config


def override(config: ml_collections.ConfigDict, overrides: Mapping[str, Any]):
    """Applies `{"a.b.c": value}` overrides (strings are parsed as the field's type); a field or
    section that does not exist, or a value of the wrong type, is a ConfigError naming it."""
    for dotted, value in overrides.items():
        *parents, leaf = dotted.split(".")
        node = config
        for i, part in enumerate(parents):
            if part not in node or not isinstance(node[part], ml_collections.ConfigDict):
                sections = [k for k, v in node.items() if isinstance(v, ml_collections.ConfigDict)]
                raise ConfigError(
                    f"config has no section {'.'.join(parents[: i + 1])!r}"
                    f"{_did_you_mean(part, sections)}"
                )
            node = node[part]
        if leaf not in node:
            valid = ", ".join(sorted(node.keys()))
            raise ConfigError(
                f"config has no field {dotted!r}{_did_you_mean(leaf, node.keys())}; valid here: "
                f"{valid}"
            )
        old = node[leaf]
        if isinstance(old, ml_collections.ConfigDict):
            raise ConfigError(f"config.{dotted} is a section; set one of its fields instead")
        if isinstance(value, str):
            value = _coerce(value, old, f"config.{dotted}", node.get_type(leaf))
        try:
            node[leaf] = value
        except (TypeError, ValueError) as e:
            raise ConfigError(f"config.{dotted}={value!r}: {e}") from None
    return config


def compute_dtype(name: str, platform: str | None = None) -> str:
    """The compute dtype `config.model.dtype = name` means on backend `platform` (default: JAX's
    default backend): "auto" is "bfloat16" on a GPU or TPU and "float32" anywhere else (on CPU
    XLA emulates bfloat16 arithmetic, slower than float32, and nobody trains in it there); any
    other name is returned unchanged. The one place this decision is taken."""
    if name != "auto":
        return name
    import jax

    platform = (platform or jax.default_backend()).lower()
    return "bfloat16" if platform in ACCELERATOR_PLATFORMS else "float32"


def resolve(config: ml_collections.ConfigDict, platform: str | None = None):
    """`config` itself, or where `config.model.dtype` is "auto" a copy with it resolved for
    `platform` (`compute_dtype`). Applied once, before a model is built (`attnbench.steps.setup`,
    `attnbench.nn.flops.count`); models never see "auto". Config files and table cells keep
    "auto", so a cell names the same config on every machine."""
    model = config.get("model")
    if model is None or model.get("dtype") != "auto":
        return config
    config = copy.deepcopy(config)
    config.model.dtype = compute_dtype("auto", platform)
    return config


def to_dict(config: ml_collections.ConfigDict) -> dict:
    """A plain JSON-able dict of the config."""
    return config.to_dict()
