"""What the trainer and every benchmark build from (task, config): `setup(task, config)`.

    s = steps.setup(task, config)       # mesh, model and optimizer state, jitted steps
    state, metrics = s.train_step(step)(s.state, s.to_device(batch))
    outputs = s.eval_step(state["params"], state["buffers"], s.to_device(batch))

Parallelism is `jax.jit` over a 1-D mesh of every device (axis `data`): batches are sharded on
it, the state is replicated. The state is the pytree `{step, params, buffers, opt_state}`, plus
`ema` (a float32 copy of the params) where `config.ema_decay > 0` (timm's ModelEma: DeiT's
recipe); `buffers` are the model's constants (`attnbench.nn.layers.Buffer`: checkpointed, never
trained). Dropout keys are `fold_in(key(seed), step)`: no RNG state.

Training phases (`phases`): a run is one or more phases, each a range of steps whose train step
passes its own attention inputs to every attention layer (`Task.loss(..., **inputs)`). A config
declares them by its fields: `config.dense_finetune_fraction > 0` is SSA's "+FT", the last
fraction of the steps training with dense attention (`subsample=False`). Each phase has its own
compiled step; there is no static argument.

Precision: `config.model.dtype = "auto"` is resolved here, once, for this process's backend
(`attnbench.config.resolve`), before any model is built.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping

import jax
import jax.numpy as jnp
import ml_collections
import optax
from flax import nnx
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from attnbench import config as config_lib
from attnbench import optim
from attnbench.nn import layers

__all__ = ["Phase", "Setup", "setup", "phases", "make_mesh", "init_state", "global_norm"]


@dataclasses.dataclass(frozen=True)
class Phase:
    """Steps `start`..`end - 1` (0-based) of a run, trained with attention `inputs`."""

    name: str
    start: int
    end: int
    inputs: Mapping[str, object] = dataclasses.field(default_factory=dict)


def phases(config) -> list[Phase]:
    """The training phases `config` declares, in order, covering steps 0..total_steps - 1:
    "train", then SSA's "dense_finetune" (`subsample=False`) for the last
    `config.dense_finetune_fraction` of the steps where that is > 0. Empty phases are left out."""
    total = int(config.total_steps)
    dense_from = total - round(float(config.get("dense_finetune_fraction", 0.0)) * total)
    out = [
        Phase("train", 0, dense_from),
        Phase("dense_finetune", dense_from, total, {"subsample": False}),
    ]
    return [p for p in out if p.end > p.start]


@dataclasses.dataclass
class Setup:
    """A run's device mesh, state and jitted steps (see the module docstring)."""

    task: object
    config: ml_collections.ConfigDict
    mesh: jax.sharding.Mesh
    graphdef: object
    state: dict
    optimizer: optax.GradientTransformation
    schedule: Callable
    phases: list[Phase]
    eval_step: Callable
    _train_steps: dict[str, Callable]

    @property
    def replicated(self) -> NamedSharding:
        return NamedSharding(self.mesh, P())

    @property
    def batch_sharding(self) -> NamedSharding:
        return NamedSharding(self.mesh, P("data"))

    def phase(self, step: int) -> Phase:
        """The phase that trains step `step` (0-based; the last phase past the end)."""
        for p in self.phases:
            if step < p.end:
                return p
        return self.phases[-1]

    def train_step(self, step: int) -> Callable:
        """The jitted `train_step(state, batch) -> (state, metrics)` of step `step`'s phase
        (the state is donated)."""
        return self._train_steps[self.phase(step).name]

    def to_device(self, batch):
        """This process's rows of a global batch as arrays sharded over the mesh."""
        return jax.tree.map(
            lambda x: jax.make_array_from_process_local_data(self.batch_sharding, x), batch
        )


def make_mesh() -> jax.sharding.Mesh:
    """A 1-D mesh over every device, axis `data`. Auto axes: GSPMD propagates the batch
    sharding (Explicit axes would need sharding annotations inside the models)."""
    return jax.make_mesh((jax.device_count(),), ("data",), axis_types=(jax.sharding.AxisType.Auto,))


