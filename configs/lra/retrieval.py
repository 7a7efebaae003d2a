"""LRA Retrieval: does one ACL Anthology Network paper cite the other? (Radev et al. 2013)
Two byte-level documents per example, a weight-shared encoder, LRA's NLI-style combination.

Run:
    python -m scripts.train --config configs/lra/retrieval.py:preset=cpu --workdir runs/retr-cpu
    attnbench-data fetch aan              # the LRA release's tsv_data/ into the data root
    python -m scripts.train --config configs/lra/retrieval.py --workdir runs/retrieval
    # or a copy of your own: --config.data.dir=/path/to/lra_release/tsv_data

Config argument (comma-separated `key=value`):
    preset=paper|cpu|smoke    scaling of the recipe (default paper)
    model=transformer|samsa|sliceformer|gfsa|s4d|mega|luna
                              the recipe (configs/lra/base.py)
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
    elif args.model == "s4d":
        # state-spaces/s4 configs/experiment/lra/s4-aan.yaml (commit 62a14bb); S4's retrieval
        # decoder combines the two pooled documents NLI-style (nli=True), as set above
        base.s4d(
            c,
            layers=6,  # model.n_layers
            dim=256,  # model.d_model
            state=4,  # model.layer.d_state
            dropout=0.0,  # model.dropout
            prenorm=True,  # model.prenorm
            n_ssm=1,  # model.layer.n_ssm
            lr=0.01,  # optimizer.lr (SSM A, B: 0.001, dt: null; not expressible, base.s4d)
            weight_decay=0.05,  # optimizer.weight_decay
            batch=64,  # loader.batch_size
            steps=50_000,  # scheduler.num_training_steps (trainer.max_epochs 20)
            warmup=5000,  # scheduler.num_warmup_steps
            train_examples=TRAIN_EXAMPLES,
        )
    elif args.model == "mega":
        # facebookresearch/mega examples/mega/README.lra.md "# Retrieval (AAN)" command [R] and
        # fairseq/models/lra/model.py `mega_lra_aan` [M]
        base.mega(
            c,
            layers=6,  # [R] --encoder-layers 6
            dim=128,  # [M] encoder_embed_dim
            z_dim=64,  # [M] z_dim
            hidden_dim=256,  # [M] encoder_hidden_dim (= classifier_out_dim)
            attention_fn="softmax",  # [R] --attention-activation-fn
            norm="scalenorm",  # [R] --norm-type
            prenorm=False,  # [R] no --encoder-normalize-before
            chunk=-1,  # [M] chunk_size
            dropout=0.1,  # [R] --dropout
            lr=3e-3,  # [R] --lr
            weight_decay=0.04,  # [R] --weight-decay
            # [R] --batch-size 8 --update-freq 8: one batch of 64 here (no gradient accumulation)
            batch=64,
            steps=91_960,  # [R] --max-update / --total-num-update
            warmup=10_000,  # [R] --warmup-updates
            train_examples=TRAIN_EXAMPLES,
        )
        c.model.interaction = "concat"  # [M] classifier_in_dim = 2 * embed: [u, v]
    elif args.model == "luna":
        # XuezheMax/fairseq-apollo examples/luna/README.lra.md "# retrieval" command [R] and
        # fairseq/models/lra/model.py `luna_lra_aan` -> transformer_lra_aan_architecture [M]
        base.luna(
            c,
            layers=4,  # [M] encoder_layers
            dim=128,  # [M] encoder_embed_dim
            mlp_dim=512,  # [M] encoder_ffn_embed_dim (= classifier_out_dim 512)
            heads=4,  # [M] encoder_attention_heads
            dropout=0.1,  # [M] dropout (base_architecture)
            attn_dropout=0.1,  # [M] attention_dropout (base_architecture)
            lr=5e-4,  # [R] --lr
            weight_decay=1e-4,  # [R] --weight-decay
            batch=32,  # [R] --batch-size
            steps=20_000,  # [R] --max-update
            warmup=8000,  # [R] --warmup-updates
            init="xavier",  # [M] apply_bert_init False
            pool="cls",  # [M] no sen_rep_type set: the CLS token
            train_examples=TRAIN_EXAMPLES,
            eval_every=2000,  # [R] --save-interval-updates (fairseq validates at each save)
        )
        c.model.interaction = "concat"  # [M] classifier_in_dim = 2 * embed: [u, v]
    else:  # SAMSA Tables 7-8 (row LRA-Retrieval in base.SAMSA_TABLE8)
        base.samsa(c, train_examples=TRAIN_EXAMPLES, k=args.k, mode=args.mode)
    c.data.source = "official"

    return base.finish(c, args, PRESETS)
