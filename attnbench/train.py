"""The one trainer: `train_and_evaluate(config, workdir) -> summary`.

Sections: setup and logging; data; model, optimizer and jitted steps (`attnbench.steps.setup`);
restore; evaluation; loop; final summary (`attnbench.summary`). A run killed at any point and
restarted with the same workdir resumes from its latest checkpoint and ends with the same
parameters and metrics as an uninterrupted run (same seed, same devices).

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

Evaluation has one path: the jitted eval step computes the task's `eval_outputs` and the
evaluators of `config.evals` (or the task's `default_evals`: its own `(sum, count)` metrics)
accumulate them on the host (`attnbench.evaluators`); their references (the majority-class
rate) go to the summary's `reference`.

SSA's "+FT" is a training phase (`attnbench.steps.phases`): from its first step on, the steps run
the phase's own compiled train step.

Evaluation only: `config.total_steps=0` (with `config.epochs=0` where the recipe counts epochs)
trains no step: the model as built (e.g. a released checkpoint, `config.model.checkpoint` of the
vision recipes) is evaluated once on val and test; no training batch is drawn, nothing is
checkpointed, and the summary (`steps` 0, its `notes` saying so) holds its metrics as both the
last and the best. The recipe's learning-rate schedule is not built (a warm-up and decay over
zero steps has no meaning; nothing reads it).

Precision: `config.model.dtype` is the compute dtype of the model's activations
(`attnbench.nn.layers`); parameters, optimizer state, gradients, loss and metrics are float32
whatever it is. "auto" is resolved at the start of a run for this backend (bfloat16 on GPU/TPU,
float32 on CPU; `attnbench.config.resolve`): `config.json` holds the resolved dtype, the
summary's `precision` the resolved one, what was asked for and the dtypes of the parameters and
optimizer state.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import pathlib
import signal
import time

import jax
import ml_collections
import numpy as np

from attention import kernels
from attnbench import (
    checkpoint,
    errors,
    evaluators,
    io,
    plots,
    steps,
    tasks,
    validate,
    workdir_lock,
    writers,
)
from attnbench import config as config_lib
from attnbench import summary as summary_lib
from attnbench.data import pipeline
from attnbench.launch import multihost

__all__ = [
    "train_and_evaluate",
    "steps_per_epoch",
    "with_epochs",
    "NonFiniteLossError",
    "NonFiniteEvalError",
    "FAILED",
    "EVALUATE_ONLY_NOTE",
]

# Fault injection for the resume tests: SIGKILL this process right after finishing this step;
# with several processes, only process `$ATTNBENCH_KILL_PROCESS` where that is set.
_KILL_ENV = "ATTNBENCH_KILL_AT_STEP"
_KILL_PROCESS_ENV = "ATTNBENCH_KILL_PROCESS"


class NonFiniteLossError(errors.RunFailedError):
    """Training produced a NaN/inf loss or gradient; the run stops, keeping the last good
    checkpoint."""


class NonFiniteEvalError(errors.RunFailedError):
    """The model's evaluation outputs hold NaN/inf for real (weight > 0) examples: a metric of
    them would be a number that means nothing (the argmax of NaN logits is class 0), so the
    evaluation fails instead."""


# What a run that stopped on a `RunFailedError` leaves in its workdir (a table cell reads it as
# "failed", `attnbench.papers.runs`); removed when the run finishes.
FAILED = "failed.json"


def _peak_memory() -> dict:
    """This process's peak memory: the first local accelerator's peak bytes in use where it
    reports them (`Device.memory_stats`: GPU, TPU; None on a CPU), and the host's peak resident
    set. A resumed run's are its last process's."""
    import resource

    device = jax.local_devices()[0]
    stats = device.memory_stats() if device.platform != "cpu" else None
    peak = stats.get("peak_bytes_in_use") if stats else None
    return {
        "peak_device_memory_bytes": int(peak) if peak is not None else None,
        "peak_host_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }


# The summary's note of a run of config.total_steps=0.
EVALUATE_ONLY_NOTE = (
    "evaluation only (config.total_steps=0): no training step; the metrics are those of the "
    "model as built (its initial values, or a checkpoint it loads such as config.model.checkpoint)"
)


def _log(msg: str) -> None:
    if jax.process_index() == 0:
        print(msg, flush=True)


def _reduce(sums: dict) -> dict:
    """`{name: (sum, count)}` -> `{name: sum / count}`."""
    return {k: float(s) / max(float(c), 1.0) for k, (s, c) in sums.items()}


def _config_json(config) -> dict:
    return json.loads(json.dumps(config.to_dict(), default=str))


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


# Fields that only choose where records go: a run may be resumed with others.
_RESUME_FREE = ("writers",)


def _check_config(config, workdir: pathlib.Path, requested_dtype=None) -> None:
    """Refuses a workdir that holds a run (finished or not) started with a different config."""
    path = workdir / "config.json"
    if not path.exists():
        return
    old = io.read_json(path, what="run config")
    new = _config_json(config)
    for output_only in _RESUME_FREE:  # may change between a run and its resumption
        old.pop(output_only, None)
        new.pop(output_only, None)
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
    if workdir.exists() and not workdir.is_dir():
        raise errors.WorkdirError(
            f"--workdir {workdir} is a file, not a directory; name a run directory, e.g. runs/x"
        )
    task = tasks.get(config.task)
    validate.check(config, task)  # a config error stops every process before they connect
    if (config.multihost or multihost.requested()) and not jax.distributed.is_initialized():
        multihost.initialize()  # before anything creates the backend (resolving "auto" does)
    requested_dtype = config.get("model", {}).get("dtype")
    config = config_lib.resolve(config)  # "auto" -> this backend's compute dtype
    workdir.mkdir(parents=True, exist_ok=True)
    with workdir_lock.hold(workdir, process_index=jax.process_index()):
        _check_config(config, workdir, requested_dtype)
        if (workdir / "summary.json").exists():
            _log(f"{workdir} is finished; returning its summary")
            return io.read_json(workdir / "summary.json", what="run summary")
        try:
            return _train(config, workdir, task, wall_start, requested_dtype)
        except errors.RunFailedError as e:
            if jax.process_index() == 0:
                io.write_json(
                    workdir / FAILED,
                    {
                        "error": type(e).__name__,
                        "message": str(e),
                        "command": summary_lib.command(),
                    },
                )
            raise


def _train(config, workdir: pathlib.Path, task, wall_start: float, requested_dtype=None) -> dict:
    with contextlib.ExitStack() as closing:  # the input pipeline's workers, however it ends
        return _run(config, workdir, task, wall_start, requested_dtype, closing)


def _run(config, workdir, task, wall_start, requested_dtype, closing) -> dict:
    kill_at = _kill_step()
    n_dev = jax.device_count()
    for name in ("batch_size", "eval_batch_size"):
        if config[name] % n_dev:
            raise errors.ConfigError(
                f"config.{name}={config[name]} is not divisible by the {n_dev} devices; use a "
                f"multiple of {n_dev}"
            )
    pid, nproc = jax.process_index(), jax.process_count()

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
    # Evaluation only (config.total_steps=0) draws no training batch: no training iterator.
    evaluate_only = config.total_steps == 0
    train_iter = None
    if not evaluate_only:
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
        if hasattr(train_iter, "close"):
            closing.callback(train_iter.close)

    # ---- model, optimizer and jitted steps ---------------------------------------------------
    run = steps.setup(task, _constant_schedule(config) if evaluate_only else config)
    state = run.state
    if not (workdir / "config.json").exists() and pid == 0:
        io.write_json(workdir / "config.json", stored.to_dict())  # data and model are built
    num_params = int(sum(x.size for x in jax.tree.leaves(state["params"])))
    precision = summary_lib.precision(config, state, requested_dtype)
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
        # metrics.jsonl, and TensorBoard where config.writers asks (closed below)
        metrics_file = writers.MetricWriters(workdir, config.get("writers", "jsonl"), start_step)

    def write_record(record: dict) -> None:
        if metrics_file is not None:
            metrics_file.write(record)

    # ---- evaluation --------------------------------------------------------------------------
    eval_specs = evaluators.of(config, task)
    references: dict[str, dict[str, float]] = {}  # split -> the evaluators' references

    def evaluate(params, name: str) -> dict:
        """Metrics of split `name` by the run's evaluators."""
        split = getattr(ds, name)
        counted = 0
        evals = evaluators.build(eval_specs, name)
        for batch in pipeline.eval_batches(
            split,
            batch_size=config.eval_batch_size,
            process_index=pid,
            process_count=nproc,
            collate=ds.collate,
            workers=config.data_workers,
        ):
            counted += int(np.count_nonzero(batch["weight"]))  # this process's real examples
            outputs = run.eval_step(params, state["buffers"], run.to_device(batch))
            outputs, batch = _host(outputs), _host(batch)
            try:
                _check_finite(outputs, batch["weight"], name, step)
            except NonFiniteEvalError as e:
                raise NonFiniteEvalError(f"{e}; stopped, {last_good()}") from None
            for ev in evals:
                ev.update(outputs, batch)
        out, references[name] = {}, {}
        for ev in evals:
            out.update(ev.result())
            references[name].update(ev.reference())
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

    def last_good() -> str:
        """Where the run can be taken up again, for the message of a failure."""
        ckpts.wait()
        last = ckpts.latest_step()
        if last is not None:
            return f"the last good checkpoint is step {last} in {ckpts.directory}"
        return f"no checkpoint was saved before it (the first is at step {config.eval_every})"

    def flush() -> None:
        """Checks the buffered steps for non-finite values and logs their averages."""
        if not pending:
            return
        host = jax.device_get([m for _, m in pending])
        for (s, _), m in zip(pending, host, strict=True):
            bad = [k for k in ("train_loss", "grad_norm") if not np.isfinite(m[k])]
            if bad:
                kept = last_good()
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
        eta = summary_lib.format_time((total - record["step"]) / mean_rate) if mean_rate else "?"
        extra = "".join(f" | {k} {io.format_metric(record[k])}" for k in sums if k != "loss")
        speed = f"{rate * config.batch_size:.1f} ex/s | {rate:.2f} steps/s" if rate else "compiling"
        _log(
            f"step {record['step']}/{total} | loss {record['loss']:.4f}{extra} | {speed} | "
            f"ETA {eta}"
        )
        pending.clear()

    def eval_and_checkpoint(save: bool = True) -> None:
        nonlocal last_saved
        val = evaluate_state(state, "val")
        if config.best_metric not in val:
            known = ", ".join(k for k in val if k != "num_examples")
            raise errors.ConfigError(
                f"config.best_metric={config.best_metric!r} is not a validation metric of "
                f"{config.task}; known: {known}"
            )
        value = val[config.best_metric]
        better = meta["best_value"] is None or _better(
            config, {config.best_metric: value}, {config.best_metric: meta["best_value"]}
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
        if save:
            ckpts.save(step, state, train_iter.get_state(), meta, best=better)
            last_saved = step

    phase = run.phase(step) if run.phases else None
    if evaluate_only:
        _log("config.total_steps=0: evaluation only, of the model as built (no training step)")
    if step < total:
        _log(f"training steps {step + 1}..{total}, batch {config.batch_size}")
        for p in run.phases[1:]:
            _log(f"phase {p.name} from step {p.start + 1} (attention inputs {dict(p.inputs)})")
    used_kernels: dict[str, str] = {}  # dense-attention kernel per call site (attention.kernels)
    while step < total:
        t_step = time.perf_counter()
        batch = run.to_device(next(train_iter))
        # A step that compiles (the first, and the first of each later phase) is not timed.
        compiles = step == start_step or run.phase(step) is not phase
        phase = run.phase(step)
        if compiles:  # the first step of a run or phase traces and compiles: say so
            _log(f"step {step + 1}: compiling the training step ({phase.name})")
        with kernels.record() as chosen:  # traced (and the kernels decided) when it compiles
            state, metrics = run.train_step(step)(state, batch)
        used_kernels.update(chosen.summary())
        step += 1
        pending.append((step, metrics))
        at_eval = step % config.eval_every == 0 or step == total
        at_log = step % config.log_every == 0 or at_eval
        if compiles or at_log:
            # Wait for the step here so that its time is counted before it is logged.
            jax.block_until_ready(metrics)
        if compiles:
            _log(f"step {step}: compiled and done in {time.perf_counter() - t_step:.1f}s")
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
    if evaluate_only:
        eval_and_checkpoint(save=False)
    elif last_saved != step:  # e.g. resumed a finished-but-unsummarised run
        eval_and_checkpoint()
    ckpts.wait()
    if metrics_file is not None:
        metrics_file.close()

    # ---- final summary ---------------------------------------------------------------------
    test_last = evaluate_state(state, "test")
    if evaluate_only:  # the model as built is the last and the best
        best_step, recovered, test_best = step, None, test_last
    else:
        best_step, best, recovered = ckpts.restore_best(
            checkpoint.abstract(state), meta, lambda a, b: _better(config, a, b)
        )
        test_best = evaluate_state(best, "test")
    val_last = meta["val_history"][-1]
    val_best = next(v for v in meta["val_history"] if v["step"] == best_step)
    ckpts.close()
    rate = timed_steps / timed_seconds if timed_seconds else None
    epochs = None
    if config is not stored:
        epochs = {
            "epochs": config.epochs,
            "steps_per_epoch": steps_per_epoch(config, len(ds.train)),
            "total_steps": config.total_steps,
            "recipe_total_steps": stored.total_steps,
        }
    summary = summary_lib.build(
        config=config,
        data=ds,
        steps=step,
        best_step=best_step,
        epochs=epochs,
        metrics={
            # The training metrics averaged over the last `log_every` steps (dropout on):
            # the "train MAE" graph papers print beside the validation MAE.
            "train_last": dict(last_train)
            or summary_lib.last_train_record(workdir / "metrics.jsonl"),
            "val_last": _strip(val_last),
            "val_best": _strip(val_best),
            "test_last": test_last,
            "test_best": test_best,
        },
        # Facts about the test data from the evaluators (the majority-class rate).
        reference={k: {"test": v} for k, v in references.get("test", {}).items()},
        throughput={
            "steps_per_s": rate,
            "examples_per_s": rate * config.batch_size if rate else None,
            "timed_steps": timed_steps,
            "note": "this process's steps, "
            "excluding the first (compile), evaluation and checkpointing",
            **_peak_memory(),
        },
        wall_time_s=time.perf_counter() - wall_start,
        num_params=num_params,
        precision=precision,
        kernels=used_kernels,
        notes=[recovered] if recovered else ([EVALUATE_ONLY_NOTE] if evaluate_only else []),
    )
    if pid == 0:
        plots.learning_curves(workdir, title=f"{config.task} / {config.attention.name}")
        io.write_json(workdir / "summary.json", summary)
        (workdir / FAILED).unlink(missing_ok=True)
    _log(summary_lib.text(summary))
    return summary


def _constant_schedule(config):
    """A copy of `config` with a constant learning rate, for a run of zero steps: nothing reads
    it, and a recipe's warm-up and decay cannot be built over zero steps (optax refuses a
    cosine of no steps)."""
    config = copy.deepcopy(config)
    config.schedule.name = "constant"
    return config


def _better(config, a: dict, b: dict) -> bool:
    """Whether validation record `a` is better than `b` by `config.best_metric`."""
    x, y = a[config.best_metric], b[config.best_metric]
    return x > y if config.best_mode == "max" else x < y


def _check_finite(outputs, weight, split: str, step: int) -> None:
    """Raises `NonFiniteEvalError` when a floating output holds NaN/inf for a real example
    (rows of weight 0 are padding; an output without the batch axis is checked whole)."""
    real = np.asarray(weight) > 0
    for path, x in jax.tree_util.tree_leaves_with_path(outputs):
        x = np.asarray(x)
        if not np.issubdtype(x.dtype, np.floating):
            continue
        per_example = x.ndim > 0 and x.shape[0] == real.shape[0]
        rows = x[real].reshape(int(real.sum()), -1) if per_example else x.reshape(1, -1)
        finite = np.isfinite(rows).all(axis=-1)
        if finite.all():
            continue
        where = (
            f"{int((~finite).sum())} of {len(rows)} examples of a batch"
            if per_example
            else "a batch"
        )
        name = jax.tree_util.keystr(path)
        raise NonFiniteEvalError(
            f"the model's evaluation outputs are non-finite (NaN or inf) on split {split} at "
            f"step {step} "
            f"(outputs{name}: {where}): the evaluation fails rather than report a metric of "
            "them. Try a lower learning rate (config.optimizer.lr) or "
            "config.model.dtype=float32"
        )


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


def _strip(record: dict) -> dict:
    return {k: v for k, v in record.items() if k != "step"}


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
