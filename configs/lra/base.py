"""What every LRA task config shares: the argument string, the model section, and the recipes
of the papers that ran LRA (each as a function that fills a config from its source's numbers).

Recipes (`model=` in the config argument):
  transformer  the LRA base recipe of the task (Tay et al. 2021, the released configs; read in
               shared/papers/notes/peer_code.md §1); `attn=` swaps the mechanism, which is how
               the LRA baselines (linear, performer, linformer, local, ...) are run.
  samsa        SAMSA (Lenhat et al. 2024) Tables 7-8: its pre-RMSNorm encoder with sampled
               keys/values; `k=` and `mode=hard|soft` pick the Table 1 column.
  sliceformer  Sliceformer (Yuan et al. 2023): the per-task configs of the authors' LRA fork
               (shared/papers/notes/sliceformer.md §2.1, peer_code.md §2).
  gfsa         GFSA (Choi et al. 2024) App. U / Table 40: "Efficient Attention + GFSA" in the
               LRA base Transformer (the paper gives no model sizes; we keep the base recipe).
"""

from __future__ import annotations

import ml_collections

from configs import common
from core import config as config_lib

__all__ = [
    "ARGS",
    "RECIPES",
    "parse",
    "model_config",
    "new",
    "transformer",
    "samsa",
    "RECIPE_ATTENTION",
    "sliceformer_fork",
    "finish",
    "small_model",
    "short_run",
    "set_length",
]

# Config-argument keys and defaults shared by the LRA task files.
# k=0: SAMSA's default, 128 (Table 1's smallest column) in the samsa recipe, and length / 16
# (the same ratio at ~2K tokens) when `attn=samsa` swaps it into another recipe.
ARGS = {"preset": "paper", "model": "transformer", "attn": "", "k": 0, "mode": "hard", "length": 0}
RECIPES = ("transformer", "samsa", "sliceformer", "gfsa")
PRESETS = ("paper", "cpu", "smoke")


def parse(arg: str | None, extra: dict | None = None):
    """Parses `key=value,...` against `ARGS` (plus a task's `extra` keys)."""
    args = config_lib.parse_arg(arg, {**ARGS, **(extra or {})})
    if args.model not in RECIPES:
        raise config_lib.ConfigError(
            f"unknown LRA recipe model={args.model!r}; known: {', '.join(RECIPES)}"
        )
    if args.preset not in PRESETS:
        raise config_lib.ConfigError(f"unknown preset {args.preset!r}; known: {', '.join(PRESETS)}")
    if args.mode not in ("hard", "soft"):
        raise config_lib.ConfigError(f"unknown SAMSA mode={args.mode!r}; known: hard, soft")
    return args


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
    m.dtype = "float32"  # compute dtype (bfloat16 on accelerators)
    return m


def new(task: str, data: ml_collections.ConfigDict, preset: str) -> ml_collections.ConfigDict:
    c = common.trainer_config()
    c.task = task
    c.preset = preset
    c.data = data
    c.model = model_config()
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
    c.attention = common.attention_config(attn, dropout_rate=attn_dropout)


# The mechanism each recipe puts in the LRA base Transformer.
RECIPE_ATTENTION = {"transformer": "softmax", "sliceformer": "sliceformer", "gfsa": "gfsa_linear"}


def sliceformer_fork(c, *, seed: int = 3) -> None:
    """What the Sliceformer authors' LRA fork changes beyond its config numbers: its random
    seed (3; 2 for CIFAR) and sorting over padding too (`ignore_mask`, sliceformer.md §1.6)."""
    c.seed = seed
    c.attention.ignore_mask = True


# SAMSA Table 7 (identical for the five LRA tasks) and App. B common settings.
SAMSA_TRAIN = dict(lr=1e-3, clip=2.0, weight_decay=0.01, epochs=50, batch=32, warmup=2000)


