"""Hugging Face ALBERT checkpoints (albert-base-v2) loaded into
`language.backbones.encoder_albert`, and ALBERT's tokeniser.

    model, config = hf_albert.load_hf_albert("path/to/albert-base-v2", num_labels=2)
    model, config = hf_albert.load_hf_albert("path/to/albert-base-v2", num_labels=3,
                                             attention_cfg={"name": "gfsa", "order": 3})
    tok = hf_albert.albert_tokenizer("path/to/albert-base-v2")  # for language.data.glue.encode

A checkpoint directory holds `config.json` and `model.safetensors` (HF `save_pretrained`), read
with the `safetensors` package through `language.hf_encoders` (`language.gpt2.read_safetensors`:
BF16 tensors widened to float32, exactly). The conventions are those of `language.hf_encoders`
(BERT / RoBERTa).

config.json (HF `AlbertConfig`, models/albert/configuration_albert.py; `model_type` must be
"albert"; any other key takes AlbertConfig's default when absent, `CONFIG_DEFAULTS`, which are
albert-xxlarge's sizes): `vocab_size`, `embedding_size`, `hidden_size`, `num_hidden_layers`,
`num_hidden_groups`, `inner_group_num`, `num_attention_heads`, `intermediate_size`,
`max_position_embeddings`, `type_vocab_size`, `layer_norm_eps`, `hidden_act` ("gelu_new" /
"gelu_pytorch_tanh" = tanh GELU, "gelu" = exact erf GELU), `hidden_dropout_prob`,
`attention_probs_dropout_prob`, `classifier_dropout_prob` (None: hidden_dropout_prob),
`initializer_range`, `pad_token_id`, `position_embedding_type` ("absolute" only), `id2label` /
`num_labels` / `problem_type`. Keys HF ignores (albert-base-v2's `down_scale_factor`,
`gap_size`, `net_structure_type`, `num_memory_blocks`, ...) are ignored here too.

Tensor names (HF `AlbertModel` state dict; an `albert.` prefix, as the task models save, is
stripped; torch `nn.Linear` weights are `[out, in]` and are transposed; the q/k/v out axis and
the `dense` in axis are heads x head_dim):
  embeddings.{word,position,token_type}_embeddings.weight  [*, embedding_size]
  embeddings.LayerNorm.{weight,bias}                       [embedding_size]
  encoder.embedding_hidden_mapping_in.{weight,bias}
  encoder.albert_layer_groups.{g}.albert_layers.{j}.attention.{query,key,value,dense}.*
  encoder.albert_layer_groups.{g}.albert_layers.{j}.attention.LayerNorm.*
  encoder.albert_layer_groups.{g}.albert_layers.{j}.{ffn,ffn_output,full_layer_layer_norm}.*
  pooler.{weight,bias}                                     (AlbertModel's pooler: a Linear)
  classifier.{weight,bias}                                 (AlbertForSequenceClassification)
for g < num_hidden_groups, j < inner_group_num. Old (TensorFlow-converted) checkpoints name
LayerNorm parameters `gamma` / `beta`: read as `weight` / `bias`.

Skipped by name (`IGNORED`): the buffers `embeddings.position_ids`, `embeddings.token_type_ids`;
the pre-training heads of AlbertForPreTraining / AlbertForMaskedLM, `predictions.bias`,
`predictions.{dense,LayerNorm,decoder}.{weight,bias}`, `sop_classifier.classifier.{weight,bias}`.
Any other tensor, a missing one, or one of the wrong shape is a DataError naming the file and the
tensor (and the expected shape).

Fresh parameters (listed in the returned config's `initialised`, as HF's "newly initialized"
warning): a checkpoint without the classification head gets a new one, and one without the
pooler (AlbertForMaskedLM saves none) a new pooler, drawn as HF `_init_weights`: weights
normal(0, initializer_range), biases zero. The head's size is `num_labels`, else the
checkpoint's (`id2label`, then `num_labels`, then HF's default 2). A saved head with another
number of labels than `num_labels` asks for is a DataError. A mechanism with its own parameters
(GFSA's w_K, one per head for the shared layer) keeps their initial values.

Tokeniser (`albert_tokenizer`): ALBERT uses a SentencePiece Unigram model (`spiece.model`); HF
ships albert-base-v2 with its fast-tokeniser conversion `tokenizer.json` too, which is read with
`tokenizers.Tokenizer.from_file` when present. Without it, `spiece.model` is converted as HF
`convert_slow_tokenizer.AlbertConverter` does, which needs the optional `sentencepiece` package
(its `sentencepiece_model_pb2`, which needs `protobuf`) to read the file; missing either is a
DataError saying to add tokenizer.json or install them. What HF's ALBERT tokeniser does, and so
both paths here:
  * Normaliser (AlbertTokenizer `do_lower_case=True`, `keep_accents=False`,
    `remove_space=True`; tokenizer_config.json may change the first two): "``" and "''" become
    '"'; NFKD then accents (combining marks) stripped; lowercased; the SentencePiece model's own
    `precompiled_charsmap` (nmt_nfkc) applied; runs of spaces become one.
  * Pre-tokeniser: Metaspace, spaces become "▁" and one is prepended to the text ("always").
  * Model: Unigram with the pieces' scores; a piece "<digit>," is lowered by 100 (HF
    `check_number_comma`, so that "1," splits as the slow tokeniser splits it); unknown text
    is `<unk>` (`trainer_spec.unk_id`), no byte fallback. The model's control pieces (such as
    `<pad>`, `[CLS]`, `[SEP]`) are special added tokens and its user-defined pieces plain added
    tokens, never split or normalised.
  * Post-processor: `[CLS] A [SEP]` and `[CLS] A [SEP] B [SEP]`, token types 0 for
    `[CLS] A [SEP]` and 1 for `B [SEP]` (AlbertTokenizer.create_token_type_ids_from_sequences).
  * Padding: `<pad>` (id 0 in albert-base-v2), as AlbertTokenizer's pad_token.
A tokenizer.json whose post-processor does not give `[CLS] A [SEP] B [SEP]` with those token
types is refused (DataError), so a pair is never encoded silently without its special tokens.
"""

