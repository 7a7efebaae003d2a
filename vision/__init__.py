"""Image classification with vision transformers: ViT / DeiT, CaiT and Swin backbones taking
any registered attention mechanism, image readers (CIFAR pickles, Tiny-ImageNet, ImageNet-style
class folders, the Fashion-MNIST stand-in), augmentation transforms, and the `vision.*` tasks.

Layout:
  tasks.py      the registered tasks, `config.task = "vision.<dataset>"`
  models.py     `ImageClassifier`: patch embedding, any registered backbone, pooling, head
  mixup.py      Mixup / CutMix and label smoothing on a batch, inside the training loss
  backbones/    the backbones registered with `attnbench.nn.backbones`: `swin`, `cait`
  data/         the data API (`data_config`, `load`, `transforms_for`; `loader.py`), the
                readers by source (`cifar.py`, `folders.py`, `standin.py`, `tfds.py`), the
                split views (`views.py`), per-example augmentation (`transforms.py`) and a
                generated JPEG folder (`synthetic.py`)
"""
