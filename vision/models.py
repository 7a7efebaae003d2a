"""Vision transformers for image classification: patches -> tokens -> any backbone -> head.

    model = models.ImageClassifier(num_classes=10, image_size=32, channels=3,
                                   model_cfg=config.model, attention_cfg=config.attention,
                                   rngs=nnx.Rngs(0))
    logits = model(images, train=True, key=key)     # images float32 [B, H, W, C]

One model for the papers' image tables; `config.model.encoder` names the backbone
(`attnbench.nn.backbones`):
  transformer  ViT / DeiT (Dosovitskiy et al. 2021; Touvron et al. 2021): non-overlapping
               `patch_size` patches embedded by one linear map (a strided convolution; the same
               parameters as vit-pytorch's rearrange + Linear), a class token (`pool="cls"`) or
               global average pooling (`pool="mean"`), learned positions (`positions="learned"`,
               one per token, class token included), the shared pre-LN encoder with any
               registered mechanism, its final LayerNorm and a linear head.
  transformer_contranorm
               the same ViT / DeiT with ContraNorm (Guo et al., ICLR 2023) around each of its
               LayerNorms, as Guo et al.'s ViT (`attnbench.nn.contranorm`; model fields
               `contranorm_scale`, `contranorm_temperature`, `contranorm_dual`); the same
               parameters (ContraNorm has none of its own).
  swin         Swin (Liu et al. 2021, `vision.backbones.swin`): the patch embedding is
               followed by a LayerNorm and no class token or absolute positions; the
               hierarchical encoder ends in a LayerNorm, then global average pooling and the
               linear head.
  cait         CaiT (Touvron et al. 2021b, `vision.backbones.cait`): learned positions on the
               patches, self-attention blocks with LayerScale, then the encoder's own class
               token through class-attention blocks; a final LayerNorm; the head reads the
               class token (`pool="cls"`).

Graph-structured mechanisms see the grid of patches: GRF masks over the 2-D grid graph of the
patches (`graph="grid"`, the class token linked to every patch; `configs/vision/common.py` sets
the grid), as the GRF paper's ViT experiments.

FLOPs: `count_flops(tally)` (`attnbench.nn.flops.count`) adds the patch embedding, the backbone's
registered formula on the token count, pooling and the head.
"""

from __future__ import annotations

import jax.numpy as jnp
import ml_collections
from flax import nnx

from attnbench.nn import backbones, layers
from attnbench.nn import contranorm as _contranorm  # noqa: F401  (registers its backbone)
from vision.backbones import cait, swin  # noqa: F401  (register the "cait" and "swin" backbones)

__all__ = ["grid_shape", "num_tokens", "ImageClassifier"]

# Backbones that take their own grid and pool by global average (no class token, no positions).
_HIERARCHICAL = ("swin",)
# Backbones that add their own positions and class token (the classifier adds neither).
_OWN_CLASS_TOKEN = ("cait",)


def grid_shape(image_size: int, patch_size: int) -> tuple[int, int]:
    """Patches per side of a square `image_size` image; the image must tile exactly."""
    if image_size % patch_size:
        raise ValueError(
            f"image size {image_size} is not a multiple of the patch size {patch_size}; "
            "set config.data.image_size or config.model.patch_size so that it is"
        )
    side = image_size // patch_size
    return side, side


def num_tokens(model_cfg, image_size: int) -> int:
    """Tokens the backbone's self-attention sees: the patches, plus the class token when
    pooling by it (CaiT's class token joins only its class-attention blocks)."""
    gh, gw = grid_shape(image_size, model_cfg.patch_size)
    extra = model_cfg.pool == "cls" and model_cfg.encoder not in _HIERARCHICAL + _OWN_CLASS_TOKEN
    return gh * gw + int(extra)


