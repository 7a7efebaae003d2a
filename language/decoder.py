"""The causal decoder language model: SSA's ALiBi decoders, its CIFAR-10 sub-pixel decoder, GPT-2.

    model = decoder.build_decoder(config.model, config.attention, vocab_size=V, max_len=N,
                                  rngs=nnx.Rngs(params=0))
    logits = model(tokens, train=False)          # tokens [B, N] int -> [B, N, V] float32
    nll = model.nll(tokens, targets, train=True, key=key)   # [B, N] nats, every configuration

Two layers, both built from the model section (`config.model`) and any registered attention
mechanism (`config.attention`):

  * the backbone "decoder" (registered in `attnbench.nn.backbones`, so `backbones.build("decoder",
    ...)` gives it, with its FLOP formula): embedded tokens `[B, N, dim]` -> features
    `[B, N, dim]`: positions, input dropout, `num_layers` pre-LN blocks with a causal mask, an
    optional final LayerNorm;
  * `Decoder`, the language model: token embedding or adaptive input -> backbone -> tied or
    untied linear head, or the adaptive softmax (`language.adaptive`).

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
  * "relative_2d": SSA's CIFAR-10 decoder ("2-D relative position bias like Swin", SSA
    Sec. 4.2 / App. B.2; notes ssa.md Sec. 2.3, ambiguity 4). Our reading: tokens are the
    sub-pixels of a `grid = (rows, cols, channels)` image flattened row by row, channel last
    (token t is channel t % C of pixel t // C); each layer has, per head, a table of
    (2 rows - 1) x (2 cols - 1) learned biases (Swin's `relative_position_bias_table`, one per
    block, truncated-normal(0.02) init), and the bias of query i, key j is the entry at the
    pixels' (row offset, column offset); the three channels of a pixel share its entries.
    With this table and an untied byte head, SSA's 16-layer model has 202,573,952 parameters
    (the paper's 203M; a tied head gives 202,311,808, which rounds to 202M).
  * "none".

Blocks are pre-LN (`DecoderBlock`): x + drop(attn(LN(x))), x + mlp(LN(x)) with
`attnbench.nn.layers`' `Attention` and `MlpBlock`, LayerNorm with `norm_eps` (PyTorch's 1e-5 in both
fairseq and GPT-2; flax's default is 1e-6). fairseq's `base_lm_architecture` forces
`decoder_normalize_before = True`; GPT-2 is pre-LN with a final `ln_f`.

Model section fields (`config.model`; defaults in parentheses):
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

Parameter counts of SSA's and GFSA's models are tested in tests/language/test_decoder.py and
tests/language/test_gpt2.py.
"""

from __future__ import annotations

import functools
import math

import flax.core
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
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
    "Decoder",
    "build_decoder",
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
    """The causal decoder stack from a model section (fields: module docstring)."""
    return DecoderStack(_settings(model_cfg), attention_cfg, max_len=max_len, rngs=rngs)


# -------------------------------------------------------------------------- language model