def samsa(c, *, layers, dim, mlp_dim, heads, dropout, drop_path, train_examples, k, mode):
    """SAMSA Tables 7-8 row: AdamW (0.9, 0.999), batch 32, lr 1e-3 with 2000 linear warm-up
    steps then cosine annealing, clipping 2.0, weight decay 0.01, 50 epochs; pre-RMSNorm
    encoder, d_attention = d_model (no column in Table 8), sinusoidal positions.

    Pooling is not in the paper or the authors' snapshot (notes §1.4): we mean-pool."""
    t = SAMSA_TRAIN
    c.batch_size = c.eval_batch_size = t["batch"]
    c.total_steps = t["epochs"] * train_examples // t["batch"]
    c.eval_every = c.log_every = max(train_examples // t["batch"], 1)  # once per epoch
    c.optimizer.lr = t["lr"]
    c.optimizer.b1, c.optimizer.b2, c.optimizer.eps = 0.9, 0.999, 1e-8
    c.optimizer.weight_decay = t["weight_decay"]
    c.optimizer.grad_clip_norm = t["clip"]
    c.schedule.name = "warmup_cosine"
    c.schedule.warmup_steps = t["warmup"]
    m = c.model
    m.encoder = "samsa"
    m.num_layers, m.dim, m.qkv_dim, m.num_heads, m.mlp_dim = layers, dim, dim, heads, mlp_dim
    m.dropout, m.drop_path = dropout, drop_path
    m.pool, m.positions = "mean", "sinusoidal"
    c.attention = common.attention_config("samsa", k=k or 128, mode=mode)


def finish(c, args) -> ml_collections.ConfigDict:
    """`length=` and `attn=` overrides, then adapts graph-structured mechanisms to the sequence
    length. `length=N` (tokens per sequence, per document for Retrieval) replaces the preset's
    length, keeping SAMSA's k / length ratio unless `k=` is given; image tasks have a fixed
    length (their pixels)."""
    if args.length:
        if c.task in ("lra.image", "lra.pathfinder"):
            raise config_lib.ConfigError(
                f"length={args.length}: {c.task} sequences are the image's pixels "
                f"({c.data.max_length}); change the resolution instead"
            )
        if args.length < 1:
            raise config_lib.ConfigError(f"length={args.length} must be >= 1")
        set_length(c, args.length)
        if args.k and "k" in c.attention:
            c.attention.k = args.k  # an explicit k= is kept as given
    if args.attn and args.attn != c.attention.name:
        keep = {"dropout_rate": c.attention.get("dropout_rate", 0.0)}
        if args.attn == "samsa":
            keep.update(k=args.k or max(1, c.data.max_length // 16), mode=args.mode)
        if "ignore_mask" in c.attention and args.attn.startswith("sliceformer"):
            # a Sliceformer variant in the Sliceformer fork sorts over padding like the fork
            keep["ignore_mask"] = c.attention.ignore_mask
        c.attention = common.attention_config(args.attn, **keep)
    if "k" in c.attention and c.attention.k > c.data.max_length:
        raise config_lib.ConfigError(
            f"SAMSA k={c.attention.k} exceeds the {c.data.max_length} tokens of a sequence"
        )
    common.sequence_attention(c.attention, c.data.max_length, cls=c.model.pool == "cls")
    return c


def small_model(c, *, layers=2, dim=64, heads=4, mlp_dim=128) -> None:
    """The `cpu`-preset model: the recipe's structure (encoder kind, pooling, positions,
    optimizer family) at a width that trains in minutes on 2 cores."""
    m = c.model
    m.num_layers, m.dim, m.qkv_dim, m.num_heads, m.mlp_dim = layers, dim, dim, heads, mlp_dim


def short_run(c, *, steps: int, eval_every: int, lr_peak: float) -> None:
    """Scales the schedule of a recipe to `steps` optimizer steps with peak lr `lr_peak`:
    warm-up 10% of the run; the LRA rsqrt factor's constant is set so its peak is `lr_peak`."""
    c.total_steps, c.eval_every, c.log_every = steps, eval_every, min(50, eval_every)
    warmup = max(steps // 10, 1)
    c.schedule.warmup_steps = warmup
    if "rsqrt_decay" in c.schedule.name:
        c.optimizer.lr = lr_peak * warmup**0.5
    else:
        c.optimizer.lr = lr_peak
    if c.schedule.steps_per_cycle:
        c.schedule.steps_per_cycle = steps - warmup
    if "dropout_rate" in c.attention:
        # On CPU the random bits of the [B, H, N, N] attention-dropout mask cost ~40% of a step.
        c.attention.dropout_rate = 0.0


def set_length(c, length: int) -> None:
    """Shortens the sequences of a scaled preset; SAMSA's k keeps the recipe's k / length ratio
    (at least 1), so a preset samples the same fraction of tokens as the paper."""
    if "k" in c.attention:
        c.attention.k = max(1, c.attention.k * length // c.data.max_length)
    c.data.max_length = length
