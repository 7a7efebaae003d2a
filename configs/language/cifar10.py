"""CIFAR-10 unconditional image generation over sub-pixels with SSA's 16-layer decoder (SSA
Table 2); the `cpu` and `smoke` presets train on the offline Fashion-MNIST pixel sequences.

Run:
    attnbench-data fetch cifar10     # into the data root, where source=official reads it
    python -m scripts.train --config configs/language/cifar10.py:ssa=S16-L4,ft=1,source=official \
        --workdir runs/c10           # or --config.data.dir=/data/cifar-10-batches-py
    python -m scripts.train --config configs/language/cifar10.py:preset=cpu,ssa=S16-L4 ...

Config argument (comma-separated `key=value`):
    preset=paper|cpu|smoke      scaling of the recipe (default paper)
    source=standin|official     Fashion-MNIST offline (28 x 28 x 1 = 784 tokens per
                                image) or the CIFAR-10 pickles (`attnbench-data fetch cifar10`)
                                (32 x 32 x 3 = 3,072 sub-pixel tokens)
                                (default: official at preset=paper, standin at cpu and smoke)
    ssa=S16-L4                  SSA in all 16 layers (scaled presets: all layers) with 4
                                vertical windows (bands) of 8 image rows (Fashion-MNIST: 7)
    ft=1                        +FT: the last 10% of the steps with dense attention
    ensemble=S                  also evaluate a self-ensemble of S subsampled passes
                                (metrics `*_ensemble`; not in the paper's Table 2)
    attn=<mechanism>            any mechanism with causal support (`language.backbones.decoder`)

Images are sequences of sub-pixel values (vocabulary 256) after a start symbol. SSA trains
with Distribution Augmentation (Jun et al. 2020) instead of dropout without saying which
functions; the recipe takes rotation and transposition (`language.data.distaug`: the eight
symmetries of the square, each drawn uniformly, the model conditioned through one start symbol
per symmetry, evaluation on the identity), `--config.data.distaug=""` turns it off. So the
decoder embeds 256 + 8 symbols (`language.tasks`): the paper preset has 202,590,336
parameters, SSA's 203M (tests/language/test_models.py's 202,573,952 for 256 symbols, plus 8
start symbols' embedding and output rows, 8 x 2 x 1,024). Without DistAug: 202,576,000.

Sources, cited below: [ssa] SSA (arXiv:2306.01705) Sec. 4.2 and App. B.2; the widths are the
language models' (App. B.2: "similar architectural and hyperparameter settings" as the language
models of App. B.1, whose widths are fairseq's `transformer_lm_wiki103`: see enwik8.py).
"""

from __future__ import annotations

import ml_collections

from configs import common
from configs.language import common as lm
from language.data import corpora

SSA_ROWS = ("S16-L4",)
# (rows, cols, channels) of a sequence: CIFAR-10 sub-pixels, Fashion-MNIST pixels
GRIDS = {"official": (32, 32, 3), "standin": (28, 28, 1)}

PRESETS = {
    # Minutes on 2 CPU cores on Fashion-MNIST (784 tokens per image): 4 layers of width 128 (4
    # heads, FFN 512) instead of 16 x 1024; 600 steps at batch 8, 10% warm-up, peak lr 2e-3;
    # evaluation on the first 500 test images.
    "cpu": {
        "data": dict(eval_tokens=500),
        "model": dict(layers=4, dim=128, heads=4, mlp_dim=512),
        "run": dict(steps=600, eval_every=200, lr_peak=2e-3),
        "batch": (8, 16),
    },
    "smoke": {
        **common.SMOKE,
        "data": dict(eval_tokens=8),
        "batch": (2, 4),
        "log_every": 2,
    },
}


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    args = lm.parse(arg, SSA_ROWS, samplings=("grid_2d",), dense_ensemble=False)
    rows, cols, channels = GRIDS[args.source]
    c = common.trainer_config()
    c.task = "language.lm"  # language/tasks.py
    c.preset = args.preset
    d = corpora.data_config()
    d.dataset = "cifar10"
    d.source = args.source
    d.vocab_size = 256  # sub-pixel values (the start symbol is the decoder's 257th)
    d.length = rows * cols * channels  # [ssa] 3,072 sub-pixel tokens per image
    d.eval_stride = d.length  # one window per image
    d.eval_tokens = 0  # images: evaluate every image of the split (presets: the first k)
    d.distaug = "rotation,transposition"  # [ssa] DistAug [29] (which functions: not stated)
    c.data = common.data_fields(d)
    c.model = _model((rows, cols, channels))
    c.attention = common.attention_config("softmax", dropout_rate=0.0)  # [ssa] no dropout
    c.seed = 1
    c.batch_size = 128  # [ssa] batch 128
    c.eval_batch_size = 32
    c.total_steps = 100_000  # [ssa] 100,000 steps
    c.eval_every = 5_000
    c.log_every = 100
    c.best_metric, c.best_mode = "bpd", "min"  # [ssa] validation bits per dim
    c.evals.lm = ml_collections.ConfigDict({"type": "language_model", "unit": "dim"})
    c.optimizer.lr = 2e-3  # [ssa] Adam, max lr 2e-3
    c.optimizer.b1, c.optimizer.b2 = 0.9, 0.98  # as the language models (not stated in [ssa])
    c.optimizer.weight_decay = 0.0
    c.schedule.name = "warmup_cosine"
    c.schedule.warmup_steps = 4_000  # [ssa] 4,000 warm-up steps, then cosine decay
    c.schedule.end_factor = 0.0  # final lr not stated: cosine to 0
    if args.attn:
        common.swap_attention(c, args.attn)
    if args.ssa:
        lm.ssa_attention(
            c,
            args,
            sampling="grid_2d",  # [ssa] 2-D locally biased sampling ...
            grid=(rows, cols * channels),  # a row of sub-pixels is one grid row
            tiles=(4, 1),  # ... in 4 vertical windows (row bands) of 8 rows
            sigma_first=0.25,  # [ssa] sigma 0.25 x dimension in both directions, all layers
            sigma_last=0.25,
        )
    common.scale(c, PRESETS)
    lm.finish(c, args, "dim", layers=False)  # SSA in every block (S16)
    return c


def _model(grid: tuple[int, int, int]) -> ml_collections.ConfigDict:
    m = ml_collections.ConfigDict()
    m.num_layers = 16  # [ssa] 16 layers
    m.dim = 1024  # the language models' width (d 1024, FFN 4096, 8 heads)
    m.qkv_dim = 1024
    m.num_heads = 8
    m.mlp_dim = 4096
    m.dropout = 0.0  # [ssa] no dropout
    m.activation_dropout = 0.0
    m.positions = "relative_2d"  # [ssa] 2-D relative position bias like Swin
    m.grid = grid
    m.gelu = "erf"  # as the language models
    m.final_norm = True  # as the Enwik8 model (the 203M count has it)
    m.input = "embedding"
    m.output = "untied"  # 203M reads as untied (tests/language/test_models.py)
    m.scale_embedding = True
    m.attention_layers = ()  # every block uses config.attention
    m.dtype = "auto"
    m.ensemble_passes = 0
    m.ensemble_seed = 0
    return m