from __future__ import annotations

import json
import os

import ml_collections
from flax import nnx

from attnbench import errors, extras
from language import hf_encoders  # the safetensors reading and torch-to-flax copying helpers
from language.backbones import encoder_albert

__all__ = [
    "GELUS",
    "CONFIG_DEFAULTS",
    "IGNORED",
    "read_config",
    "settings_from_config",
    "backbone_shapes",
    "head_shapes",
    "load_hf_albert",
    "albert_tokenizer",
]

# HF `hidden_act` -> our `gelu` (transformers.activations: "gelu" is the exact erf form)
GELUS = {"gelu": "erf", "gelu_new": "tanh", "gelu_pytorch_tanh": "tanh"}
# HF AlbertConfig.__init__ defaults (albert-xxlarge's sizes), used where config.json lacks a key
CONFIG_DEFAULTS = dict(
    vocab_size=30000,
    embedding_size=128,
    hidden_size=4096,
    num_hidden_layers=12,
    num_hidden_groups=1,
    num_attention_heads=64,
    intermediate_size=16384,
    inner_group_num=1,
    hidden_act="gelu_new",
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
    max_position_embeddings=512,
    type_vocab_size=2,
    initializer_range=0.02,
    layer_norm_eps=1e-12,
    classifier_dropout_prob=0.1,
    position_embedding_type="absolute",
    pad_token_id=0,
)
_SIZES = (
    "vocab_size",
    "embedding_size",
    "hidden_size",
    "num_hidden_layers",
    "num_hidden_groups",
    "num_attention_heads",
    "intermediate_size",
    "inner_group_num",
    "max_position_embeddings",
    "type_vocab_size",
)
_FLOATS = (
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "initializer_range",
    "layer_norm_eps",
)
IGNORED = frozenset(
    {
        "embeddings.position_ids",
        "embeddings.token_type_ids",
        "predictions.bias",
        "predictions.dense.weight",
        "predictions.dense.bias",
        "predictions.LayerNorm.weight",
        "predictions.LayerNorm.bias",
        "predictions.decoder.weight",
        "predictions.decoder.bias",
        "sop_classifier.classifier.weight",
        "sop_classifier.classifier.bias",
    }
)
_HEAD = ("classifier.bias", "classifier.weight")
_POOLER = ("pooler.bias", "pooler.weight")


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def read_config(directory) -> dict:
    """`directory/config.json` with AlbertConfig's defaults filled in, checked: DataError naming
    the file when it is missing, not JSON, not an ALBERT config, or uses something not
    supported."""
    path = os.path.join(os.fspath(directory), "config.json")
    if not os.path.isfile(path):
        raise errors.DataError(
            f"{path}: no such file; a Hugging Face ALBERT directory holds config.json and "
            "model.safetensors (save_pretrained)"
        )
    try:
        with open(path) as f:
            raw = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise errors.DataError(f"{path}: not a JSON file ({e})") from None
    if not isinstance(raw, dict):
        raise errors.DataError(f"{path}: not a JSON object")
    if raw.get("model_type") != "albert":
        raise errors.DataError(
            f"{path}: model_type={raw.get('model_type')!r}, expected 'albert' (BERT and RoBERTa "
            "load with language.hf_encoders.load_hf_encoder)"
        )
    cfg = {**CONFIG_DEFAULTS, **raw}
    bad = [k for k in _SIZES if not _is_int(cfg[k]) or cfg[k] < 1]
    if bad:
        raise errors.DataError(
            f"{path}: {', '.join(f'{k}={cfg[k]!r}' for k in bad)}: expected positive integers"
        )
    bad = [k for k in _FLOATS if not _is_number(cfg[k]) or cfg[k] < 0]
    p = cfg["classifier_dropout_prob"]
    if p is not None and (not _is_number(p) or p < 0):
        bad.append("classifier_dropout_prob")
    if bad:
        raise errors.DataError(
            f"{path}: {', '.join(f'{k}={cfg[k]!r}' for k in bad)}: expected non-negative numbers"
        )
    if cfg["pad_token_id"] is not None and not _is_int(cfg["pad_token_id"]):
        raise errors.DataError(f"{path}: pad_token_id={cfg['pad_token_id']!r} is not an integer")
    if cfg["hidden_act"] not in GELUS:
        raise errors.DataError(
            f"{path}: hidden_act={cfg['hidden_act']!r} is not supported; known: {', '.join(GELUS)}"
        )
    if cfg["position_embedding_type"] != "absolute":
        raise errors.DataError(
            f"{path}: position_embedding_type={cfg['position_embedding_type']!r} is not "
            "supported (only 'absolute')"
        )
    if cfg["hidden_size"] % cfg["num_attention_heads"]:
        raise errors.DataError(
            f"{path}: hidden_size={cfg['hidden_size']} is not divisible by "
            f"num_attention_heads={cfg['num_attention_heads']}"
        )
    return cfg


