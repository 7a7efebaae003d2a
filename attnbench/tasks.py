"""The `Task` base class and the task registry: how a domain plugs into the one trainer.

`config.task = "lra.listops"` resolves by importing the domain package's `tasks` module
(`lra.tasks`), which registers its tasks with `@register("lra.listops")`. A task is a `Task`
subclass: it must say how to load the data, build the model and compute the training loss; the
rest has defaults a task overrides where it has something to say:

    class MyTask(tasks.Task):
        def load_data(self, config) -> tasks.Data: ...
        def build_model(self, config, rngs) -> nnx.Module: ...
        def loss(self, model, batch, *, train, key, **inputs) -> (loss, {name: (sum, count)}): ...
        # defaulted:
        metric_names = ("loss",)            # the (sum, count) metrics `loss` reports
        attention_inputs = ()               # per-call inputs its models give the attention
        def eval_outputs(self, model, batch) -> {name: array}  # what the evaluators read
        def default_evals(self, config) -> {key: evaluator spec}  # when config.evals is empty
        def check_config(self, config) -> [problem, ...]
        def attention_length(self, config) -> tokens one attention call sees, or None
        def example_batch(self, config, batch_size, seed) -> a synthetic batch (benchmarks)

`ClassificationTask` is the case of a model that maps a batch to class logits: a task gives
`logits(...)` and gets the cross-entropy loss, the evaluation outputs and the classification
evaluator.

`**inputs` of `loss` are per-call attention inputs that the trainer's phase passes down to every
attention layer (`{"subsample": False}` in SSA's dense fine-tuning phase, `attnbench.steps`): a
task hands them to its model's call, which hands them to its backbone.
"""

from __future__ import annotations

import abc
import dataclasses
import importlib
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from attnbench import errors, registry

__all__ = [
    "Split",
    "Data",
    "Task",
    "ClassificationTask",
    "register",
    "get",
    "names",
    "UnknownTaskError",
    "classification_loss",
    "CLASSIFICATION_METRICS",
    "DOMAINS",
    "default_attention_length",
]

DOMAINS = ("lra", "vision", "graphs", "language", "pointcloud")


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


class Task(abc.ABC):
    """What a domain provides to the trainer (module docstring). Metrics are
    `{name: (sum, count)}` so they reduce across devices and batches by adding; batches carry a
    `weight` array ([B], 0 for padding examples)."""

    name: str = ""  # set by `register`
    metric_names: tuple[str, ...] = ("loss",)  # what `loss` reports as (sum, count) pairs
    # Models the task builds besides the registered backbones, accepted as
    # `config.model.encoder` (point clouds: PointNet, DGCNN).
    archs: tuple[str, ...] = ()
    # Per-call attention inputs the task's models pass on every call (point clouds: the points'
    # `coords`): a mechanism that requires others cannot run in this task.
    attention_inputs: tuple[str, ...] = ()

    @abc.abstractmethod
    def load_data(self, config) -> Data:
        """The splits, where they came from, and the per-example transform and collate."""

    @abc.abstractmethod
    def build_model(self, config, rngs) -> Any:
        """The model (an `nnx.Module`) the config describes."""

    @abc.abstractmethod
    def loss(self, model, batch, *, train: bool, key, **inputs) -> tuple[Any, dict]:
        """`(mean loss, {name: (sum, count)})` of `batch`; `inputs` go to the model's call."""

    def eval_outputs(self, model, batch) -> dict:
        """What the evaluators of `config.evals` read from one evaluation batch: per-example
        arrays (leading axis the batch). By default the task's own metrics of the batch,
        `{"metrics": {name: (sum, count)}}`, which the `task_metrics` evaluator adds up."""
        return {"metrics": self.loss(model, batch, train=False, key=None)[1]}

    def default_evals(self, config) -> dict:
        """The evaluators when `config.evals` is empty: the task's own metrics."""
        return {"metrics": {"type": "task_metrics", "names": tuple(self.metric_names)}}

    def check_config(self, config) -> list[str]:
        """The task's own problems of `config`, each `config.<field>=<value>: why`
        (`attnbench.validate` reports them with its own)."""
        return []

    def check(self, config) -> None:
        """Raises `ConfigError` naming every problem `check_config` finds (a task checks its own
        fields before it loads data or builds a model)."""
        problems = self.check_config(config)
        if problems:
            raise errors.ConfigError("; ".join(problems))

    def attention_length(self, config) -> int | None:
        """Tokens one attention call sees per sequence, for the mechanisms' length rules
        (default: `default_attention_length`)."""
        return default_attention_length(config)

    def example_batch(self, config, batch_size: int, seed: int = 0) -> dict:
        """A synthetic batch with the shapes and dtypes of a real one at the config's length,
        for timing without data (`scripts.bench train`)."""
        raise errors.ConfigError(
            f"task {self.name or type(self).__name__} makes no synthetic batches "
            "(Task.example_batch), so it cannot be timed without its data"
        )


class ClassificationTask(Task):
    """A task whose model maps a batch to class logits (`logits`): softmax cross-entropy against
    `batch["label"]`, and the `classification` evaluator on the logits."""

    metric_names = ("loss", "accuracy")

    @abc.abstractmethod
    def logits(self, model, batch, *, train: bool, key, **inputs):
        """`[B, C]` class logits of `batch`."""

    def loss(self, model, batch, *, train: bool, key, **inputs):
        logits = self.logits(model, batch, train=train, key=key, **inputs)
        return classification_loss(logits, batch["label"], batch["weight"])

    def eval_outputs(self, model, batch) -> dict:
        return {"logits": self.logits(model, batch, train=False, key=None)}

    def default_evals(self, config) -> dict:
        return {"classification": {"type": "classification"}}


def default_attention_length(config) -> int | None:
    """`config.data.max_length`, plus a CLS token when the model pools with one; None when the
    config does not say."""
    data, model = config.get("data"), config.get("model")
    length = None if data is None else data.get("max_length")
    if not isinstance(length, int) or isinstance(length, bool) or length < 1:
        return None
    return length + int(model is not None and model.get("pool") == "cls")


def _import_domain(name: str) -> None:
    domain = name.split(".")[0]
    if domain in DOMAINS:
        try:
            importlib.import_module(f"{domain}.tasks")
        except ModuleNotFoundError as e:
            if e.name not in (domain, f"{domain}.tasks"):
                raise


def _import_domains() -> None:
    for domain in DOMAINS:
        _import_domain(domain)


_TASKS: registry.Registry[type[Task]] = registry.Registry(
    "task",
    error=UnknownTaskError,
    message=lambda name, known: f"unknown task {name!r}; known tasks: {', '.join(known)}",
    load=_import_domain,
    load_all=_import_domains,
)


def register(name: str):
    """Class decorator registering a `Task` subclass under `name` ("<domain>.<task>")."""

    def deco(cls):
        if not (isinstance(cls, type) and issubclass(cls, Task)):
            raise TypeError(f"task {name!r}: {cls!r} is not a subclass of attnbench.tasks.Task")
        cls.name = name
        return _TASKS.register(name, cls)

    return deco


def names() -> list[str]:
    """Every registered task (imports every domain's `tasks` module)."""
    return _TASKS.names()


def get(name: str) -> Task:
    """A fresh instance of task `name`; an unknown name lists the known ones."""
    return _TASKS.get(name)()


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
