"""Registry of attention mechanisms: a name maps to `(init, apply)` plus default hyper-parameters.

A mechanism is the optax-style pair of pure functions::

    params = mech.init(key, num_heads=H, head_dim=D)      # plain arrays, possibly {}
    out = mech.apply(params, q, k, v, mask=None, key=None, train=False, **inputs)

with `q: [B, N, H, Dk]`, `k: [B, M, H, Dk]`, `v: [B, M, H, Dv]` -> `[B, N, H, Dv]` (the
`jax.nn.dot_product_attention` layout). Hyper-parameters are bound by `get(name, **hparams)`;
every one has a default, so `get(name)` always works.

Conventions a mechanism declares when it registers:
  * `init(key, *, num_heads, head_dim, model_dim=None, max_len=None, layer_index=0,
    num_layers=1, **hparams)` returns a dict of arrays (`layer_index` lets a mechanism vary by
    depth, e.g. SSA's per-layer sigma). Arrays under the reserved key `"buffers"` are
    constants (e.g. frozen random walks): stored and checkpointed with the model, never trained.
  * `inputs`: names of extra keyword inputs `apply` consumes beyond q/k/v (e.g. `"x"`, the
    layer input `[B, N, model_dim]`, or `"bias"`). Layers pass exactly these.
  * `needs_qk=False`: the mechanism ignores q and k (Sliceformer); layers then build no
    query/key projections and pass `None`.
  * `flops`: the forward-FLOP formula `flops(call, hparams) -> (matmul, elementwise)` of one
    call on one sequence (`attention.cost`), written beside the mechanism. Optional: a
    mechanism without one still trains and benchmarks; FLOP counts report its attention as
    unknown (`attnbench.nn.flops`).

What `get` returns checks its contract where it costs nothing: every call of `Mechanism.apply`
checks the output's shape (`[B, N, H, Dv]`: q's batch and queries, v's heads and head_dim; v's
tokens when q is None) and that it is a floating array, when it is traced (model init or the
first call of a jitted step), raising `AttentionOutputError` naming the mechanism. A name is
registered once: a second `register` under it raises `DuplicateAttentionError` naming the module
that registered it first, unless it registers the same function again (a module imported twice).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import sys
from collections.abc import Callable, Mapping
from typing import Any

import jax.numpy as jnp

__all__ = [
    "Mechanism",
    "UnknownAttentionError",
    "DuplicateAttentionError",
    "AttentionOutputError",
    "RegistrationError",
    "register",
    "get",
    "names",
    "defaults",
    "check",
    "flops_formula",
    "int_at_least",
    "parse",
]


class UnknownAttentionError(KeyError):
    """An attention name that is not registered (the message lists the known ones)."""

    # Entry points print it as one line and exit 2 (attnbench.cli; attention never imports it).
    user_error = True

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0])


class DuplicateAttentionError(ValueError):
    """A second mechanism registered under a name that is taken (the message names the module
    that registered it first)."""

    user_error = True  # one line and exit status 2 at every entry point, as UnknownAttentionError


class RegistrationError(TypeError):
    """`register` called with arguments that contradict each other (an input required but not
    declared, a default that neither apply nor init accepts); the message says which."""

    user_error = True  # a plugin author's mistake: one line and exit status 2


class AttentionOutputError(TypeError):
    """A mechanism's `apply` returned something other than the `[B, N, H, Dv]` floating array
    of its contract (the message names the mechanism, the shape expected and the one returned).
    """

    user_error = True  # the mechanism's code (a user's, through --import) must be fixed


@dataclasses.dataclass(frozen=True)
class Mechanism:
    """An attention mechanism with its hyper-parameters bound.

    Attributes:
      name: registry name.
      hparams: the bound hyper-parameters (defaults updated by the caller's values).
      init: `init(key, *, num_heads, head_dim, **shape) -> params` (a pytree of arrays).
      apply: `apply(params, q, k, v, *, mask=None, key=None, train=False, **inputs) -> out`;
        checks `out`'s shape and dtype on every call (`AttentionOutputError`).
      inputs: extra keyword inputs `apply` consumes (see the module docstring).
      requires: the inputs it cannot run without (a model must pass them on every call).
      needs_qk: False when `apply` ignores q and k.
      flops: `flops(call) -> (matmul, elementwise)` forward FLOPs of one call on one sequence
        (`attention.cost.Call`) with `hparams` bound; None when none was registered.
    """

    name: str
    hparams: Mapping[str, Any]
    init: Callable[..., Any]
    apply: Callable[..., Any]
    inputs: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    needs_qk: bool = True
    flops: Callable[[Any], tuple[float, float]] | None = None


@dataclasses.dataclass(frozen=True)
class _Entry:
    init: Callable[..., Any]
    apply: Callable[..., Any]
    defaults: Mapping[str, Any]
    doc: str
    inputs: tuple[str, ...]
    needs_qk: bool
    check: Callable[[Mapping[str, Any], int | None], None] | None = None
    flops: Callable[[Any, Mapping[str, Any]], tuple[float, float]] | None = None
    requires: tuple[str, ...] = ()
    module: str = "?"  # where it was registered from, for a second registration's error


_REGISTRY: dict[str, _Entry] = {}


def _no_params(
    key, *, num_heads: int, head_dim: int, model_dim=None, max_len=None, layer_index=0, num_layers=1
) -> dict:
    del key, num_heads, head_dim, model_dim, max_len, layer_index, num_layers
    return {}


def register(
    name: str,
    *,
    apply: Callable[..., Any],
    init: Callable[..., Any] | None = None,
    defaults: Mapping[str, Any] | None = None,
    doc: str = "",
    inputs: tuple[str, ...] = (),
    requires: tuple[str, ...] = (),
    needs_qk: bool = True,
    check: Callable[[Mapping[str, Any], int | None], None] | None = None,
    flops: Callable[[Any, Mapping[str, Any]], tuple[float, float]] | None = None,
) -> None:
    """Registers a mechanism.

    Registering the same `apply` again under its name changes nothing, and its definition
    executed again (the same line of the same file: a module imported twice) replaces the
    entry; any other function under a taken name is refused.

    Args:
      name: the registry name (unique).
      apply: pure function `apply(params, q, k, v, *, mask, key, train, **hparams, **inputs)`.
      init: pure function creating the mechanism's own parameters; `None` means it has none.
      defaults: every hyper-parameter `apply`/`init` accept, with its default value.
      doc: one line describing the mechanism.
      inputs: extra keyword inputs `apply` consumes (e.g. `("x",)`).
      requires: those of `inputs` it cannot run without (GRF's k-NN graph needs the points'
        `coords`): a task whose models do not pass them cannot use it (the config check says
        so, `attnbench.validate`).
      needs_qk: False when `apply` ignores q and k.
      check: optional `check(hparams, num_tokens)` raising ValueError (naming the
        hyper-parameter and its value) for values that cannot work, e.g. SAMSA's k above the
        number of tokens; `num_tokens` may be None (unknown). Run by `check` before any
        model is built.
      flops: optional `flops(call, hparams) -> (matmul FLOPs, elementwise FLOPs)` of one
        forward call on one sequence, `call` an `attention.cost.Call`, `hparams` the bound
        hyper-parameters (conventions: `attention.cost`).

    Raises:
      DuplicateAttentionError: `name` is registered already, by another function.
    """
    if name in _REGISTRY:
        first = _REGISTRY[name]
        if first.apply is apply:
            return  # the same registration again: a module imported twice
        if not _same_definition(first.apply, apply):
            raise DuplicateAttentionError(
                f"attention {name!r} is already registered by {first.module}; register yours "
                f"under another name, e.g. attention.register({name + '_mine'!r}, ...), and "
                "select it by that name"
            )
    if set(requires) - set(inputs):
        missing = sorted(set(requires) - set(inputs))
        raise RegistrationError(
            f"attention.register({name!r}): requires={missing} are not among its inputs="
            f"{list(inputs)}; declare them in inputs too"
        )
    init = init or _no_params
    unused = [k for k in (defaults or {}) if k not in _kwargs(apply) | _kwargs(init)]
    if unused:
        raise RegistrationError(
            f"attention.register({name!r}): defaults {unused} are accepted by neither its apply "
            "nor its init; add them to one of their keyword arguments or drop them"
        )
    _REGISTRY[name] = _Entry(
        init,
        apply,
        dict(defaults or {}),
        doc,
        tuple(inputs),
        needs_qk,
        check,
        flops,
        tuple(requires),
        _caller(),
    )


def _same_definition(a: Callable[..., Any], b: Callable[..., Any]) -> bool:
    """Whether two functions are one definition executed twice (the same line of the same
    file: a module imported again, or under its name and as a file)."""
    code_a, code_b = getattr(a, "__code__", None), getattr(b, "__code__", None)
    return (
        code_a is not None
        and code_b is not None
        and (code_a.co_filename, code_a.co_firstlineno, code_a.co_qualname)
        == (code_b.co_filename, code_b.co_firstlineno, code_b.co_qualname)
    )


def _caller() -> str:
    """The module that called `register`, with its file: `module attention.softmax (...py)`."""
    frame = sys._getframe(2)  # _caller <- register <- the registering module
    name = frame.f_globals.get("__name__", "?")
    path = frame.f_globals.get("__file__")
    return f"module {name} ({path})" if path else f"module {name}"


def names() -> list[str]:
    """The registered mechanism names, sorted."""
    return sorted(_REGISTRY)


def _entry(name: str) -> _Entry:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownAttentionError(
            f"unknown attention {name!r}; known mechanisms: {', '.join(names())}"
        ) from None


def flops_formula(
    name: str,
) -> Callable[[Any, Mapping[str, Any]], tuple[float, float]] | None:
    """The forward-FLOP formula `name` registered (`register(..., flops=...)`), or None.

    Raises:
      UnknownAttentionError: `name` is not registered.
    """
    return _entry(name).flops


def defaults(name: str) -> dict[str, Any]:
    """The default hyper-parameters of `name` (a fresh dict)."""
    return dict(_entry(name).defaults)


def check(name: str, hparams: Mapping[str, Any], *, num_tokens: int | None = None) -> list[str]:
    """What is wrong with `hparams` for mechanism `name` attending over `num_tokens` tokens
    (CLS included; None if unknown): a list of one-line problems, empty when they can work.

    Rules every mechanism shares (`dropout_rate` in [0, 1), a positive `scale`), then the
    mechanism's own `check` (see `register`).
    """
    entry = _entry(name)
    bound = {**entry.defaults, **hparams}
    problems = []
    rate = bound.get("dropout_rate")
    if rate is not None and not 0.0 <= rate < 1.0:
        problems.append(f"{name}: dropout_rate={rate!r} must be in [0, 1)")
    scale = bound.get("scale")
    if scale is not None and not scale > 0:
        problems.append(f"{name}: scale={scale!r} must be positive (or None for 1/sqrt(d))")
    if entry.check is not None:
        try:
            entry.check(bound, num_tokens)
        except (ValueError, TypeError) as e:
            text = str(e)
            problems.append(text if text.startswith(f"{name}:") else f"{name}: {text}")
    return problems


def get(name: str, **hparams: Any) -> Mechanism:
    """Returns mechanism `name` with `hparams` bound over its defaults.

    Raises:
      UnknownAttentionError: `name` is not registered.
      TypeError: a hyper-parameter `name` does not have (the message lists the valid ones).
    """
    entry = _entry(name)
    unknown = sorted(set(hparams) - set(entry.defaults))
    if unknown:
        valid = ", ".join(sorted(entry.defaults)) or "none"
        raise TypeError(
            f"attention {name!r} has no hyper-parameter(s) {', '.join(unknown)}; valid: {valid}"
        )
    bound = {**entry.defaults, **hparams}
    init_kw = {k: v for k, v in bound.items() if k in _kwargs(entry.init)}
    apply_kw = {k: v for k, v in bound.items() if k in _kwargs(entry.apply)}
    flops = None if entry.flops is None else functools.partial(_bound_flops, entry.flops, bound)
    return Mechanism(
        name=name,
        hparams=bound,
        init=functools.partial(entry.init, **init_kw),
        apply=_checked(name, functools.partial(entry.apply, **apply_kw)),
        inputs=entry.inputs,
        requires=entry.requires,
        needs_qk=entry.needs_qk,
        flops=flops,
    )


def _checked(name: str, apply: Callable[..., Any]) -> Callable[..., Any]:
    """`apply` that checks each output against the contract (`_check_output`)."""

    def checked_apply(params, q, k, v, *args, **kwargs):
        out = apply(params, q, k, v, *args, **kwargs)
        _check_output(name, out, q, v)
        return out

    checked_apply.__qualname__ = checked_apply.__name__ = f"apply[{name}]"
    return checked_apply


_LAYOUT = "[batch, queries, heads, head_dim]"


def _check_output(name: str, out: Any, q: Any, v: Any) -> None:
    """Raises `AttentionOutputError` unless `out` is a floating array of shape
    `[B, N, H, Dv]` (q's B and N, v's H and Dv; N = v's tokens when q is None). Shapes are
    static, so under `jit` this runs once, when the call is traced. Nothing is checked when v
    is not a 4-D array (a call outside the contract's layout has no expectation to check)."""
    v_shape = getattr(v, "shape", None)
    if v_shape is None or len(v_shape) != 4:
        return
    q_shape = getattr(q, "shape", None)
    b, n = (q_shape[0], q_shape[1]) if q_shape is not None and len(q_shape) == 4 else v_shape[:2]
    expected = (b, n, v_shape[2], v_shape[3])
    shape, dtype = getattr(out, "shape", None), getattr(out, "dtype", None)
    if shape is None or dtype is None:
        raise AttentionOutputError(
            f"attention {name!r} returned a {type(out).__name__}, expected an array of shape "
            f"{expected} {_LAYOUT}; fix its apply"
        )
    if tuple(shape) != expected:
        raise AttentionOutputError(
            f"attention {name!r} returned shape {tuple(shape)}, expected {expected} {_LAYOUT}; "
            "fix its apply"
        )
    if not jnp.issubdtype(dtype, jnp.floating):
        raise AttentionOutputError(
            f"attention {name!r} returned an array of dtype {dtype}, expected a floating dtype "
            f"(as v's, {getattr(v, 'dtype', '?')}); fix its apply"
        )


def _bound_flops(formula, hparams: Mapping[str, Any], call) -> tuple[float, float]:
    return formula(call, hparams)


def int_at_least(**bounds: int) -> Callable[[Mapping[str, Any], int | None], None]:
    """A `check` (see `register`) requiring each named hyper-parameter to be an integer >= its
    bound: `check=int_at_least(window=0)`."""

    def check(hparams: Mapping[str, Any], num_tokens: int | None) -> None:
        del num_tokens
        for field, lowest in bounds.items():
            value = hparams[field]
            if isinstance(value, bool) or not isinstance(value, int) or value < lowest:
                raise ValueError(f"{field}={value!r} must be an integer >= {lowest}")

    return check


def parse(spec: str) -> tuple[str, dict[str, Any]]:
    """`"name"` or `"name:key=value,..."` -> `(name, hparams)`; values are Python literals where
    they parse as one (`grid=(1,64),k=2`), else strings.

    Raises:
      UnknownAttentionError: `name` is not registered.
      TypeError: a hyper-parameter `name` does not have (the message lists the valid ones).
      ValueError: an item that is not `key=value`.
    """
    import ast

    name, _, rest = spec.partition(":")
    name = name.strip()
    _entry(name)
    hparams: dict[str, Any] = {}
    for item in filter(None, _split_top_level(rest)):
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"attention spec {spec!r}: expected key=value, got {item!r}")
        try:
            hparams[key.strip()] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            hparams[key.strip()] = value.strip()
    get(name, **hparams)  # unknown hyper-parameters fail here, naming the valid ones
    return name, hparams


def _split_top_level(text: str) -> list[str]:
    """Splits on commas outside brackets: `grid=(1,64),k=2` -> ["grid=(1,64)", "k=2"]."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _kwargs(fn: Callable[..., Any]) -> set[str]:
    """Names `fn` accepts by keyword."""
    params = inspect.signature(fn).parameters.values()
    kinds = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return {p.name for p in params if p.kind in kinds}
