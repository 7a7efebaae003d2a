"""WikiText-103 word-level language modelling with SSA's 16-layer ALiBi decoder (SSA Tables 1, 4,
8, 10); the `cpu` and `smoke` presets train on the offline byte-level stand-in.

Run:
    python -m scripts.train --config configs/language/wikitext103.py:ssa=S16-L4,ft=1 \
        --config.data.source=official --config.data.dir=/data/wikitext-103 --workdir runs/wt103
    python -m scripts.train --config configs/language/wikitext103.py:preset=cpu,ssa=S12-L4 ...

Config argument (comma-separated `key=value`):
    preset=paper|cpu|smoke      scaling of the recipe (default paper)
    source=standin|official     the Python-documentation bytes offline or the
                                `wiki.{train,valid,test}.tokens` files under `--config.data.dir`
                                (default: official at preset=paper, standin at cpu and smoke)
    dataset=wikitext-103|wikitext-2   which WikiText (the vocabulary follows, see below)
    ssa=S16-L2|S16-L4|S16-L6|S16-L8|S12-L4|S12-L8
                                S<l>-L<w>: SSA in the last l of the 16 layers (the first 16 - l
                                dense softmax with the same causal mask and ALiBi bias), w
                                windows (1/w of the sources); scaled presets keep the share of
                                dense layers (S12 of 16 -> the first quarter dense)
    sampling=local|unbiased     locally biased (sigma 0.20 N -> 0.35 N over depth) or unbiased
                                (Table 8: the windowed scheme with a uniform shuffle)
    ft=1                        +FT: the last 10% of the steps with dense attention
    ensemble=S                  also evaluate a self-ensemble of S subsampled passes (Table 4:
                                50), metrics `*_ensemble`; without ssa= (S0, the dense model)
                                the passes use locally biased SSA with 4 windows in every layer,
                                the model training densely throughout (Table 4's S0 row)
    attn=<mechanism>            any mechanism with causal support (`language.backbones.decoder`)

The paper preset on the stand-in: the stand-in is bytes (vocabulary 256), so with
`source=standin` every preset uses a plain byte embedding and an untied head (`input=embedding`,
`output=untied`) instead of the adaptive input / softmax, which need a word vocabulary.

Sources, cited below: [ssa] SSA (arXiv:2306.01705) App. B.1 and Sec. 4.1; [fairseq] the
`transformer_lm_wiki103` architecture SSA's decoder is built on (App. B.1: Press et al.'s
16-layer decoder, run with fairseq; its settings, which SSA does not restate, are those of
Press et al.'s ALiBi fork of fairseq, GitHub ofirpress/attention_with_linear_biases,
`fairseq/models/transformer_lm.py`); [tokenizers] `language.data.tokenizers`' dictionary rule
(fairseq's, padded to a multiple of 8).
"""

from __future__ import annotations

import ml_collections

from configs import common
from configs.language import common as lm
from language.data import corpora

SSA_ROWS = ("S16-L2", "S16-L4", "S16-L6", "S16-L8", "S12-L4", "S12-L8")
# [tokenizers] 4 specials + the published vocabulary less <unk>, padded to a multiple of 8:
# WikiText-103 267,735 types -> 267,744 (tests/language/test_models.py's 246,933,504 params);
# WikiText-2 33,278 types -> 33,288 [derived from the published type count, not re-counted]
VOCAB = {"wikitext-103": 267_744, "wikitext-2": 33_288}
# [fairseq] adaptive cutoffs 20000,60000 (wiki103); WikiText-2's 33,288 words take the first
# only (fairseq refuses cutoffs beyond the vocabulary; our choice, no paper runs WikiText-2)
CUTOFFS = {"wikitext-103": (20_000, 60_000), "wikitext-2": (20_000,)}

