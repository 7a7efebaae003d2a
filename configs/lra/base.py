"""What every LRA task config shares: the `model=` argument, the model section, and the recipes
of the papers that ran LRA (each as a function that fills a config from its source's numbers;
SAMSA's per-task numbers as the table SAMSA_TABLE8). The domain-independent helpers (the rest of
the config argument, `attn=`, the scaled presets) are in configs/common.py.

Recipes (`model=` in the config argument):
  transformer  the LRA base recipe of the task (Tay et al. 2021, arXiv 2011.04006; the released
               configs, google-research/long-range-arena lra_benchmarks/<task>/configs/);
               `attn=` swaps the mechanism, which is how the LRA baselines (linear, performer,
               linformer, local, ...) are run.
  samsa        SAMSA (Lenhat et al. 2024, arXiv 2408.05391) Tables 7-8: its pre-RMSNorm encoder
               with sampled keys/values; `k=` and `mode=hard|soft` pick the Table 1 column.
  sliceformer  Sliceformer (Yuan et al. 2023, arXiv 2310.17683): the per-task configs of the
               authors' LRA fork (DaShenZi721/sliceformer
               LRA/lra_benchmarks/<task>/configs/sliceformer_base.py).
  gfsa         GFSA (Choi et al. 2024, arXiv 2312.04234) App. U / Table 40: "Efficient
               Attention + GFSA" in the LRA base Transformer (the paper gives no model sizes;
               we keep the base recipe).
"""

from __future__ import annotations

import ml_collections

from attnbench import config as config_lib
from configs import common

__all__ = [
    "RECIPES",
    "parse",
    "model_config",
    "new",
    "transformer",
    "samsa",
    "SAMSA_TABLE8",
    "RECIPE_ATTENTION",
    "sliceformer_fork",
    "finish",
]

RECIPES = ("transformer", "samsa", "sliceformer", "gfsa")


def parse(arg: str | None, extra: dict | None = None):
    """Parses an LRA task file's `key=value,...` against `common.ARGS`, `model=` (the recipe,
    one of RECIPES) and a task's `extra` keys (`common.parse`)."""
    return common.parse(
        arg,
        {"model": "transformer", **(extra or {})},
        {"model": (RECIPES, "LRA recipe"), "preset": (common.PRESETS, None)},
    )


def model_config() -> ml_collections.ConfigDict:
    m = ml_collections.ConfigDict()
    m.encoder = "transformer"  # transformer (pre-LN, LRA) | samsa (pre-RMSNorm, SAMSA §4.4)
    m.num_layers = 4  # encoder blocks
    m.dim = 512  # embedding width
    m.qkv_dim = 512  # total query/key/value width over heads
    m.num_heads = 8  # attention heads
    m.mlp_dim = 1024  # MLP hidden width (also the classifier head's)
    m.dropout = 0.1  # residual/MLP/embedding dropout
    m.drop_path = 0.0  # stochastic depth of every residual branch (samsa encoder only)
    m.positions = "sinusoidal"  # sinusoidal | learned | none
    m.pool = "cls"  # cls | mean | sum
    # Compute dtype of the activations (parameters, optimizer state and loss stay float32):
    # float32 | bfloat16 | float16 (no loss scaling) | auto (bfloat16 on GPU/TPU, float32 on
    # CPU, resolved at run start and recorded so). Each recipe sets what its paper used.
    m.dtype = "float32"
    return m


def new(task: str, data: ml_collections.ConfigDict, preset: str) -> ml_collections.ConfigDict:
    c = common.trainer_config()
    c.task = task
    c.preset = preset
    c.data = common.data_fields(data)
    c.model = model_config()
    # Accuracy and cross-entropy on val and test (attnbench/evaluators.py), as LRA reports them.
    c.evals.classification = ml_collections.ConfigDict({"type": "classification"})
    return c


