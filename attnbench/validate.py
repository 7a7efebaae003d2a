"""Checks of a final config, after the config argument and every command-line override: one
place, so `--config.attention.k=1000` is held to the same rules as `k=1000` in the argument.

`check(config, task)` raises `attnbench.errors.ConfigError` listing every problem on one line, each
naming the field and the value typed (`config.model.num_heads=0: must be an integer >= 1`). It
covers the trainer's fields, the model section the shared encoders read, and the attention
section: the mechanism's own hyper-parameter rules (`attention.check`), its length-dependent
ones against the tokens the task feeds it, and pooling against a mechanism that builds a CLS
token into its graph. The task (`attnbench.tasks.Task`) adds its own (`check_config`), says how
many tokens its attention sees (`attention_length`), and its evaluators (`config.evals`, else its
`default_evals`) name the validation metrics `config.best_metric` may pick. Without a task (a
config checked before its task is known) only the config's own rules apply.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import ml_collections

import attention
from attnbench import errors, evaluators, tasks, writers
from attnbench.nn import backbones

__all__ = ["check", "problems", "attention_length"]

POOLS = ("cls", "mean", "sum")
# the encoders' positions and language.backbones.decoder's (alibi, relative_2d)
POSITIONS = ("sinusoidal", "learned", "none", "alibi", "relative_2d")
ENCODERS = ("transformer", "samsa")  # attnbench.nn backbones; domains register more (swin, ...)
# config.model.dtype: a compute dtype (attnbench.nn.layers.COMPUTE_DTYPES; parameters stay float32),
# or "auto": bfloat16 on GPU/TPU, float32 on CPU, resolved at run start
# (attnbench.config.resolve).
DTYPES = ("float32", "bfloat16", "float16", "auto")


def _rule(section, field, ok: Callable[[object], bool], what: str, out: list[str], prefix: str):
    if section is None or field not in section:
        return
    value = section[field]
    try:
        good = ok(value)
    except TypeError:
        good = False
    if not good:
        out.append(f"{prefix}{field}={value!r}: {what}")


def _int_at_least(lo: int):
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= lo


def _finite(v) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def attention_length(config, task=None) -> int | None:
    """The tokens the attention sees per sequence: `task.attention_length(config)` (by default
    `config.data.max_length` plus a CLS token when the model pools with one); None when the
    config does not say."""
    if task is None:
        return tasks.default_attention_length(config)
    return task.attention_length(config)


def problems(config: ml_collections.ConfigDict, task=None) -> list[str]:
    """Every problem of `config` (empty when it can run), each `config.<field>=<value>: why`."""
    out: list[str] = []
    c = config
    r = lambda section, prefix, field, ok, what: _rule(section, field, ok, what, out, prefix)
    pos, nonneg = _int_at_least(1), _int_at_least(0)

    # ---- trainer -------------------------------------------------------------------------
    r(c, "config.", "task", lambda v: isinstance(v, str) and v, "name a registered task")
    r(c, "config.", "seed", nonneg, "must be an integer >= 0")
    for field in ("batch_size", "eval_batch_size", "eval_every", "log_every"):
        r(c, "config.", field, pos, "must be an integer >= 1")
    r(
        c,
        "config.",
        "total_steps",
        nonneg,
        "must be an integer >= 0 (0: evaluate the model as built, without training)",
    )
    r(c, "config.", "data_workers", nonneg, "must be an integer >= 0")
    r(c, "config.", "epochs", nonneg, "must be an integer >= 0 (0: config.total_steps counts)")
    if c.get("total_steps") == 0 and pos(c.get("epochs")):
        out.append(
            f"config.total_steps=0 (evaluation only) with config.epochs={c.epochs}: the epochs "
            "set the steps; also pass --config.epochs=0"
        )
    r(c, "config.", "eval_every_epochs", pos, "must be an integer >= 1")
    r(c, "config.", "best_mode", lambda v: v in ("max", "min"), "must be 'max' or 'min'")
    if "writers" in c:
        try:
            writers.parse(c.writers)
        except errors.ConfigError as e:
            out.append(str(e))
    r(
        c,
        "config.",
        "dense_finetune_fraction",
        lambda v: _finite(v) and 0 <= v <= 1,
        "must be in [0, 1]",
    )
    r(
        c,
        "config.",
        "ema_decay",
        lambda v: _finite(v) and 0 <= v < 1,
        "must be in [0, 1) (0 turns the parameter EMA off; DeiT uses 0.99996)",
    )
    opt = c.get("optimizer")
    p = "config.optimizer."
    r(opt, p, "lr", lambda v: _finite(v) and v > 0, "the learning rate must be positive")
    for field in ("b1", "b2"):
        r(opt, p, field, lambda v: _finite(v) and 0 <= v < 1, "must be in [0, 1)")
    r(opt, p, "eps", lambda v: _finite(v) and v > 0, "must be positive")
    for field in ("weight_decay", "grad_clip_norm"):
        r(opt, p, field, lambda v: _finite(v) and v >= 0, "must be >= 0 (0 turns it off)")
    sched = c.get("schedule")
    p = "config.schedule."
    for field in ("warmup_steps", "steps_per_cycle"):
        r(sched, p, field, nonneg, "must be an integer >= 0")
    r(sched, p, "end_factor", lambda v: _finite(v) and 0 <= v <= 1, "must be in [0, 1]")
    if (
        sched is not None
        and sched.get("name") == "warmup_cosine"
        and pos(c.get("total_steps"))
        and nonneg(sched.get("warmup_steps"))
        and sched.warmup_steps >= c.total_steps
    ):
        out.append(
            f"config.schedule.warmup_steps={sched.warmup_steps}: must be below "
            f"config.total_steps={c.total_steps} (warmup_cosine decays after the warm-up)"
        )

    # ---- model ---------------------------------------------------------------------------
    m = c.get("model")
    p = "config.model."
    for field in ("num_layers", "dim", "qkv_dim", "num_heads", "mlp_dim"):
        r(m, p, field, pos, "must be an integer >= 1")
    # dropout rates (a rate of 1 drops everything); the language decoder's activation and
    # adaptive-softmax dropout besides the encoders' own
    for field in ("dropout", "drop_path", "activation_dropout", "adaptive_dropout"):
        r(m, p, field, lambda v: _finite(v) and 0 <= v < 1, "must be in [0, 1)")
    r(m, p, "pool", lambda v: v in POOLS, f"must be one of {', '.join(POOLS)}")
    r(m, p, "positions", lambda v: v in POSITIONS, f"must be one of {', '.join(POSITIONS)}")
    # + a task's own models that are not attention backbones (point clouds: pointnet, dgcnn)
    encoders = sorted(set(ENCODERS) | set(backbones.names()) | set(task.archs if task else ()))
    r(m, p, "encoder", lambda v: v in encoders, f"must be one of {', '.join(encoders)}")
    r(m, p, "dtype", lambda v: v in DTYPES, f"must be one of {', '.join(DTYPES)}")
    if m is not None and pos(m.get("qkv_dim")) and pos(m.get("num_heads")):
        if m.qkv_dim % m.num_heads:
            out.append(
                f"config.model.qkv_dim={m.qkv_dim}: not divisible by "
                f"config.model.num_heads={m.num_heads} (each head gets qkv_dim / num_heads)"
            )

    # ---- data ----------------------------------------------------------------------------
    d = c.get("data")
    p = "config.data."
    r(d, p, "max_length", pos, "must be an integer >= 1")
    for field in ("num_train", "num_val", "num_test"):  # 0: every example of the split
        r(d, p, field, nonneg, "must be an integer >= 0")
    r(d, p, "repeated_aug", pos, "must be an integer >= 1 (1 turns repeated augmentation off)")

    # ---- attention -----------------------------------------------------------------------
    own = task.check_config(c) if task is not None else []
    # A task's own rule on an attention hyper-parameter names the task's field it depends on
    # (a point cloud's config.data.num_points for knn_k): it stands for the mechanism's rule on
    # the same hyper-parameter, which knows only a token count.
    taken = {
        problem.split("=", 1)[0].removeprefix("config.attention.")
        for problem in own
        if problem.startswith("config.attention.") and "=" in problem
    }
    att = c.get("attention")
    if att is not None and "name" in att:
        hparams = {k: v for k, v in att.items() if k != "name"}
        if m is not None and "cls_token" in att and m.get("pool") in POOLS:
            if bool(att.cls_token) != (m.pool == "cls"):
                out.append(
                    f"config.model.pool={m.pool!r} with config.attention.cls_token="
                    f"{att.cls_token}: {att.name} puts a CLS token in its graph exactly when the "
                    f"model pools with one; also set --config.attention.cls_token="
                    f"{m.pool == 'cls'}"
                )
                hparams["cls_token"] = m.pool == "cls"  # judge the rest as if that were fixed
        n = attention_length(c, task)
        for problem in attention.check(att.name, hparams, num_tokens=n):
            if not any(problem.startswith(f"{att.name}: {field}=") for field in taken):
                out.append(f"config.attention ({problem})")
        if task is not None and att.name in attention.names():
            needed = attention.get(att.name).requires
            missing = [name for name in needed if name not in task.attention_inputs]
            if missing:
                out.append(
                    f"config.attention.name={att.name!r}: needs the per-call input(s) "
                    f"{', '.join(missing)}, which {task.name or c.get('task')} does not give its "
                    "attention (a point-cloud task gives `coords`)"
                )
    evals = evaluators.of(c, task) if task is not None else c.get("evals")
    names = None
    if evals:
        try:
            for split in evaluators.SPLITS:
                evaluators.build(evals, split)
            names = evaluators.names_reported(evals, "val")
        except errors.UserError as e:
            out.append(str(e))
    if names is not None and c.get("best_metric") not in names:
        out.append(
            f"config.best_metric={c.get('best_metric')!r}: not a validation metric of "
            f"{c.get('task')}; known: {', '.join(names)}"
        )
    out.extend(own)
    return out


def check(config: ml_collections.ConfigDict, task=None) -> None:
    """Raises `ConfigError` naming every problem of `config` (see `problems`)."""
    found = problems(config, task)
    if found:
        raise errors.ConfigError("; ".join(found))
