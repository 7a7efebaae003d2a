"""Enwik8 byte-level language modelling with SSA's 16-layer ALiBi decoder (SSA Tables 1, 4, 8);
the `cpu` and `smoke` presets train on the offline byte-level stand-in.

Run:
    python -m scripts.train --config configs/language/enwik8.py:preset=cpu --workdir runs/lm
    python -m scripts.train --config configs/language/enwik8.py:preset=cpu,ssa=S16-L4,ft=1 ...
    python -m scripts.train --config configs/language/enwik8.py:ssa=S16-L2 \
        --config.data.source=official --config.data.dir=/data/enwik8 --workdir runs/enwik8

Config argument (comma-separated `key=value`):
    preset=paper|cpu|smoke      scaling of the recipe (default paper)
    source=standin|official     the Python-documentation bytes offline or the
                                `enwik8` file / `enwik8.zip` under `--config.data.dir`
                                (default: official at preset=paper, standin at cpu and smoke)
    ssa=S16-L2|S16-L4|S12-L4    SSA in all 16 layers or the last 12 (scaled presets: the
                                same share), 2 or 4 windows (50% / 25% of the sources)
    sampling=local|unbiased     locally biased (sigma 0.10 N -> 0.225 N over depth) or unbiased
                                (Table 8: the windowed scheme with a uniform shuffle)
    ft=1                        +FT: the last 10% of the steps with dense attention
    ensemble=S                  also evaluate a self-ensemble of S subsampled passes (Table 4:
                                50): metrics `*_ensemble` beside the dense ("renormalized") ones;
                                without ssa= (Table 4's S0): a densely trained model whose
                                ensemble passes sample as S16-L4
    attn=<mechanism>            any mechanism with causal support (`language.backbones.decoder`),
                                e.g. gfsa

Sources, cited below: [ssa] SSA (arXiv:2306.01705) App. B.1 and Sec. 4.1; [fairseq] the
`transformer_lm_wiki103` architecture SSA's decoder is built on (App. B.1: Press et al.'s
16-layer decoder, run with fairseq; its settings, which SSA does not restate, are those of
Press et al.'s ALiBi fork of fairseq, GitHub ofirpress/attention_with_linear_biases,
`fairseq/models/transformer_lm.py`).
"""

from __future__ import annotations

import ml_collections

from configs import common
from configs.language import common as lm
from language.data import corpora

SSA_ROWS = ("S16-L2", "S16-L4", "S12-L4")  # [ssa] Tables 1, 4

PRESETS = {
    # About 5-10 minutes on 2 CPU cores on the Python-documentation bytes. Deviations: 4
    # layers of width 128 (4 heads, FFN 512) instead of 16 x 1024; windows of 128 bytes (stride
    # 64 at evaluation, on the first 50,000 bytes of valid / test) instead of 4,096 / 1,024;
    # 800 steps at batch 16, 10% warm-up, peak lr 2e-3; no dropout.
    "cpu": {
        "data": dict(length=128, eval_stride=64, eval_tokens=50_000),
        "model": dict(layers=4, dim=128, heads=4, mlp_dim=512),
        "run": dict(steps=800, eval_every=200, lr_peak=2e-3),
        "batch": (16, 32),
    },
    "smoke": {
        **common.SMOKE,
        "data": dict(length=32, eval_stride=16, eval_tokens=512),
        "batch": (4, 4),
        "log_every": 2,
    },
}


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    args = lm.parse(arg, SSA_ROWS)
    c = common.trainer_config()
    c.task = "language.lm"  # language/tasks.py
    c.preset = args.preset
    d = corpora.data_config()
    d.dataset = "enwik8"
    d.source = args.source
    d.vocab_size = 256  # bytes
    d.length = 4096  # [ssa] input length 4096
    d.eval_stride = 1024  # [ssa] sliding evaluation, overlap 3072
    d.eval_tokens = 0  # evaluate on the whole valid / test split
    c.data = common.data_fields(d)
    c.model = _model()
    c.attention = common.attention_config("softmax", dropout_rate=0.1)  # [fairseq] 0.1
    c.seed = 1  # fairseq's default seed
    c.batch_size = 64  # [ssa] batch 64
    c.eval_batch_size = 16
    c.total_steps = 10_000  # [ssa] 10,000 steps
    c.eval_every = 1_000
    c.log_every = 100
    c.best_metric, c.best_mode = "bpb", "min"  # [ssa] dev/test BPB
    c.evals.lm = ml_collections.ConfigDict({"type": "language_model", "unit": "byte"})
    c.optimizer.lr = 1e-3  # [ssa] Adam, max lr 1e-3
    c.optimizer.b1, c.optimizer.b2 = 0.9, 0.98  # fairseq's LM default (not stated in [ssa])
    c.optimizer.weight_decay = 0.0
    # [ssa] "4,000 warmup steps followed by linear decay", max lr 1e-3, min lr 5e-4: linear
    # from 0 to 1e-3 in 4,000 steps, then linear to 5e-4 (0.5 x peak) at step 10,000. The
    # warm-up's first lr is not stated: from 0, as the WikiText-103 recipe's.
    c.schedule.name = "warmup_linear"
    c.schedule.warmup_steps = 4_000  # [ssa] 4,000 warm-up steps
    c.schedule.end_factor = 5e-4 / 1e-3  # [ssa] minimum learning rate 0.0005
    if args.attn:
        common.swap_attention(c, args.attn)
    lm.ssa_attention(
        c,
        args,
        sigma_first=0.10,  # [ssa] enwik8 sigma 0.10 N in the first layer ...
        sigma_last=0.225,  # ... rising linearly to 0.225 N in the last
        dropout_rate=0.1,
    )
    common.scale(c, PRESETS)
    if c.preset != "paper":
        c.model.dropout = c.model.activation_dropout = 0.0
    lm.finish(c, args, "byte")
    return c


def _model() -> ml_collections.ConfigDict:
    m = ml_collections.ConfigDict()
    m.num_layers = 16  # [ssa] 16 layers
    m.dim = 1024  # [fairseq] decoder_embed_dim 1024
    m.qkv_dim = 1024
    m.num_heads = 8  # [fairseq] 8 heads
    m.mlp_dim = 4096  # [fairseq] FFN 4096
    m.dropout = 0.3  # [fairseq] dropout 0.3 (the wiki103 arch; [ssa] does not restate it)
    m.activation_dropout = 0.1  # [fairseq] activation dropout 0.1
    m.positions = "alibi"  # [ssa] ALiBi relative positions
    m.gelu = "erf"  # [ssa] ReLU -> GELU (fairseq's gelu is the exact one)
    m.final_norm = True  # [ssa] "extra final LayerNorm before softmax"
    m.input = "embedding"  # [ssa] a simple byte embedding
    m.output = "untied"  # fairseq's share_decoder_input_output_embed is off by default
    m.scale_embedding = True  # fairseq's embed_scale sqrt(dim)
    m.dtype = "auto"
    m.ensemble_passes = 0
    m.ensemble_seed = 0
    return m
