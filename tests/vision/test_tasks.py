"""Every (backbone x mechanism) pair the papers' image tables use trains on the `smoke` preset
through the one trainer, on a tiny Fashion-MNIST stand-in written by the test; the summary says
it is a stand-in and reports top-1 and top-5."""

import json

import numpy as np
import pytest

from attnbench import config as config_lib
from attnbench import train
from attnbench.data.formats import fashion_mnist, idx
from vision.data import synthetic

# (recipe file, config argument): the papers' pairs. Sliceformer Table 5: ViT with softmax and
# with the sorting attention; GFSA Tables 3 / 12: DeiT-S with and without GFSA; GRF Tables 1 /
# 3: ViT with linear attention, GRF-masked, and the dense M_alpha(G) mask.
# Swin: GFSA Table 12's Swin-S with and without GFSA; GRF's ViT-B recipe on its other datasets.
# `make test` trains the ViT / DeiT backbone with every paper mechanism; the other pairs are the
# slow tier (`make test-slow`), ~10-30 s each.
_SLOW = pytest.mark.slow
PAIRS = [
    ("cifar10", "model=vit"),
    ("cifar100", "model=sliceformer"),
    pytest.param("tiny_imagenet", "model=vit", marks=_SLOW),
    pytest.param("imagenet", "model=deit_s", marks=_SLOW),
    ("imagenet", "model=deit_s,attn=gfsa"),
    pytest.param("imagenet", "model=deit_s,attn=linear", marks=_SLOW),
    pytest.param("imagenet", "model=deit_s,attn=grf", marks=_SLOW),  # ~9 s
    pytest.param("imagenet", "model=deit_s,attn=grf_dense", marks=_SLOW),
    pytest.param("imagenet", "model=grf_vit,attn=toeplitz", marks=_SLOW),  # GRF Table 1
    # CaiT (GFSA Tables 3, 12, 14), with and without GFSA on its talking-heads matrix: slow
    # tier; the fast tier checks the whole CaiT + GFSA forward in
    # tests/vision/backbones/test_cait.py.
    pytest.param("imagenet", "model=cait_s24", marks=_SLOW),
    pytest.param("imagenet", "model=cait_s24,attn=gfsa", marks=_SLOW),
    # Swin's smoke model compiles for ~20 s: both Swin pairs are the slow tier; the fast tier
    # trains Swin blocks in tests/vision/backbones/test_swin.py and builds the smoke model in
    # test_models.
    pytest.param("imagenet", "model=swin_s", marks=_SLOW),
    pytest.param("imagenet", "model=swin_s,attn=gfsa", marks=_SLOW),
    # SSA Table 2 / 9: Swin-T, W14 (the smoke preset's doubled window), SSA in stages 1-3, +FT
    pytest.param("imagenet", "model=swin_t,window=14,ssa=S10,ft=1", marks=_SLOW),
    pytest.param("places365", "model=grf_vit", marks=_SLOW),  # GRF Table 1's own ViT-B
    pytest.param("inaturalist", "model=grf_vit,attn=linear", marks=_SLOW),
]
_IDS = ["-".join(p.values if hasattr(p, "values") else p) for p in PAIRS]


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fashion-mnist")
    rng = np.random.default_rng(0)
    for (images_file, labels_file), count in zip(
        fashion_mnist.FILES.values(), (96, 32), strict=True
    ):
        labels = rng.integers(0, 10, count).astype(np.uint8)
        # class-dependent brightness, so that a few steps can learn something
        images = (rng.integers(0, 64, (count, 28, 28)) + 18 * labels[:, None, None]).astype(
            np.uint8
        )
        idx.write(folder / images_file, images)
        idx.write(folder / labels_file, labels)
    return folder


@pytest.mark.parametrize(("dataset", "arg"), PAIRS, ids=_IDS)
def test_smoke_run_trains_and_reports_top1_and_top5(dataset, arg, standin, tmp_path):
    config = config_lib.load(f"vision/{dataset}.py:preset=smoke,{arg}")
    config.unlock()
    config.data.standin_dir = str(standin)
    config.data.num_train, config.data.num_val, config.data.num_test = 64, 32, 32
    config.total_steps, config.eval_every = 4, 4
    summary = train.train_and_evaluate(config, tmp_path)
    assert summary["data"]["source"] == "standin" and "Fashion-MNIST" in summary["data"]["standin"]
    test = summary["metrics"]["test_best"]
    assert 0.0 <= test["accuracy"] <= test["top5_accuracy"] <= 1.0
    assert np.isfinite(test["loss"])
    losses = [
        json.loads(line)["loss"]
        for line in (tmp_path / "metrics.jsonl").read_text().splitlines()
        if json.loads(line)["split"] == "train"
    ]
    assert losses and all(np.isfinite(losses))


def test_imagenet_class_folders_of_jpegs_train_end_to_end(tmp_path):
    """The ImageNet path on a generated JPEG folder: lazy decoding, the DeiT augmentations
    (random resized crop, RandAugment, random erasing, Mixup / CutMix), evaluation resize and
    centre crop, and the class count read from the folders."""
    folder = synthetic.write_folder(tmp_path / "jpegs", classes=3, per_class=6, val_per_class=2)
    config = config_lib.load("vision/imagenet.py:preset=smoke")
    config.unlock()
    config.data.update(source="official", dir=str(folder), num_classes=3)
    config.data.num_train, config.data.num_val, config.data.num_test = 0, 0, 0
    config.batch_size, config.eval_batch_size, config.total_steps, config.eval_every = 6, 4, 3, 3
    summary = train.train_and_evaluate(config, tmp_path / "run")
    assert summary["data"]["source"] == "official"
    assert summary["num_examples"] == {"train": 18, "val": 6, "test": 6}
    assert np.isfinite(summary["metrics"]["test_best"]["loss"])
