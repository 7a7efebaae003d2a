"""LRA Image: grayscale CIFAR-10 (Krizhevsky 2009) as a sequence of 1024 pixel tokens.

Run:
    python -m scripts.train --config configs/lra/image.py:preset=cpu --workdir runs/image-cpu
    attnbench-data fetch cifar10          # CIFAR-10 into the data root, where the config looks
    python -m scripts.train --config configs/lra/image.py:model=sliceformer \
        --workdir runs/image-sliceformer
    # or a copy of your own: --config.data.dir=/path/to/cifar-10-batches-py

Config argument (comma-separated `key=value`):
    preset=paper|cpu|smoke    scaling of the recipe (default paper)
    model=transformer|samsa|sliceformer|gfsa|s4d|mega|luna
                              the recipe (configs/lra/base.py)
    attn=<mechanism>          any name in `attention.names()`; default: the recipe's
    k=128, mode=hard|soft     SAMSA's sampled tokens per head and sampler (model=samsa)

Data (`config.data.source`): `official` reads the CIFAR-10 python batches from
`config.data.dir`, or when it is empty from where `attnbench-data fetch cifar10` puts them;
`standin` reads Fashion-MNIST (Debian `dataset-fashion-mnist`) padded to 32x32, labelled as a
stand-in in every summary. Pixel 0 is NOT padding in any recipe here
(`config.data.zero_is_padding=True` restores LRA's `inputs > 0` mask quirk).
"""

from __future__ import annotations

from configs import common
from configs.lra import base
from lra.data import image

TRAIN_EXAMPLES = 45_000  # LRA's train[:90%] of CIFAR-10, for epoch-based recipes

# ---- presets: scalings of the recipe in get_config (common.finish -> common.scale) ---------------
PRESETS = {
    # About 4 minutes on 2 CPU cores, where the [B, H, 1025, 1025] attention of a 2-layer,
    # 4-head model at batch 32 costs ~4 s per step: Fashion-MNIST (all 1024 pixels), ONE layer
    # (the LRA Image recipe's depth) of width 64 with 2 heads, 500 steps at batch 16 with
    # 10% warm-up (peak lr 2e-3), no attention dropout.
    "cpu": {
        # the first 1k/2k validation/test images (evaluation is costly)
        "data": dict(source="standin", num_val=1_000, num_test=2_000),
        "model": dict(layers=1, dim=64, heads=2, mlp_dim=128),
        "batch": (16, 100),
        "run": dict(steps=500, eval_every=250, lr_peak=2e-3),
    },
    # the first 256 / 64 / 64 images: evaluating all 16k stand-in images of 1,024 tokens takes
    # minutes, not the seconds a smoke run is for
    "smoke": {
        **common.SMOKE,
        "data": dict(source="standin", num_train=256, num_val=64, num_test=64),
        "batch": (8, 16),
    },
}


