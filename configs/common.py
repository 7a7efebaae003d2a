"""Pieces every recipe shares, whatever its domain: the trainer fields, the attention section,
the config argument (`preset=`, `attn=`, ...) and the scaled presets (`cpu`, `smoke`).

A recipe file's `get_config(arg)` typically: `args = parse(arg, ...)`, fills a config from its
source's numbers, then `return finish(c, args, PRESETS)` with its table of scaled presets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import ml_collections

import attention
from attnbench import config as config_lib

__all__ = [
    "PRESETS",
    "ARGS",
    "DATA_SOURCE",
    "SMOKE",
    "trainer_config",
    "data_fields",
    "attention_config",
    "sequence_attention",
    "takes_token_grid",
    "parse",
    "swap_attention",
    "finish",
    "small_model",
    "short_run",
    "set_length",
    "scale",
]

# `preset=`: the recipe as its source gives it (`paper`), or one of two scalings of it that keep
# its structure: `cpu` (minutes on 2 CPU cores) and `smoke` (seconds, for tests).
PRESETS = ("paper", "cpu", "smoke")

# Config-argument keys every recipe file takes, with their defaults; a domain adds its own (LRA:
# `model=`, the recipe) and a task its own (Pathfinder: `resolution=`).
# k=0: SAMSA's default, 128 (Table 1's smallest column) in the samsa recipe, and length / 16
# (the same ratio at ~2K tokens) when `attn=samsa` swaps it into another recipe.
ARGS = {"preset": "paper", "attn": "", "k": 0, "mode": "hard", "length": 0}

# The `source=` default of a recipe that reads an official release or an offline stand-in: by
# preset (`parse`): the paper's data at `paper`, the stand-in at `cpu` and `smoke`.
DATA_SOURCE = {"source": ""}

# The `smoke` preset's model and run, the same for every task (`scale` reads them): seconds, for
# tests, with tiny data and model; the pipeline and trainer are the real ones. A task's table
# adds its data sizes and batches.
SMOKE = {
    "model": {"layers": 1, "dim": 32, "heads": 4, "mlp_dim": 64},
    "run": {"steps": 12, "eval_every": 4, "lr_peak": 1e-2},
}


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
    # Where metric records go besides metrics.jsonl (always written): "tensorboard" adds event
    # files in <workdir>/tensorboard, "wandb" a Weights & Biases run (the wandb extra;
    # attnbench.writers), e.g. "tensorboard,wandb"; may change when a run is resumed.
    c.writers = "jsonl"
    # Evaluators by name (attnbench/evaluators.py), e.g. {"cls": {"type": "classification"}};
    # empty: the task's own (sum, count) metrics.
    c.evals = ml_collections.ConfigDict()
    c.dense_finetune_fraction = 0.0  # SSA "+FT": last fraction of steps with dense attention
    # Exponential moving average of the parameters, evaluated beside them (metrics `ema_<name>`;
    # the run's own metrics and best checkpoint stay the raw model's, as DeiT reports them): after
    # every step ema = decay * ema + (1 - decay) * params. 0 = off; DeiT's `--model-ema` (on by
    # default in DeiT's and GFSA's Image/main.py) uses 0.99996 (timm ModelEma).
    c.ema_decay = 0.0
    c.optimizer = ml_collections.ConfigDict()
    c.optimizer.name = "adamw"  # AdamW, decoupled weight decay scaled by the lr
    c.optimizer.lr = 1e-3  # base lr (the `constant` factor of LRA schedules)
    c.optimizer.b1 = 0.9  # Adam beta1
    c.optimizer.b2 = 0.999  # Adam beta2
    c.optimizer.eps = 1e-8  # Adam epsilon
    c.optimizer.weight_decay = 0.0  # decoupled weight decay
    c.optimizer.grad_clip_norm = 0.0  # global-norm clipping; 0 = off
    c.schedule = ml_collections.ConfigDict()
    # warmup_cosine, warmup_linear or a product of LRA factors (attnbench/optim.py)
    c.schedule.name = "warmup_cosine"
    c.schedule.warmup_steps = 0  # linear warmup steps
    c.schedule.steps_per_cycle = 0  # LRA cosine_decay period; 0 = the whole run after warmup
    c.schedule.start_factor = 0.0  # warmup_cosine / _linear: first lr as a fraction of the peak
    c.schedule.end_factor = 0.0  # warmup_cosine / _linear: final lr as a fraction of the peak
    return c


def data_fields(d: ml_collections.ConfigDict) -> ml_collections.ConfigDict:
    """Adds to a domain's data section `d` the fields the trainer reads from every data section,
    with neutral defaults; returns `d`. A domain's `new` passes its data section through this (a
    data section without them, e.g. a test's, trains with these defaults)."""
    # DeiT's repeated augmentation (`--repeated-aug`, timm's RASampler with 3 repeats, on by
    # default in DeiT's and GFSA's Image/main.py): each distinct example fills this many
    # consecutive slots of a global batch, every copy with its own augmentation draw; an epoch of
    # steps then sees 1 / repeated_aug of the distinct examples. 1 = off.
    d.repeated_aug = 1
    return d


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


