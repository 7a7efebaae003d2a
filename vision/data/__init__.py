"""Image datasets: official readers, the offline stand-in, and the train / eval preprocessing.

    d = data.data_config("cifar10")              # config.data of a vision recipe
    splits, description = data.load(d)           # {"train", "val", "test"} sources
    train_fn, eval_fn = data.transforms_for(d)   # per-example preprocessing

Sources (`config.data.source`), every one yielding `{"image": uint8 [H, W, 3], "label": int32}`:
  official  the release files under `config.data.dir`: the CIFAR-10 / CIFAR-100 pickles
            (`cifar`), Tiny-ImageNet's release folder and ImageNet-style class folders
            (`folders`: imagenet, places365, inaturalist, folder);
  standin   Fashion-MNIST at 32x32 in 3 channels, 10 classes whatever the recipe's dataset,
            labelled as a stand-in everywhere (`standin`);
  tfds      a TFDS dataset from `config.data.dir` (`tfds`; optional, the `tfds` extra).

Modules:
  loader      the dataset-independent API this package exports: `data_config`, `load` (splits,
              held-out validation, subsets), `parse_rand_augment`, `transforms_for`
  views       random-access views of a split: `Mapped`, the seeded subsets
  cifar, folders, standin, tfds  the readers, one per source
  transforms  per-example image augmentation (torchvision / timm / DeiT rules)
  synthetic   a generated ImageNet-style JPEG folder (`python -m vision.data.synthetic DIR`)
"""

from vision.data.folders import read_class_folders, read_tiny_imagenet
from vision.data.loader import (
    AUGMENTS,
    DATASETS,
    IMAGENET_MEAN,
    IMAGENET_STD,
    SOURCES,
    data_config,
    load,
    parse_rand_augment,
    transforms_for,
)
from vision.data.views import Mapped

__all__ = [
    "DATASETS",
    "SOURCES",
    "AUGMENTS",
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "data_config",
    "load",
    "parse_rand_augment",
    "transforms_for",
    "read_tiny_imagenet",
    "read_class_folders",
    "Mapped",
]
