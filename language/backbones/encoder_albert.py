"""ALBERT encoders (ALBERT-base-v2) with a sequence-classification head, whose self-attention is
any registered `attention` mechanism (GFSA, arXiv 2312.04234 Sec. 5.1 / Table 1, swaps it in the
shared layer). With softmax attention and the same weights the forward pass is that of Hugging
Face transformers' `AlbertForSequenceClassification` (huggingface/transformers
`models/albert/modeling_albert.py`: AlbertEmbeddings, AlbertAttention, AlbertLayer,
AlbertLayerGroup, AlbertTransformer, AlbertModel's pooler; `configuration_albert.py` for the
defaults; read for the facts below, not copied). ALBERT: Lan et al., arXiv 1909.11942.

    model = AlbertEncoderModel(settings, {"name": "softmax"}, rngs=nnx.Rngs(params=0))
    logits = model(input_ids, attention_mask=mask, token_type_ids=types)      # [B, num_labels]
    h = model.encode(input_ids, attention_mask=mask)                         # [B, N, dim]

The call interface is `language.backbones.encoder_bert.BertEncoderModel`'s (`encode`, `head`,
`__call__`, `max_len`, `settings`, `attention_cfg`). Checkpoints: `language.hf_albert`.

Architecture (HF names in parentheses):
  * Factorised embedding (AlbertEmbeddings): word + position (0..N-1) + token-type embeddings of
    width `embedding_dim` E (128 in albert-base-v2), LayerNorm in E (`layer_norm_eps`, 1e-12),
    dropout (`hidden_dropout`), then a Linear E -> `dim` (`encoder.embedding_hidden_mapping_in`).
    Token types default to zeros (HF's buffered `token_type_ids`).
  * Shared layers (AlbertTransformer): `num_groups` groups (HF `num_hidden_groups`) of
    `inner_group_num` distinct layers each; the encoder makes `num_layers` steps (HF
    `num_hidden_layers`), step i applying every layer of group `int(i / (num_layers /
    num_groups))` (HF's expression, float division included) in order. albert-base-v2: one group
    of one layer applied 12 times, so the encoder owns the parameters of one layer.
  * Each layer (AlbertLayer, post-LN): h = LN(x + drop(attn(x))) (AlbertAttention: q/k/v with
    biases, `dense` with bias, dropout `hidden_dropout` on its output, `LayerNorm`), then
    out = LN(h + ffn_output(act(ffn(h)))) (`ffn`, `ffn_output`, `full_layer_layer_norm`). As in
    HF there is NO dropout on the feed-forward output (AlbertLayer defines `dropout` but its
    `ff_chunk` does not apply it; the original TF code did). The attention is
    `attnbench.nn.layers.Attention` with the mechanism from `attention_cfg`; softmax is HF's
    scaled dot product with dropout on the probabilities (`attention_dropout`, the mechanism's
    `dropout_rate`). The key-padding mask is `attention_mask != 0` `[B, N]`.
  * A mechanism's own arrays live in the layer that owns them, so they are shared like the
    layer's weights: GFSA's w_K is one value per head for the whole albert-base-v2 encoder ("12
    for ALBERT", GFSA Sec. 5.1; jeongwhanchoi/GFSA `NLP/transformers/models/albert/
    modeling_albert.py` puts `w_K` in AlbertAttention). A mechanism's `layer_index` /
    `num_layers` count the distinct layers (g * inner_group_num + j of num_groups *
    inner_group_num), not the steps; GFSA's `even_layers_only` is refused where layers are
    shared (a shared layer is every step at once; our choice: no paper runs GFSA_even on ALBERT).
  * GELU (`gelu`): "tanh" is HF's `hidden_act="gelu_new"` (albert-base-v2's), "erf" its exact
    "gelu".
  * Head (AlbertModel pooler + AlbertForSequenceClassification): tanh(pooler(h[:, 0])) ->
    dropout (`classifier_dropout`, HF `classifier_dropout_prob`, 0.1; None: `hidden_dropout`) ->
    classifier Linear(num_labels). `num_labels = 1` is HF's regression.
  * Initialisation (HF `AlbertPreTrainedModel._init_weights`): every Linear and Embedding weight
    normal(0, `initializer_range` = 0.02), biases zero, LayerNorm ones/zeros, the word
    embedding's `pad_token_id` row zero (`nn.Embedding(padding_idx)`; none when it is -1, HF's
    `pad_token_id=None`).

ContraNorm (Guo et al., ICLR 2023, arXiv:2303.06562; `attnbench.nn.contranorm`), GFSA Table 1's
"ALBERT-base + ContraNorm": as `encoder_bert`'s (the same `contranorm_*` settings), in the shared
layer, so every step applies it. `contranorm_at` "attention" (default) is the residual sum of
the attention sub-layer before its LayerNorm, where Guo et al. put it in BERT (their ALBERT
code, github.com/PKU-ML/ContraNorm `BERT_gleu/transformers/models/albert/modeling_albert.py`,
numbers its positions differently: there this is `--pos 4`, and `--pos 7`, the number their
README gives as the paper's default for BERT, is the feed-forward sum before
`full_layer_layer_norm`: our "ffn"). Which one GFSA's authors ran for ALBERT is not stated; we
place it as in BERT (our choice). Their ALBERT class computes X - s A X (no identity term), so
`contranorm_identity` defaults to false here; no temperature (tau = 1), no dual normalisation.
The update has no parameters, so a checkpoint loads unchanged.

Differences from HF, deliberately (the same as encoder_bert's):
  * A row whose `attention_mask` is all zero: HF's additive mask makes each query average all N
    values uniformly; here the softmax mechanism gives a query with no key a zero attention
    output (attention/softmax.py). Rows with at least one real token are identical, including
    the outputs at padded positions.
  * Training only: the pad row of the word embedding gets gradients like any row (torch's
    `padding_idx` freezes it); dropout masks come from JAX keys (one per step of a shared layer,
    as torch draws anew at each application).
  * Token ids >= vocab_size or type ids >= type_vocab_size are not checked (JAX clamps gathers
    under jit; torch raises). Sequences longer than the position table are refused (ValueError,
    at trace time).
Compute dtype (`dtype`): embeddings are summed and normalised in float32 and cast before the
E -> dim projection; blocks compute in `dtype` from float32 parameters (LayerNorm statistics in
float32, as `attnbench.nn.layers`); the head runs in float32 on the token-0 features.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

import attention
from attnbench import errors
from attnbench.nn import layers
from language.backbones import encoder_bert

__all__ = [
    "DEFAULTS",
    "settings",
    "group_index",
    "schedule",
    "AlbertLayer",
    "AlbertEncoderModel",
]

# Optional settings and their defaults (HF AlbertConfig's, which albert-base-v2 keeps).
DEFAULTS = dict(
    num_groups=1,
    inner_group_num=1,
    type_vocab_size=2,
    layer_norm_eps=1e-12,
    hidden_dropout=0.0,
    attention_dropout=0.0,
    classifier_dropout=0.1,
    gelu="tanh",
    pad_token_id=0,
    num_labels=2,
    initializer_range=0.02,
    dtype="float32",
    # ContraNorm (the module docstring): off at scale 0; Guo et al.'s ALBERT form X - s A X
    contranorm_scale=0.0,
    contranorm_temperature=1.0,
    contranorm_dual=False,
    contranorm_identity=False,
    contranorm_at="attention",
)
_REQUIRED = (
    "vocab_size",
    "embedding_dim",
    "dim",
    "num_layers",
    "num_heads",
    "mlp_dim",
    "max_positions",
)
_POSITIVE = _REQUIRED + ("num_groups", "inner_group_num", "type_vocab_size", "num_labels")


def settings(cfg) -> dict:
    """The settings (a dict or ConfigDict) as a plain dict with every default filled in; a
    missing required field or an unknown or invalid value is a ConfigError naming it.

    Required: vocab_size, embedding_dim (HF `embedding_size`), dim (`hidden_size`), num_layers
    (`num_hidden_layers`: steps), num_heads, mlp_dim (`intermediate_size`), max_positions
    (`max_position_embeddings`). Optional: see `DEFAULTS`.
    """
    m = dict(cfg.to_dict() if hasattr(cfg, "to_dict") else cfg)
    missing = [f for f in _REQUIRED if m.get(f) is None]
    if missing:
        raise errors.ConfigError(
            f"albert settings lack {', '.join(missing)}; required: {', '.join(_REQUIRED)}"
        )
    unknown = sorted(set(m) - set(_REQUIRED) - set(DEFAULTS))
    if unknown:
        raise errors.ConfigError(
            f"albert settings: unknown field(s) {', '.join(unknown)}; known: "
            f"{', '.join(_REQUIRED + tuple(DEFAULTS))}"
        )
    s = {**DEFAULTS, **m}
    for field in _POSITIVE:
        v = s[field]
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise errors.ConfigError(f"albert settings: {field}={v!r} must be a positive integer")
    if s["gelu"] not in layers.GELUS:
        raise errors.ConfigError(
            f"albert settings: gelu={s['gelu']!r} is unknown; known: {', '.join(layers.GELUS)}"
        )
    if s["dim"] % s["num_heads"]:
        raise errors.ConfigError(
            f"albert settings: dim={s['dim']} is not divisible by num_heads={s['num_heads']}"
        )
    encoder_bert.check_contranorm(s, "albert settings")
    return s


def group_index(step: int, num_layers: int, num_groups: int) -> int:
    """The group HF's AlbertTransformer applies at step `step`: int(step / (L / G))."""
    return int(step / (num_layers / num_groups))


