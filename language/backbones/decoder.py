"""The backbone "decoder": SSA's causal ALiBi decoders, its CIFAR-10 sub-pixel decoder, GPT-2.

    stack = backbones.build("decoder", model_cfg=config.model, attention_cfg=config.attention,
                            max_len=N, rngs=nnx.Rngs(params=0))     # attnbench.nn.backbones
    h = stack(x, train=False)           # embedded tokens [B, N, dim] -> features [B, N, dim]

Registered in `attnbench.nn.backbones` (so `backbones.build("decoder", ...)` gives it, with its
FLOP formula `decoder_flops`), built from the model section (`config.model`) and any registered
attention mechanism (`config.attention`): positions, input dropout, `num_layers` pre-LN blocks
with a causal mask, an optional final LayerNorm. The language model around it (token embedding
or adaptive input -> this backbone -> tied or untied linear head, or the adaptive softmax) is
`language.models.Decoder`; `_settings` here reads and checks the whole model section for both.

Causality. Every block passes causality to the mechanism the way that mechanism takes it
(`CAUSAL_SUPPORT`): a boolean `[1, 1, N, N]` lower-triangular mask ("mask": softmax,
softmax_chunked, talking_heads, gfsa, gfsa_exact; GFSA keeps masked pairs at zero in Ā and Ā²,
attention/gfsa.py) or the mechanism's own `causal=True` hyper-parameter ("flag": ssa, whose
causal samplers constrain sources to the window's past, SSA Sec. 3.3; local; linear), which the
decoder sets (a config that sets it False is refused). Every other mechanism (sliceformer*,
samsa, linformer, performer, gfsa_linear, grf*, toeplitz: key-padding masks only, or none) is
refused with a ConfigError naming it. A user's mechanism is added with
`CAUSAL_SUPPORT["mine"] = "mask"` (or "flag").

Positions (`positions`):
  * "alibi" (Press et al., ICLR 2022, arXiv:2108.12409; SSA's WikiText-103 / enwik8 decoders):
    bias -m_h (i - j) on the logit of query i, key j <= i, with head slopes m_h the geometric
    sequence 2^(-8/H), 2^(-16/H), ... (`alibi_slopes`; the fairseq fork's `get_slopes`, with its
    rule for H not a power of 2). Passed as the mechanism's `bias` input. (The fork adds m_h j,
    equal to -m_h (i - j) up to a per-row constant, which a softmax ignores.)
  * "learned" (GPT-2's `wpe`): a `[max_len, dim]` table added to the embeddings.
  * "relative_2d": SSA's CIFAR-10 decoder ("the 2D relative position bias for positional
    encoding, similar to" Swin: SSA, arXiv:2306.01705, Sec. 4.2 / App. B.2, which say neither
    how the table is laid out nor how it extends to the channel axis). Our reading: tokens are
    the sub-pixels of a `grid = (rows, cols, channels)` image flattened row by row, channel
    last (token t is channel t % C of pixel t // C); each layer has, per head, a table of
    (2 rows - 1) x (2 cols - 1) learned biases (Swin's `relative_position_bias_table`, one per
    block, truncated-normal(0.02) init), and the bias of query i, key j is the entry at the
    pixels' (row offset, column offset); the three channels of a pixel share its entries.
    With this table and an untied byte head, SSA's 16-layer model has 202,573,952 parameters
    (the paper's 203M; a tied head gives 202,311,808, which rounds to 202M).
  * "none".

Blocks are pre-LN (`DecoderBlock`): x + drop(attn(LN(x))), x + mlp(LN(x)) with
`attnbench.nn.layers`' `Attention` and `MlpBlock`, LayerNorm with `norm_eps` (PyTorch's 1e-5 in
both fairseq and GPT-2; flax's default is 1e-6). fairseq's `base_lm_architecture` forces
`decoder_normalize_before = True`; GPT-2 is pre-LN with a final `ln_f`.

Model section fields (`config.model`; defaults in parentheses; `input`, `output` and the
embedding and adaptive fields are the language model's, `language.models.Decoder`):
  num_layers, dim, num_heads, mlp_dim   depth, width, heads, MLP width (required)
  qkv_dim (dim)                         width of the q/k/v projections (all heads)
  dropout (0.0)                         residual-branch and input dropout (fairseq `dropout`,
                                        GPT-2 `resid_pdrop` / `embd_pdrop`); the attention
                                        dropout is the mechanism's `dropout_rate`
  activation_dropout (0.0)              dropout after the GELU (fairseq `activation_dropout`)
  positions ("alibi")                   "alibi" | "learned" | "relative_2d" | "none"
  grid (None)                           (rows, cols, channels) of "relative_2d" sequences
  gelu ("tanh")                         "tanh" (GPT-2 `gelu_new`) | "erf" (fairseq `gelu`)
  qkv_bias, out_bias (True)             biases of the q/k/v and output projections (both on
                                        in fairseq's MultiheadAttention and GPT-2's Conv1D)
  norm_eps (1e-5)                       LayerNorm epsilon
  final_norm (True)                     LayerNorm after the last block (fairseq
                                        `no_decoder_final_norm` = not this)
  input ("embedding")                   "embedding" | "adaptive" (`language.adaptive`)
  output ("tied")                       "tied" (logits x E^T) | "untied" | "adaptive"
  output_bias (False)                   bias of an untied head
  scale_embedding (False)               embeddings times sqrt(dim) (fairseq's `embed_scale`
                                        unless `no_scale_embedding`)
  embed_init_std (None)                 std of the token embedding init; None = dim ** -0.5
                                        (fairseq); GPT-2 uses 0.02
  adaptive_cutoffs ((20000, 60000))     band edges of adaptive input / softmax (wiki103)
  adaptive_factor (4)                   band width divisor (fairseq default)
  adaptive_dropout (0.0)                adaptive softmax dropout (wiki103 recipe: 0.2)
  tie_adaptive_weights (True)           adaptive softmax shares the input's embeddings
  tie_adaptive_proj (True)              ... and its projections (both on in wiki103)
  dtype ("float32")                     compute dtype (resolved: `attnbench.config.resolve`)
  attention_layers (())                 blocks (0-based) that use `config.attention`; the
                                        others use dense softmax with the same causal mask
                                        and position bias (SSA's S12: SSA in the last 12 of
                                        16 layers, App. B.1); () = every block

Parameter counts of SSA's and GFSA's models are tested in tests/language/test_models.py and
tests/language/test_gpt2.py.
"""

