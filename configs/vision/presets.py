"""The scaled presets of every vision recipe (`configs/common.py: scale`, plus the image keys
`patch` and `image_size` that `configs/vision/common.py: finish` applies).

Both run on the offline stand-in (Fashion-MNIST at 32 x 32, 3 channels), whatever the recipe's
dataset and resolution: the recipe's structure (backbone, pooling, positions, mechanism,
augmentation family, optimizer) at a size that trains on 2 CPU cores.
"""

from __future__ import annotations

from configs import common

SMALL_IMAGES = {
    # About 11 minutes on 2 cores (softmax; 1.6 steps/s measured): a ViT of 4 blocks, 128 wide,
    # 4 heads, on 8 x 8 patches of 4 px (+ the class token), 1,000 steps at batch 64 (1.1 epochs
    # of the 58,000 training images left after holding out 2,000 for validation); test on a
    # seeded 5,000 of the 10,000 test images.
    "cpu": {
        "data": dict(source="standin", val_from_train=2_000, num_val=0, num_test=5_000),
        "image_size": 32,
        "patch": 4,
        "model": dict(layers=4, dim=128, heads=4, mlp_dim=256),
        "run": dict(steps=1_000, eval_every=250, lr_peak=1e-3),
        "batch": (64, 500),
        # Swin recipes: 8 x 8 patches of 4 px, windows of 4 (shifted by 2 in the first stage),
        # four stages 32 -> 256 wide, two blocks each.
        "swin": dict(patch=4, dim=32, depths=(2, 2, 2, 2), heads=(1, 2, 4, 8), window=4),
    },
    # Seconds: 16 tokens of 8 px, 256 training and 64 test images.
    "smoke": {
        **common.SMOKE,
        "data": dict(source="standin", num_train=256, num_val=64, num_test=64),
        "image_size": 32,
        "patch": 8,
        "batch": (16, 32),
        # Swin: two stages, one shifted pair of blocks in the first (8 x 8 patches, windows of 4)
        "swin": dict(patch=4, dim=16, depths=(2, 1), heads=(1, 2), window=4),
    },
}