class ImageClassifier(nnx.Module):
    """images `[B, H, W, C]` float32 -> logits `[B, num_classes]` float32.

    Precision (`model_cfg.dtype`, see `attnbench.nn.layers`): the patch embedding, class token and
    positions in float32, the backbone in the compute dtype, pooling and head in float32.
    """

    def __init__(
        self,
        *,
        num_classes: int,
        image_size: int,
        channels: int,
        model_cfg,
        attention_cfg,
        rngs: nnx.Rngs,
    ):
        m = model_cfg
        self.backbone = m.encoder
        self.image_size = image_size
        self.patch_size = p = m.patch_size
        self.grid = grid_shape(image_size, p)
        self.hierarchical = m.encoder in _HIERARCHICAL
        self.pool_mode = "mean" if self.hierarchical else m.pool
        if self.pool_mode not in ("cls", "mean"):
            raise ValueError(f"unknown model.pool {m.pool!r} for images; known: cls, mean")
        self.patch_embed = nnx.Conv(channels, m.dim, (p, p), strides=(p, p), rngs=rngs)
        if self.hierarchical:
            # Swin: LayerNorm on the patch embeddings (the official `patch_norm=True`), with
            # PyTorch's epsilon 1e-5 as every LayerNorm of the official Swin and timm's.
            self.patch_norm = nnx.LayerNorm(m.dim, epsilon=1e-5, rngs=rngs)
            cfg = ml_collections.ConfigDict({**m.to_dict(), "grid": self.grid})
        else:
            cfg = m
        if self.pool_mode == "cls" and not self.hierarchical and m.encoder not in _OWN_CLASS_TOKEN:
            self.cls = nnx.Param(nnx.initializers.normal(0.02)(rngs.params(), (1, 1, m.dim)))
        self.length = self.grid[0] * self.grid[1] + int(hasattr(self, "cls"))
        self.encoder = backbones.build(
            m.encoder, model_cfg=cfg, attention_cfg=attention_cfg, max_len=self.length, rngs=rngs
        )
        width = getattr(self.encoder, "out_dim", m.dim)
        self.head = nnx.Linear(width, num_classes, rngs=rngs)

    def features(self, images, *, train: bool = False, key=None, **inputs):
        """images `[B, H, W, C]` -> pooled features `[B, width]` float32; `inputs`: per-call
        attention inputs for the backbone."""
        if images.shape[1:3] != (self.image_size, self.image_size):
            raise ValueError(
                f"images are {images.shape[1]}x{images.shape[2]}, the model was built for "
                f"{self.image_size}x{self.image_size}"
            )
        x = self.patch_embed(images.astype(jnp.float32))  # [B, gh, gw, dim]
        b = x.shape[0]
        x = x.reshape(b, -1, x.shape[-1])  # row-major patches
        if self.hierarchical:
            x = self.patch_norm(x)
        if hasattr(self, "cls"):
            cls = jnp.broadcast_to(self.cls[...], (b, 1, x.shape[-1])).astype(x.dtype)
            x = jnp.concatenate([cls, x], axis=1)
        x = self.encoder(x, train=train, key=key, **inputs)
        return layers.pool(x, None, self.pool_mode)

    def __call__(self, images, *, train: bool = False, key=None, **inputs):
        features = self.features(images, train=train, key=key, **inputs)
        return self.head(features).astype(jnp.float32)

    def count_flops(self, tally) -> None:
        """Forward FLOPs of one image into `tally` (`attnbench.nn.flops.Tally`)."""
        patches = self.grid[0] * self.grid[1]
        c_in = self.patch_embed.in_features
        dim = self.patch_embed.out_features
        tally.claim("embedding", self.patch_embed)
        tally.add("embedding", 2 * patches * self.patch_size**2 * c_in * dim, patches * dim)
        if self.hierarchical:
            tally.claim("norms/other", self.patch_norm)
        if hasattr(self, "cls"):
            tally.claim("embedding", self.cls)
        with tally.per_sequence(1, self.length):
            backbones.count_flops(self.backbone, self.encoder, tally, n=self.length, masked=False)
        width = self.head.in_features
        out_tokens = getattr(self.encoder, "out_tokens", self.length)
        if self.pool_mode == "mean":
            tally.add("norms/other", elementwise=out_tokens * width + width)
        tally.linear("head", self.head, 1)