from __future__ import annotations

import functools
import math

import jax.numpy as jnp
import numpy as np
from flax import nnx

from attention import cost
from attnbench import errors
from attnbench.nn import backbones, layers
from language import adaptive

__all__ = [
    "CAUSAL_SUPPORT",
    "POSITIONS",
    "INPUTS",
    "OUTPUTS",
    "DEFAULTS",
    "alibi_slopes",
    "alibi_bias",
    "relative_2d_index",
    "causal_mechanism",
    "DecoderBlock",
    "DecoderStack",
    "decoder_flops",
]

# How each mechanism takes causality: "mask" = a boolean [1, 1, N, N] mask, "flag" = its
# `causal` hyper-parameter (set to True by the decoder). Anything else is refused.
CAUSAL_SUPPORT: dict[str, str] = {
    "softmax": "mask",
    "softmax_chunked": "mask",
    "talking_heads": "mask",
    "gfsa": "mask",
    "gfsa_exact": "mask",
    "ssa": "flag",
    "local": "flag",
    "linear": "flag",
}
POSITIONS = ("alibi", "learned", "relative_2d", "none")
INPUTS = ("embedding", "adaptive")
OUTPUTS = ("tied", "untied", "adaptive")

# Optional model-section fields and their defaults (the module docstring documents each).
DEFAULTS = dict(
    qkv_dim=None,
    dropout=0.0,
    activation_dropout=0.0,
    positions="alibi",
    grid=None,
    gelu="tanh",
    qkv_bias=True,
    out_bias=True,
    norm_eps=1e-5,
    final_norm=True,
    input="embedding",
    output="tied",
    output_bias=False,
    scale_embedding=False,
    embed_init_std=None,
    adaptive_cutoffs=adaptive.WIKI103_CUTOFFS,
    adaptive_factor=adaptive.WIKI103_FACTOR,
    adaptive_dropout=0.0,
    tie_adaptive_weights=True,
    tie_adaptive_proj=True,
    dtype="float32",
    attention_layers=(),
)
_REQUIRED = ("num_layers", "dim", "num_heads", "mlp_dim")


