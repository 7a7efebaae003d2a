"""Luna, the linear unified nested attention encoder (Ma, Kong, Wang, Zhou, May, Ma and Zettlemoyer
2021, "Luna: Linear Unified Nested Attention", arXiv 2106.01540, Sec. 2), bidirectional (LRA), as
a backbone: `config.model.encoder = "luna"`.

Every layer carries, besides the tokens X `[n, d]`, an extra packed sequence P `[l, d]` of fixed
length l (`proj_len`; "Luna-256" in the LRA tables, e.g. SAMSA's Table 2, is l = 256):

    pack:    Y_P = Attn(P, X)       queries from P, keys/values from X   (l x n, X's key padding)
    unpack:  Y_X = Attn(X, Y_P)     queries from X, keys/values from Y_P (n x l)
    X_A = LayerNorm(X + Dropout(Y_X))        P' = LayerNorm(P + Dropout(Y_P))
    X'  = LayerNorm(X_A + Dropout(FFN(X_A)))

(Sec. 2, the Luna layer: post-LN residual paths for X and for P, the FFN on X only, P' carried
to the next layer.) Both attentions are multi-head softmax attention with their own projections:
pack `softmax(P Wq_p (X Wk_p)^T / sqrt(dh)) X Wv_p` per head, heads concatenated, with NO
output projection (Y_P is added to P as it is); unpack `Wo concat_h softmax(X Wq (Y_P Wk)^T /
sqrt(dh)) Y_P Wv`. Every projection has a bias. This is the official bidirectional
`LunarMultiheadAttention` (XuezheMax/fairseq-apollo fairseq/modules/luna_attention.py,
`_compute_pcontext` and `forward`, with `tie_kv=False` as fairseq/models/lra/model.py builds it)
and `LunaSentenceEncoderLayer.forward` (fairseq/modules/luna_sentence_encoder.py) with
`normalize_before=False`, which `LRAEncoder` hard-codes for Luna (post-LN). The softplus / elu
activations of the official code belong to `LunarCausalAttention` (the causal, decoder variant,
`F.softplus(pattn, beta=log 2)`), which LRA does not use: both attentions here are softmax, as in
the LRA setting. The two attentions are the attention registry's `softmax` mechanism
(`attention.get("softmax")`, its attention dropout and kernel choice from `config.attention`);
the FFN is `layers.MlpBlock` (Dense -> GELU -> Dense -> dropout; the official activation dropout
is 0).

Before the first layer (official `LunaLRAEncoder.forward`, fairseq/models/lra/luna_lra_encoder.py):
  X = x + positions,  P = sqrt(d) * P0 + sinusoid(l)   (positions="sinusoidal")
  X, P = LayerNorm_x(X), LayerNorm_p(P)                 (`embed_norm`: the official
      `layernorm_embedding`, on for every LRA Luna architecture via encoder_normalize_before)
  X, P = Dropout(X), Dropout(P)
P0 `[l, d]` is learned, initialised N(0, d^-1/2) (as the official `projected_embeddings`; BERT
init does not touch it there either); the packed sequence has its own positions (the official
`projected_positions`, sinusoidal and scaled by sqrt(d) with P0, only when X's positions are
sinusoidal; Luna Sec. 2: P of the first layer is a learned positional embedding). With
positions="learned" X gets a learned table (N(0, 0.02)) and P is P0 alone (official: no
projected positions then); "none": no positions anywhere, P = P0. No final norm (post-LN); the
outputs of padded tokens are set to zero (as the official encoder does).

Dynamic projection (`dynamic_projection`, default on, the official `LunaLRAEncoder` default that
the LRA models keep): an example with m real tokens uses only the first min(m, l) rows of P as
keys of its unpack attention (the official code cuts P to the longest real length of the batch
and masks rows past each example's length, which is the same thing row by row). This matters only
when a sequence is shorter than l.

Padding: padded tokens are masked out of the pack attention's keys, every other operation is per
token, so they never influence real tokens (tested). Cost: linear in n (two n x l score arrays per
head, no n x n array; tested on the jaxpr at n = 2048).

Config fields read (`config.model`; the backbone's own ones with `model_cfg.get`):
  num_layers, dim, num_heads, mlp_dim, dropout (residual, FFN and embedding dropout), positions,
  dtype: as every backbone; qkv_dim must equal dim (the packed output has no output projection
  and is added to P: the official code uses the model width throughout).
  proj_len = 256            l, the packed length (Luna-256; the official README's example is 16)
  dynamic_projection = True  see above
  embed_norm = True          LayerNorms of X and P before the first layer
  init = "xavier"            "xavier": the official LunarMultiheadAttention reset (xavier-uniform,
                             gain 1/sqrt(2) for the six q/k/v kernels, gain 1 and zero bias for
                             the output projection, PyTorch's default U(+-1/sqrt(d)) for the other
                             biases, PyTorch's default Linear init for the FFN); "bert": fairseq's
                             `init_bert_params` (every Linear N(0, 0.02), zero biases), which the
                             official ListOps and Text runs use (--apply-bert-init / default on).
  gelu = "erf"               fairseq's "gelu" is the exact one
  config.attention: must name `softmax`; its `dropout_rate` is the attention dropout of both
  attentions (the official `attention_dropout`).

Deliberate differences from the official code, with reasons:
  - The token embedding and its scale live outside the backbone (`lra.models.SequenceEncoder`,
    N(0, 1), no sqrt(d) factor): at initialisation that equals the official N(0, d^-1/2) times
    sqrt(d); X's sinusoid is this repository's LRA encoding (`layers.add_sinusoid`, sin/cos
    halves, positions from 0), not fairseq's padding-offset one. P's sinusoid uses the same
    function.
  - The official ListOps run ties the weights of all layers (`tie_layer_weights`) but has one
    layer, so nothing is tied; tying is not implemented.
  - The pre-LN variant (`normalize_before=True`) exists in the official layer but no LRA model
    uses it; not implemented.
  - LayerNorm epsilon 1e-5 (PyTorch / fairseq), as the official.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
from flax import nnx

from attention import cost
from attnbench import errors
from attnbench.nn import backbones, layers

__all__ = ["LunaLayer", "LunaEncoder", "luna", "luna_flops"]

_INITS = ("xavier", "bert")


def _xavier(gain: float):
    return nnx.initializers.variance_scaling(gain**2, "fan_avg", "uniform")


# PyTorch's nn.Linear default weight init (kaiming_uniform, a = sqrt(5)): U(+-1/sqrt(fan_in)).
_torch_kernel = nnx.initializers.variance_scaling(1.0 / 3.0, "fan_in", "uniform")
_bert = nnx.initializers.normal(0.02)
_zeros = nnx.initializers.zeros


class LunaLayer(nnx.Module):
    """One bidirectional Luna layer (post-LN): `(x [B, n, d], p [B, l, d]) -> (x', p')`."""

    def __init__(
        self,
        dim: int,
        num_heads: int,
        mlp_dim: int,
        dropout_rate: float,
        mechanism,
        *,
        init: str = "xavier",
        gelu: str = "erf",
        dtype=jnp.float32,
        rngs: nnx.Rngs,
    ):
        if dim % num_heads:
            raise ValueError(f"dim {dim} is not divisible by num_heads {num_heads}")
        if init not in _INITS:
            raise ValueError(f"unknown luna init {init!r}; known: {', '.join(_INITS)}")
        head_dim = dim // num_heads
        bert = init == "bert"
        qkv_kernel = _bert if bert else _xavier(1.0 / math.sqrt(2.0))
        qkv_bias = _zeros if bert else layers.torch_uniform(dim)

        def proj():
            return nnx.LinearGeneral(
                dim,
                (num_heads, head_dim),
                kernel_init=qkv_kernel,
                bias_init=qkv_bias,
                dtype=dtype,
                rngs=rngs,
            )

        # pack attention: queries from P, keys and values from X
        self.pack_query, self.pack_key, self.pack_value = proj(), proj(), proj()
        # unpack attention: queries from X, keys and values from the packed Y_P
        self.query, self.key, self.value = proj(), proj(), proj()
        self.out = nnx.LinearGeneral(
            (num_heads, head_dim),
            dim,
            axis=(-2, -1),
            kernel_init=_bert if bert else _xavier(1.0),
            bias_init=_zeros,
            dtype=dtype,
            rngs=rngs,
        )
        self.mechanism = mechanism
        self.norm_x = layers.torch_layer_norm(dim, dtype, rngs)
        self.norm_p = layers.torch_layer_norm(dim, dtype, rngs)
        self.norm_ffn = layers.torch_layer_norm(dim, dtype, rngs)
        self.mlp = layers.MlpBlock(
            dim,
            mlp_dim,
            dropout_rate,
            dtype=dtype,
            kernel_init=_bert if bert else _torch_kernel,
            gelu=gelu,
            hidden_dropout=0.0,  # official activation_dropout (act_dropout default 0)
            rngs=rngs,
        )
        if not bert:  # PyTorch's default Linear bias, U(+-1/sqrt(fan_in))
            self.mlp.fc1.bias = nnx.Param(layers.torch_uniform(dim)(rngs.params(), (mlp_dim,)))
            self.mlp.fc2.bias = nnx.Param(layers.torch_uniform(mlp_dim)(rngs.params(), (dim,)))
        self.rate = dropout_rate

    def __call__(self, x, p, *, mask=None, p_mask=None, train: bool = False, key=None):
        """x `[B, n, d]`, p `[B, l, d]`, mask `[B, n]` (True = real token), p_mask `[B, l]`
        (True = a packed row the unpack attention may read) -> (x', p')."""
        k_pack, k_unpack, k_dx, k_dp, k_mlp = layers.split_keys(key, 5)
        apply = self.mechanism.apply
        packed = apply(  # [B, l, H, dh]: Y_P per head
            {},
            self.pack_query(p),
            self.pack_key(x),
            self.pack_value(x),
            mask=mask,
            key=k_pack,
            train=train,
        )
        y_p = packed.reshape(packed.shape[:2] + (-1,))  # heads concatenated, no projection
        y_x = self.out(
            apply(
                {},
                self.query(x),
                self.key(y_p),
                self.value(y_p),
                mask=p_mask,
                key=k_unpack,
                train=train,
            )
        )
        x = self.norm_x(x + layers.dropout(y_x, self.rate, k_dx, train))
        p = self.norm_p(p + layers.dropout(y_p, self.rate, k_dp, train))
        x = self.norm_ffn(x + self.mlp(x, train=train, key=k_mlp))
        return x, p


class LunaEncoder(nnx.Module):
    """Positions, the initial packed sequence, embedding norms and dropout, then `num_layers`
    Luna layers; `[B, n, d] -> [B, n, d]` (the module docstring gives the formula)."""

    def __init__(
        self,
        *,
        num_layers: int,
        dim: int,
        num_heads: int,
        mlp_dim: int,
        dropout_rate: float,
        attention_cfg,
        max_len: int,
        proj_len: int = 256,
        positions: str = "sinusoidal",
        dynamic_projection: bool = True,
        embed_norm: bool = True,
        init: str = "xavier",
        gelu: str = "erf",
        dtype=jnp.float32,
        rngs: nnx.Rngs,
    ):
        if positions not in ("sinusoidal", "learned", "none"):
            raise ValueError(f"unknown positions {positions!r}; known: sinusoidal, learned, none")
        if proj_len < 1:
            raise ValueError(f"luna proj_len must be positive, got {proj_len}")
        mechanism = layers.mechanism(attention_cfg)
        self.positions = positions
        self.max_len = max_len
        self.proj_len = proj_len
        self.dim = dim
        self.dynamic_projection = dynamic_projection
        self.embed_norm = embed_norm
        # the initial packed sequence P0 (official `projected_embeddings`, N(0, d^-1/2))
        self.p_embedding = nnx.Param(
            nnx.initializers.normal(dim**-0.5)(rngs.params(), (proj_len, dim))
        )
        if positions == "learned":
            self.pos_embedding = nnx.Param(
                nnx.initializers.normal(0.02)(rngs.params(), (max_len, dim))
            )
        if embed_norm:
            self.embed_norm_x = layers.torch_layer_norm(dim, dtype, rngs)
            self.embed_norm_p = layers.torch_layer_norm(dim, dtype, rngs)
        self.blocks = layers.block_stack(
            lambda i: LunaLayer(
                dim,
                num_heads,
                mlp_dim,
                dropout_rate,
                mechanism,
                init=init,
                gelu=gelu,
                dtype=dtype,
                rngs=rngs,
            ),
            num_layers,
        )
        self.rate = dropout_rate
        self.dtype = jnp.dtype(dtype)

    def initial_p(self, dtype=jnp.float32):
        """The packed sequence entering the first layer, before its norm and dropout: `[l, d]`."""
        p = self.p_embedding[...].astype(dtype)
        if self.positions == "sinusoidal":
            pe = layers.sinusoidal_positions(self.proj_len, self.dim)
            p = math.sqrt(self.dim) * p + pe.astype(dtype)
        return p

    def __call__(self, x, *, mask=None, train: bool = False, key=None, return_p=False, **inputs):
        """x `[B, n, d]` embedded tokens, mask `[B, n]` True for real tokens -> `[B, n, d]` in
        the compute dtype (with `return_p`, also the last packed sequence `[B, l, d]`).
        `inputs` (per-call attention inputs) are ignored: Luna's softmax attentions take none."""
        del inputs
        b, n, _ = x.shape
        if n > self.max_len:
            raise ValueError(f"sequence length {n} exceeds the encoder's max_len {self.max_len}")
        keys = layers.split_keys(key, len(self.blocks) + 2)
        if self.positions == "sinusoidal":
            x = layers.add_sinusoid(x, self.max_len)
        elif self.positions == "learned":
            x = x + self.pos_embedding[...][:n].astype(x.dtype)
        p = jnp.broadcast_to(self.initial_p(x.dtype), (b, self.proj_len, self.dim))
        x, p = x.astype(self.dtype), p.astype(self.dtype)
        if self.embed_norm:
            x, p = self.embed_norm_x(x), self.embed_norm_p(p)
        x = layers.dropout(x, self.rate, keys[0], train)
        p = layers.dropout(p, self.rate, keys[1], train)
        p_mask = None
        if mask is not None:
            x = x * mask[..., None].astype(x.dtype)  # official: padded inputs zeroed
            if self.dynamic_projection:
                real = jnp.sum(mask, axis=1, dtype=jnp.int32)
                p_mask = jnp.arange(self.proj_len)[None, :] < real[:, None]
        for block, k in zip(self.blocks, keys[2:], strict=True):
            x, p = block(x, p, mask=mask, p_mask=p_mask, train=train, key=k)
        if mask is not None:
            x = x * mask[..., None].astype(x.dtype)
        return (x, p) if return_p else x