def get_config(arg: str | None = None):
    args = base.parse(arg)
    c = base.new("lra.image", image.data_config(), args.preset)
    if args.model in ("transformer", "gfsa"):
        # LRA image/configs/cifar10/{base_cifar10_config,transformer_base}.py. GFSA App. U's
        # Image runs give no sizes; Efficient Attention + GFSA runs in the same recipe.
        base.transformer(
            c,
            attn="softmax" if args.model == "transformer" else "gfsa_linear",
            steps=35_000,  # LRA 175 steps/epoch x 200 epochs
            batch=256,  # LRA batch_size
            lr=5e-4,  # LRA learning_rate
            schedule="constant*linear_warmup*cosine_decay",  # LRA factors
            warmup=175,  # LRA: one epoch
            steps_per_cycle=35_000,  # LRA steps_per_cycle
            weight_decay=0.0,  # LRA weight_decay
            layers=1,  # LRA transformer_base num_layers
            dim=128,  # emb_dim
            qkv_dim=64,  # qkv_dim
            heads=8,  # num_heads
            mlp_dim=128,  # mlp_dim
            dropout=0.3,  # dropout_rate
            attn_dropout=0.2,  # attention_dropout_rate
            positions="learned",  # learn_pos_emb (normal 0.02)
            eval_every=175,  # LRA evaluates once per epoch
        )
    elif args.model == "sliceformer":
        # The Sliceformer authors' LRA fork: DaShenZi721/sliceformer
        # LRA/lra_benchmarks/image/configs/cifar10/sliceformer_base.py.
        base.transformer(
            c,
            attn="sliceformer",
            steps=46_800,  # 234 steps/epoch x 200 epochs
            batch=192,  # fork batch_size
            lr=5e-3,  # fork learning_rate
            schedule="constant*linear_warmup*cosine_decay",  # LRA factors
            # Warm-up and cycle come from the base config's batch 256, not 192 (faithful: the
            # cosine restarts at step 35,175).
            warmup=175,
            steps_per_cycle=35_000,
            weight_decay=0.0,
            layers=6,
            dim=96,
            qkv_dim=48,
            heads=8,
            mlp_dim=128,  # the config file (its Hyperparameters.tex says 96)
            dropout=0.2,
            attn_dropout=0.1,  # unused by sorting
            positions="learned",
            eval_every=234,
        )
        base.sliceformer_fork(c, seed=2)  # the fork's CIFAR random_seed
    elif args.model == "s4d":
        # state-spaces/s4 configs/experiment/lra/s4-cifar.yaml (commit 62a14bb); mean pooling:
        # configs/pipeline/cifar.yaml decoder.mode pool
        base.s4d(
            c,
            layers=6,  # model.n_layers
            dim=512,  # model.d_model
            state=64,  # model.layer.d_state
            dropout=0.1,  # model.dropout
            tie_dropout=True,  # model.tie_dropout
            prenorm=False,  # model.prenorm
            n_ssm=1,  # model.layer.n_ssm
            lr=0.01,  # optimizer.lr (SSM lr 0.001; not expressible, base.s4d)
            weight_decay=0.05,  # optimizer.weight_decay
            batch=50,  # loader.batch_size
            steps=180_000,  # scheduler.num_training_steps (200 epochs)
            warmup=18_000,  # scheduler.num_warmup_steps
            train_examples=TRAIN_EXAMPLES,
        )
    elif args.model == "mega":
        # facebookresearch/mega examples/mega/README.lra.md "# Image (CIFAR-10)" command [R] and
        # fairseq/models/lra/model.py `mega_lra_cifar10` [M]
        base.mega(
            c,
            layers=8,  # [R] --encoder-layers 8
            dim=160,  # [M] encoder_embed_dim
            z_dim=96,  # [M] z_dim
            hidden_dim=320,  # [M] encoder_hidden_dim (= classifier_out_dim)
            attention_fn="laplace",  # [R] --attention-activation-fn
            norm="batchnorm",  # [R] --norm-type
            prenorm=True,  # [R] --encoder-normalize-before
            chunk=1024,  # [M] chunk_size (the whole image: full attention)
            dropout=0.0,  # [R] --dropout
            lr=1e-2,  # [R] --lr
            weight_decay=0.02,  # [R] --weight-decay
            batch=50,  # [R] --batch-size 50 --update-freq 1
            steps=180_000,  # [R] --max-update / --total-num-update
            warmup=9000,  # [R] --warmup-updates
            train_examples=TRAIN_EXAMPLES,
        )
    elif args.model == "luna":
        # XuezheMax/fairseq-apollo examples/luna/README.lra.md "# cifar10" command [R] and
        # fairseq/models/lra/model.py `luna_lra_cifar10` -> transformer_lra_cifar10 [M]
        base.luna(
            c,
            layers=1,  # [M] encoder_layers
            dim=64,  # [M] encoder_embed_dim
            mlp_dim=128,  # [M] encoder_ffn_embed_dim (= classifier_out_dim 128)
            heads=8,  # [M] encoder_attention_heads
            dropout=0.3,  # [R] --dropout
            attn_dropout=0.1,  # [R] --attention-dropout
            lr=5e-3,  # [R] --lr
            weight_decay=0.0,  # [R] --weight-decay
            batch=256,  # [R] --batch-size
            steps=35_000,  # [R] --max-update
            warmup=4000,  # [R] --warmup-updates
            init="xavier",  # [M] apply_bert_init False
            pool="cls",  # [M] no sen_rep_type set: the CLS token
            train_examples=TRAIN_EXAMPLES,
        )
    else:  # SAMSA Tables 7-8 (row LRA-Image in base.SAMSA_TABLE8)
        base.samsa(c, train_examples=TRAIN_EXAMPLES, k=args.k, mode=args.mode)
    c.data.source = "official"

    return base.finish(c, args, PRESETS)