PRESETS = {
    # Minutes on 2 CPU cores on the Python-documentation bytes: 4 layers of width 128 (4 heads,
    # FFN 512) instead of 16 x 1024; windows of 192 bytes (stride 64 at evaluation, on the
    # first 50,000 bytes of valid / test) instead of 3,072 / 1,024 (192 and the smoke's 24
    # split into 2, 4, 6 and 8 SSA windows, like 3,072); 800 steps at batch 16, 10% warm-up,
    # peak lr 2e-3; no dropout. As configs/language/enwik8.py's cpu preset otherwise.
    "cpu": {
        "data": dict(length=192, eval_stride=64, eval_tokens=50_000),
        "model": dict(layers=4, dim=128, heads=4, mlp_dim=512),
        "run": dict(steps=800, eval_every=200, lr_peak=2e-3),
        "batch": (16, 32),
    },
    "smoke": {
        **common.SMOKE,
        "data": dict(length=24, eval_stride=8, eval_tokens=512),
        "batch": (4, 4),
        "log_every": 2,
    },
}


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    args = lm.parse(
        arg,
        SSA_ROWS,
        extra={"dataset": "wikitext-103"},
        choices={"dataset": (tuple(VOCAB), None)},
    )
    c = common.trainer_config()
    c.task = "language.lm"  # language/tasks.py
    c.preset = args.preset
    d = corpora.data_config()
    d.dataset = args.dataset
    d.source = args.source
    words = args.source == "official"
    d.vocab_size = VOCAB[args.dataset] if words else 256  # the stand-in is bytes
    d.length = 3072  # [ssa] input length 3072
    d.eval_stride = 1024  # [ssa] sliding evaluation, overlap 2048
    d.eval_tokens = 0  # evaluate on the whole valid / test split
    c.data = common.data_fields(d)
    c.model = _model(args.dataset, words)
    c.attention = common.attention_config("softmax", dropout_rate=0.1)  # [fairseq] 0.1
    c.seed = 1  # fairseq's default seed
    c.batch_size = 64  # [ssa] batch 64 (196,608 tokens per step)
    c.eval_batch_size = 16
    c.total_steps = 64_000  # [ssa] 64,000 steps
    c.eval_every = 2_000
    c.log_every = 100
    c.best_metric, c.best_mode = "perplexity", "min"  # [ssa] dev/test perplexity
    unit = "token" if words else "byte"
    c.evals.lm = ml_collections.ConfigDict({"type": "language_model", "unit": unit})
    c.optimizer.lr = 1e-3  # [ssa] Adam, max lr 1e-3
    c.optimizer.b1, c.optimizer.b2 = 0.9, 0.98  # fairseq's LM default (not stated in [ssa])
    c.optimizer.weight_decay = 0.0
    c.schedule.name = "warmup_cosine"
    c.schedule.warmup_steps = 16_000  # [ssa] 16,000 linear warm-up, then cosine (48,000)
    c.schedule.end_factor = 0.0  # [ssa] does not state the final lr: cosine to 0
    if args.attn:
        common.swap_attention(c, args.attn)
    lm.ssa_attention(
        c,
        args,
        sigma_first=0.20,  # [ssa] WikiText-103 sigma 0.20 N in the first layer ...
        sigma_last=0.35,  # ... rising linearly to 0.35 N in the last
        dropout_rate=0.1,
    )
    common.scale(c, PRESETS)
    if c.preset != "paper":
        c.model.dropout = c.model.activation_dropout = c.model.adaptive_dropout = 0.0
    lm.finish(c, args, unit)
    return c


def _model(dataset: str, words: bool) -> ml_collections.ConfigDict:
    m = ml_collections.ConfigDict()
    m.num_layers = 16  # [ssa] 16 layers
    m.dim = 1024  # [fairseq] decoder_embed_dim 1024
    m.qkv_dim = 1024
    m.num_heads = 8  # [fairseq] 8 heads
    m.mlp_dim = 4096  # [fairseq] FFN 4096
    m.dropout = 0.3  # [fairseq] dropout 0.3
    m.activation_dropout = 0.1  # [fairseq] activation dropout 0.1
    m.positions = "alibi"  # [ssa] ALiBi relative positions
    m.gelu = "erf"  # [ssa] ReLU -> GELU (fairseq's gelu is the exact one)
    m.final_norm = False  # [fairseq] no_decoder_final_norm (pre-LN)
    m.scale_embedding = True  # fairseq's embed_scale sqrt(dim)
    # [fairseq] adaptive input + tied adaptive softmax (weights and projections), factor 4,
    # adaptive softmax dropout 0.2; the byte stand-in: a plain embedding and an untied head
    m.input = "adaptive" if words else "embedding"
    m.output = "adaptive" if words else "untied"
    m.adaptive_cutoffs = CUTOFFS[dataset]
    m.adaptive_factor = 4
    m.adaptive_dropout = 0.2
    m.tie_adaptive_weights = words
    m.tie_adaptive_proj = words
    m.attention_layers = ()  # every block uses config.attention (ssa=S12-*: the last 12)
    m.dtype = "auto"
    m.ensemble_passes = 0
    m.ensemble_seed = 0
    return m