def _settings(model_cfg) -> dict:
    """The model section as a plain dict with every optional field filled in; a missing
    required field or an unknown value is a ConfigError naming it."""
    m = dict(model_cfg.to_dict() if hasattr(model_cfg, "to_dict") else model_cfg)
    missing = [f for f in _REQUIRED if m.get(f) is None]
    if missing:
        raise errors.ConfigError(
            f"config.model lacks {', '.join(missing)}: the decoder needs {', '.join(_REQUIRED)}"
        )
    s = {**DEFAULTS, **{k: v for k, v in m.items() if v is not None or k not in DEFAULTS}}
    s["qkv_dim"] = s["qkv_dim"] or s["dim"]
    for field, known in (("positions", POSITIONS), ("input", INPUTS), ("output", OUTPUTS)):
        if s[field] not in known:
            raise errors.ConfigError(
                f"config.model.{field}={s[field]!r}: unknown; known: {', '.join(known)}"
            )
    if s["gelu"] not in layers.GELUS:
        raise errors.ConfigError(
            f"config.model.gelu={s['gelu']!r}: unknown; known: {', '.join(layers.GELUS)}"
        )
    if s["output"] == "adaptive" and s["tie_adaptive_weights"] and s["input"] != "adaptive":
        raise errors.ConfigError(
            "config.model.tie_adaptive_weights=True needs config.model.input='adaptive' "
            f"(got {s['input']!r}); set it False for an untied adaptive softmax"
        )
    if s["output"] == "tied" and s["input"] != "embedding":
        raise errors.ConfigError(
            "config.model.output='tied' ties the head to a plain token embedding; with "
            "input='adaptive' use output='adaptive' (fairseq's tied adaptive softmax)"
        )
    if s["positions"] == "relative_2d":
        grid = s["grid"]
        if grid is None or len(tuple(grid)) != 3 or min(int(g) for g in grid) < 1:
            raise errors.ConfigError(
                f"config.model.grid={grid!r}: positions='relative_2d' needs (rows, cols, "
                "channels), e.g. (32, 32, 3) for CIFAR-10 sub-pixels"
            )
        s["grid"] = tuple(int(g) for g in grid)
    s["adaptive_cutoffs"] = tuple(int(c) for c in s["adaptive_cutoffs"])
    picked = tuple(sorted({int(i) for i in s["attention_layers"]}))
    if picked and not set(picked) <= set(range(int(s["num_layers"]))):
        raise errors.ConfigError(
            f"config.model.attention_layers={tuple(s['attention_layers'])}: blocks are "
            f"numbered 0..{int(s['num_layers']) - 1}"
        )
    s["attention_layers"] = picked
    s["dtype"] = layers.compute_dtype(s["dtype"]).name
    return s


# ------------------------------------------------------------------------------- positions