# --------------------------------------------------------------------------- registration


def luna_flops(encoder: LunaEncoder, tally, *, n: int, masked: bool) -> None:
    """Forward FLOPs of one sequence of `n` tokens (`attnbench.nn.backbones` formula contract):
    per layer the nine projections (pack q on the l packed rows, unpack k/v on the l packed
    rows, the rest on the n tokens), the two softmax attentions (l x n and n x l), three
    LayerNorms, three residual adds and the FFN."""
    d, plen = encoder.dim, encoder.proj_len
    tally.claim("embedding", encoder.p_embedding)
    if encoder.positions == "learned":
        tally.claim("embedding", encoder.pos_embedding)
    if encoder.positions != "none":
        tally.add("embedding", elementwise=n * d)  # positions added to X
    if encoder.positions == "sinusoidal":
        tally.add("embedding", elementwise=2 * plen * d)  # sqrt(d) * P0 + sinusoid
    if encoder.embed_norm:
        backbones.norm_flops(encoder.embed_norm_x, tally, n=n, ops=cost.LAYERNORM)
        backbones.norm_flops(encoder.embed_norm_p, tally, n=plen, ops=cost.LAYERNORM)
    if masked:
        tally.add("norms/other", elementwise=2 * n * d)  # padded rows zeroed, in and out
    unpack_masked = masked and encoder.dynamic_projection
    for i, block in enumerate(encoder.blocks):
        for proj, tokens in (
            (block.pack_query, plen),
            (block.pack_key, n),
            (block.pack_value, n),
            (block.query, n),
            (block.key, plen),
            (block.value, plen),
            (block.out, n),
        ):
            tally.linear("projections", proj, tokens)
        heads, head_dim = block.query.kernel.shape[1:]
        for q_len, k_len, k_masked in ((plen, n, masked), (n, plen, unpack_masked)):
            tally.mechanism(
                block.mechanism,
                n=q_len,
                m=k_len,
                heads=heads,
                head_dim=head_dim,
                model_dim=d,
                layer_index=i,
                masked=k_masked,
            )
        backbones.norm_flops(block.norm_x, tally, n=n, ops=cost.LAYERNORM)
        backbones.norm_flops(block.norm_p, tally, n=plen, ops=cost.LAYERNORM)
        backbones.norm_flops(block.norm_ffn, tally, n=n, ops=cost.LAYERNORM)
        tally.add("norms/other", elementwise=(2 * n + plen) * d)  # residual adds
        backbones.mlp_flops(block.mlp, tally, n=n)