class Decoder(nnx.Module):
    """The causal LM: tokens `[B, N]` -> logits `[B, N, V]` or per-token NLL `[B, N]`.

    Attributes:
      settings: the model section with its defaults filled in (a FrozenDict).
      vocab_size, max_len: V and the longest sequence.
      embed: `nnx.Embed` or `adaptive.AdaptiveInput`.
      stack: the "decoder" backbone (`DecoderStack`).
      head: `nnx.Linear` (untied), `adaptive.AdaptiveSoftmax`, or None (tied to `embed`).
    """

    def __init__(self, *, vocab_size: int, max_len: int, model_cfg, attention_cfg, rngs):
        s = _settings(model_cfg)
        self.settings = flax.core.FrozenDict(s)  # hashable: the GraphDef can be a jit static
        self.vocab_size, self.max_len, self.dim = int(vocab_size), int(max_len), s["dim"]
        if s["input"] == "adaptive":
            self.embed = adaptive.AdaptiveInput(
                vocab_size,
                s["dim"],
                cutoffs=s["adaptive_cutoffs"],
                factor=s["adaptive_factor"],
                rngs=rngs,
            )
        else:
            std = s["embed_init_std"] or s["dim"] ** -0.5
            self.embed = nnx.Embed(
                vocab_size, s["dim"], embedding_init=nnx.initializers.normal(std), rngs=rngs
            )
        self.embed_scale = math.sqrt(s["dim"]) if s["scale_embedding"] else 1.0
        self.stack = backbones.build(
            "decoder", model_cfg=dict(s), attention_cfg=attention_cfg, max_len=max_len, rngs=rngs
        )
        head = None
        if s["output"] == "untied":
            head = nnx.Linear(
                s["dim"],
                vocab_size,
                use_bias=s["output_bias"],
                kernel_init=nnx.initializers.normal(s["dim"] ** -0.5),  # fairseq's init
                rngs=rngs,
            )
        elif s["output"] == "adaptive":
            head = adaptive.AdaptiveSoftmax(
                vocab_size,
                s["dim"],
                cutoffs=s["adaptive_cutoffs"],
                factor=s["adaptive_factor"],
                dropout=s["adaptive_dropout"],
                tied=self.embed if s["tie_adaptive_weights"] else None,
                tie_proj=s["tie_adaptive_proj"],
                rngs=rngs,
            )
        self.head = nnx.data(head)

    def features(self, tokens, *, mask=None, train: bool = False, key=None, **inputs):
        """tokens `[B, N]` -> the backbone's features `[B, N, dim]` float32; `inputs`: per-call
        attention inputs (e.g. SSA's `subsample`)."""
        x = self.embed(jnp.asarray(tokens, jnp.int32)).astype(jnp.float32) * self.embed_scale
        return self.stack(x, mask=mask, train=train, key=key, **inputs).astype(jnp.float32)

    def _split(self, key):
        return (None, None) if key is None else tuple(jax.random.split(key))

    def __call__(self, tokens, *, mask=None, train: bool = False, key=None, **inputs):
        """tokens `[B, N]` int -> logits `[B, N, V]` float32 (with the adaptive softmax: the
        normalised log-probabilities over the whole vocabulary, materialised)."""
        k_stack, k_out = self._split(key)
        x = self.features(tokens, mask=mask, train=train, key=k_stack, **inputs)
        if self.settings["output"] == "adaptive":
            return self.head.log_probs(x, train=train, key=k_out)
        if self.head is None:
            return self.embed.attend(x)
        return self.head(x).astype(jnp.float32)

    def nll(self, tokens, targets, *, mask=None, train: bool = False, key=None, **inputs):
        """Negative log-likelihood (nats) `[B, N]` float32 of `targets` `[B, N]` (usually
        `tokens` shifted by one) given `tokens`; the LM task's loss."""
        if self.settings["output"] == "adaptive":
            k_stack, k_out = self._split(key)
            x = self.features(tokens, mask=mask, train=train, key=k_stack, **inputs)
            return self.head.nll(x, targets, train=train, key=k_out)
        logits = self(tokens, mask=mask, train=train, key=key, **inputs)
        return optax.softmax_cross_entropy_with_integer_labels(
            logits, jnp.asarray(targets, jnp.int32)
        )

    def count_flops(self, tally) -> None:
        """Forward FLOPs of one sequence of `max_len` tokens (`attnbench.nn.flops`): the input
        (lookups are 0; adaptive projections of every band), the embedding scale, the
        backbone's formula, the output (logits or adaptive softmax and the log-softmax)."""
        n, dim = self.max_len, self.dim
        with tally.per_sequence(1, n):
            if isinstance(self.embed, adaptive.AdaptiveInput):
                self.embed.count_flops(tally, n=n)
            else:
                tally.claim("embedding", self.embed)
            if self.embed_scale != 1.0:
                tally.add("embedding", elementwise=n * dim)
            backbones.count_flops("decoder", self.stack, tally, n=n, masked=False)
            if isinstance(self.head, adaptive.AdaptiveSoftmax):
                self.head.count_flops(tally, n=n)
            else:
                v = self.vocab_size
                if self.head is None:
                    tally.add("head", 2 * n * dim * v)
                else:
                    tally.linear("head", self.head, n)
                tally.add("head", elementwise=n * v * cost.SOFTMAX)


def build_decoder(model_cfg, attention_cfg, *, vocab_size: int, max_len: int, rngs) -> Decoder:
    """The causal LM `Decoder` from a model section (fields: module docstring) and an
    attention section (`name` + hyper-parameters)."""
    if isinstance(model_cfg, dict):
        model_cfg = ml_collections.ConfigDict(model_cfg)
    return Decoder(
        vocab_size=vocab_size,
        max_len=max_len,
        model_cfg=model_cfg,
        attention_cfg=attention_cfg,
        rngs=rngs,
    )