def _config_labels(hf: dict) -> int:
    if isinstance(hf.get("id2label"), dict) and hf["id2label"]:
        return len(hf["id2label"])
    return int(hf.get("num_labels", 2))  # PretrainedConfig's default


def settings_from_config(hf: dict, num_labels: int, dtype: str = "float32") -> dict:
    """The `encoder_albert` settings of a checked HF config (`read_config`)."""
    pad = hf["pad_token_id"]
    p = hf["classifier_dropout_prob"]
    return dict(
        vocab_size=hf["vocab_size"],
        embedding_dim=hf["embedding_size"],
        dim=hf["hidden_size"],
        num_layers=hf["num_hidden_layers"],
        num_heads=hf["num_attention_heads"],
        mlp_dim=hf["intermediate_size"],
        max_positions=hf["max_position_embeddings"],
        num_groups=hf["num_hidden_groups"],
        inner_group_num=hf["inner_group_num"],
        type_vocab_size=hf["type_vocab_size"],
        layer_norm_eps=float(hf["layer_norm_eps"]),
        hidden_dropout=float(hf["hidden_dropout_prob"]),
        attention_dropout=float(hf["attention_probs_dropout_prob"]),
        classifier_dropout=None if p is None else float(p),
        gelu=GELUS[hf["hidden_act"]],
        pad_token_id=-1 if pad is None else int(pad),  # -1: no row zeroed at init
        num_labels=int(num_labels),
        initializer_range=float(hf["initializer_range"]),
        dtype=dtype,
    )


