"""The CaiT backbone (Touvron et al. 2021, "Going deeper with Image Transformers"), with any
registered mechanism in its self-attention layers.

    encoder = backbones.build("cait", model_cfg=config.model, attention_cfg=config.attention,
                              max_len=num_patches, rngs=rngs)
    y = encoder(x, train=train, key=key)  # x [B, N, C] patch embeddings -> [B, 1 + N, C],
                                          # the class token first

Architecture (CaiT's `cait_models`, as GFSA's `Image/gfsa_cait.py` builds `cait_S24_224`):
  * learned positions on the N patches (no class token yet), dropout;
  * `num_layers` self-attention blocks x + DropPath(g1 * SA(LN(x))), x + DropPath(g2 *
    MLP(LN(x))) with LayerScale vectors g initialised to `layer_scale` (1e-5 for S24) and a
    stochastic-depth rate that is the same in every block (CaiT's `dpr = [drop_path_rate] *
    depth`). The attention is the configured mechanism; CaiT's own is talking-heads attention
    (`attention.talking_heads`), and GFSA on CaiT filters that matrix (`gfsa` with
    `talking_heads=True`, set by the recipes);
  * then the class token enters: `class_layers` class-attention blocks (2 in CaiT) update only
    it, cls + g1 * CA(LN([cls; x])), cls + g2 * MLP(LN(cls)), where CA's query is the class
    token and its keys and values are [cls; x] (softmax attention: the GFSA authors turn GFSA
    off there, `attnscale=False`; no dropout or stochastic depth there, as CaiT);
  * a final LayerNorm over [cls; x]; the classifier reads the class token.

Linear layers, positions and the class token are initialised truncated normal(0.02) (CaiT's
`_init_weights` and `trunc_normal_`); LayerNorms have eps 1e-6 (flax's default, CaiT's
`partial(nn.LayerNorm, eps=1e-6)`). Parameter counts equal the released model's: CaiT-S24 at
224 px has 46,916,200 parameters, 46,916,392 with GFSA (`n_parameters` in the GFSA authors'
CaiT log).
"""

from __future__ import annotations

import jax.numpy as jnp
from flax import nnx

import attention
from attention import cost
from attnbench import errors
from attnbench.nn import backbones, layers

__all__ = ["ClassAttention", "ClassAttentionBlock", "CaiTEncoder", "cait", "cait_flops"]

_trunc_normal = nnx.initializers.truncated_normal(stddev=0.02)


class ClassAttention(nnx.Module):
    """Multi-head attention of the class token over [cls; x]: `[B, 1 + N, C]` -> `[B, 1, C]`
    (CaiT's `Class_Attention`: q from the class token, k and v from every token, biases on
    q/k/v when `qkv_bias`, an output projection with bias), softmax attention."""

    def __init__(self, dim: int, num_heads: int, *, qkv_bias: bool, dtype, rngs: nnx.Rngs):
        if dim % num_heads:
            raise ValueError(f"dim {dim} is not divisible by num_heads {num_heads}")
        head_dim = dim // num_heads

        def proj():
            return nnx.LinearGeneral(
                dim,
                (num_heads, head_dim),
                use_bias=qkv_bias,
                kernel_init=_trunc_normal,
                dtype=dtype,
                rngs=rngs,
            )

        self.query, self.key, self.value = proj(), proj(), proj()
        self.out = nnx.LinearGeneral(
            (num_heads, head_dim),
            dim,
            axis=(-2, -1),
            kernel_init=_trunc_normal,
            dtype=dtype,
            rngs=rngs,
        )
        self.mechanism = attention.get("softmax")

    def __call__(self, u):
        out = self.mechanism.apply({}, self.query(u[:, :1]), self.key(u), self.value(u))
        return self.out(out)