def schedule(s: dict) -> list[int]:
    """The distinct layer (g * inner_group_num + j) applied at each of the
    num_layers * inner_group_num applications, in order."""
    inner = s["inner_group_num"]
    return [
        group_index(i, s["num_layers"], s["num_groups"]) * inner + j
        for i in range(s["num_layers"])
        for j in range(inner)
    ]


class AlbertLayer(nnx.Module):
    """One post-LN ALBERT layer: h = LN(x + drop(attn(x))); out = LN(h + ffn_out(act(ffn(h))))
    (no dropout on the feed-forward branch, as HF's AlbertLayer), with ContraNorm on the
    residual sum before one of the LayerNorms when its scale is nonzero (`contranorm_at`)."""

    def __init__(
        self,
        s: dict,
        mech: attention.Mechanism,
        *,
        layer_index: int,
        num_distinct: int,
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
            num_layers=num_distinct,
            dtype=dtype,
            qkv_bias=True,
            out_bias=True,
            kernel_init=init,
            rngs=rngs,
        )
        eps = s["layer_norm_eps"]
        self.attn_norm = nnx.LayerNorm(dim, epsilon=eps, dtype=dtype, rngs=rngs)
        self.ffn = nnx.Linear(dim, s["mlp_dim"], kernel_init=init, dtype=dtype, rngs=rngs)
        self.ffn_output = nnx.Linear(s["mlp_dim"], dim, kernel_init=init, dtype=dtype, rngs=rngs)
        self.out_norm = nnx.LayerNorm(dim, epsilon=eps, dtype=dtype, rngs=rngs)
        self.rate = float(s["hidden_dropout"])
        self.approximate = layers.check_gelu(s["gelu"])
        self.contranorm = encoder_bert.layer_contranorm(s)

    def __call__(self, x, *, mask=None, train: bool = False, key=None):
        k_attn, k_out = layers.split_keys(key, 2)
        a = self.attn(x, mask=mask, train=train, key=k_attn)
        h = x + layers.dropout(a, self.rate, k_out, train)
        h = self.attn_norm(encoder_bert.apply_contranorm(self, h, mask, "attention"))
        f = h + self.ffn_output(jax.nn.gelu(self.ffn(h), approximate=self.approximate))
        return self.out_norm(encoder_bert.apply_contranorm(self, f, mask, "ffn"))