def _layer_prefix(g: int, j: int) -> str:
    return f"encoder.albert_layer_groups.{g}.albert_layers.{j}."


def backbone_shapes(s: dict) -> dict:
    """The shape of every tensor of HF `AlbertModel` without its pooler (names without a
    prefix), for settings `s`."""
    e, d, m = s["embedding_dim"], s["dim"], s["mlp_dim"]
    shapes = {
        "embeddings.word_embeddings.weight": (s["vocab_size"], e),
        "embeddings.position_embeddings.weight": (s["max_positions"], e),
        "embeddings.token_type_embeddings.weight": (s["type_vocab_size"], e),
        "embeddings.LayerNorm.weight": (e,),
        "embeddings.LayerNorm.bias": (e,),
        "encoder.embedding_hidden_mapping_in.weight": (d, e),
        "encoder.embedding_hidden_mapping_in.bias": (d,),
    }
    for g in range(s["num_groups"]):
        for j in range(s["inner_group_num"]):
            p = _layer_prefix(g, j)
            for name in ("query", "key", "value", "dense"):
                shapes[f"{p}attention.{name}.weight"] = (d, d)
                shapes[f"{p}attention.{name}.bias"] = (d,)
            shapes |= {
                p + "attention.LayerNorm.weight": (d,),
                p + "attention.LayerNorm.bias": (d,),
                p + "ffn.weight": (m, d),
                p + "ffn.bias": (m,),
                p + "ffn_output.weight": (d, m),
                p + "ffn_output.bias": (d,),
                p + "full_layer_layer_norm.weight": (d,),
                p + "full_layer_layer_norm.bias": (d,),
            }
    return shapes


def head_shapes(s: dict) -> tuple[dict, dict]:
    """`(pooler, classifier)`: the shapes of the pooler's and of the classification head's
    tensors, for settings `s` (its `num_labels`)."""
    d, n = s["dim"], s["num_labels"]
    pooler = {"pooler.weight": (d, d), "pooler.bias": (d,)}
    return pooler, {"classifier.weight": (n, d), "classifier.bias": (n,)}