def alibi_slopes(num_heads: int) -> np.ndarray:
    """ALiBi's head slopes `[H]` float64 (Press et al. 2022, Sec. 3): for H a power of 2 the
    geometric sequence starting at and with ratio 2^(-8/H); otherwise the slopes of the
    largest power of 2 below H, then every other slope of twice that power (the authors'
    `get_slopes` rule)."""
    if num_heads < 1:
        raise ValueError(f"alibi needs num_heads >= 1, got {num_heads}")

    def power_of_2(n):
        start = 2.0 ** (-8.0 / n)
        return [start ** (i + 1) for i in range(n)]

    if math.log2(num_heads).is_integer():
        return np.asarray(power_of_2(num_heads))
    low = 2 ** math.floor(math.log2(num_heads))
    extra = alibi_slopes(2 * low)[0::2][: num_heads - low]
    return np.asarray(power_of_2(low) + list(extra))


@functools.lru_cache(maxsize=8)
def alibi_bias(num_heads: int, n: int) -> np.ndarray:
    """`[1, H, N, N]` float32: -slope_h * (i - j) for key j <= query i, 0 above the diagonal
    (masked anyway)."""
    offset = np.arange(n)[:, None] - np.arange(n)[None, :]
    bias = -alibi_slopes(num_heads)[:, None, None] * np.maximum(offset, 0)[None]
    return bias[None].astype(np.float32)


@functools.lru_cache(maxsize=8)
def relative_2d_index(grid: tuple[int, int, int], n: int) -> np.ndarray:
    """`[N, N]` int32: the entry of a `(2 rows - 1) * (2 cols - 1)` table (row-major) that
    query token i and key token j read, for tokens of a `grid = (rows, cols, channels)`
    image flattened row by row with the channel last: (row_i - row_j + rows - 1) *
    (2 cols - 1) + (col_i - col_j + cols - 1)."""
    rows, cols, channels = grid
    if n > rows * cols * channels:
        raise ValueError(f"sequence length {n} exceeds the {rows}x{cols}x{channels} grid")
    pixel = np.arange(n) // channels
    r, c = pixel // cols, pixel % cols
    dr = r[:, None] - r[None, :] + rows - 1
    dc = c[:, None] - c[None, :] + cols - 1
    return (dr * (2 * cols - 1) + dc).astype(np.int32)


# ------------------------------------------------------------------------------ mechanisms


def causal_mechanism(attention_cfg, *, positions: str = "none"):
    """`(mechanism, how)`: the registered mechanism of `attention_cfg` bound for causal use,
    `how` "mask" or "flag" (`CAUSAL_SUPPORT`). ConfigError for a mechanism that cannot be
    causal, one whose `causal` is set False, or positions that need a `bias` input the
    mechanism does not take."""
    hp = dict(attention_cfg.to_dict() if hasattr(attention_cfg, "to_dict") else attention_cfg)
    name = hp.get("name")
    how = CAUSAL_SUPPORT.get(name)
    if how is None:
        raise errors.ConfigError(
            f"config.attention.name={name!r}: the decoder cannot make this mechanism causal "
            f"(it takes no causal mask and has no causal mode); causal mechanisms: "
            f"{', '.join(sorted(CAUSAL_SUPPORT))}"
        )
    if how == "flag":
        if hp.get("causal", True) is not True:
            raise errors.ConfigError(
                f"config.attention.causal={hp['causal']!r}: a decoder needs causal=True for "
                f"{name} (or leave it unset)"
            )
        hp["causal"] = True
    mech = layers.mechanism(hp)
    if positions in ("alibi", "relative_2d") and "bias" not in mech.inputs:
        raise errors.ConfigError(
            f"config.model.positions={positions!r} is an attention bias, which {name} does not "
            "take; use positions='learned' or 'none'"
        )
    return mech, how


# ---------------------------------------------------------------------------------- blocks