class AlbertEncoderModel(nnx.Module):
    """ALBERT encoder + sequence-classification head (the module docstring).

    Args (constructor):
      cfg: the settings (`settings`; dict or ConfigDict).
      attention_cfg: mapping with the mechanism `name` and its hyper-parameters; when it does
        not set `dropout_rate` and the mechanism has one, `attention_dropout` is used.
      rngs: parameter initialisation.

    Attributes: `layers` (the distinct layers, g * inner_group_num + j), `steps` (the distinct
    layer applied at each application, `schedule`), `max_len`, `settings`, `attention_cfg`.
    """

    def __init__(self, cfg, attention_cfg, *, rngs: nnx.Rngs):
        s = settings(cfg)
        self.settings = s
        hp = dict(attention_cfg.to_dict() if hasattr(attention_cfg, "to_dict") else attention_cfg)
        if "name" in hp and "dropout_rate" not in hp:
            if "dropout_rate" in attention.defaults(hp["name"]):
                hp["dropout_rate"] = float(s["attention_dropout"])
        num_distinct = s["num_groups"] * s["inner_group_num"]
        self.steps = tuple(schedule(s))
        if hp.get("even_layers_only") and len(self.steps) != num_distinct:
            raise errors.ConfigError(
                f"attention {hp.get('name')!r} with even_layers_only: ALBERT shares its layers "
                f"({num_distinct} distinct layer(s) applied {len(self.steps)} times), so a layer "
                "cannot be GFSA at some steps and plain at others; drop even_layers_only"
            )
        self.attention_cfg = hp
        mech = layers.mechanism(hp)
        e, dim, std = s["embedding_dim"], s["dim"], s["initializer_range"]
        self.dtype = layers.compute_dtype(s["dtype"])
        self.max_len = int(s["max_positions"])
        init = nnx.initializers.normal(std)
        self.word_embeddings = nnx.Embed(s["vocab_size"], e, embedding_init=init, rngs=rngs)
        self.position_embeddings = nnx.Embed(s["max_positions"], e, embedding_init=init, rngs=rngs)
        self.token_type_embeddings = nnx.Embed(
            s["type_vocab_size"], e, embedding_init=init, rngs=rngs
        )
        table = self.word_embeddings.embedding.get_value()
        if 0 <= s["pad_token_id"] < table.shape[0]:  # nn.Embedding(padding_idx) at init
            self.word_embeddings.embedding.set_value(table.at[s["pad_token_id"]].set(0.0))
        self.embed_norm = nnx.LayerNorm(e, epsilon=s["layer_norm_eps"], rngs=rngs)
        self.embed_proj = nnx.Linear(e, dim, kernel_init=init, dtype=self.dtype, rngs=rngs)
        self.layers = layers.block_stack(
            lambda i: AlbertLayer(
                s,
                mech,
                layer_index=i,
                num_distinct=num_distinct,
                max_len=self.max_len,
                dtype=self.dtype,
                rngs=rngs,
            ),
            num_distinct,
        )
        self.pooler = nnx.Linear(dim, dim, kernel_init=init, rngs=rngs)
        self.classifier = nnx.Linear(dim, int(s["num_labels"]), kernel_init=init, rngs=rngs)
        rate = s["classifier_dropout"]
        self.head_rate = float(s["hidden_dropout"] if rate is None else rate)

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
        keys = layers.split_keys(key, len(self.steps) + 1)
        pos = jnp.broadcast_to(jnp.arange(n), input_ids.shape)
        types = jnp.zeros_like(input_ids) if token_type_ids is None else token_type_ids
        x = (
            self.word_embeddings(input_ids)
            + self.position_embeddings(pos)
            + self.token_type_embeddings(jnp.asarray(types))
        )
        x = layers.dropout(self.embed_norm(x), s["hidden_dropout"], keys[0], train)
        x = self.embed_proj(x.astype(self.dtype))
        mask = None if attention_mask is None else jnp.asarray(attention_mask) != 0
        for step, k in zip(self.steps, keys[1:], strict=True):
            x = self.layers[step](x, mask=mask, train=train, key=k)
        return x

    def head(self, features, *, train: bool = False, key=None):
        """Logits `[B, num_labels]` float32 from the sequence output (its token 0)."""
        x = jnp.tanh(self.pooler(features[:, 0].astype(jnp.float32)))
        return self.classifier(layers.dropout(x, self.head_rate, key, train))

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
