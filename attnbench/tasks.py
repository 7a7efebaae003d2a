"""The Task protocol and its registry: how a domain plugs into the one trainer.

`config.task = "lra.listops"` resolves by importing the domain package's `tasks` module
(`lra.tasks`), which registers its tasks with `@register("lra.listops")`.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import numpy as np

from attnbench import errors

__all__ = [
    "Split",
    "Data",
    "Task",
    "register",
    "get",
    "names",
    "UnknownTaskError",
    "classification_loss",
    "CLASSIFICATION_METRICS",
    "check_config",
]


class UnknownTaskError(errors.UnknownNameError):
    """A task name that is not registered (the message lists the known ones)."""


@dataclasses.dataclass(frozen=True)
class Split:
    """One split as in-memory arrays sharing their leading (example) dimension."""

    arrays: Mapping[str, np.ndarray]

    def __post_init__(self):
        sizes = {k: len(v) for k, v in self.arrays.items()}
        if len(set(sizes.values())) != 1:
            raise ValueError(f"split arrays disagree on the number of examples: {sizes}")

    def __len__(self) -> int:
        return len(next(iter(self.arrays.values())))

    def __getitem__(self, i: int) -> dict[str, np.ndarray]:
        """Example `i` (grain's random-access protocol)."""
        return {k: v[i] for k, v in self.arrays.items()}

    def gather(self, idx: np.ndarray) -> dict[str, np.ndarray]:
        """The examples `idx` as a batch, one vectorised index per field."""
        return {k: v[idx] for k, v in self.arrays.items()}


@dataclasses.dataclass(frozen=True)
class Data:
    """A task's data.

    Attributes:
      train, val, test: the splits: `Split`s (in-memory arrays) or any random-access source
        (`len(source)`, `source[i] -> {name: array}`) that reads examples lazily.
      source: "official" (the paper's data), "generated" (the benchmark's own generator, e.g.
        ListOps), or "standin" (an offline substitute). Reported in every summary and table.
      description: where the data came from (paths, generator parameters), for the summary.
      transform: optional `transform(example, rng) -> example` applied to training examples
        (augmentation, resampling); `rng` is a numpy Generator derived from the run's seed and
        the example's position in the training stream (`attnbench.data.pipeline.example_rng`).
      collate: optional `collate(examples) -> batch` (padding variable-size examples into a few
        bucketed shapes); the default stacks. Used for every split.
    """

    train: Any
    val: Any
    test: Any
    source: str
    description: Mapping[str, Any]
    transform: Callable[[dict, np.random.Generator], dict] | None = None
    collate: Callable[[list], dict] | None = None


class Task(Protocol):
    """What a domain provides. Metrics are `{name: (sum, count)}` so they reduce across devices
    and batches by adding; batches carry a `weight` array ([B], 0 for padding examples)."""

    def load_data(self, config) -> Data: ...

    def build_model(self, config, rngs) -> Any: ...

    def loss_and_metrics(self, model, batch, *, train: bool, key) -> tuple[Any, dict]: ...

    # Optional, for `scripts.bench train` (timing without data): a synthetic batch with the
    # shapes and dtypes of a real one at the config's length.
    # def example_batch(self, config, batch_size: int, seed: int = 0) -> dict: ...


_TASKS: dict[str, Callable[[], Task]] = {}
_DOMAINS = ("lra", "vision", "graphs", "language", "pointcloud")


def register(name: str):
    """Class/factory decorator registering a task under `name` ("<domain>.<task>")."""

    def deco(factory):
        if name in _TASKS:
            raise ValueError(f"task {name!r} is already registered")
        _TASKS[name] = factory
        return factory

    return deco


def _import_domains():
    for domain in _DOMAINS:
        try:
            importlib.import_module(f"{domain}.tasks")
        except ModuleNotFoundError as e:
            if e.name not in (domain, f"{domain}.tasks"):
                raise


def names() -> list[str]:
    _import_domains()
    return sorted(_TASKS)


def get(name: str) -> Task:
    """Returns a fresh instance of task `name`; an unknown name lists the known ones."""
    domain = name.split(".")[0]
    if name not in _TASKS and domain in _DOMAINS:
        try:
            importlib.import_module(f"{domain}.tasks")
        except ModuleNotFoundError as e:
            if e.name not in (domain, f"{domain}.tasks"):
                raise
    if name not in _TASKS:
        raise UnknownTaskError(f"unknown task {name!r}; known tasks: {', '.join(names())}")
    return _TASKS[name]()


def check_config(task, config) -> None:
    """Raises `ConfigError` naming every problem `task.check_config(config)` finds (a task
    checks its own fields before it loads data or builds a model; `attnbench.validate` runs the
    same checks with the trainer's)."""
    problems = task.check_config(config)
    if problems:
        raise errors.ConfigError("; ".join(problems))


CLASSIFICATION_METRICS = ("loss", "accuracy")  # what `classification_loss` reports


def classification_loss(logits, labels, weight, targets=None):
    """Weighted softmax cross-entropy and accuracy as `(mean loss, {name: (sum, count)})`.

    `targets` `[B, C]` (soft targets: mixed batches, smoothed labels) replace the integer
    labels in the loss; the accuracy is always against `labels`."""
    import jax.numpy as jnp
    import optax

    weight = weight.astype(jnp.float32)
    logits32 = logits.astype(jnp.float32)
    if targets is None:
        losses = optax.softmax_cross_entropy_with_integer_labels(logits32, labels)
    else:
        losses = optax.softmax_cross_entropy(logits32, targets.astype(jnp.float32))
    correct = (jnp.argmax(logits, -1) == labels).astype(jnp.float32)
    count = weight.sum()
    loss_sum = (losses * weight).sum()
    metrics = {"loss": (loss_sum, count), "accuracy": ((correct * weight).sum(), count)}
    return loss_sum / jnp.maximum(count, 1.0), metrics