def takes_token_grid(att: ml_collections.ConfigDict) -> bool:
    """Whether the mechanism of `att` reads the tokens' grid (`grid`): GRF's grid graph and
    Toeplitz's 2-D offsets; not SSA's `grid_2d` sampler, whose grid is its own choice."""
    return "grid" in att and att.get("graph", "grid") == "grid" and "sampling" not in att


def sequence_attention(att: ml_collections.ConfigDict, length: int, *, cls: bool) -> None:
    """Adapts graph-structured mechanisms to a 1-D sequence of `length` tokens (+ a CLS token):
    GRF masks over the path graph (a 1 x length grid), Toeplitz offsets along it (a relative
    position scalar), the CLS token linked to every token. Mechanisms without these
    hyper-parameters are left unchanged."""
    if takes_token_grid(att):
        att.grid = (1, length)
    if "cls_token" in att:
        att.cls_token = cls


def parse(
    arg: str | None,
    extra: Mapping | None = None,
    choices: Mapping[str, tuple[Sequence[str], str | None]] | None = None,
) -> ml_collections.ConfigDict:
    """Parses a recipe file's `key=value,...` argument against `ARGS` plus the file's `extra`
    keys (their defaults give their types), and checks the values that are names. A `source`
    key whose default is "" (`DATA_SOURCE`) becomes `official` at `preset=paper` and `standin`
    at the scaled presets unless the argument gives it.

    `choices` maps a key to `(known values, what)`: an unknown value raises "unknown {what}
    {key}={value!r}" (or "unknown {key} {value!r}" where `what` is None), listing the known
    ones. `preset` (PRESETS) and SAMSA's `mode` (hard | soft) are always checked, after the
    caller's keys unless `choices` names them.

    Raises:
      ConfigError: an unknown key, a value of the wrong type or an unknown name.
    """
    args = config_lib.parse_arg(arg, {**ARGS, **(extra or {})})
    if args.get("source", None) == "":
        # A recipe whose `source=` defaults to "" reads the paper's data at the paper's scale
        # and the offline stand-in at a scaled preset; `source=official` at `cpu` or `smoke`
        # is the user asking for the official data at that scale.
        args.source = "official" if args.preset == "paper" else "standin"
    checks = dict(choices or {})
    checks.setdefault("preset", (PRESETS, None))
    checks.setdefault("mode", (("hard", "soft"), "SAMSA"))
    for key, (known, what) in checks.items():
        if args[key] not in known:
            named = f"{what} {key}={args[key]!r}" if what else f"{key} {args[key]!r}"
            raise config_lib.ConfigError(f"unknown {named}; known: {', '.join(known)}")
    return args