def load_hf_albert(
    directory,
    *,
    num_labels: int | None = None,
    attention_cfg=None,
    dtype: str = "float32",
    seed: int = 0,
    contranorm=None,
):
    """A `encoder_albert.AlbertEncoderModel` holding the weights of the HF ALBERT checkpoint in
    `directory` (`config.json` + `model.safetensors`; the module docstring).

    Args:
      num_labels: the head's outputs (1 = regression); None: the saved head's, else config's.
      attention_cfg: the mechanism (default softmax); its `dropout_rate` defaults to the
        config's `attention_probs_dropout_prob` when the mechanism has one.
      dtype: the compute dtype ("float32", "bfloat16", ...).
      seed: draws the parameters the checkpoint lacks (a fresh head or pooler, a mechanism's).
      contranorm: `contranorm_*` settings (`encoder_bert.CONTRANORM_FIELDS`) for GFSA Table 1's
        "ALBERT-base + ContraNorm"; ContraNorm has no parameters, so the checkpoint loads
        unchanged (`hf_encoders.with_contranorm`). None: none.

    Returns:
      `(model, config)`: config a ConfigDict with `model` (the settings), `attention`,
      `model_type` ("albert"), `num_labels`, `problem_type` (HF's, or "regression" when
      num_labels is 1 and the config names none), `id2label`, `head_from_checkpoint` (bool),
      `initialised` (HF names of freshly drawn tensors) and `ignored` (names skipped,
      `IGNORED`).

    Raises:
      DataError: a missing or malformed file; a tensor missing, of the wrong shape or unknown;
        a saved head whose size differs from `num_labels`.
      ConfigError: a mechanism without q/k projections, or GFSA's even_layers_only on shared
        layers.
    """
    directory = os.fspath(directory)
    hf = read_config(directory)
    path = os.path.join(directory, "model.safetensors")
    tensors = hf_encoders._read_tensors(path, "albert")
    present = [k for k in _HEAD if k in tensors]
    if present and len(present) < len(_HEAD):
        missing = [k for k in _HEAD if k not in tensors]
        raise errors.DataError(f"{path}: missing tensor(s) {', '.join(missing)} of the head")
    from_checkpoint = bool(present)
    if from_checkpoint:
        weight = tensors["classifier.weight"]
        saved_labels = int(weight.shape[0]) if weight.ndim else 0
        if num_labels is not None and int(num_labels) != saved_labels:
            raise errors.DataError(
                f"{path}: the saved classification head has {saved_labels} outputs but "
                f"num_labels={num_labels} was asked; pass num_labels={saved_labels} (or None), "
                "or start from a checkpoint without a head"
            )
        labels = saved_labels
    else:
        labels = _config_labels(hf) if num_labels is None else int(num_labels)
    if labels < 1:
        raise errors.DataError(f"{directory}: num_labels={labels} must be >= 1")
    s = hf_encoders.with_contranorm(settings_from_config(hf, labels, dtype), contranorm, directory)
    pooler_shapes, classifier_shapes = head_shapes(s)
    expected = backbone_shapes(s) | pooler_shapes | classifier_shapes
    fresh, ignored = hf_encoders.check_tensors(
        path,
        tensors,
        expected,
        known=IGNORED,
        pooler=pooler_shapes,
        classifier=classifier_shapes,
        from_checkpoint=from_checkpoint,
        what="an ALBERT",
    )
    if attention_cfg is None:
        attention_cfg = {"name": "softmax"}
    model = hf_encoders.build_and_assign(
        lambda: encoder_albert.AlbertEncoderModel(s, attention_cfg, rngs=nnx.Rngs(params=seed)),
        lambda m: _assign(m, tensors, s),
    )
    problem = hf.get("problem_type") or ("regression" if labels == 1 else None)
    id2label = hf.get("id2label") if isinstance(hf.get("id2label"), dict) else None
    if id2label is not None and len(id2label) != labels:
        id2label = None  # the config's labels are not this head's
    config = ml_collections.ConfigDict(
        dict(
            model=s,
            attention=dict(model.attention_cfg),
            model_type="albert",
            num_labels=labels,
            problem_type=problem,
            id2label={str(k): v for k, v in (id2label or {}).items()},
            head_from_checkpoint=from_checkpoint,
            initialised=fresh,
            ignored=ignored,
        )
    )
    return model, config