def transformer(
    c,
    *,
    attn: str,
    steps: int,
    batch: int,
    lr: float,
    schedule: str,
    warmup: int,
    weight_decay: float,
    layers: int,
    dim: int,
    qkv_dim: int,
    heads: int,
    mlp_dim: int,
    dropout: float,
    attn_dropout: float,
    pool: str = "cls",
    positions: str = "sinusoidal",
    steps_per_cycle: int = 0,
    eval_every: int = 100,
) -> None:
    """An LRA-codebase recipe: flax.optim Adam(b1 0.9, b2 0.98, eps 1e-9) with decoupled weight
    decay times the lr, and a product-of-factors schedule (LRA train_utils)."""
    c.batch_size = c.eval_batch_size = batch
    c.total_steps = steps
    c.eval_every = c.log_every = eval_every
    c.optimizer.lr = lr  # the `constant` factor
    c.optimizer.b1, c.optimizer.b2, c.optimizer.eps = 0.9, 0.98, 1e-9
    c.optimizer.weight_decay = weight_decay
    c.schedule.name = schedule
    c.schedule.warmup_steps = warmup
    c.schedule.steps_per_cycle = steps_per_cycle
    m = c.model
    m.encoder = "transformer"
    m.num_layers, m.dim, m.qkv_dim, m.num_heads, m.mlp_dim = layers, dim, qkv_dim, heads, mlp_dim
    m.dropout, m.pool, m.positions = dropout, pool, positions
    # float32: LRA's encoders compute in bfloat16 only with `use_bfloat16=True` (default False;
    # models/transformer/transformer.py), which no LRA config or train.py sets (the
    # google-research/long-range-arena repository). The Sliceformer fork keeps that default and
    # sets it nowhere either (DaShenZi721/sliceformer LRA/); GFSA App. U states no precision.
    m.dtype = "float32"
    c.attention = common.attention_config(attn, dropout_rate=attn_dropout)


# The mechanism each recipe puts in the LRA base Transformer.
RECIPE_ATTENTION = {"transformer": "softmax", "sliceformer": "sliceformer", "gfsa": "gfsa_linear"}


def sliceformer_fork(c, *, seed: int = 3) -> None:
    """What the Sliceformer authors' LRA fork changes beyond its config numbers: its random
    seed (3; 2 for CIFAR: `random_seed` in its base configs) and sorting over padding too
    (`ignore_mask`: the attention function of DaShenZi721/sliceformer
    LRA/lra_benchmarks/models/sliceformer/sliceformer.py ignores the padding mask)."""
    c.seed = seed
    c.attention.ignore_mask = True


# SAMSA Table 7 (identical for the five LRA tasks) and App. B common settings.
SAMSA_TRAIN = dict(lr=1e-3, clip=2.0, weight_decay=0.01, epochs=50, batch=32, warmup=2000)

# SAMSA Table 8, one row per LRA task: encoder layers, d_model, FFN width, heads, dropout.
SAMSA_TABLE8 = {
    # row LRA-ListOPS: 6 layers, d 256, FFN 768, 8 heads, dropout 0.1
    "lra.listops": dict(layers=6, dim=256, mlp_dim=768, heads=8, dropout=0.1),
    # row LRA-Text: 4 layers, d 128, FFN 512, 8 heads, dropout 0.3
    "lra.text": dict(layers=4, dim=128, mlp_dim=512, heads=8, dropout=0.3),
    # row LRA-Retrieval: 6 layers, d 128, FFN 512, 8 heads, dropout 0.3 (Table 1 reports hard
    # sampling only for Retrieval)
    "lra.retrieval": dict(layers=6, dim=128, mlp_dim=512, heads=8, dropout=0.3),
    # row LRA-Image: 8 layers, d 128, FFN 512, 8 heads, dropout 0.3
    "lra.image": dict(layers=8, dim=128, mlp_dim=512, heads=8, dropout=0.3),
    # row LRA-Pathfinder: 6 layers, d 128, FFN 512, 8 heads, dropout 0.3
    "lra.pathfinder": dict(layers=6, dim=128, mlp_dim=512, heads=8, dropout=0.3),
}