class ClassAttentionBlock(nnx.Module):
    """cls + g1 * CA(LN([cls; x])); cls + g2 * MLP(LN(cls)) (CaiT's `LayerScale_Block_CA`)."""

    def __init__(
        self,
        dim: int,
        num_heads: int,
        mlp_dim: int,
        *,
        layer_scale: float,
        qkv_bias: bool,
        gelu: str,
        dtype,
        rngs: nnx.Rngs,
    ):
        self.ln1 = nnx.LayerNorm(dim, dtype=dtype, rngs=rngs)
        self.attn = ClassAttention(dim, num_heads, qkv_bias=qkv_bias, dtype=dtype, rngs=rngs)
        self.ln2 = nnx.LayerNorm(dim, dtype=dtype, rngs=rngs)
        self.mlp = layers.MlpBlock(
            dim, mlp_dim, 0.0, dtype=dtype, kernel_init=_trunc_normal, gelu=gelu, rngs=rngs
        )
        self.gamma1 = nnx.Param(jnp.full((dim,), layer_scale, jnp.float32))
        self.gamma2 = nnx.Param(jnp.full((dim,), layer_scale, jnp.float32))

    def __call__(self, x, cls):
        u = jnp.concatenate([cls, x], axis=1)
        cls = cls + self.gamma1[...].astype(cls.dtype) * self.attn(self.ln1(u))
        return cls + self.gamma2[...].astype(cls.dtype) * self.mlp(self.ln2(cls), train=False)


class CaiTEncoder(nnx.Module):
    """Positions, the self-attention blocks, the class token, the class-attention blocks and
    the final LayerNorm, on `[B, N, C]` patch embeddings (module docstring).

    Args (constructor):
      num_layers, dim, num_heads, qkv_dim, mlp_dim: the self-attention stack (S24: 24, 384, 8,
        384, 1536).
      dropout_rate: dropout after the positions and in the self-attention blocks.
      attention_cfg: the mechanism of the self-attention blocks.
      max_len: the number of patches N.
      drop_path: the stochastic-depth rate of every self-attention block.
      layer_scale: LayerScale's initial value (1e-5 for S24).
      class_layers: class-attention blocks (2).
      qkv_bias: biases on q/k/v (all blocks).
      gelu: the MLPs' GELU ("erf" in CaiT).

    Attributes:
      out_tokens: N + 1 (the class token first); out_dim: C.
    """

    def __init__(
        self,
        *,
        num_layers: int,
        dim: int,
        num_heads: int,
        qkv_dim: int,
        mlp_dim: int,
        dropout_rate: float,
        attention_cfg,
        max_len: int,
        drop_path: float = 0.0,
        layer_scale: float = 1e-5,
        class_layers: int = 2,
        qkv_bias: bool = True,
        gelu: str = "erf",
        dtype=jnp.float32,
        rngs: nnx.Rngs,
    ):
        mech = layers.mechanism(attention_cfg)
        self.pos_embedding = nnx.Param(_trunc_normal(rngs.params(), (max_len, dim)))
        rates = layers.drop_path_rates(drop_path, num_layers, "uniform")
        self.blocks = layers.block_stack(
            lambda i: layers.EncoderBlock(
                dim,
                num_heads,
                qkv_dim,
                mlp_dim,
                dropout_rate,
                mech,
                max_len=max_len,
                dtype=dtype,
                rngs=rngs,
                layer_index=i,
                num_layers=num_layers,
                drop_path=rates[i],
                layer_scale=layer_scale,
                qkv_bias=qkv_bias,
                out_bias=True,
                kernel_init=_trunc_normal,
                gelu=gelu,
            ),
            num_layers,
        )
        self.cls = nnx.Param(_trunc_normal(rngs.params(), (1, 1, dim)))
        self.class_blocks = nnx.List(
            [
                ClassAttentionBlock(
                    dim,
                    num_heads,
                    mlp_dim,
                    layer_scale=layer_scale,
                    qkv_bias=qkv_bias,
                    gelu=gelu,
                    dtype=dtype,
                    rngs=rngs,
                )
                for _ in range(class_layers)
            ]
        )
        self.norm = nnx.LayerNorm(dim, dtype=dtype, rngs=rngs)
        self.rate = dropout_rate
        self.max_len = max_len
        self.out_tokens, self.out_dim = max_len + 1, dim
        self.dtype = jnp.dtype(dtype)

    def __call__(self, x, *, mask=None, train: bool = False, key=None, **inputs):
        """x: `[B, N, C]` patch embeddings -> `[B, 1 + N, C]` in the compute dtype."""
        if mask is not None:
            raise ValueError("the CaiT encoder attends over all patches: mask must be None")
        n = x.shape[1]
        if n != self.max_len:
            raise ValueError(f"{n} tokens for a CaiT encoder built for {self.max_len} patches")
        keys = layers.split_keys(key, len(self.blocks) + 1)
        x = x + self.pos_embedding[...]
        x = layers.dropout(x, self.rate, keys[0], train).astype(self.dtype)
        for block, k in zip(self.blocks, keys[1:], strict=True):
            x = block(x, train=train, key=k, **inputs)
        cls = jnp.broadcast_to(self.cls[...], (x.shape[0], 1, x.shape[-1])).astype(x.dtype)
        for block in self.class_blocks:
            cls = block(x, cls)
        return self.norm(jnp.concatenate([cls, x], axis=1))


