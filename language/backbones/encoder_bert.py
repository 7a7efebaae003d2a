"""BERT-family encoders (BERT-base, RoBERTa-base) with a sequence-classification head, whose
self-attention is any registered `attention` mechanism (GFSA, arXiv 2312.04234 Sec. 5.1, swaps
it in every layer). With softmax attention and the same weights the forward pass is that of Hugging
Face transformers' `BertForSequenceClassification` / `RobertaForSequenceClassification`
(huggingface/transformers `models/bert/modeling_bert.py`, `models/roberta/modeling_roberta.py`:
BertEmbeddings, BertSelfAttention, BertSelfOutput, BertIntermediate, BertOutput, BertPooler,
RobertaEmbeddings, RobertaClassificationHead; read for the facts below, not copied).

    model = BertEncoderModel(settings, {"name": "softmax"}, rngs=nnx.Rngs(params=0))
    logits = model(input_ids, attention_mask=mask, token_type_ids=types)      # [B, num_labels]
    h = model.encode(input_ids, attention_mask=mask)                         # [B, N, dim]

Checkpoints: `language.hf_encoders.load_hf_encoder`.

Architecture (HF names in parentheses):
  * Embeddings (BertEmbeddings / RobertaEmbeddings): word + position + token-type embedding,
    LayerNorm (`layer_norm_eps`: 1e-12 in BERT's config, 1e-5 in RoBERTa's), dropout
    (`hidden_dropout_prob`). Token types default to zeros (HF's buffered `token_type_ids`).
    Position ids: `position_ids="sequential"` (BERT) is 0..N-1; `"from_padding"` (RoBERTa,
    `create_position_ids_from_input_ids`, from fairseq's `make_positions`) is
    `pad_token_id + cumsum(ids != pad) * (ids != pad)`: real tokens count from pad_token_id + 1,
    pad tokens get pad_token_id. As in HF they come from `input_ids`, not from `attention_mask`.
  * `num_layers` post-LN blocks (BertLayer): h = LN(x + drop(attn(x))) (BertSelfAttention +
    BertSelfOutput), out = LN(h + drop(W2 gelu(W1 h))) (BertIntermediate + BertOutput; no
    dropout after the GELU). The attention is `attnbench.nn.layers.Attention` with biases on
    q/k/v and the output projection, heads of width dim / num_heads, the mechanism from
    `attention_cfg`; softmax is HF's scaled dot product with dropout on the probabilities
    (`attention_probs_dropout_prob`, the mechanism's `dropout_rate`). The key-padding mask is
    `attention_mask != 0` `[B, N]` (HF's additive extended mask on the keys).
  * GELU: "erf" is HF's `hidden_act="gelu"` (exact); "tanh" its `gelu_new`.
  * Head `head="bert"` (BertPooler + BertForSequenceClassification): tanh(W_p h[:, 0] + b_p) ->
    dropout -> Linear(num_labels). `head="roberta"` (RobertaClassificationHead; no pooler):
    h[:, 0] -> dropout -> dense -> tanh -> dropout -> out_proj. The dropout rate is
    `classifier_dropout` (None: `hidden_dropout`, as HF). `num_labels = 1` is HF's regression.
  * Initialisation (HF `BertPreTrainedModel._init_weights`): every Linear and Embedding weight
    normal(0, `initializer_range` = 0.02), biases zero, LayerNorm ones/zeros; the word (and for
    "from_padding" the position) embedding's `pad_token_id` row zero (`nn.Embedding(padding_idx)`).

ContraNorm (Guo et al., ICLR 2023, arXiv:2303.06562; `attnbench.nn.contranorm`), GFSA Table 1's
"+ ContraNorm" rows: with `contranorm_scale` s > 0 each layer applies the ContraNorm update to a
residual sum right before a LayerNorm, as Guo et al.'s BERT (github.com/PKU-ML/ContraNorm,
`BERT_gleu/transformers/models/bert/modeling_bert.py`, `--pos 7`, the position their README
calls the paper's default: `BertSelfOutput` applies it to `dropout(dense(ctx)) + input` before
its LayerNorm). `contranorm_at`: "attention" (there, the default) or "ffn" (the same before the
feed-forward sub-layer's LayerNorm, their `--pos 8`). The update has no parameters, so a
checkpoint loads unchanged. Defaults as their BERT code: the identity form (1 + s) X - s A X
(`contranorm_identity`), temperature 1 (their BERT class never reads its `tau`), no dual
normalisation. Ours differs by the key-padding mask: padded tokens enter neither the
similarity softmax nor the update (theirs mixes them in; `attnbench.nn.contranorm`).

Differences from HF, deliberately:
  * A row whose `attention_mask` is all zero: HF adds finfo(float32).min to every logit, so each
    query averages all N values uniformly; here the softmax mechanism gives a query with no key
    a zero attention output (attention/softmax.py), so the attention sub-layer adds only the
    output projection's bias. Rows with at least one real token are identical, including the
    outputs at padded positions (which attend to the real keys in both).
  * Training only: torch's `nn.Embedding(padding_idx)` never updates the pad rows; here they get
    gradients like any row. Their gradient is zero anyway when the pad positions are masked
    (their outputs reach no loss: keys masked, head on token 0). Dropout masks are drawn from JAX
    keys, so they differ from torch's draws.
  * Token ids >= vocab_size or type ids >= type_vocab_size are not checked (JAX clamps gathers
    under jit; torch raises). Sequences longer than the position table are refused (ValueError,
    at trace time).
Compute dtype (`dtype`): embeddings are summed in float32 and cast after their LayerNorm;
blocks compute in `dtype` from float32 parameters (LayerNorm statistics in float32, as
`attnbench.nn.layers`); the head runs in float32 on the token-0 features.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

import attention
from attnbench import errors
from attnbench.nn import contranorm, layers

__all__ = [
    "POSITION_IDS",
    "HEADS",
    "DEFAULTS",
    "CONTRANORM_FIELDS",
    "CONTRANORM_AT",
    "settings",
    "check_contranorm",
    "contranorm_settings",
    "apply_contranorm",
    "layer_contranorm",
    "position_ids",
    "BertLayer",
    "BertEncoderModel",
]

POSITION_IDS = ("sequential", "from_padding")
HEADS = ("bert", "roberta")

# Optional settings and their defaults (BERT-base's HF config.json values where it has them).
DEFAULTS = dict(
    type_vocab_size=2,
    layer_norm_eps=1e-12,
    hidden_dropout=0.1,
    attention_dropout=0.1,
    classifier_dropout=None,
    gelu="erf",
    position_ids="sequential",
    pad_token_id=0,
    head="bert",
    num_labels=2,
    initializer_range=0.02,
    dtype="float32",
    # ContraNorm (the module docstring): off at scale 0
    contranorm_scale=0.0,
    contranorm_temperature=1.0,
    contranorm_dual=False,
    contranorm_identity=True,
    contranorm_at="attention",
)
_REQUIRED = ("vocab_size", "dim", "num_layers", "num_heads", "mlp_dim", "max_positions")
# ContraNorm's settings (a checkpoint loader takes them besides the checkpoint's own sizes:
# `contranorm_settings`) and the places `contranorm_at` names.
CONTRANORM_FIELDS = (
    "contranorm_scale",
    "contranorm_temperature",
    "contranorm_dual",
    "contranorm_identity",
    "contranorm_at",
)
CONTRANORM_AT = ("attention", "ffn")


def settings(cfg) -> dict:
    """The settings (a dict or ConfigDict) as a plain dict with every default filled in; a
    missing required field or an unknown value is a ConfigError naming it.

    Required: vocab_size, dim, num_layers, num_heads, mlp_dim, max_positions (the position
    table's rows, HF `max_position_embeddings`). Optional: see `DEFAULTS`.
    """
    m = dict(cfg.to_dict() if hasattr(cfg, "to_dict") else cfg)
    missing = [f for f in _REQUIRED if m.get(f) is None]
    if missing:
        raise errors.ConfigError(
            f"encoder settings lack {', '.join(missing)}; required: {', '.join(_REQUIRED)}"
        )
    unknown = sorted(set(m) - set(_REQUIRED) - set(DEFAULTS))
    if unknown:
        raise errors.ConfigError(
            f"encoder settings: unknown field(s) {', '.join(unknown)}; known: "
            f"{', '.join(_REQUIRED + tuple(DEFAULTS))}"
        )
    s = {**DEFAULTS, **m}
    for field, known in (
        ("position_ids", POSITION_IDS),
        ("head", HEADS),
        ("gelu", layers.GELUS),
    ):
        if s[field] not in known:
            raise errors.ConfigError(
                f"encoder settings: {field}={s[field]!r} is unknown; known: {', '.join(known)}"
            )
    if s["dim"] % s["num_heads"]:
        raise errors.ConfigError(
            f"encoder settings: dim={s['dim']} is not divisible by num_heads={s['num_heads']}"
        )
    if int(s["num_labels"]) < 1:
        raise errors.ConfigError(f"encoder settings: num_labels={s['num_labels']} must be >= 1")
    if s["position_ids"] == "from_padding" and s["pad_token_id"] + 1 >= s["max_positions"]:
        raise errors.ConfigError(
            f"encoder settings: pad_token_id={s['pad_token_id']} leaves no position below "
            f"max_positions={s['max_positions']}"
        )
    check_contranorm(s, "encoder settings")
    return s


def check_contranorm(s: dict, what: str) -> None:
    """ConfigError naming the first bad `contranorm_*` setting of `s` (shared with ALBERT)."""
    try:
        contranorm.check(s["contranorm_scale"], s["contranorm_temperature"])
    except ValueError as e:
        raise errors.ConfigError(
            f"{what}: {e} (contranorm_scale / contranorm_temperature)"
        ) from None
    for field in ("contranorm_dual", "contranorm_identity"):
        if not isinstance(s[field], bool):
            raise errors.ConfigError(f"{what}: {field}={s[field]!r} must be true or false")
    if s["contranorm_at"] not in CONTRANORM_AT:
        raise errors.ConfigError(
            f"{what}: contranorm_at={s['contranorm_at']!r} is unknown; known: "
            f"{', '.join(CONTRANORM_AT)}"
        )


def contranorm_settings(cfg) -> dict:
    """The `contranorm_*` fields present in `cfg` (a model section, settings, or any mapping):
    what a checkpoint loader takes besides the checkpoint's own sizes
    (`hf_encoders.load_hf_encoder(..., contranorm=...)`)."""
    m = dict(cfg.to_dict() if hasattr(cfg, "to_dict") else cfg)
    return {k: m[k] for k in CONTRANORM_FIELDS if k in m}


def apply_contranorm(layer, x, mask, at: str):
    """`x` through the layer's ContraNorm when it sits at `at` ("attention" / "ffn") with a
    nonzero scale, else `x` itself (`layer.contranorm`: the settings, see `BertLayer`)."""
    cn = layer.contranorm
    if cn["at"] != at or cn["scale"] == 0:
        return x
    return contranorm.contranorm(
        x,
        scale=cn["scale"],
        temperature=cn["temperature"],
        mask=mask,
        dual=cn["dual"],
        identity=cn["identity"],
    )


def layer_contranorm(s: dict) -> dict:
    """A layer's ContraNorm settings from the encoder settings `s`."""
    return dict(
        scale=float(s["contranorm_scale"]),
        temperature=float(s["contranorm_temperature"]),
        dual=bool(s["contranorm_dual"]),
        identity=bool(s["contranorm_identity"]),
        at=s["contranorm_at"],
    )


def position_ids(input_ids, scheme: str, pad_token_id: int):
    """`[B, N]` position ids: "sequential" 0..N-1 (BERT); "from_padding" (RoBERTa, HF
    `create_position_ids_from_input_ids`): pad_token_id + running count of non-pad tokens, and
    pad_token_id at pad tokens."""
    input_ids = jnp.asarray(input_ids)
    if scheme == "sequential":
        return jnp.broadcast_to(jnp.arange(input_ids.shape[1]), input_ids.shape)
    if scheme == "from_padding":
        real = (input_ids != pad_token_id).astype(jnp.int32)
        return jnp.cumsum(real, axis=1) * real + pad_token_id
    raise ValueError(f"unknown position ids {scheme!r}; known: {', '.join(POSITION_IDS)}")


class BertLayer(nnx.Module):
    """One post-LN block: h = LN(x + drop(attn(x))); out = LN(h + drop(fc2(gelu(fc1(h))))), with
    ContraNorm on the residual sum before one of the two LayerNorms when its scale is nonzero
    (`contranorm_at`: "attention" before `attn_norm`, "ffn" before `out_norm`)."""

    def __init__(
        self,
        s: dict,
        mech: attention.Mechanism,
        *,
        layer_index: int,
        max_len: int,
        dtype,
        rngs: nnx.Rngs,
    ):
        dim, init = s["dim"], nnx.initializers.normal(s["initializer_range"])
        self.attn = layers.Attention(
            dim,
            s["num_heads"],
            dim,
            mech,
            max_len=max_len,
            layer_index=layer_index,
            num_layers=s["num_layers"],
            dtype=dtype,
            qkv_bias=True,
            out_bias=True,
            kernel_init=init,
            rngs=rngs,
        )
        eps = s["layer_norm_eps"]
        self.attn_norm = nnx.LayerNorm(dim, epsilon=eps, dtype=dtype, rngs=rngs)
        self.fc1 = nnx.Linear(dim, s["mlp_dim"], kernel_init=init, dtype=dtype, rngs=rngs)
        self.fc2 = nnx.Linear(s["mlp_dim"], dim, kernel_init=init, dtype=dtype, rngs=rngs)
        self.out_norm = nnx.LayerNorm(dim, epsilon=eps, dtype=dtype, rngs=rngs)
        self.rate = float(s["hidden_dropout"])
        self.approximate = layers.check_gelu(s["gelu"])
        self.contranorm = layer_contranorm(s)

    def __call__(self, x, *, mask=None, train: bool = False, key=None):
        k_attn, k1, k2 = layers.split_keys(key, 3)
        a = self.attn(x, mask=mask, train=train, key=k_attn)
        h = x + layers.dropout(a, self.rate, k1, train)
        h = self.attn_norm(apply_contranorm(self, h, mask, "attention"))
        f = self.fc2(jax.nn.gelu(self.fc1(h), approximate=self.approximate))
        f = h + layers.dropout(f, self.rate, k2, train)
        return self.out_norm(apply_contranorm(self, f, mask, "ffn"))


class BertEncoderModel(nnx.Module):
    """BERT / RoBERTa encoder + sequence-classification head (the module docstring).

    Args (constructor):
      cfg: the settings (`settings`; dict or ConfigDict).
      attention_cfg: mapping with the mechanism `name` and its hyper-parameters; when it does
        not set `dropout_rate` and the mechanism has one, `attention_dropout` is used.
      rngs: parameter initialisation.
    """

    def __init__(self, cfg, attention_cfg, *, rngs: nnx.Rngs):
        s = settings(cfg)
        self.settings = s
        hp = dict(attention_cfg.to_dict() if hasattr(attention_cfg, "to_dict") else attention_cfg)
        if "name" in hp and "dropout_rate" not in hp:
            if "dropout_rate" in attention.defaults(hp["name"]):
                hp["dropout_rate"] = float(s["attention_dropout"])
        self.attention_cfg = hp
        mech = layers.mechanism(hp)
        dim, std = s["dim"], s["initializer_range"]
        self.dtype = layers.compute_dtype(s["dtype"])
        self.max_len = self.max_sequence_length(s)
        init = nnx.initializers.normal(std)
        pad = s["pad_token_id"]
        self.word_embeddings = nnx.Embed(s["vocab_size"], dim, embedding_init=init, rngs=rngs)
        self.position_embeddings = nnx.Embed(
            s["max_positions"], dim, embedding_init=init, rngs=rngs
        )
        self.token_type_embeddings = nnx.Embed(
            s["type_vocab_size"], dim, embedding_init=init, rngs=rngs
        )
        _zero_row(self.word_embeddings, pad)
        if s["position_ids"] == "from_padding":
            _zero_row(self.position_embeddings, pad)
        self.embed_norm = nnx.LayerNorm(dim, epsilon=s["layer_norm_eps"], rngs=rngs)
        self.layers = layers.block_stack(
            lambda i: BertLayer(
                s, mech, layer_index=i, max_len=self.max_len, dtype=self.dtype, rngs=rngs
            ),
            s["num_layers"],
        )
        n = int(s["num_labels"])
        if s["head"] == "bert":
            self.pooler = nnx.Linear(dim, dim, kernel_init=init, rngs=rngs)
            self.classifier = nnx.Linear(dim, n, kernel_init=init, rngs=rngs)
        else:
            self.dense = nnx.Linear(dim, dim, kernel_init=init, rngs=rngs)
            self.out_proj = nnx.Linear(dim, n, kernel_init=init, rngs=rngs)
        rate = s["classifier_dropout"]
        self.head_rate = float(s["hidden_dropout"] if rate is None else rate)

    @staticmethod
    def max_sequence_length(s: dict) -> int:
        """The longest input the position table allows: max_positions ("sequential"), or
        max_positions - pad_token_id - 1 ("from_padding": RoBERTa's 514 rows give 512)."""
        if s["position_ids"] == "from_padding":
            return int(s["max_positions"]) - int(s["pad_token_id"]) - 1
        return int(s["max_positions"])

    def encode(
        self, input_ids, *, attention_mask=None, token_type_ids=None, train: bool = False, key=None
    ):
        """The sequence output `[B, N, dim]` (HF `last_hidden_state`) in the compute dtype.

        input_ids: int `[B, N]`; attention_mask: `[B, N]` 1/True for real tokens (None: all);
        token_type_ids: int `[B, N]` (None: zeros); key: dropout key when `train`.
        """
        input_ids = jnp.asarray(input_ids)
        if input_ids.ndim != 2:
            raise ValueError(f"input_ids must be [B, N]; got shape {input_ids.shape}")
        n = input_ids.shape[1]
        if n > self.max_len:
            raise ValueError(f"sequence length {n} exceeds the encoder's {self.max_len} positions")
        s = self.settings
        keys = layers.split_keys(key, len(self.layers) + 1)
        pos = position_ids(input_ids, s["position_ids"], s["pad_token_id"])
        types = jnp.zeros_like(input_ids) if token_type_ids is None else token_type_ids
        x = (
            self.word_embeddings(input_ids)
            + self.position_embeddings(pos)
            + self.token_type_embeddings(jnp.asarray(types))
        )
        x = layers.dropout(self.embed_norm(x), s["hidden_dropout"], keys[0], train)
        x = x.astype(self.dtype)
        mask = None if attention_mask is None else jnp.asarray(attention_mask) != 0
        for layer, k in zip(self.layers, keys[1:], strict=True):
            x = layer(x, mask=mask, train=train, key=k)
        return x

    def head(self, features, *, train: bool = False, key=None):
        """Logits `[B, num_labels]` float32 from the sequence output (its token 0)."""
        k1, k2 = layers.split_keys(key, 2)
        x = features[:, 0].astype(jnp.float32)
        if self.settings["head"] == "bert":
            x = jnp.tanh(self.pooler(x))
            return self.classifier(layers.dropout(x, self.head_rate, k1, train))
        x = jnp.tanh(self.dense(layers.dropout(x, self.head_rate, k1, train)))
        return self.out_proj(layers.dropout(x, self.head_rate, k2, train))

    def __call__(
        self, input_ids, *, attention_mask=None, token_type_ids=None, train: bool = False, key=None
    ):
        """Logits `[B, num_labels]` float32 (arguments as `encode`)."""
        k_enc, k_head = layers.split_keys(key, 2)
        h = self.encode(
            input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            train=train,
            key=k_enc,
        )
        return self.head(h, train=train, key=k_head)


def _zero_row(embed: nnx.Embed, row: int) -> None:
    """Zeroes the `padding_idx` row, as torch's `nn.Embedding(padding_idx=...)` at init."""
    table = embed.embedding.get_value()
    if 0 <= row < table.shape[0]:
        embed.embedding.set_value(table.at[row].set(0.0))