class DecoderBlock(nnx.Module):
    """Pre-LN block: x + drop(attn(LN(x), mask, bias)); x + mlp(LN(x)). Attribute names as
    `attnbench.nn.layers.EncoderBlock` (ln1, attn, ln2, mlp, layer_scale=None), so its FLOP formula
    (`attnbench.nn.backbones.encoder_block_flops`) applies. With `rel_size`, the block holds its own
    `[H, rel_size]` 2-D relative-position table (`rel_bias`)."""

    def __init__(
        self,
        dim: int,
        num_heads: int,
        qkv_dim: int,
        mlp_dim: int,
        dropout_rate: float,
        mechanism,
        *,
        max_len: int,
        dtype,
        layer_index: int,
        num_layers: int,
        qkv_bias: bool,
        out_bias: bool,
        gelu: str,
        activation_dropout: float,
        norm_eps: float,
        rel_size: int = 0,
        rngs: nnx.Rngs,
    ):
        norm = functools.partial(
            nnx.LayerNorm, dim, epsilon=norm_eps, dtype=dtype, use_fast_variance=False, rngs=rngs
        )
        self.ln1 = norm()
        self.attn = layers.Attention(
            dim,
            num_heads,
            qkv_dim,
            mechanism,
            max_len=max_len,
            layer_index=layer_index,
            num_layers=num_layers,
            dtype=dtype,
            qkv_bias=qkv_bias,
            out_bias=out_bias,
            rngs=rngs,
        )
        self.ln2 = norm()
        self.mlp = layers.MlpBlock(
            dim,
            mlp_dim,
            dropout_rate,
            dtype=dtype,
            gelu=gelu,
            hidden_dropout=activation_dropout,
            rngs=rngs,
        )
        self.rate = dropout_rate
        self.layer_scale = None
        init = nnx.initializers.truncated_normal(0.02)  # Swin's trunc_normal_(std=.02)
        self.rel_bias = nnx.data(
            nnx.Param(init(rngs.params(), (num_heads, rel_size))) if rel_size else None
        )

    def __call__(self, x, *, mask=None, bias=None, rel_index=None, train=False, key=None, **inputs):
        k_attn, k_drop, k_mlp = layers.split_keys(key, 3)
        if self.rel_bias is not None:
            table = jnp.asarray(self.rel_bias[...])
            bias = jnp.take(table, rel_index, axis=1)[None]  # [1, H, N, N]
        if bias is not None:
            inputs = {**inputs, "bias": bias}
        h = self.attn(self.ln1(x), mask=mask, train=train, key=k_attn, **inputs)
        x = x + layers.dropout(h, self.rate, k_drop, train)
        return x + self.mlp(self.ln2(x), train=train, key=k_mlp)