def cait_flops(encoder: CaiTEncoder, tally, *, n: int, masked: bool) -> None:
    """The backbone's FLOP formula (`attnbench.nn.backbones.register`): forward FLOPs of one image
    of `n` patches into `tally` (`attnbench.nn.flops.Tally`)."""
    if n != encoder.max_len or masked:
        raise ValueError(f"the CaiT encoder is built for {encoder.max_len} unmasked patches")
    dim = encoder.out_dim
    tally.claim("embedding", encoder.pos_embedding)
    tally.add("embedding", elementwise=n * dim)  # positions added
    for i, block in enumerate(encoder.blocks):
        backbones.encoder_block_flops(block, tally, n=n, layer_index=i, masked=False)
    tally.claim("embedding", encoder.cls)
    tokens = n + 1
    for block in encoder.class_blocks:
        tally.claim("norms/other", block.gamma1)
        tally.claim("norms/other", block.gamma2)
        backbones.norm_flops(block.ln1, tally, n=tokens, ops=cost.LAYERNORM)
        backbones.norm_flops(block.ln2, tally, n=1, ops=cost.LAYERNORM)
        attn = block.attn
        tally.linear("projections", attn.query, 1)
        tally.linear("projections", attn.key, tokens)
        tally.linear("projections", attn.value, tokens)
        tally.linear("projections", attn.out, 1)
        _, heads, head_dim = attn.value.kernel.shape
        tally.mechanism(
            attn.mechanism,
            n=1,
            m=tokens,
            heads=heads,
            head_dim=head_dim,
            model_dim=dim,
            layer_index=0,
            masked=False,
        )
        backbones.mlp_flops(block.mlp, tally, n=1)
        tally.add("norms/other", elementwise=4 * dim)  # LayerScale products, residual adds
    backbones.norm_flops(encoder.norm, tally, n=tokens, ops=cost.LAYERNORM)


@backbones.register("cait", flops=cait_flops)
def cait(*, model_cfg, attention_cfg, max_len: int, rngs):
    """The CaiT encoder from the model section: `num_layers`, `dim`, `num_heads`, `qkv_dim`,
    `mlp_dim`, `dropout`, `drop_path` (the same in every block), `layer_scale` (required),
    `class_layers` (default 2), `qkv_bias`, `gelu` and `dtype`; `max_len` is the number of
    patches (the class token is the encoder's own)."""
    m = model_cfg
    if m.get("layer_scale") is None:
        raise errors.ConfigError(
            "config.model.layer_scale is unset: CaiT's blocks need LayerScale's initial value "
            "(1e-5 for CaiT-S24)"
        )
    if m.get("pool", "cls") != "cls":
        raise errors.ConfigError(
            f"config.model.pool={m.pool!r}: CaiT classifies from its class token; set pool=cls"
        )
    return CaiTEncoder(
        num_layers=m.num_layers,
        dim=m.dim,
        num_heads=m.num_heads,
        qkv_dim=m.qkv_dim,
        mlp_dim=m.mlp_dim,
        dropout_rate=m.dropout,
        attention_cfg=attention_cfg,
        max_len=max_len,
        drop_path=m.get("drop_path", 0.0),
        layer_scale=m.layer_scale,
        class_layers=m.get("class_layers", 2),
        qkv_bias=m.get("qkv_bias", True),
        gelu=backbones.gelu_name(m),
        dtype=layers.compute_dtype(m.dtype),
        rngs=rngs,
    )
