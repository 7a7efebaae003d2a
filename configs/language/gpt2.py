"""GFSA's GPT-2 fine-tuning (GFSA Sec. 5.2, App. L; Tables 2, 11, 24, 30, 37): GPT-2 small
(117M) fine-tuned with softmax or GFSA attention on PTB, WikiText-2 or WikiText-103; the `cpu`
and `smoke` presets train a small GPT-2-shaped model from scratch on the offline byte stand-in.

Run (a Hugging Face `gpt2` folder: config.json, model.safetensors, vocab.json, merges.txt):
    python -m scripts.train \
        --config configs/language/gpt2.py:dataset=ptb,attn=gfsa,source=official,checkpoint=/m/gpt2 \
        --config.data.dir=/data/ptb --workdir runs/gpt2-ptb-gfsa
    python -m scripts.train --config configs/language/gpt2.py:preset=cpu,attn=gfsa \
        --workdir runs/gpt2

Config argument (comma-separated `key=value`):
    preset=paper|cpu|smoke      scaling of the recipe (default paper)
    source=standin|official     the Python-documentation bytes offline (vocabulary
                                256, a model from scratch) or the dataset's files under
                                `--config.data.dir`, GPT-2 BPE-encoded with the checkpoint
                                folder's vocab.json / merges.txt (`config.data.bpe_dir`)
                                (default: official at preset=paper, standin at cpu and smoke)
    dataset=ptb|wikitext-2|wikitext-103
    checkpoint=auto|none|<dir>  `config.model.checkpoint`: the Hugging Face GPT-2 folder
                                (config.json + model.safetensors) to fine-tune, loaded by
                                `language.gpt2.load_hf_gpt2`; also the BPE folder. auto
                                (default): with source=official the `gpt2` folder under the
                                data root ($ATTNBENCH_DATA or ~/.cache/attnbench, where the
                                datasets' default folders are), with the stand-in none; none:
                                GPT-2 small (or the preset's size) from scratch
    attn=softmax|gfsa|...       the mechanism; GFSA's w_K starts at 0, so the loaded model is
                                the checkpoint's at step 0
    order=K                     GFSA's K (default 0: the paper's K for the dataset, below)
    even=1                      GFSA_even (Table 37): GFSA in the even-numbered layers only

Sources, cited below: [gfsa] GFSA (arXiv:2312.04234) Sec. 5.2, App. L and Table 11, and the
authors' GPT-2 scripts (GitHub jeongwhanchoi/GFSA, `NLP/`: `run_clm_no_trainer.py` and the
scripts that run it, which set K per dataset, weight decay 0, no warm-up and seed 2023); [hf]
Hugging Face `run_clm.py`, which the authors' code runs (AdamW defaults, no warm-up, blocks of
1,024 tokens).
"""

from __future__ import annotations

import math

import ml_collections

from attnbench import config as config_lib
from attnbench.data import cache
from configs import common
from language import gpt2
from language.data import corpora

DATASETS = ("ptb", "wikitext-2", "wikitext-103")
# [gfsa] K per dataset (the authors' scripts; PTB 7/8/9 tie in Table 11, the script uses 7)
ORDER = {"ptb": 7, "wikitext-2": 9, "wikitext-103": 3}
# [gfsa] epochs, following Random-LTD (Yao et al.): PTB 15, WikiText-2 10, WikiText-103 4
EPOCHS = {"ptb": 15, "wikitext-2": 10, "wikitext-103": 4}
# Training blocks of 1,024 GPT-2 BPE tokens per epoch ([hf] run_clm concatenates the texts and
# drops the remainder). WikiText-2 (raw): 2,318 as run_clm logs it [recalled, not re-counted];
# PTB and WikiText-103 are estimates (~1.1M and ~120M BPE tokens) [estimate]. They only give
# the config's total_steps / eval_every before the data is read: a run trains `config.epochs`
# epochs of the training windows it finds (attnbench.train.with_epochs; the summary's `epochs`).
TRAIN_BLOCKS = {"ptb": 1_050, "wikitext-2": 2_318, "wikitext-103": 117_000}
BATCH = 4  # [gfsa] batch size 4