def _assign(model: encoder_albert.AlbertEncoderModel, t: dict, s: dict) -> None:
    """Copies the HF tensors `t` into `model`'s parameters (pooler / head only when present)."""
    d, h = s["dim"], s["num_heads"]
    hd = d // h
    hf_encoders._set(model.word_embeddings.embedding, t["embeddings.word_embeddings.weight"])
    hf_encoders._set(
        model.position_embeddings.embedding, t["embeddings.position_embeddings.weight"]
    )
    hf_encoders._set(
        model.token_type_embeddings.embedding, t["embeddings.token_type_embeddings.weight"]
    )
    hf_encoders._norm(model.embed_norm, t, "embeddings.LayerNorm")
    hf_encoders._linear(model.embed_proj, t, "encoder.embedding_hidden_mapping_in")
    inner = s["inner_group_num"]
    for index, layer in enumerate(model.layers):
        p = _layer_prefix(index // inner, index % inner)
        attn = layer.attn
        if not attn.mechanism.needs_qk:
            raise errors.ConfigError(
                f"attention {attn.mechanism.name!r} has no query/key projections, so the "
                "checkpoint's attention.query/key cannot be loaded; pick a mechanism with q/k "
                "(softmax, gfsa, ...)"
            )
        for name, proj in (("query", attn.query), ("key", attn.key), ("value", attn.value)):
            w, b = t[f"{p}attention.{name}.weight"], t[f"{p}attention.{name}.bias"]
            hf_encoders._set(proj.kernel, w.T.reshape(d, h, hd))  # out axis = heads x head_dim
            hf_encoders._set(proj.bias, b.reshape(h, hd))
        hf_encoders._set(attn.out.kernel, t[p + "attention.dense.weight"].T.reshape(h, hd, d))
        hf_encoders._set(attn.out.bias, t[p + "attention.dense.bias"])
        hf_encoders._norm(layer.attn_norm, t, p + "attention.LayerNorm")
        hf_encoders._linear(layer.ffn, t, p + "ffn")
        hf_encoders._linear(layer.ffn_output, t, p + "ffn_output")
        hf_encoders._norm(layer.out_norm, t, p + "full_layer_layer_norm")
    hf_encoders._linear(model.pooler, t, "pooler")
    hf_encoders._linear(model.classifier, t, "classifier")


# ------------------------------------------------------------------------------- tokeniser


def albert_tokenizer(directory):
    """ALBERT's tokeniser (``tokenizers.Tokenizer``) from a checkpoint folder: its
    ``tokenizer.json`` when present, else its ``spiece.model`` converted as HF's AlbertConverter
    (needs the optional ``sentencepiece`` package); the module docstring says what it does.
    Padding is set to ``<pad>`` when the file sets none, so the result goes straight to
    `language.data.glue.encode`.

    Raises DataError: neither file; a file that does not load; a tokeniser without ``[CLS]``,
    ``[SEP]`` or ``<pad>``, or whose pairs are not ``[CLS] A [SEP] B [SEP]`` with token types
    0 | 1; spiece.model alone without sentencepiece (or protobuf).
    """
    from tokenizers import Tokenizer

    directory = os.fspath(directory)
    path = os.path.join(directory, "tokenizer.json")
    if os.path.isfile(path):
        try:
            tok = Tokenizer.from_file(path)
        except Exception as e:  # noqa: BLE001 (the Rust loader's error types are not exported)
            raise errors.DataError(f"{path}: not a tokenizers JSON file ({e})") from None
    else:
        spm = os.path.join(directory, "spiece.model")
        if not os.path.isfile(spm):
            raise errors.DataError(
                f"{directory}: neither tokenizer.json nor spiece.model; an ALBERT checkpoint "
                "folder holds at least one (albert-base-v2 ships both)"
            )
        tok = _from_spiece(spm, _tokenizer_options(directory))
        path = spm
    ids = {t: tok.token_to_id(t) for t in ("[CLS]", "[SEP]", "<pad>")}
    lacking = [t for t, i in ids.items() if i is None]
    if lacking:
        raise errors.DataError(
            f"{path}: lacks the special token(s) {lacking}; is it ALBERT's tokeniser?"
        )
    pair = tok.encode("a", "b")
    cls, sep = ids["[CLS]"], ids["[SEP]"]
    first_sep = pair.ids.index(sep) if sep in pair.ids else -1
    if (
        not pair.ids
        or pair.ids[0] != cls
        or pair.ids[-1] != sep
        or pair.ids.count(sep) != 2
        or any(pair.type_ids[: first_sep + 1])
        or not all(pair.type_ids[first_sep + 1 :])
    ):
        raise errors.DataError(
            f"{path}: its post-processor does not encode a pair as [CLS] A [SEP] B [SEP] with "
            f"token types 0 | 1 (got tokens {pair.tokens}, types {pair.type_ids}); use the "
            "checkpoint's own tokenizer.json"
        )
    if tok.padding is None:
        tok.enable_padding(pad_id=ids["<pad>"], pad_token="<pad>")
    return tok


def _tokenizer_options(directory: str) -> dict:
    """`do_lower_case` / `keep_accents` from tokenizer_config.json (AlbertTokenizer's defaults
    True / False where the file or the key is absent)."""
    opts = {"do_lower_case": True, "keep_accents": False}
    path = os.path.join(directory, "tokenizer_config.json")
    if not os.path.isfile(path):
        return opts
    try:
        with open(path) as f:
            cfg = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise errors.DataError(f"{path}: not a JSON file ({e})") from None
    for key in opts:
        if isinstance(cfg, dict) and key in cfg:
            if not isinstance(cfg[key], bool):
                raise errors.DataError(f"{path}: {key}={cfg[key]!r} is not true/false")
            opts[key] = cfg[key]
    return opts


def _number_comma_ok(piece: str) -> bool:
    """False for a piece ending in "<digit>," (HF convert_slow_tokenizer.check_number_comma)."""
    return len(piece) < 2 or piece[-1] != "," or not piece[-2].isdigit()


def _from_spiece(path: str, opts: dict):
    """``spiece.model`` as HF ``AlbertConverter`` converts it (the module docstring)."""
    from tokenizers import (
        AddedToken,
        Regex,
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        processors,
    )

    try:
        extras.require("sentencepiece", f"reading {path}")
        from sentencepiece import sentencepiece_model_pb2
    except ImportError as e:  # MissingExtraError included (sentencepiece), or protobuf
        raise errors.DataError(
            f"{path}: converting ALBERT's SentencePiece model needs the sentencepiece and "
            f"protobuf packages ({e}); put the checkpoint's tokenizer.json beside it "
            "(albert-base-v2 ships one), or pip install sentencepiece protobuf"
        ) from None
    proto = sentencepiece_model_pb2.ModelProto()
    try:
        with open(path, "rb") as f:
            proto.ParseFromString(f.read())
    except Exception as e:  # noqa: BLE001 (protobuf's DecodeError, OSError)
        raise errors.DataError(f"{path}: not a SentencePiece model ({e})") from None
    if not proto.pieces:
        raise errors.DataError(f"{path}: a SentencePiece model without pieces")
    if proto.trainer_spec.model_type != 1:  # TrainerSpec.ModelType.UNIGRAM
        raise errors.DataError(
            f"{path}: model_type {proto.trainer_spec.model_type} is not Unigram (1), which "
            "ALBERT's tokeniser is"
        )
    unk = int(proto.trainer_spec.unk_id)
    if not 0 <= unk < len(proto.pieces):
        raise errors.DataError(f"{path}: unk_id {unk} is not a piece")
    vocab = [
        (p.piece, p.score if _number_comma_ok(p.piece) else p.score - 100) for p in proto.pieces
    ]
    tok = Tokenizer(models.Unigram(vocab, unk, byte_fallback=False))
    # CONTROL (3) pieces are special added tokens, USER_DEFINED (4) ones plain added tokens
    tok.add_tokens(
        [
            AddedToken(p.piece, normalized=False, special=p.type == 3)
            for p in proto.pieces
            if p.type in (3, 4)
        ]
    )
    steps = [normalizers.Replace("``", '"'), normalizers.Replace("''", '"')]
    if not opts["keep_accents"]:
        steps += [normalizers.NFKD(), normalizers.StripAccents()]
    if opts["do_lower_case"]:
        steps.append(normalizers.Lowercase())
    charsmap = proto.normalizer_spec.precompiled_charsmap
    if charsmap:
        steps.append(normalizers.Precompiled(charsmap))
    steps.append(normalizers.Replace(Regex(" {2,}"), " "))
    tok.normalizer = normalizers.Sequence(steps)
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    if cls is None or sep is None:
        raise errors.DataError(f"{path}: lacks the pieces [CLS] / [SEP]; is it ALBERT's?")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0",
        pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
    )
    return tok
