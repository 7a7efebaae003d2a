"""LRA Retrieval: does one ACL Anthology Network paper cite the other? (Radev et al. 2013)
Two byte-level documents per example, a weight-shared encoder, LRA's NLI-style combination.

Run:
    python -m scripts.train --config configs/lra/retrieval.py:preset=cpu --workdir runs/retr-cpu
    attnbench-data fetch aan              # the LRA release's tsv_data/ into the data root
    python -m scripts.train --config configs/lra/retrieval.py --workdir runs/retrieval
    # or a copy of your own: --config.data.dir=/path/to/lra_release/tsv_data

Config argument (comma-separated `key=value`):
    preset=paper|cpu|smoke    scaling of the recipe (default paper)
    model=transformer|samsa|sliceformer|gfsa   the recipe (configs/lra/base.py)
    attn=<mechanism>          any name in `attention.names()`; default: the recipe's
    k=128, mode=hard|soft     SAMSA's sampled tokens per head and sampler (model=samsa)
    length=N                  bytes per document, replacing the preset's (e.g. for `bench train`)

Data (`config.data.source`): `official` reads new_aan_pairs.{train,eval,test}.tsv from
`config.data.dir`, or when it is empty from where `attnbench-data fetch aan` puts them;
`standin` builds citation-like pairs from the cross-references of the Python documentation
(Debian `python3.11-doc`), labelled as a stand-in in every summary.
"""

from __future__ import annotations

from configs import common
from configs.lra import base
from lra.data import retrieval

TRAIN_EXAMPLES = 147_086  # AAN train pairs (LRA), for epoch-based recipes

# ---- presets: scalings of the recipe in get_config (common.finish -> common.scale) ---------------
PRESETS = {
    # About 4 minutes on 2 CPU cores: the offline stand-in truncated to 256 bytes per
    # document, a 2-layer width-64 model, 800 steps at batch 16 (32 documents) with 10%
    # warm-up (peak lr 2e-3), no attention dropout.
    "cpu": {
        "data": dict(source="standin", max_length=256),
        "batch": (16, 100),
        "model": dict(layers=2, dim=64, heads=4, mlp_dim=128),
        "run": dict(steps=800, eval_every=200, lr_peak=2e-3),
    },
    "smoke": {**common.SMOKE, "data": dict(source="standin", max_length=64), "batch": (16, 32)},
}


def get_config(arg: str | None = None):
    args = base.parse(arg)
    c = base.new("lra.retrieval", retrieval.data_config(), args.preset)
    c.model.interaction = "NLI"  # [u, v, u*v, u-v] -> MLP (LRA classifier_head_dual, NLI)
    if args.model in ("transformer", "sliceformer", "gfsa"):
        # LRA matching/configs/base_match_config.py. Sliceformer's fork keeps it (seed 3).
        # GFSA App. U gives no Retrieval run; its Efficient Attention + GFSA uses this recipe.
        base.transformer(
            c,
            attn=base.RECIPE_ATTENTION[args.model],
            steps=5000,  # LRA num_train_steps
            batch=32,  # LRA batch_size
            lr=0.05,  # LRA learning_rate; warmup 8000 > 5000 steps: the lr only warms up
            schedule="constant*linear_warmup*rsqrt_decay",  # LRA factors
            warmup=8000,  # LRA warmup (longer than the run, faithfully)
            weight_decay=0.1,  # LRA weight_decay
            layers=4,  # LRA num_layers
            dim=128,  # LRA emb_dim
            qkv_dim=128,  # LRA qkv_dim
            heads=4,  # LRA num_heads
            mlp_dim=512,  # LRA mlp_dim
            dropout=0.1,  # LRA dropout_rate
            attn_dropout=0.1,  # LRA attention_dropout_rate
        )
        if args.model == "sliceformer":
            base.sliceformer_fork(c)
    else:  # SAMSA Tables 7-8 (row LRA-Retrieval in base.SAMSA_TABLE8)
        base.samsa(c, train_examples=TRAIN_EXAMPLES, k=args.k, mode=args.mode)
    c.data.source = "official"

    return base.finish(c, args, PRESETS)