def init_state(task, config, sharding):
    """Builds the model and optimizer: `(graphdef, state, optimizer, schedule)` where `state` is
    the pytree `{step, params, buffers, opt_state[, ema]}` placed with `sharding`."""
    model = task.build_model(config, nnx.Rngs(params=config.seed))
    graphdef, params, buffers, rest = nnx.split(model, nnx.Param, layers.Buffer, ...)
    if jax.tree.leaves(rest):
        raise ValueError(
            "models must keep their arrays in nnx.Param (trained) or attnbench.nn.layers.Buffer "
            f"(constant); found other variables: {rest}"
        )
    params = nnx.to_pure_dict(params)
    optimizer, schedule = optim.make_optimizer(config, config.total_steps)
    state = {
        "step": jnp.zeros((), jnp.int32),
        "params": params,
        "buffers": nnx.to_pure_dict(buffers),
        "opt_state": optimizer.init(params),
    }
    if config.get("ema_decay", 0.0):
        state["ema"] = jax.tree.map(lambda p: jnp.array(p, jnp.float32, copy=True), params)
    return graphdef, jax.device_put(state, sharding), optimizer, schedule


def setup(task, config, *, mesh: jax.sharding.Mesh | None = None) -> Setup:
    """The mesh (default: every device), the initial state and the jitted steps of `config`
    (its `dtype="auto"` resolved for this backend first)."""
    config = config_lib.resolve(config)
    mesh = mesh or make_mesh()
    replicated = NamedSharding(mesh, P())
    graphdef, state, optimizer, schedule = init_state(task, config, replicated)
    ema_decay = float(config.get("ema_decay", 0.0))
    state_sharding = jax.tree.map(lambda _: replicated, state)
    run_phases = phases(config)
    train_steps = {
        p.name: jax.jit(
            functools.partial(
                _train_step,
                task=task,
                graphdef=graphdef,
                optimizer=optimizer,
                schedule=schedule,
                base_key=jax.random.key(config.seed),
                ema_decay=ema_decay,
                inputs=dict(p.inputs),
            ),
            in_shardings=(state_sharding, NamedSharding(mesh, P("data"))),
            out_shardings=(state_sharding, replicated),
            donate_argnums=0,
        )
        for p in run_phases
    }
    # Outputs keep the sharding XLA gives them: per-example arrays stay split over the data
    # axis, per-batch sums (the task's own metrics) are replicated.
    eval_step = jax.jit(functools.partial(_eval_step, task=task, graphdef=graphdef))
    return Setup(
        task=task,
        config=config,
        mesh=mesh,
        graphdef=graphdef,
        state=state,
        optimizer=optimizer,
        schedule=schedule,
        phases=run_phases,
        eval_step=eval_step,
        _train_steps=train_steps,
    )


def _train_step(state, batch, *, task, graphdef, optimizer, schedule, base_key, ema_decay, inputs):
    key = jax.random.fold_in(base_key, state["step"])

    def loss_fn(params):
        model = nnx.merge(graphdef, params, state["buffers"])
        return task.loss(model, batch, train=True, key=key, **inputs)

    (loss, metrics), grads = jax.value_and_grad(loss_fn, has_aux=True)(state["params"])
    updates, opt_state = optimizer.update(grads, state["opt_state"], state["params"])
    params = jax.tree.map(jnp.add, state["params"], updates)
    metrics = dict(
        metrics, train_loss=loss, grad_norm=global_norm(grads), lr=schedule(state["step"])
    )
    new = {
        "step": state["step"] + 1,
        "params": params,
        "buffers": state["buffers"],
        "opt_state": opt_state,
    }
    if ema_decay:  # timm ModelEma: ema = decay * ema + (1 - decay) * params
        new["ema"] = optax.incremental_update(params, state["ema"], 1.0 - ema_decay)
    return new, metrics


def _eval_step(params, buffers, batch, *, task, graphdef):
    return task.eval_outputs(nnx.merge(graphdef, params, buffers), batch)


def global_norm(tree):
    return jnp.sqrt(sum(jnp.sum(jnp.square(x.astype(jnp.float32))) for x in jax.tree.leaves(tree)))
