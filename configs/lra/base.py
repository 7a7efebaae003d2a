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
  s4d          S4 (Gu, Goel and Re 2022, arXiv 2111.00396) LRA configs, state-spaces/s4
               configs/experiment/lra/s4-<task>.yaml, run with the diagonal S4D layer (Gu et al.
               2022, arXiv 2206.11893; attnbench/nn/s4d.py), as that repository runs S4D
               (`model.layer.mode=diag`, s4/models/dss/README.md).
  mega         MEGA (Ma et al. 2023, arXiv 2209.10655): facebookresearch/mega
               examples/mega/README.lra.md (training commands) and fairseq/models/lra/model.py
               (`mega_lra_*` architectures); attnbench/nn/mega.py.
  luna         Luna-256 (Ma et al. 2021, arXiv 2106.01540): XuezheMax/fairseq-apollo
               examples/luna/README.lra.md (commands) and fairseq/models/lra/model.py
               (`luna_lra_*` / `transformer_lra_*` architectures), with the packed length 256 of
               the "Luna-256" rows (SAMSA Table 2); attnbench/nn/luna.py.
The three backbone recipes train for the sources' steps (not epochs), validate once per epoch
of the task's training split (Luna: at its save intervals where it sets them), and refuse `attn=`
(s4d and mega have no attention mechanism to swap; Luna's two attentions are softmax) and Path-X
(`resolution=128`); their task tables are in configs/lra/<task>.py, each value commented with
its source file.
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
    "s4d",
    "mega",
    "luna",
    "BACKBONE_RECIPES",
    "finish",
]

RECIPES = ("transformer", "samsa", "sliceformer", "gfsa", "s4d", "mega", "luna")

# Recipes whose model is a registered backbone that is not an attention mechanism in the LRA
# Transformer (attnbench/nn/{s4d,mega,luna}.py).
BACKBONE_RECIPES = ("s4d", "mega", "luna")


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


