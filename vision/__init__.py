"""Image classification with vision transformers: ViT / DeiT, CaiT and Swin backbones taking
any registered attention mechanism, image readers (CIFAR pickles, Tiny-ImageNet, ImageNet-style
class folders, the Fashion-MNIST stand-in), augmentation transforms, and the `vision.*` tasks."""