@backbones.register("luna", flops=luna_flops)
def luna(*, model_cfg, attention_cfg, max_len: int, rngs):
    """The Luna encoder from a config's model section (fields: the module docstring)."""
    m = model_cfg
    if m.qkv_dim != m.dim:
        raise errors.ConfigError(
            f"config.model.qkv_dim={m.qkv_dim} != dim={m.dim}: the luna encoder's packed output "
            "has no output projection and is added to P, so its attention width is the model "
            "width (as the official LunarMultiheadAttention)"
        )
    name = attention_cfg.get("name") if hasattr(attention_cfg, "get") else None
    if name != "softmax":
        raise errors.ConfigError(
            f"config.attention.name={name!r}: the luna encoder's pack and unpack attentions are "
            "softmax (the official bidirectional LunarMultiheadAttention); set attn=softmax"
        )
    gelu = m.get("gelu", "erf")
    if gelu not in layers.GELUS:
        raise errors.ConfigError(
            f"config.model.gelu={gelu!r}: unknown; known: {', '.join(layers.GELUS)}"
        )
    init = m.get("init", "xavier")
    if init not in _INITS:
        raise errors.ConfigError(
            f"config.model.init={init!r}: unknown luna init; known: {', '.join(_INITS)}"
        )
    return LunaEncoder(
        num_layers=m.num_layers,
        dim=m.dim,
        num_heads=m.num_heads,
        mlp_dim=m.mlp_dim,
        dropout_rate=m.dropout,
        attention_cfg=attention_cfg,
        max_len=max_len,
        proj_len=m.get("proj_len", 256),
        positions=m.positions,
        dynamic_projection=m.get("dynamic_projection", True),
        embed_norm=m.get("embed_norm", True),
        init=init,
        gelu=gelu,
        dtype=layers.compute_dtype(m.dtype),
        rngs=rngs,
    )