def _steps_run(c, *, steps: int, batch: int, train_examples: int, eval_every: int = 0) -> None:
    """Batch, steps, and validation once per epoch of the task's training split (the sources
    validate per epoch: PyTorch Lightning in state-spaces/s4, fairseq for MEGA and Luna), or
    every `eval_every` steps (fairseq also validates at each `--save-interval-updates`)."""
    c.batch_size = c.eval_batch_size = batch
    c.total_steps = steps
    c.eval_every = c.log_every = eval_every or -(-train_examples // batch)


def s4d(
    c,
    *,
    layers: int,
    dim: int,
    state: int,
    dropout: float,
    prenorm: bool,
    lr: float,
    weight_decay: float,
    batch: int,
    steps: int,
    warmup: int,
    train_examples: int,
    n_ssm: int = 1,
    tie_dropout: bool = False,
) -> None:
    """An S4 LRA config (state-spaces/s4 configs/experiment/lra/s4-<task>.yaml; the numbers are
    in the task file) with the diagonal S4D layer (`encoder="s4d"`, attnbench/nn/s4d.py).

    Shared by the five files: `optimizer: adamw` (configs/optimizer/adamw.yaml: torch.optim.AdamW,
    betas (0.9, 0.999), eps 1e-8, decoupled weight decay), scheduler `cosine_warmup`
    (configs/scheduler/cosine_warmup.yaml: transformers' get_cosine_schedule_with_warmup, linear
    from 0 to the lr, then a half cosine to 0 at the last step = our `warmup_cosine`), no gradient
    clipping (configs/trainer/default.yaml `gradient_clip_val: null`), mean pooling
    (`decoder.mode: pool`), no position encoding, bidirectional, GLU output (`final_act: glu`,
    the s4d block's), Delta in [0.001, 0.1] (`dt_min`/`dt_max`), float32 (no `precision` in
    the files: PyTorch Lightning's default 32). S4D-Lin initialisation: the repository runs S4D
    with `model.layer.mode=diag model.layer.init=diag-lin` (s4/models/dss/README.md).

    What our trainer cannot express (attnbench/nn/s4d.py docstring):
      - S4's separate optimizer groups for the SSM parameters (`lr: {A: 0.001, B: 0.001, dt:
        null}` or `lr: 0.001`, and no weight decay on them): A, B and Delta here get the global lr
        and weight decay;
      - `norm: batch` (every LRA file): LayerNorm here (s4d refuses `s4d_norm="batch"`: no
        running statistics in this trainer);
      - the seed (`train.seed` 3333, 2222 for CIFAR) is not copied (our seeds are 0..n);
      - the Image task's pixel embedding: S4's CIFAR pipeline embeds the grayscale value with a
        Linear (`encoder: linear`); the LRA tasks here embed the 256 pixel values as tokens.
    """
    _steps_run(c, steps=steps, batch=batch, train_examples=train_examples)
    c.optimizer.lr = lr
    c.optimizer.b1, c.optimizer.b2, c.optimizer.eps = 0.9, 0.999, 1e-8  # torch AdamW defaults
    c.optimizer.weight_decay = weight_decay
    c.optimizer.grad_clip_norm = 0.0  # gradient_clip_val: null
    c.schedule.name = "warmup_cosine"  # cosine_warmup (transformers), 0 -> lr -> 0
    c.schedule.warmup_steps = warmup
    m = c.model
    m.encoder = "s4d"
    m.num_layers, m.dim, m.qkv_dim, m.num_heads = layers, dim, dim, 1  # no heads, no q/k/v
    m.mlp_dim = dim  # the classifier head's width (S4's decoder is one Linear; ours is an MLP)
    m.dropout, m.pool, m.positions, m.dtype = dropout, "mean", "none", "float32"
    m.s4d_state = state  # d_state
    m.s4d_init = "lin"  # S4D-Lin (diag-lin)
    m.s4d_dt_min, m.s4d_dt_max = 0.001, 0.1  # dt_min, dt_max
    m.s4d_prenorm = prenorm  # prenorm
    m.s4d_norm = "layer"  # norm: batch in the files (not expressible; see above)
    m.s4d_bidirectional = True  # bidirectional: true
    m.s4d_n_ssm = n_ssm  # n_ssm (0 = null: one (A, B) per channel)
    m.s4d_tie_dropout = tie_dropout  # tie_dropout
    c.attention = common.attention_config("softmax", dropout_rate=0.0)  # unused by s4d


# fairseq's `--warmup-init-lr 1e-07` of the MEGA and Luna commands: the first lr of the warm-up.
FAIRSEQ_WARMUP_INIT_LR = 1e-7


def mega(
    c,
    *,
    layers: int,
    dim: int,
    z_dim: int,
    hidden_dim: int,
    attention_fn: str,
    norm: str,
    prenorm: bool,
    chunk: int,
    dropout: float,
    lr: float,
    weight_decay: float,
    batch: int,
    steps: int,
    warmup: int,
    train_examples: int,
) -> None:
    """A MEGA LRA run (facebookresearch/mega examples/mega/README.lra.md commands, architecture
    fairseq/models/lra/model.py `mega_lra_<task>`; the numbers are in the task file) on the
    `mega` backbone (attnbench/nn/mega.py).

    Shared by the five commands: `--optimizer adam --adam-betas '(0.9, 0.98)' --adam-eps 1e-8`
    (fairseq's Adam decouples the weight decay, = AdamW), `--clip-norm 1.0`, `--lr-scheduler
    linear_decay` from `--warmup-init-lr 1e-07` over `--warmup-updates` to the lr, then linearly to
    `--end-learning-rate 0.0` at `--total-num-update` (= our `warmup_linear`), `--n-dim 16`,
    `--activation-fn silu`, `--attention-dropout 0.0 --act-dropout 0.0`, `--sen-rep-type mp`
    (mean pooling); architecture: `truncation_length` 1024, simple relative position bias, the
    bidirectional EMA; no `--fp16` (float32). `qkv_dim` and `mlp_dim` carry z and the hidden width
    v (the backbone's defaults of `mega_z_dim` / `mega_hidden_dim`), so the scaled presets shrink
    them with the model; `mlp_dim` is also the classifier head's width, as the official
    `classifier_out_dim` (= v in every `mega_lra_*`).

    What our trainer cannot express: `--update-freq` (gradient accumulation; Text 25 x 2,
    Retrieval 8 x 8): one batch of the product here; batch norm's running statistics at
    evaluation (attnbench/nn/mega.py); the seed (`--seed $SEED`, unset in the README); the head's
    activation (fairseq `classifier_activation_fn` gelu; ours ReLU); Image's pixel normalisation
    and linear pixel embedding (`--pixel-normalization`, `--input-type image`): the LRA tasks here
    embed the 256 pixel values as tokens.
    """
    _steps_run(c, steps=steps, batch=batch, train_examples=train_examples)
    c.optimizer.lr = lr
    c.optimizer.b1, c.optimizer.b2, c.optimizer.eps = 0.9, 0.98, 1e-8
    c.optimizer.weight_decay = weight_decay
    c.optimizer.grad_clip_norm = 1.0  # --clip-norm 1.0
    c.schedule.name = "warmup_linear"  # --lr-scheduler linear_decay
    c.schedule.warmup_steps = warmup
    c.schedule.start_factor = FAIRSEQ_WARMUP_INIT_LR / lr  # --warmup-init-lr 1e-07
    c.schedule.end_factor = 0.0  # --end-learning-rate 0.0
    m = c.model
    m.encoder = "mega"
    m.num_layers, m.dim, m.qkv_dim, m.mlp_dim = layers, dim, z_dim, hidden_dim
    m.num_heads = 1  # single-head gated attention
    m.dropout, m.pool, m.positions, m.dtype = dropout, "mean", "none", "float32"
    m.mega_ndim = 16  # --n-dim 16
    m.mega_chunk_size = chunk  # chunk_size
    m.mega_attention = attention_fn  # --attention-activation-fn
    m.mega_rel_pos = "simple"
    m.mega_norm = norm  # --norm-type
    m.mega_prenorm = prenorm  # --encoder-normalize-before
    m.mega_truncation = 1024  # truncation_length
    m.mega_attention_dropout = 0.0  # --attention-dropout 0.0
    m.mega_hidden_dropout = 0.0  # --act-dropout 0.0
    c.attention = common.attention_config("softmax", dropout_rate=0.0)  # unused by mega


def luna(
    c,
    *,
    layers: int,
    dim: int,
    mlp_dim: int,
    heads: int,
    dropout: float,
    attn_dropout: float,
    lr: float,
    weight_decay: float,
    batch: int,
    steps: int,
    warmup: int,
    init: str,
    pool: str,
    train_examples: int,
    eval_every: int = 0,
) -> None:
    """A Luna LRA run (XuezheMax/fairseq-apollo examples/luna/README.lra.md commands, architecture
    fairseq/models/lra/model.py `luna_lra_<task>` on `transformer_lra_<task>` / base_architecture;
    the numbers are in the task file) with the packed length 256 of SAMSA Table 2's "Luna-256"
    row (the README's `plen=16` example; "could be 128, 256"), on the `luna` backbone
    (attnbench/nn/luna.py).

    Shared by the five commands: `--optimizer adam --adam-betas '(0.9, 0.98)'` (eps: fairseq's
    default 1e-8; decoupled weight decay, = AdamW), `--clip-norm 0.0`, `--lr-scheduler
    inverse_sqrt` with `--warmup-init-lr 1e-07`: linear warm-up to the lr, then lr * sqrt(warmup /
    step) = our factors `constant*linear_warmup*rsqrt_normalized_decay` (which warm up from 0,
    not 1e-7: a difference of 1e-7 at step 0 only), sinusoidal positions, post-LN with the
    embedding LayerNorm, `--fp16` (mixed precision: `dtype="auto"`, bfloat16 on accelerators,
    which needs no loss scaling; float32 on CPU and at the scaled presets).

    What our trainer cannot express: the seed (`seed=1`) is not copied; the head's activation
    (fairseq `classifier_activation_fn` gelu; ours ReLU) and, for Pathfinder, its width
    (`classifier_out_dim` 256; ours is `mlp_dim`, 128); ListOps' `tie_layer_weights` (one layer,
    so nothing is tied); Image's linear pixel embedding (`luna_lra_cifar10`): the LRA tasks here
    embed the 256 pixel values as tokens.

    Validation: once per epoch, or every `eval_every` steps where the command sets
    `--save-interval-updates` (fairseq validates at every save).
    """
    _steps_run(c, steps=steps, batch=batch, train_examples=train_examples, eval_every=eval_every)
    c.optimizer.lr = lr
    c.optimizer.b1, c.optimizer.b2, c.optimizer.eps = 0.9, 0.98, 1e-8
    c.optimizer.weight_decay = weight_decay
    c.optimizer.grad_clip_norm = 0.0  # --clip-norm 0.0
    # --lr-scheduler inverse_sqrt: lr * min(1, t / warmup) * sqrt(warmup / max(t, warmup))
    c.schedule.name = "constant*linear_warmup*rsqrt_normalized_decay"
    c.schedule.warmup_steps = warmup
    m = c.model
    m.encoder = "luna"
    m.num_layers, m.dim, m.qkv_dim, m.num_heads, m.mlp_dim = layers, dim, dim, heads, mlp_dim
    m.dropout, m.pool, m.positions = dropout, pool, "sinusoidal"
    m.dtype = "auto"  # --fp16
    m.proj_len = 256  # Luna-256 (SAMSA Table 2)
    m.dynamic_projection = True  # LunaLRAEncoder default
    m.embed_norm = True  # layernorm_embedding
    m.init = init  # --apply-bert-init (bert) or LunarMultiheadAttention's reset (xavier)
    m.gelu = "erf"  # fairseq "gelu"
    c.attention = common.attention_config("softmax", dropout_rate=attn_dropout)


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
    if args.attn and c.model.encoder in ("s4d", "mega"):
        raise config_lib.ConfigError(
            f"attn={args.attn}: the {c.model.encoder} recipe's model has no attention mechanism "
            "to swap (its sequence mixing is the backbone's own)"
        )
    if args.attn and c.model.encoder == "luna" and args.attn != "softmax":
        raise config_lib.ConfigError(
            f"attn={args.attn}: Luna's pack and unpack attentions are softmax attention "
            "(attnbench/nn/luna.py)"
        )
    if args.length and c.task in ("lra.image", "lra.pathfinder"):
        raise config_lib.ConfigError(
            f"length={args.length}: {c.task} sequences are the image's pixels "
            f"({c.data.max_length}); change the resolution instead"
        )
    c = common.finish(c, args, presets)
    for field, value in PER_TASK.get(c.attention.name, {}).get(c.task, {}).items():
        setattr(c.attention, field, value)
    return c
