"""Pieces every recipe shares: the trainer fields and the attention section."""

from __future__ import annotations

import ml_collections

import attention

__all__ = ["trainer_config", "attention_config", "sequence_attention"]


def trainer_config() -> ml_collections.ConfigDict:
    """The trainer's own fields with neutral defaults; recipes set the real values."""
    c = ml_collections.ConfigDict()
    c.task = ""  # registered task name, e.g. "lra.listops"
    c.preset = "paper"  # which scaling of the recipe this is: paper | cpu | smoke
    c.seed = 0  # model init, dropout and data-order seed
    c.batch_size = 32  # global batch (split over all devices)
    c.eval_batch_size = 32  # global eval batch; the last one is padded, never dropped
    c.total_steps = 1000  # optimizer steps
    c.eval_every = 100  # validation (and checkpoint) interval in steps
    c.log_every = 50  # train-metric logging interval in steps
    c.best_metric = "accuracy"  # validation metric that picks the best checkpoint
    c.best_mode = "max"  # max | min for best_metric
    c.multihost = False  # call jax.distributed.initialize() (multi-host TPU/GPU)
    c.async_checkpoints = True  # orbax async saves (atomic either way)
    c.data_workers = 0  # input worker processes for heavy decoding (0: one prefetch thread)
    # Evaluators by name (core/evaluators.py), e.g. {"cls": {"type": "classification"}};
    # empty: the task's own (sum, count) metrics.
    c.evals = ml_collections.ConfigDict()
    c.dense_finetune_fraction = 0.0  # SSA "+FT": last fraction of steps with dense attention
    c.optimizer = ml_collections.ConfigDict()
    c.optimizer.name = "adamw"  # AdamW, decoupled weight decay scaled by the lr
    c.optimizer.lr = 1e-3  # base lr (the `constant` factor of LRA schedules)
    c.optimizer.b1 = 0.9  # Adam beta1
    c.optimizer.b2 = 0.999  # Adam beta2
    c.optimizer.eps = 1e-8  # Adam epsilon
    c.optimizer.weight_decay = 0.0  # decoupled weight decay
    c.optimizer.grad_clip_norm = 0.0  # global-norm clipping; 0 = off
    c.schedule = ml_collections.ConfigDict()
    c.schedule.name = "warmup_cosine"  # warmup_cosine or a product of LRA factors
    c.schedule.warmup_steps = 0  # linear warmup steps
    c.schedule.steps_per_cycle = 0  # LRA cosine_decay period; 0 = the whole run after warmup
    c.schedule.end_factor = 0.0  # warmup_cosine: final lr as a fraction of the peak
    return c


def attention_config(name: str, **hparams) -> ml_collections.ConfigDict:
    """`{name, **every hyper-parameter of the mechanism}`: the registry's defaults updated with
    `hparams` that the mechanism has (others are ignored, so a recipe can set e.g. attention
    dropout for every mechanism that has it)."""
    values = attention.defaults(name)  # raises, listing the known names, if `name` is unknown
    values.update({k: v for k, v in hparams.items() if k in values})
    c = ml_collections.ConfigDict({"name": name})
    for k, v in values.items():
        # None-valued defaults need a typed placeholder to be overridable: `scale` is a number,
        # the others (grid shapes, tiles) are tuples.
        if v is None:
            v = ml_collections.FieldReference(None, field_type=float if k == "scale" else tuple)
        c[k] = v
    return c


def sequence_attention(att: ml_collections.ConfigDict, length: int, *, cls: bool) -> None:
    """Adapts graph-structured mechanisms to a 1-D sequence of `length` tokens (+ a CLS token):
    GRF masks over the path graph (a 1 x length grid) with the CLS token linked to every token.
    Mechanisms without these hyper-parameters are left unchanged."""
    if att.get("graph") == "grid" and "grid" in att:
        att.grid = (1, length)
    if "cls_token" in att:
        att.cls_token = cls
