"""Names to registered things: one `Registry` kind for tasks, evaluators and backbones.

    BACKBONES = registry.Registry("backbone")
    @BACKBONES.register("swin")
    def build_swin(...): ...
    BACKBONES.get("swin"); BACKBONES.names(); "swin" in BACKBONES

A name is registered once: a second registration of another thing under it (a plugin reusing a
built-in's name) is a user error (`attnbench.errors.ConfigError`) naming the module that registered
it first, and the same thing again (a module imported twice) changes nothing. A plugin cannot
shadow a built-in by registering first: the module that owns the name is loaded before the check.
An unknown name is a user error (`attnbench.errors.UnknownNameError` or the registry's own
subclass) that lists the known ones. A registry may be given `load(name)`, called before a name
is looked up or registered, to import the module that registers it (tasks import their domain on
demand), and `load_all()`, called before every name is listed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from attnbench import errors

__all__ = ["Registry"]


class Registry[T]:
    """Registered things of one `kind` ("task", "evaluator", "backbone") by name."""

    def __init__(
        self,
        kind: str,
        *,
        error: type[Exception] = errors.UnknownNameError,
        message: Callable[[str, list[str]], str] | None = None,
        load: Callable[[str], None] | None = None,
        load_all: Callable[[], None] | None = None,
    ):
        self.kind = kind
        self._items: dict[str, T] = {}
        self._error = error
        self._message = message or (
            lambda name, known: f"unknown {kind} {name!r}; known: {', '.join(known)}"
        )
        self._load, self._load_all = load, load_all

    def register(self, name: str, value: T | None = None):
        """`register(name, value)`, or `@register(name)` on a class or function."""

        def add(item: T) -> T:
            if name not in self._items and self._load is not None:
                self._load(name)  # the module that owns the name registers it first
            first = self._items.get(name)
            if first is not None and first is not item and _origin(first) != _origin(item):
                raise errors.ConfigError(
                    f"{self.kind} {name!r} is already registered by {_origin(first)[0]}; "
                    "register yours under another name"
                )
            self._items[name] = item  # new, or the same definition again (imported twice)
            return item

        return add if value is None else add(value)

    def get(self, name: str) -> T:
        """The thing registered as `name`; the registry's error, listing the known names, when
        there is none."""
        if name not in self._items and self._load is not None:
            self._load(name)
        if name not in self._items:
            raise self._error(self._message(name, self.names()))
        return self._items[name]

    def names(self) -> list[str]:
        if self._load_all is not None:
            self._load_all()
        return sorted(self._items)

    def __contains__(self, name: str) -> bool:
        if name not in self._items and self._load is not None:
            self._load(name)
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())


def _origin(item) -> tuple[str, str]:
    """(module, qualified name) of a registered thing (backbones register tuples)."""
    item = item[0] if isinstance(item, tuple) and item else item
    return (
        getattr(item, "__module__", None) or "an unknown module",
        getattr(item, "__qualname__", None) or repr(item),
    )