def swap_attention(
    c: ml_collections.ConfigDict, name: str, *, k: int = 0, mode: str = "hard"
) -> None:
    """The `attn=` argument: replaces the recipe's mechanism by `name` with its registry
    defaults, keeping the recipe's attention dropout rate. A SAMSA swapped in samples `k` tokens
    per head (0: `c.data.max_length // 16`, at least 1) with sampler `mode`; a Sliceformer
    variant swapped into a recipe that sorts over padding (the Sliceformer fork's `ignore_mask`)
    sorts over padding like the fork."""
    keep = {"dropout_rate": c.attention.get("dropout_rate", 0.0)}
    if name == "samsa":
        keep.update(k=k or max(1, c.data.max_length // 16), mode=mode)
    if "ignore_mask" in c.attention and name.startswith("sliceformer"):
        keep["ignore_mask"] = c.attention.ignore_mask
    c.attention = attention_config(name, **keep)


def finish(
    c: ml_collections.ConfigDict, args, presets: Mapping[str, Mapping] | None = None
) -> ml_collections.ConfigDict:
    """What follows the recipe in a sequence recipe file (one with `c.data.max_length`): scales
    the recipe to its preset from the file's table `presets` (`scale`), applies the `length=`
    and `attn=` arguments, then fits the mechanism to the sequence; returns `c`.

    `length=N` (tokens per sequence) replaces the preset's length, keeping SAMSA's k / length
    ratio unless `k=` is given (`set_length`); `attn=` swaps the mechanism (`swap_attention`).
    SAMSA may not sample more tokens than a sequence has; graph-structured mechanisms are
    adapted to the 1-D sequence (`sequence_attention`).

    Raises:
      ConfigError: `length=` below 1, SAMSA's k above the sequence length, or a bad preset
        table (`scale`).
    """
    scale(c, presets or {})
    if args.length:
        if args.length < 1:
            raise config_lib.ConfigError(f"length={args.length} must be >= 1")
        set_length(c, args.length)
        if args.k and "k" in c.attention:
            c.attention.k = args.k  # an explicit k= is kept as given
    if args.attn and args.attn != c.attention.name:
        swap_attention(c, args.attn, k=args.k, mode=args.mode)
    if "k" in c.attention and c.attention.k > c.data.max_length:
        raise config_lib.ConfigError(
            f"SAMSA k={c.attention.k} exceeds the {c.data.max_length} tokens of a sequence"
        )
    sequence_attention(c.attention, c.data.max_length, cls=c.model.pool == "cls")
    return c


def small_model(c, *, layers=2, dim=64, heads=4, mlp_dim=128) -> None:
    """A scaled preset's model: the recipe's structure (encoder kind, pooling, positions,
    optimizer family) at a width that trains in minutes on 2 cores (the defaults, the `cpu`
    presets' usual size); the query/key/value width is the model width."""
    m = c.model
    m.num_layers, m.dim, m.qkv_dim, m.num_heads, m.mlp_dim = layers, dim, dim, heads, mlp_dim


def short_run(c, *, steps: int, eval_every: int, lr_peak: float) -> None:
    """Scales the schedule of a recipe to `steps` optimizer steps with peak lr `lr_peak`:
    warm-up 10% of the run; the LRA rsqrt factor's constant is set so its peak is `lr_peak`; a
    recipe's step drops (`piecewise_constant`) are left out."""
    c.total_steps, c.eval_every, c.log_every = steps, eval_every, min(50, eval_every)
    if "epochs" in c:  # an epoch-based recipe: the short run counts steps
        c.epochs = 0
    if "piecewise_constant" in c.schedule.name:  # a recipe's step drops: not in a short run
        factors = [f for f in c.schedule.name.split("*") if f.strip() != "piecewise_constant"]
        c.schedule.name = "*".join(factors)
        c.schedule.boundaries, c.schedule.scales = (), ()
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


def scale(c: ml_collections.ConfigDict, presets: Mapping[str, Mapping]) -> None:
    """Scales the recipe in `c` to its preset `c.preset`, read from a task's table
    `presets = {"cpu": {...}, "smoke": {...}}` (`paper`, the recipe itself, needs no entry).

    An entry's keys, applied in this order:
      data:   fields of `c.data` to replace; `max_length` shortens the sequences (`set_length`,
              keeping SAMSA's k / length ratio)
      model:  `small_model` sizes (layers, dim, heads, mlp_dim)
      run:    `short_run` arguments (steps, eval_every, lr_peak); no attention dropout
      batch:  (train, eval) global batch sizes
      any other key: a trainer field (e.g. `log_every`), set last.
    A recipe's `model.dtype = "auto"` (mixed precision on accelerators) becomes "float32".

    Raises:
      ConfigError: a preset the table lacks, or a field the config does not have.
    """
    if c.preset == "paper":
        return
    if c.preset not in presets:
        raise config_lib.ConfigError(f"{c.task} has no {c.preset!r} preset")
    if c.get("model") is not None and c.model.get("dtype") == "auto":
        # A recipe's mixed precision is for its paper preset on accelerators; the scaled
        # presets compute in float32 wherever they run (what their figures were measured in).
        c.model.dtype = "float32"
    preset = dict(presets[c.preset])
    for key, value in preset.pop("data", {}).items():
        if key not in c.data:
            raise config_lib.ConfigError(f"{c.preset} preset: {c.task} has no data.{key}")
        if key == "max_length":
            set_length(c, value)
        else:
            c.data[key] = value
    if "model" in preset:
        small_model(c, **preset.pop("model"))
    if "run" in preset:
        short_run(c, **preset.pop("run"))
    if "batch" in preset:
        c.batch_size, c.eval_batch_size = preset.pop("batch")
    for key, value in preset.items():
        if key not in c:
            raise config_lib.ConfigError(f"{c.preset} preset: the config has no field {key!r}")
        c[key] = value