PRESETS = {
    # Minutes on 2 CPU cores on the Python-documentation bytes, a GPT-2-shaped model from
    # scratch: 4 layers of width 128 (4 heads, FFN 512) instead of 12 x 768; windows of 128
    # bytes (evaluated in non-overlapping windows, on the first 50,000 bytes of valid / test);
    # 800 steps at batch 16, 10% warm-up, peak lr 2e-3 (from scratch, not 5e-5); no dropout.
    "cpu": {
        "data": dict(length=128, eval_stride=128, eval_tokens=50_000),
        "model": dict(layers=4, dim=128, heads=4, mlp_dim=512),
        "run": dict(steps=800, eval_every=200, lr_peak=2e-3),
        "batch": (16, 32),
    },
    "smoke": {
        **common.SMOKE,
        "data": dict(length=8, eval_stride=8, eval_tokens=256),
        "batch": (4, 4),
        "log_every": 2,
    },
}


def steps(dataset: str) -> int:
    """Optimizer steps of the paper's run: epochs x ceil(training blocks / batch)."""
    return EPOCHS[dataset] * math.ceil(TRAIN_BLOCKS[dataset] / BATCH)


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    args = common.parse(
        arg,
        extra={
            **common.DATA_SOURCE,
            "dataset": "ptb",
            "checkpoint": "auto",
            "order": 0,
            "even": 0,
        },
        choices={
            "source": (("standin", "official"), "data"),
            "dataset": (DATASETS, None),
        },
    )
    if args.order < 0 or (args.order and args.attn != "gfsa"):
        raise config_lib.ConfigError(
            f"order={args.order}: GFSA's K (>= 2), with attn=gfsa; 0 = the paper's K"
        )
    if args.even and args.attn != "gfsa":
        raise config_lib.ConfigError("even=1 is GFSA_even: give attn=gfsa")
    checkpoint = args.checkpoint
    if checkpoint == "auto":
        official = args.source == "official"
        checkpoint = str(cache.data_root() / "gpt2") if official else ""
    elif checkpoint == "none":
        checkpoint = ""
    c = common.trainer_config()
    c.task = "language.lm"  # language/tasks.py
    c.preset = args.preset
    d = corpora.data_config()
    d.dataset = args.dataset
    d.source = args.source
    d.bpe_dir = checkpoint if args.source == "official" else ""
    d.vocab_size = gpt2.VOCAB_SIZE if args.source == "official" else 256  # stand-in: bytes
    d.length = 1024  # [hf] block_size 1024 (GPT-2's n_positions)
    d.eval_stride = 1024  # [hf] evaluation on the same non-overlapping blocks
    d.eval_tokens = 0
    c.data = common.data_fields(d)
    c.model = gpt2.model_config()  # GPT-2 small, dropout 0.1 [gfsa]
    c.model.checkpoint = checkpoint
    c.model.ensemble_passes = 0
    c.model.ensemble_seed = 0
    c.attention = common.attention_config("softmax", dropout_rate=0.1)  # GPT-2 attn_pdrop
    c.seed = 2023  # [gfsa] seed 2023
    c.batch_size = BATCH
    c.eval_batch_size = 8
    c.epochs = EPOCHS[args.dataset]  # [gfsa] epochs; the steps follow from the data
    c.eval_every_epochs = 1  # [gfsa] validation after every epoch
    c.total_steps = steps(args.dataset)  # the estimate (TRAIN_BLOCKS), replaced by the run's
    c.eval_every = math.ceil(TRAIN_BLOCKS[args.dataset] / BATCH)
    c.log_every = 100
    # [gfsa] validation perplexity of the last epoch
    c.best_metric, c.best_mode = "perplexity", "min"
    unit = "token" if args.source == "official" else "byte"
    c.evals.lm = ml_collections.ConfigDict({"type": "language_model", "unit": unit})
    c.optimizer.name = "adamw"  # [gfsa] AdamW, weight decay 0; [hf] betas, eps defaults
    c.optimizer.lr = 5e-5  # [gfsa] lr 5e-5
    c.optimizer.weight_decay = 0.0
    c.schedule.name = "constant*linear_warmup*linear_decay"  # [gfsa] linear decay
    c.schedule.warmup_steps = 0  # [gfsa] no warm-up
    if args.attn and args.attn != "softmax":
        common.swap_attention(c, args.attn)
    if "order" in c.attention and c.attention.name.startswith("gfsa"):
        c.attention.order = args.order or ORDER[args.dataset]  # [gfsa] K
        c.attention.even_layers_only = bool(args.even)  # [gfsa] Table 37's GFSA_even
    common.scale(c, PRESETS)
    if c.preset != "paper":
        c.model.dropout = 0.0
    return c
