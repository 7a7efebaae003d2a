"""Names to registered things: one `Registry` kind for tasks, evaluators and backbones.

    BACKBONES = registry.Registry("backbone")
    @BACKBONES.register("swin")
    def build_swin(...): ...
    BACKBONES.get("swin"); BACKBONES.names(); "swin" in BACKBONES

A name is registered once (a second registration is a bug: `ValueError`); an unknown name is a
user error (`attnbench.errors.UnknownNameError` or the registry's own subclass) that lists the
known ones. A registry may be given `load(name)`, called before a name is looked up, to import
the module that registers it (tasks import their domain on demand), and `load_all()`, called
before every name is listed.
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
            if name in self._items:
                raise ValueError(f"{self.kind} {name!r} is already registered")
            self._items[name] = item
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
