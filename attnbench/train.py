"""The one trainer: `train_and_evaluate(config, workdir) -> summary`.

Sections: setup and logging; device mesh; data; model and optimizer; restore; jitted steps;
evaluation; loop; final summary. A run killed at any point and restarted with the same workdir
resumes from its latest checkpoint and ends with the same parameters and metrics as an
uninterrupted run (same seed, same devices).

Several JAX processes (hosts, or `attnbench.launch.multihost.run_local` on one machine) train the
run that one process with all their devices trains: each feeds its slice of every global batch
(`attnbench.data.pipeline`), evaluation counts every example once over the processes, checkpoints
are written by all of them (`attnbench.checkpoint`), and process 0 alone logs and writes
`config.json`, `metrics.jsonl`, the plots and `summary.json`.

DeiT's recipe pieces: `config.ema_decay > 0` keeps an exponential moving average of the parameters
in the train state (updated in the jitted step after the optimizer's update, checkpointed, so resume
stays exact); every evaluation also evaluates it, with the model's current buffers, and records its
metrics as `ema_<name>` beside the raw model's, which stay the run's metrics and pick the best
checkpoint (DeiT evaluates the raw model). Repeated augmentation, `config.data.repeated_aug`, is the
input pipeline's (`attnbench.data.pipeline.train_iterator`).

Epoch-based recipes: where a config has `config.epochs > 0` (a field only such recipes define),
the run's length comes from its data: `total_steps = epochs * ceil(train examples / batch_size)`
and `eval_every` = that many steps per `config.eval_every_epochs` epochs (default 1), resolved
once the data is loaded (`with_epochs`); `config.total_steps` and `config.eval_every` are then the
recipe's estimates, kept in `config.json`, and the summary's `epochs` says what was run.

Precision: `config.model.dtype` is the compute dtype of the model's activations
(`attnbench.nn.layers`); parameters, optimizer state, gradients, loss and metrics are float32
whatever it is. "auto" is resolved at the start of a run for this backend (bfloat16 on GPU/TPU,
float32 on CPU; `attnbench.nn.layers.resolve_dtype`): `config.json` holds the resolved dtype, the
summary's `precision` the resolved one, what was asked for and the dtypes of the parameters and
optimizer state.
"""

from __future__ import annotations

import copy
import json
import os
import pathlib
import signal
import sys
import time

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
from flax import nnx
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from attention import kernels
from attnbench import (
    checkpoint,
    errors,
    evaluators,
    io,
    optim,
    plots,
    tasks,
    validate,
    workdir_lock,
)
from attnbench import config as config_lib
from attnbench.data import pipeline
from attnbench.launch import multihost
from attnbench.nn import layers

__all__ = [
    "train_and_evaluate",
    "with_resolved_dtype",
    "init_state",
    "make_steps",
    "make_mesh",
    "NonFiniteLossError",
    "SUMMARY_SCHEMA_VERSION",
]

SUMMARY_SCHEMA_VERSION = 1
# Fault injection for the resume tests: SIGKILL this process right after finishing this step;
# with several processes, only process `$ATTNBENCH_KILL_PROCESS` where that is set.
_KILL_ENV = "ATTNBENCH_KILL_AT_STEP"
_KILL_PROCESS_ENV = "ATTNBENCH_KILL_PROCESS"


class NonFiniteLossError(errors.RunFailedError):
    """Training produced a NaN/inf loss or gradient; the run stops, keeping the last good
    checkpoint."""


def _log(msg: str) -> None:
    if jax.process_index() == 0:
        print(msg, flush=True)


