"""The vision backbones, registered with `attnbench.nn.backbones` when their module is imported
(`vision.models` imports both):

  swin  Swin Transformer (Liu et al. 2021): shifted-window attention with any mechanism inside
        the windows, relative position bias, patch merging between stages (`swin`)
  cait  CaiT (Touvron et al. 2021b): LayerScale self-attention blocks, then the class token
        through class-attention blocks (`cait`)

ViT / DeiT use the platform's `transformer` backbone (`attnbench.nn.backbones`).
"""
