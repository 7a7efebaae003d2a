"""Config plumbing: `path:arg` loading, the `k=v,k=v` argument string, strict overrides.

Config is code: `configs/<domain>/<task>.py` defines `get_config(arg: str | None)`. This module
parses `arg`, loads a config file by path, and applies dotted overrides. A misspelt key is an
error everywhere (ml_collections `FieldReference`s are locked so assignment to an unknown field
raises as well).
"""

from __future__ import annotations

import ast
import importlib.util
import pathlib
from collections.abc import Mapping
from typing import Any

import ml_collections

__all__ = ["ConfigError", "parse_arg", "load", "override", "to_dict"]


class ConfigError(ValueError):
    """A config argument or override that does not exist or does not parse."""


def _coerce(raw: str, like: Any, key: str) -> Any:
    if isinstance(like, bool):
        if raw.lower() in ("1", "true", "yes"):
            return True
        if raw.lower() in ("0", "false", "no"):
            return False
        raise ConfigError(f"{key}={raw!r}: expected a boolean")
    if isinstance(like, int) and not isinstance(like, bool):
        try:
            return int(raw)
        except ValueError:
            raise ConfigError(f"{key}={raw!r}: expected an integer") from None
    if isinstance(like, float):
        try:
            return float(raw)
        except ValueError:
            raise ConfigError(f"{key}={raw!r}: expected a number") from None
    if isinstance(like, str) or like is None:
        return raw
    try:
        return ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        raise ConfigError(f"{key}={raw!r}: cannot parse") from None


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
                f"unknown config argument {key!r}; valid: {', '.join(sorted(defaults))}"
            )
        out[key] = _coerce(raw.strip(), defaults[key], key)
    return ml_collections.ConfigDict(out)


def load(spec: str) -> ml_collections.ConfigDict:
    """Loads `path/to/config.py[:arg]` and returns its locked `get_config(arg)`."""
    path, _, arg = spec.partition(":")
    file = pathlib.Path(path)
    if not file.is_file():
        raise ConfigError(f"config file not found: {path}")
    spec_ = importlib.util.spec_from_file_location(f"_attnbench_config_{file.stem}", file)
    module = importlib.util.module_from_spec(spec_)
    spec_.loader.exec_module(module)
    config = module.get_config(arg or None)
    config.lock()
    return config


def override(config: ml_collections.ConfigDict, overrides: Mapping[str, Any]):
    """Applies `{"a.b.c": value}` overrides; a key that does not exist is a ConfigError."""
    for dotted, value in overrides.items():
        *parents, leaf = dotted.split(".")
        node = config
        for i, part in enumerate(parents):
            if part not in node or not isinstance(node[part], ml_collections.ConfigDict):
                raise ConfigError(f"config has no section {'.'.join(parents[: i + 1])!r}")
            node = node[part]
        if leaf not in node:
            valid = ", ".join(sorted(node.keys()))
            raise ConfigError(f"config has no field {dotted!r}; valid here: {valid}")
        old = node[leaf]
        node[leaf] = _coerce(value, old, dotted) if isinstance(value, str) else value
    return config


def to_dict(config: ml_collections.ConfigDict) -> dict:
    """A plain JSON-able dict of the config."""
    return config.to_dict()