def _fmt_time(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s"


def _reduce(sums: dict) -> dict:
    """`{name: (sum, count)}` -> `{name: sum / count}`."""
    return {k: float(s) / max(float(c), 1.0) for k, (s, c) in sums.items()}


def _majority_rate(split) -> float | None:
    """The most frequent label's share, for in-memory splits with integer labels."""
    labels = getattr(split, "arrays", {}).get("label")
    if labels is None or labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
        return None
    return float(np.bincount(labels).max() / len(labels))


def _config_json(config) -> dict:
    return json.loads(json.dumps(config.to_dict(), default=str))


def with_resolved_dtype(config, platform: str | None = None):
    """`config` itself, or where `config.model.dtype` is "auto" a copy with it resolved for
    `platform` (default: this process's backend; `attnbench.nn.layers.resolve_dtype`)."""
    model = config.get("model")
    if model is None or model.get("dtype") != "auto":
        return config
    config = copy.deepcopy(config)
    config.model.dtype = layers.resolve_dtype("auto", platform)
    return config


def steps_per_epoch(config, num_train: int) -> int:
    """Optimizer steps in one pass over `num_train` examples (the last batch partial)."""
    return -(-int(num_train) // int(config.batch_size))


def with_epochs(config, num_train: int):
    """`config` itself, or where `config.epochs > 0` a copy whose `total_steps` is `epochs`
    epochs of `num_train` examples at `config.batch_size` (`steps_per_epoch`) and whose
    `eval_every` is `config.eval_every_epochs` (default 1) epochs."""
    epochs = int(config.get("epochs", 0) or 0)
    if epochs <= 0:
        return config
    per_epoch = steps_per_epoch(config, num_train)
    config = copy.deepcopy(config)
    config.total_steps = epochs * per_epoch
    config.eval_every = per_epoch * int(config.get("eval_every_epochs", 1))
    return config


def _check_config(config, workdir: pathlib.Path, requested_dtype=None) -> None:
    """Refuses a workdir that holds a run (finished or not) started with a different config."""
    path = workdir / "config.json"
    if not path.exists():
        return
    old = io.read_json(path, what="run config")
    new = _config_json(config)
    if old != new:
        diff = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
        hint = ""
        old_dtype = old.get("model", {}).get("dtype")
        if requested_dtype == "auto" and old_dtype != config.model.dtype:
            hint = (
                f"; config.model.dtype='auto' is {config.model.dtype} on this "
                f"{jax.default_backend()} backend but the run computed in {old_dtype}: to go on "
                f"with it here pass --config.model.dtype={old_dtype}"
            )
        raise errors.WorkdirError(
            f"{workdir} holds a run with a different config (sections differ: "
            f"{', '.join(diff)}); use a new --workdir, or the config it was started with "
            f"({path}){hint}"
        )


def train_and_evaluate(config: ml_collections.ConfigDict, workdir) -> dict:
    """Trains `config.task` with `config`, evaluating and checkpointing in `workdir`.

    Returns the summary (also written to `workdir/summary.json`). A finished workdir returns its
    summary without training again, if its config is this one. The config is checked first
    (`attnbench.validate`); `workdir` is locked while the run holds it; `config.json` is written
    once the data and the model are built, so a start that fails leaves no config behind.
    """
    # ---- setup and logging -------------------------------------------------------------
    wall_start = time.perf_counter()
    if not str(workdir).strip():
        raise errors.WorkdirError("--workdir is empty; name a run directory, e.g. runs/x")
    workdir = pathlib.Path(workdir)
    task = tasks.get(config.task)
    validate.check(config, task)  # a config error stops every process before they connect
    if (config.multihost or multihost.requested()) and not jax.distributed.is_initialized():
        multihost.initialize()  # before anything creates the backend (resolving "auto" does)
    requested_dtype = config.get("model", {}).get("dtype")
    config = with_resolved_dtype(config)  # "auto" -> this backend's compute dtype
    workdir.mkdir(parents=True, exist_ok=True)
    with workdir_lock.hold(workdir, process_index=jax.process_index()):
        _check_config(config, workdir, requested_dtype)
        if (workdir / "summary.json").exists():
            _log(f"{workdir} is finished; returning its summary")
            return io.read_json(workdir / "summary.json", what="run summary")
        return _train(config, workdir, task, wall_start, requested_dtype)


def _train(config, workdir: pathlib.Path, task, wall_start: float, requested_dtype=None) -> dict:
    kill_at = _kill_step()

    # ---- device mesh ---------------------------------------------------------------------
    n_dev = jax.device_count()
    for name in ("batch_size", "eval_batch_size"):
        if config[name] % n_dev:
            raise errors.ConfigError(
                f"config.{name}={config[name]} is not divisible by the {n_dev} devices; use a "
                f"multiple of {n_dev}"
            )
    mesh = make_mesh()
    replicated = NamedSharding(mesh, P())
    batch_sharding = NamedSharding(mesh, P("data"))
    pid, nproc = jax.process_index(), jax.process_count()

    def to_device(batch):
        return jax.tree.map(
            lambda x: jax.make_array_from_process_local_data(batch_sharding, x), batch
        )

    # ---- data ------------------------------------------------------------------------------
    t0 = time.perf_counter()
    ds = task.load_data(config)
    _log(
        f"data: {ds.source}, train {len(ds.train)} / val {len(ds.val)} / test {len(ds.test)} "
        f"examples ({time.perf_counter() - t0:.1f}s)"
    )
    stored = config  # config.json keeps the recipe's fields; epochs resolve from the data
    config = with_epochs(config, len(ds.train))
    if config is not stored:
        _log(
            f"epochs: {config.epochs} x {steps_per_epoch(config, len(ds.train))} steps of "
            f"{config.batch_size} = {config.total_steps} steps (from "
            f"{len(ds.train)} training examples; the recipe estimated {stored.total_steps})"
        )
    train_iter = pipeline.train_iterator(
        ds.train,
        batch_size=config.batch_size,
        seed=config.seed,
        process_index=pid,
        process_count=nproc,
        transform=ds.transform,
        collate=ds.collate,
        workers=config.data_workers,
        # A data section may lack the field (configs/common.py: data_fields): off.
        repeats=config.data.get("repeated_aug", 1),
    )

    # ---- model and optimizer ---------------------------------------------------------------
    graphdef, state, optimizer, schedule = init_state(task, config, replicated)
    if not (workdir / "config.json").exists() and pid == 0:
        io.write_json(workdir / "config.json", stored.to_dict())  # data and model are built
    num_params = int(sum(x.size for x in jax.tree.leaves(state["params"])))
    precision = _precision(config, state, requested_dtype)
    _log(
        f"model: {num_params:,} parameters, attention {config.attention.name}, compute "
        f"{precision['compute_dtype']} (parameters {precision['params']}); "
        f"{n_dev} {jax.devices()[0].platform} device(s)"
    )

    # ---- restore ---------------------------------------------------------------------------
    ckpts = checkpoint.Checkpoints(workdir / "checkpoints", use_async=config.async_checkpoints)
    meta = {"best_value": None, "best_step": None, "val_history": []}
    restored = ckpts.restore_latest(checkpoint.abstract(state))
    if restored is not None:
        state, data_state, meta = restored
        train_iter.set_state(data_state)
        _log(f"resumed from step {int(state['step'])}")
    start_step = int(state["step"])
    # Process 0 writes the run's one metrics log (every process computes the same records).
    metrics_file = None
    if pid == 0:
        _truncate_metrics(workdir / "metrics.jsonl", start_step)
        metrics_file = open(workdir / "metrics.jsonl", "a")  # noqa: SIM115 (closed below)

    def write_record(record: dict) -> None:
        if metrics_file is not None:
            metrics_file.write(json.dumps(record) + "\n")
            metrics_file.flush()

    # ---- jitted steps ----------------------------------------------------------------------
    use_evaluators = bool(config.get("evals"))
    train_step, eval_step = make_steps(
        task,
        graphdef,
        optimizer,
        schedule,
        config.seed,
        state,
        mesh,
        outputs=use_evaluators,
        ema_decay=config.get("ema_decay", 0.0),
    )

    # ---- evaluation --------------------------------------------------------------------------
    def evaluate(params, name: str) -> dict:
        """Metrics of split `name`: the task's (sum, count) pairs, or `config.evals`."""
        split = getattr(ds, name)
        totals, counted = None, 0
        evals = evaluators.build(config.evals, name) if use_evaluators else []
        for batch in pipeline.eval_batches(
            split,
            batch_size=config.eval_batch_size,
            process_index=pid,
            process_count=nproc,
            collate=ds.collate,
            workers=config.data_workers,
        ):
            counted += int(np.count_nonzero(batch["weight"]))  # this process's real examples
            result = eval_step(params, state["buffers"], to_device(batch))
            if use_evaluators:
                outputs, batch = _host(result), _host(batch)
                for ev in evals:
                    ev.update(outputs, batch)
            else:
                totals = result if totals is None else jax.tree.map(jnp.add, totals, result)
        out = {}
        if use_evaluators:
            for ev in evals:
                out.update(ev.result())
        else:
            out = _reduce(jax.device_get(totals))
        # Examples evaluated, counted over every process: the split's size when each example
        # is counted once (padding has weight 0).
        out["num_examples"] = _sum_over_processes(counted)
        return out

    def evaluate_state(tree, name: str) -> dict:
        """`evaluate` of `tree["params"]`, plus the EMA's metrics as `ema_<name>` where `tree`
        (the train state, or the best step's parts) holds one."""
        out = evaluate(tree["params"], name)
        if "ema" in tree:
            ema = evaluate(tree["ema"], name)
            out.update({f"ema_{k}": v for k, v in ema.items() if k != "num_examples"})
        return out

    # ---- loop ------------------------------------------------------------------------------
    pending: list[tuple[int, dict]] = []
    last_train: dict = {}  # the task metrics of the last logged window of training steps
    step, last_saved = start_step, start_step
    timed_steps, timed_seconds = 0, 0.0
    last_timing = [0, 0.0]  # (timed_steps, timed_seconds) at the previous log line
    total = config.total_steps

    def flush() -> None:
        """Checks the buffered steps for non-finite values and logs their averages."""
        if not pending:
            return
        host = jax.device_get([m for _, m in pending])
        for (s, _), m in zip(pending, host, strict=True):
            bad = [k for k in ("train_loss", "grad_norm") if not np.isfinite(m[k])]
            if bad:
                ckpts.wait()
                last = ckpts.latest_step()
                kept = (
                    f"the last good checkpoint is step {last} in {ckpts.directory}"
                    if last is not None
                    else "no checkpoint was saved before it "
                    f"(the first is at step {config.eval_every})"
                )
                raise NonFiniteLossError(
                    f"non-finite {' and '.join(bad)} at step {s} "
                    f"({', '.join(f'{k}={m[k]}' for k in bad)}); stopped, {kept}. Try a lower "
                    "learning rate (config.optimizer.lr) or gradient clipping "
                    "(config.optimizer.grad_clip_norm)"
                )
        sums = {
            k: (sum(m[k][0] for m in host), sum(m[k][1] for m in host))
            for k in host[0]
            if isinstance(host[0][k], tuple)
        }
        last_train.clear()
        last_train.update(_reduce(sums))
        record = {
            "step": pending[-1][0],
            "split": "train",
            **_reduce(sums),
            "grad_norm": float(np.mean([m["grad_norm"] for m in host])),
            "lr": float(host[-1]["lr"]),
        }
        now = (timed_steps, timed_seconds)
        d_steps, d_secs = now[0] - last_timing[0], now[1] - last_timing[1]
        last_timing[:] = now
        rate = d_steps / d_secs if d_steps and d_secs > 0 else None  # this interval
        record["steps_per_s"] = rate
        record["examples_per_s"] = rate * config.batch_size if rate else None
        write_record(record)
        mean_rate = timed_steps / timed_seconds if timed_steps and timed_seconds > 0 else None
        eta = _fmt_time((total - record["step"]) / mean_rate) if mean_rate else "?"
        extra = "".join(f" | {k} {io.format_metric(record[k])}" for k in sums if k != "loss")
        speed = f"{rate * config.batch_size:.1f} ex/s | {rate:.2f} steps/s" if rate else "compiling"
        _log(
            f"step {record['step']}/{total} | loss {record['loss']:.4f}{extra} | {speed} | "
            f"ETA {eta}"
        )
        pending.clear()

    def eval_and_checkpoint() -> None:
        nonlocal last_saved
        val = evaluate_state(state, "val")
        if config.best_metric not in val:
            known = ", ".join(k for k in val if k != "num_examples")
            raise errors.ConfigError(
                f"config.best_metric={config.best_metric!r} is not a validation metric of "
                f"{config.task}; known: {known}"
            )
        value = val[config.best_metric]
        better = meta["best_value"] is None or (
            value > meta["best_value"] if config.best_mode == "max" else value < meta["best_value"]
        )
        if better:
            meta["best_value"], meta["best_step"] = value, step
        meta["val_history"].append({"step": step, **val})
        write_record({"step": step, "split": "val", **val})
        _log(
            f"  val @ {step}: "
            + ", ".join(f"{k} {io.format_metric(v)}" for k, v in val.items() if k != "num_examples")
            + (" (best)" if better else "")
        )
        ckpts.save(step, state, train_iter.get_state(), meta, best=better)
        last_saved = step

    # SSA "+FT": the last `dense_finetune_fraction` of the steps train with dense attention.
    dense_from = total - round(config.dense_finetune_fraction * total)
    if step < total:
        _log(f"training steps {step + 1}..{total}, batch {config.batch_size}")
        if dense_from < total:
            _log(f"dense-attention fine-tuning from step {dense_from + 1}")
    used_kernels: dict[str, str] = {}  # dense-attention kernel per call site (attention.kernels)
    while step < total:
        t_step = time.perf_counter()
        batch = to_device(next(train_iter))
        # A step that compiles (the first, and the first of the dense phase) is not timed.
        compiles = step == start_step or (step == dense_from and step > start_step)
        with kernels.record() as chosen:  # traced (and the kernels decided) when it compiles
            state, metrics = train_step(state, batch, step >= dense_from)
        used_kernels.update(chosen.summary())
        step += 1
        pending.append((step, metrics))
        at_eval = step % config.eval_every == 0 or step == total
        at_log = step % config.log_every == 0 or at_eval
        if compiles or at_log:
            # Wait for the step here so that its time is counted before it is logged.
            jax.block_until_ready(metrics)
        if not compiles:
            timed_steps += 1
            timed_seconds += time.perf_counter() - t_step
        if at_log:
            flush()
        if at_eval:
            eval_and_checkpoint()
        if step == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
    flush()
    if last_saved != step:  # e.g. resumed a finished-but-unsummarised run
        eval_and_checkpoint()
    ckpts.wait()
    if metrics_file is not None:
        metrics_file.close()

    # ---- final summary ---------------------------------------------------------------------
    test_last = evaluate_state(state, "test")
    best_step, best = ckpts.restore_best(checkpoint.abstract(state))
    test_best = evaluate_state(best, "test")
    val_last = meta["val_history"][-1]
    val_best = next(v for v in meta["val_history"] if v["step"] == best_step)
    ckpts.close()
    rate = timed_steps / timed_seconds if timed_seconds else None
    summary = {
        "schema_version": SUMMARY_SCHEMA_VERSION,
        "task": config.task,
        "attention": config.attention.to_dict(),
        "preset": config.get("preset"),
        "steps": step,
        "best_step": best_step,
        **(
            {
                "epochs": {
                    "epochs": config.epochs,
                    "steps_per_epoch": steps_per_epoch(config, len(ds.train)),
                    "total_steps": config.total_steps,
                    "recipe_total_steps": stored.total_steps,
                }
            }
            if config is not stored
            else {}
        ),
        "metrics": {
            # The training metrics averaged over the last `log_every` steps (dropout on):
            # the "train MAE" graph papers print beside the validation MAE.
            "train_last": dict(last_train) or _last_train_record(workdir / "metrics.jsonl"),
            "val_last": _strip(val_last),
            "val_best": _strip(val_best),
            "test_last": test_last,
            "test_best": test_best,
        },
        "num_examples": {"train": len(ds.train), "val": len(ds.val), "test": len(ds.test)},
        "reference": {
            "majority_class_rate": {
                s: _majority_rate(getattr(ds, s)) for s in ("train", "val", "test")
            }
        },
        "data": {"source": ds.source, **ds.description},
        "throughput": {
            "steps_per_s": rate,
            "examples_per_s": rate * config.batch_size if rate else None,
            "timed_steps": timed_steps,
            "note": "this process's steps, "
            "excluding the first (compile), evaluation and checkpointing",
        },
        "wall_time_s": time.perf_counter() - wall_start,
        "num_params": num_params,
        "precision": precision,
        "kernels": used_kernels,
        "device": io.device_info(),
        "versions": io.versions(),
        "git_revision": io.git_revision(),
        "command": _command(),
    }
    if pid == 0:
        plots.learning_curves(workdir, title=f"{config.task} / {config.attention.name}")
        io.write_json(workdir / "summary.json", summary)
    _log(_summary_text(summary))
    return summary


def init_state(task, config, sharding):
    """Builds the model and optimizer: `(graphdef, state, optimizer, schedule)` where `state` is
    the pytree `{step, params, buffers, opt_state}` placed with `sharding` (buffers are the
    model's constants: checkpointed, never trained), plus `ema`, a float32 copy of the params,
    where `config.ema_decay > 0`."""
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


def make_steps(
    task, graphdef, optimizer, schedule, seed: int, state, mesh, *, outputs=False, ema_decay=0.0
):
    """The jitted `train_step(state, batch, dense_attention) -> (state, metrics)` and
    `eval_step(params, buffers, batch) -> metric sums` (with `outputs`, the task's
    `eval_outputs(model, batch)` for `attnbench.evaluators` instead); batches are sharded over the
    mesh's `data` axis, the state is replicated. Dropout keys are `fold_in(key(seed), step)`: no RNG
    state. `dense_attention` (a static bool) True passes `subsample=False` to mechanisms that
    declare it: SSA's dense fine-tuning phase. With `ema_decay > 0` (a state from `init_state` with
    that `config.ema_decay`) the step also updates the state's `ema` from the new params."""
    if ("ema" in state) != bool(ema_decay):
        raise ValueError(
            f"ema_decay={ema_decay} with a state {'with' if 'ema' in state else 'without'} an "
            "EMA; pass the config's ema_decay to both init_state and make_steps"
        )
    base_key = jax.random.key(seed)

    def train_step(state, batch, dense_attention):
        key = jax.random.fold_in(base_key, state["step"])
        phase = {"subsample": False} if dense_attention else {}

        def loss_fn(params):
            model = nnx.merge(graphdef, params, state["buffers"])
            with layers.attention_inputs(**phase):
                return task.loss_and_metrics(model, batch, train=True, key=key)

        (loss, metrics), grads = jax.value_and_grad(loss_fn, has_aux=True)(state["params"])
        updates, opt_state = optimizer.update(grads, state["opt_state"], state["params"])
        params = jax.tree.map(jnp.add, state["params"], updates)
        metrics = dict(
            metrics, train_loss=loss, grad_norm=_global_norm(grads), lr=schedule(state["step"])
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

    def eval_step(params, buffers, batch):
        model = nnx.merge(graphdef, params, buffers)
        if outputs:
            return task.eval_outputs(model, batch)
        return task.loss_and_metrics(model, batch, train=False, key=None)[1]

    replicated = NamedSharding(mesh, P())
    eval_sharding = NamedSharding(mesh, P("data")) if outputs else replicated
    state_sharding = jax.tree.map(lambda _: replicated, state)
    train_step = jax.jit(
        train_step,
        in_shardings=(state_sharding, NamedSharding(mesh, P("data"))),
        out_shardings=(state_sharding, replicated),
        donate_argnums=0,
        static_argnums=2,
    )
    return train_step, jax.jit(eval_step, out_shardings=eval_sharding)


def make_mesh():
    """A 1-D mesh over every device, axis `data`. Auto axes: GSPMD propagates the batch
    sharding (Explicit axes would need sharding annotations inside the models)."""
    return jax.make_mesh((jax.device_count(),), ("data",), axis_types=(jax.sharding.AxisType.Auto,))


def _command() -> str:
    """The command line, without machine-specific paths (`python -m scripts.train ...`, or the
    console script's name), its `--config` named as `attnbench.config.canonical` names it."""
    main = pathlib.Path(sys.argv[0])
    root = pathlib.Path(__file__).resolve().parents[1]
    if main.suffix == ".py" and main.resolve().is_relative_to(root):
        rel = main.resolve().relative_to(root).with_suffix("")
        head = "python -m " + ".".join(rel.parts)
    else:
        head = main.name
    args = list(sys.argv[1:])
    for i, arg in enumerate(args):
        if arg.startswith("--config="):
            args[i] = "--config=" + _canonical_config(arg.removeprefix("--config="))
        elif arg == "--config" and i + 1 < len(args):
            args[i + 1] = _canonical_config(args[i + 1])
    return " ".join([head, *args])


def _canonical_config(spec: str) -> str:
    try:
        return config_lib.canonical(spec)
    except errors.ConfigError:
        return spec


def _kill_step() -> int:
    """The step after which `$ATTNBENCH_KILL_AT_STEP` kills this process, 0 for never."""
    step = int(os.environ.get(_KILL_ENV, "0") or 0)
    only = os.environ.get(_KILL_PROCESS_ENV, "").strip()
    return step if not only or int(only) == jax.process_index() else 0


def _sum_over_processes(n: int) -> int:
    if jax.process_count() == 1:
        return n
    from jax.experimental import multihost_utils

    return int(np.sum(multihost_utils.process_allgather(np.int64(n))))


def _host(tree):
    """A pytree of (global) arrays as numpy on this host: every process gets the whole batch
    (evaluators such as average precision need every example)."""
    if jax.process_count() == 1:
        return jax.device_get(tree)
    from jax.experimental import multihost_utils

    return multihost_utils.process_allgather(tree, tiled=True)


def _float_dtypes(tree) -> str | None:
    """The floating dtypes of a pytree's leaves, e.g. "float32" ("+"-joined if several)."""
    kinds = {str(x.dtype) for x in jax.tree.leaves(tree) if jnp.issubdtype(x.dtype, jnp.floating)}
    return "+".join(sorted(kinds)) or None


def _precision(config, state, requested_dtype) -> dict:
    """The summary's `precision`: the compute dtype the run used (resolved), the one asked for
    (e.g. "auto") and the dtypes the parameters and optimizer state are kept in."""
    compute = config.get("model", {}).get("dtype")
    return {
        "compute_dtype": compute,
        "requested_dtype": requested_dtype,
        "params": _float_dtypes(state["params"]),
        "optimizer_state": _float_dtypes(state["opt_state"]),
    }


def _last_train_record(path: pathlib.Path) -> dict:
    """The task metrics of the last training record of `metrics.jsonl` (a resumed run that
    logged no step itself); {} when there is none."""
    last = {}
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by a kill
            if record.get("split") == "train":
                last = record
    drop = {"step", "split", "grad_norm", "lr", "steps_per_s", "examples_per_s"}
    return {k: v for k, v in last.items() if k not in drop}


def _strip(record: dict) -> dict:
    return {k: v for k, v in record.items() if k != "step"}


def _global_norm(tree):
    return jnp.sqrt(sum(jnp.sum(jnp.square(x.astype(jnp.float32))) for x in jax.tree.leaves(tree)))


def _truncate_metrics(path: pathlib.Path, step: int) -> None:
    """Drops log lines past the checkpoint being resumed (they are recomputed identically)."""
    if not path.exists():
        return
    lines = [ln for ln in path.read_text().splitlines() if ln.strip()]
    kept = []
    for ln in lines:
        try:
            if json.loads(ln)["step"] <= step:
                kept.append(ln)
        except (json.JSONDecodeError, KeyError):
            pass  # a line cut by a kill
    io.write_text(path, "".join(k + "\n" for k in kept))


def _summary_text(s: dict) -> str:
    m = s["metrics"]
    lines = [
        f"summary ({s['task']}, attention {s['attention']['name']}, "
        f"data {s['data']['source']}, {s['steps']} steps):"
    ]
    for name in ("val_last", "val_best", "test_last", "test_best"):
        vals = ", ".join(
            f"{k} {io.format_metric(v)}" for k, v in m[name].items() if k != "num_examples"
        )
        lines.append(f"  {name:10s} {vals}  (n={m[name]['num_examples']})")
    maj = s["reference"]["majority_class_rate"].get("test")
    if maj is not None:
        lines.append(f"  majority-class rate (test): {maj:.4f}")
    tp = s["throughput"]
    if tp["steps_per_s"]:
        lines.append(
            f"  {tp['steps_per_s']:.2f} steps/s, {tp['examples_per_s']:.1f} examples/s, "
            f"wall {_fmt_time(s['wall_time_s'])}, best step {s['best_step']}"
        )
    return "\n".join(lines)