class DecoderStack(nnx.Module):
    """The backbone "decoder": embedded tokens `[B, N, dim]` -> features `[B, N, dim]` in the
    compute dtype. Positions (added in float32, or the attention bias), input dropout, causal
    blocks, optional final LayerNorm. `mask` (optional) is key padding `[B, N]`."""

    def __init__(self, settings: dict, attention_cfg, *, max_len: int, rngs: nnx.Rngs):
        s = settings
        mech, how = causal_mechanism(attention_cfg, positions=s["positions"])
        self.how = how
        # per block: the configured mechanism on `attention_layers` (all when empty), dense
        # softmax (the configured attention dropout) on the others
        picked = set(s["attention_layers"]) or set(range(s["num_layers"]))
        plain = plain_how = None
        if len(picked) < s["num_layers"]:
            rate = float(dict(attention_cfg).get("dropout_rate", 0.0))
            plain, plain_how = causal_mechanism(
                {"name": "softmax", "dropout_rate": rate},
                positions=s["positions"],
            )
        self.hows = tuple(how if i in picked else plain_how for i in range(s["num_layers"]))
        self.positions, self.max_len, self.num_heads = s["positions"], max_len, s["num_heads"]
        self.grid = s["grid"]
        self.dtype = jnp.dtype(s["dtype"])
        self.rate = s["dropout"]
        if self.positions == "learned":
            self.pos_embedding = nnx.Param(
                nnx.initializers.normal(0.02)(rngs.params(), (max_len, s["dim"]))
            )
        rel_size = 0
        if self.positions == "relative_2d":
            rows, cols, channels = self.grid
            rel_size = (2 * rows - 1) * (2 * cols - 1)
            if max_len > rows * cols * channels:
                raise errors.ConfigError(
                    f"config.model.grid={self.grid}: {rows * cols * channels} tokens per image, "
                    f"but the decoder is built for sequences of {max_len}"
                )
        self.blocks = layers.block_stack(
            lambda i: DecoderBlock(
                s["dim"],
                s["num_heads"],
                s["qkv_dim"],
                s["mlp_dim"],
                s["dropout"],
                mech if i in picked else plain,
                max_len=max_len,
                dtype=self.dtype,
                layer_index=i,
                num_layers=s["num_layers"],
                qkv_bias=s["qkv_bias"],
                out_bias=s["out_bias"],
                gelu=s["gelu"],
                activation_dropout=s["activation_dropout"],
                norm_eps=s["norm_eps"],
                rel_size=rel_size,
                rngs=rngs,
            ),
            s["num_layers"],
        )
        self.norm = nnx.data(
            nnx.LayerNorm(
                s["dim"],
                epsilon=s["norm_eps"],
                dtype=self.dtype,
                use_fast_variance=False,
                rngs=rngs,
            )
            if s["final_norm"]
            else None
        )

    def __call__(self, x, *, mask=None, train: bool = False, key=None, **inputs):
        """`inputs`: per-call attention inputs, for every block."""
        b, n = x.shape[:2]
        if n > self.max_len:
            raise ValueError(f"sequence length {n} exceeds the decoder's max_len {self.max_len}")
        keys = layers.split_keys(key, len(self.blocks) + 1)
        if self.positions == "learned":
            x = x + self.pos_embedding[...][:n]
        x = layers.dropout(x, self.rate, keys[0], train).astype(self.dtype)
        bias = rel_index = None
        if self.positions == "alibi":
            bias = jnp.asarray(alibi_bias(self.num_heads, n))
        elif self.positions == "relative_2d":
            rel_index = jnp.asarray(relative_2d_index(self.grid, n))
        masks = {"flag": mask}  # the mechanism's own causal mode; key padding passes through
        if "mask" in self.hows:
            causal = jnp.asarray(np.tril(np.ones((n, n), bool)))[None, None]
            masks["mask"] = causal if mask is None else causal & jnp.asarray(mask)[:, None, None, :]
        for block, how, k in zip(self.blocks, self.hows, keys[1:], strict=True):
            x = block(
                x, mask=masks[how], bias=bias, rel_index=rel_index, train=train, key=k, **inputs
            )
        return x if self.norm is None else self.norm(x)


def decoder_flops(stack: DecoderStack, tally, *, n: int, masked: bool) -> None:
    """FLOP formula of the "decoder" backbone on `n` tokens: positions (an add, or the bias
    add per score of every layer), every block (`attnbench.nn.backbones.encoder_block_flops`; the
    causal mask counts as a mask), the final norm."""
    dim = stack.blocks[0].ln1.num_features
    if stack.positions == "learned":
        tally.claim("embedding", stack.pos_embedding)
        tally.add("embedding", elementwise=n * dim)
    for i, block in enumerate(stack.blocks):
        if block.rel_bias is not None:
            tally.claim("attention", block.rel_bias)
        if stack.positions in ("alibi", "relative_2d"):
            tally.add("attention", elementwise=stack.num_heads * n * n)
        backbones.encoder_block_flops(
            block, tally, n=n, layer_index=i, masked=masked or stack.hows[i] == "mask"
        )
    if stack.norm is not None:
        backbones.norm_flops(stack.norm, tally, n=n, ops=cost.LAYERNORM)


@backbones.register("decoder", flops=decoder_flops)
def _decoder_backbone(*, model_cfg, attention_cfg, max_len: int, rngs):
    """The causal decoder stack from a model section (fields: the module docstring)."""
    return DecoderStack(_settings(model_cfg), attention_cfg, max_len=max_len, rngs=rngs)