def samsa(c, *, train_examples: int, k: int, mode: str, drop_path: float = 0.0) -> None:
    """SAMSA Tables 7-8 row of the task `c.task` (SAMSA_TABLE8): AdamW (0.9, 0.999), batch 32,
    lr 1e-3 with 2000 linear warm-up steps then cosine annealing, clipping 2.0, weight decay
    0.01, 50 epochs; pre-RMSNorm encoder, d_attention = d_model (no column in Table 8),
    sinusoidal positions; `k` sampled tokens per head (0: 128, Table 1's smallest column) with
    sampler `mode`. Every LRA row here runs with `drop_path` 0.

    The 50 epochs are passes over the training split the run reads (`config.epochs`: the
    trainer sets the steps from it, `attnbench.train.with_epochs`, the last batch of an epoch
    partial); `train_examples`, that split's size, gives the recipe's estimate of them
    (`total_steps`, `eval_every`: once per epoch).

    Pooling is not in the paper, nor in the authors' code (HySonLab/SAMSA) as far as we could
    read it: we mean-pool."""
    t, row = SAMSA_TRAIN, SAMSA_TABLE8[c.task]
    c.batch_size = c.eval_batch_size = t["batch"]
    per_epoch = -(-train_examples // t["batch"])  # steps of an epoch, the last batch partial
    c.epochs = t["epochs"]  # SAMSA Table 7: 50 epochs (LRA rows)
    c.eval_every_epochs = 1
    c.total_steps = t["epochs"] * per_epoch
    c.eval_every = c.log_every = per_epoch  # once per epoch
    c.optimizer.lr = t["lr"]
    c.optimizer.b1, c.optimizer.b2, c.optimizer.eps = 0.9, 0.999, 1e-8
    c.optimizer.weight_decay = t["weight_decay"]
    c.optimizer.grad_clip_norm = t["clip"]
    c.schedule.name = "warmup_cosine"
    c.schedule.warmup_steps = t["warmup"]
    m = c.model
    m.encoder = "samsa"
    m.num_layers, m.dim, m.qkv_dim = row["layers"], row["dim"], row["dim"]
    m.num_heads, m.mlp_dim = row["heads"], row["mlp_dim"]
    m.dropout, m.drop_path = row["dropout"], drop_path
    m.pool, m.positions = "mean", "sinusoidal"
    # Mixed precision on accelerators: SAMSA's attention is FlashAttention (§4.4 "we integrate
    # flash attention", Algorithm 1 line 15; the flash-attn package is a dependency of the
    # authors' PyTorch code, HySonLab/SAMSA), whose kernels take only fp16/bf16 inputs. Which
    # of the two and the precision of the rest of the model are not stated: bfloat16 here, the
    # accelerator default that needs no loss scaling; float32 on CPU. The scaled presets keep
    # float32.
    m.dtype = "auto"
    c.attention = common.attention_config("samsa", k=k or 128, mode=mode)


# A mechanism's LRA hyper-parameters where its authors' LRA configs set them per task (the
# registry's defaults are the values they share across tasks, each with its source in the
# mechanism's module). YOSO-E's hash length tau: mlpen/YOSO LRA/models/yoso-v1-32/config.json
# (`hash_code_len` 11 ListOps, 12 Text and Retrieval, 10 Image and Pathfinder = the default).
PER_TASK = {
    "yoso": {"lra.listops": {"tau": 11}, "lra.text": {"tau": 12}, "lra.retrieval": {"tau": 12}},
}


def finish(c, args, presets) -> ml_collections.ConfigDict:
    """`common.finish`: scales the recipe to its preset from the task's table `presets`, applies
    the `length=` and `attn=` arguments and fits the mechanism to the sequence length; refuses
    `length=` for the image tasks, whose length is their pixels."""
    if args.length and c.task in ("lra.image", "lra.pathfinder"):
        raise config_lib.ConfigError(
            f"length={args.length}: {c.task} sequences are the image's pixels "
            f"({c.data.max_length}); change the resolution instead"
        )
    c = common.finish(c, args, presets)
    for field, value in PER_TASK.get(c.attention.name, {}).get(c.task, {}).items():
        setattr(c.attention, field, value)
    return c
