"""Hugging Face BERT / RoBERTa checkpoints loaded into `language.backbones.encoder_bert`.

    model, config = hf_encoders.load_hf_encoder("path/to/bert-base-uncased", num_labels=2)
    model, config = hf_encoders.load_hf_encoder("path/to/roberta-base", num_labels=3,
                                                attention_cfg={"name": "gfsa", "order": 3})

A checkpoint directory holds `config.json` and `model.safetensors` (HF `save_pretrained`),
read with the `safetensors` package through `language.gpt2.read_safetensors` (the one reader of
the language checkpoints: `safetensors.numpy.load_file`, which returns BF16 tensors as
`ml_dtypes.bfloat16`): BF16 tensors are widened to float32, which is exact (every bfloat16 is a
float32), F16 / F32 / F64 are kept as stored; the model's parameters are float32 either way.

config.json (HF `BertConfig` / `RobertaConfig`; their defaults where a key is absent):
`model_type` "bert" or "roberta"; `vocab_size`, `hidden_size`, `num_hidden_layers`,
`num_attention_heads`, `intermediate_size`, `max_position_embeddings` (required);
`type_vocab_size` (2), `layer_norm_eps` (1e-12), `hidden_act` ("gelu" = exact erf GELU;
"gelu_new" / "gelu_pytorch_tanh" = tanh approximation), `pad_token_id` (0 for BERT, 1 for
RoBERTa), `hidden_dropout_prob` (0.1), `attention_probs_dropout_prob` (0.1),
`classifier_dropout` (None = hidden_dropout_prob), `initializer_range` (0.02),
`position_embedding_type` ("absolute" only), `id2label` / `num_labels` / `problem_type`.
BERT uses position ids 0..N-1 and BertPooler + `classifier`; RoBERTa uses position ids counted
from pad_token_id + 1 (`create_position_ids_from_input_ids`) and RobertaClassificationHead.

Tensor names (HF `BertModel` / `RobertaModel` state dicts; a `bert.` prefix for BERT or a
`roberta.` prefix for RoBERTa, as the task models save, is stripped; torch `nn.Linear` weights
are `[out, in]` and are transposed; the q/k/v out axis and the output projection's in axis are
heads x head_dim, HF `transpose_for_scores`):
  embeddings.word_embeddings.weight, embeddings.position_embeddings.weight,
  embeddings.token_type_embeddings.weight, embeddings.LayerNorm.{weight,bias}
  encoder.layer.{i}.attention.self.{query,key,value}.{weight,bias}
  encoder.layer.{i}.attention.output.dense.{weight,bias}, ...attention.output.LayerNorm.*
  encoder.layer.{i}.intermediate.dense.*, encoder.layer.{i}.output.dense.*,
  encoder.layer.{i}.output.LayerNorm.*
  pooler.dense.{weight,bias}                       (BERT: the pooler of the head)
  classifier.{weight,bias}                         (BertForSequenceClassification)
  classifier.dense.*, classifier.out_proj.*        (RobertaForSequenceClassification)
Old (TensorFlow-converted) checkpoints name LayerNorm parameters `gamma` / `beta`: read as
`weight` / `bias`.

Skipped by name (`IGNORED`): the buffers `embeddings.position_ids`, `embeddings.token_type_ids`;
BERT's pre-training heads `cls.predictions.bias`, `cls.predictions.decoder.{weight,bias}`,
`cls.predictions.transform.dense.{weight,bias}`,
`cls.predictions.transform.LayerNorm.{weight,bias}`, `cls.seq_relationship.{weight,bias}`;
RoBERTa's MLM head `lm_head.bias`, `lm_head.dense.{weight,bias}`,
`lm_head.layer_norm.{weight,bias}`, `lm_head.decoder.{weight,bias}`; and for RoBERTa only, the
pooler `pooler.dense.{weight,bias}` (saved by `RobertaModel`, unused by its classification head).
Any other tensor, a missing one, or one of the wrong shape is a DataError naming the file and the
tensor (and the expected shape).

Fresh parameters (listed in the returned config's `initialised`, as HF's "newly initialized"
warning): a checkpoint without the classification head (a pre-trained-only model) gets a new
head, and a BERT checkpoint without `pooler.dense` a new pooler, drawn as HF `_init_weights`:
weights normal(0, initializer_range), biases zero. The head's size is `num_labels`, else the
checkpoint's (`id2label`, then `num_labels`, then HF's default 2). A saved head with another
number of labels than `num_labels` asks for is a DataError. A mechanism with its own parameters
(GFSA's w_K) keeps their initial values.

ContraNorm (`contranorm=`, `encoder_bert`'s `contranorm_*` settings): it has no parameters, so
a released checkpoint loads into a model with it unchanged (nothing is missing, nothing is
drawn for it).
"""

from __future__ import annotations

import json
import os

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
from flax import nnx

from attnbench import errors
from language import gpt2  # read_safetensors: the language checkpoints' reader
from language.backbones import encoder_bert

__all__ = [
    "MODEL_TYPES",
    "GELUS",
    "IGNORED",
    "read_config",
    "settings_from_config",
    "backbone_shapes",
    "head_shapes",
    "with_contranorm",
    "check_tensors",
    "build_and_assign",
    "load_hf_encoder",
]

MODEL_TYPES = ("bert", "roberta")
# HF `hidden_act` -> our `gelu` (transformers.activations: "gelu" is the exact erf form)
GELUS = {"gelu": "erf", "gelu_new": "tanh", "gelu_pytorch_tanh": "tanh"}
IGNORED = frozenset(
    {
        "embeddings.position_ids",
        "embeddings.token_type_ids",
        "cls.predictions.bias",
        "cls.predictions.decoder.weight",
        "cls.predictions.decoder.bias",
        "cls.predictions.transform.dense.weight",
        "cls.predictions.transform.dense.bias",
        "cls.predictions.transform.LayerNorm.weight",
        "cls.predictions.transform.LayerNorm.bias",
        "cls.seq_relationship.weight",
        "cls.seq_relationship.bias",
        "lm_head.bias",
        "lm_head.dense.weight",
        "lm_head.dense.bias",
        "lm_head.layer_norm.weight",
        "lm_head.layer_norm.bias",
        "lm_head.decoder.weight",
        "lm_head.decoder.bias",
    }
)
_ROBERTA_IGNORED = frozenset({"pooler.dense.weight", "pooler.dense.bias"})
_REQUIRED = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "max_position_embeddings",
)


def read_config(directory) -> dict:
    """`directory/config.json` as a dict, checked: DataError naming the file when it is
    missing, not JSON, not a BERT / RoBERTa config, or uses something not supported."""
    path = os.path.join(os.fspath(directory), "config.json")
    if not os.path.isfile(path):
        raise errors.DataError(
            f"{path}: no such file; a Hugging Face BERT / RoBERTa directory holds config.json "
            "and model.safetensors (save_pretrained)"
        )
    try:
        with open(path) as f:
            cfg = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise errors.DataError(f"{path}: not a JSON file ({e})") from None
    if not isinstance(cfg, dict):
        raise errors.DataError(f"{path}: not a JSON object")
    kind = cfg.get("model_type")
    if kind not in MODEL_TYPES:
        raise errors.DataError(
            f"{path}: model_type={kind!r} is not supported; known: {', '.join(MODEL_TYPES)}"
            + (
                "; ALBERT folders load with language.hf_albert.load_hf_albert"
                if kind == "albert"
                else ""
            )
        )
    missing = [k for k in _REQUIRED if not isinstance(cfg.get(k), int)]
    if missing:
        raise errors.DataError(f"{path}: lacks integer {', '.join(missing)}")
    act = cfg.get("hidden_act", "gelu")
    if act not in GELUS:
        raise errors.DataError(
            f"{path}: hidden_act={act!r} is not supported; known: {', '.join(GELUS)}"
        )
    pet = cfg.get("position_embedding_type", "absolute")
    if pet != "absolute":
        raise errors.DataError(
            f"{path}: position_embedding_type={pet!r} is not supported (only 'absolute')"
        )
    for flag in ("is_decoder", "add_cross_attention"):
        if cfg.get(flag, False):
            raise errors.DataError(f"{path}: {flag}=true is not supported (encoders only)")
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
    """The `encoder_bert` settings of a checked HF config (`read_config`)."""
    roberta = hf["model_type"] == "roberta"
    return dict(
        vocab_size=int(hf["vocab_size"]),
        dim=int(hf["hidden_size"]),
        num_layers=int(hf["num_hidden_layers"]),
        num_heads=int(hf["num_attention_heads"]),
        mlp_dim=int(hf["intermediate_size"]),
        max_positions=int(hf["max_position_embeddings"]),
        type_vocab_size=int(hf.get("type_vocab_size", 2)),
        layer_norm_eps=float(hf.get("layer_norm_eps", 1e-12)),
        hidden_dropout=float(hf.get("hidden_dropout_prob", 0.1)),
        attention_dropout=float(hf.get("attention_probs_dropout_prob", 0.1)),
        classifier_dropout=hf.get("classifier_dropout"),
        gelu=GELUS[hf.get("hidden_act", "gelu")],
        position_ids="from_padding" if roberta else "sequential",
        pad_token_id=int(hf.get("pad_token_id", 1 if roberta else 0)),
        head="roberta" if roberta else "bert",
        num_labels=int(num_labels),
        initializer_range=float(hf.get("initializer_range", 0.02)),
        dtype=dtype,
    )


def backbone_shapes(s: dict) -> dict:
    """The shape of every tensor of HF `BertModel` / `RobertaModel` without its pooler (names
    without a prefix), for settings `s`."""
    d, m = s["dim"], s["mlp_dim"]
    shapes = {
        "embeddings.word_embeddings.weight": (s["vocab_size"], d),
        "embeddings.position_embeddings.weight": (s["max_positions"], d),
        "embeddings.token_type_embeddings.weight": (s["type_vocab_size"], d),
        "embeddings.LayerNorm.weight": (d,),
        "embeddings.LayerNorm.bias": (d,),
    }
    for i in range(s["num_layers"]):
        p = f"encoder.layer.{i}."
        for name in ("query", "key", "value"):
            shapes |= {f"{p}attention.self.{name}.weight": (d, d)}
            shapes |= {f"{p}attention.self.{name}.bias": (d,)}
        shapes |= {
            p + "attention.output.dense.weight": (d, d),
            p + "attention.output.dense.bias": (d,),
            p + "attention.output.LayerNorm.weight": (d,),
            p + "attention.output.LayerNorm.bias": (d,),
            p + "intermediate.dense.weight": (m, d),
            p + "intermediate.dense.bias": (m,),
            p + "output.dense.weight": (d, m),
            p + "output.dense.bias": (d,),
            p + "output.LayerNorm.weight": (d,),
            p + "output.LayerNorm.bias": (d,),
        }
    return shapes


def head_shapes(s: dict) -> tuple[dict, dict]:
    """`(pooler, classifier)`: the shapes of the pooler's tensors (empty for RoBERTa's head) and
    of the classification head's, for settings `s` (its `num_labels`)."""
    d, n = s["dim"], s["num_labels"]
    if s["head"] == "bert":
        pooler = {"pooler.dense.weight": (d, d), "pooler.dense.bias": (d,)}
        return pooler, {"classifier.weight": (n, d), "classifier.bias": (n,)}
    return {}, {
        "classifier.dense.weight": (d, d),
        "classifier.dense.bias": (d,),
        "classifier.out_proj.weight": (n, d),
        "classifier.out_proj.bias": (n,),
    }


def _read_tensors(path: str, kind: str) -> dict[str, np.ndarray]:
    """The file's tensors under normalised names (prefix stripped, gamma/beta renamed)."""
    if not os.path.isfile(path):
        raise errors.DataError(
            f"{path}: no such file (a Hugging Face model.safetensors; a checkpoint saved as "
            "pytorch_model.bin must be converted to safetensors first)"
        )
    raw = gpt2.read_safetensors(path)  # BF16 widened to float32; DataError for a bad file
    prefix = kind + "."
    out: dict[str, np.ndarray] = {}
    origin: dict[str, str] = {}
    for name, value in raw.items():
        key = name[len(prefix) :] if name.startswith(prefix) else name
        if key.endswith(".gamma") or key.endswith(".beta"):
            stem, last = key.rsplit(".", 1)
            if stem.endswith("LayerNorm") or stem.endswith("layer_norm"):
                key = stem + (".weight" if last == "gamma" else ".bias")
        if key in out:
            raise errors.DataError(
                f"{path}: tensors {origin[key]!r} and {name!r} are the same parameter "
                f"({key!r}); keep one"
            )
        out[key], origin[key] = value, name
    return out


def with_contranorm(s: dict, contranorm, directory) -> dict:
    """Settings `s` (from a checkpoint's config.json) with the `contranorm_*` settings
    `contranorm` (a mapping, or None: none) added: ContraNorm has no parameters, so it goes
    into any checkpoint's model. Any other key is a ConfigError: the checkpoint fixes the rest.
    """
    given = dict(contranorm or {})
    other = sorted(set(given) - set(encoder_bert.CONTRANORM_FIELDS))
    if other:
        raise errors.ConfigError(
            f"{directory}: contranorm= takes {', '.join(encoder_bert.CONTRANORM_FIELDS)}; got "
            f"{', '.join(other)} (the checkpoint's config.json sets the model's other settings)"
        )
    return {**s, **given}


def load_hf_encoder(
    directory,
    *,
    num_labels: int | None = None,
    attention_cfg=None,
    dtype: str = "float32",
    seed: int = 0,
    contranorm=None,
):
    """A `encoder_bert.BertEncoderModel` holding the weights of the HF BERT / RoBERTa checkpoint
    in `directory` (`config.json` + `model.safetensors`; the module docstring).

    Args:
      num_labels: the head's outputs (1 = regression); None: the saved head's, else config's.
      attention_cfg: the mechanism (default softmax); its `dropout_rate` defaults to the
        config's `attention_probs_dropout_prob` when the mechanism has one.
      dtype: the compute dtype ("float32", "bfloat16", ...).
      seed: draws the parameters the checkpoint lacks (a fresh head, a mechanism's own).
      contranorm: `contranorm_*` settings (`encoder_bert.CONTRANORM_FIELDS`, e.g.
        `{"contranorm_scale": 0.01}`) for GFSA Table 1's "+ ContraNorm" rows; None: none.

    Returns:
      `(model, config)`: config a ConfigDict with `model` (the settings), `attention`,
      `model_type`, `num_labels`, `problem_type` (HF's, or "regression" when num_labels is 1
      and the config names none), `id2label`, `head_from_checkpoint` (bool), `initialised`
      (HF names of freshly drawn tensors) and `ignored` (names skipped, `IGNORED`).

    Raises:
      DataError: a missing or malformed file; a tensor missing, of the wrong shape or unknown;
        a saved head whose size differs from `num_labels`.
    """
    directory = os.fspath(directory)
    hf = read_config(directory)
    kind = hf["model_type"]
    path = os.path.join(directory, "model.safetensors")
    tensors = _read_tensors(path, kind)
    base = settings_from_config(hf, 1, dtype)
    head_names = sorted(head_shapes(base)[1])
    present = [k for k in head_names if k in tensors]
    if present and len(present) < len(head_names):
        missing = [k for k in head_names if k not in tensors]
        raise errors.DataError(f"{path}: missing tensor(s) {', '.join(missing)} of the head")
    from_checkpoint = bool(present)
    if from_checkpoint:
        out_weight = "classifier.weight" if kind == "bert" else "classifier.out_proj.weight"
        saved_labels = int(tensors[out_weight].shape[0]) if tensors[out_weight].ndim else 0
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
    s = with_contranorm(settings_from_config(hf, labels, dtype), contranorm, directory)
    pooler_shapes, classifier_shapes = head_shapes(s)
    expected = backbone_shapes(s) | pooler_shapes | classifier_shapes
    ignored_known = IGNORED | (_ROBERTA_IGNORED if kind == "roberta" else frozenset())
    fresh, ignored = check_tensors(
        path,
        tensors,
        expected,
        known=ignored_known,
        pooler=pooler_shapes,
        classifier=classifier_shapes,
        from_checkpoint=from_checkpoint,
        what=f"a {kind}",
    )
    if attention_cfg is None:
        attention_cfg = {"name": "softmax"}
    model = build_and_assign(
        lambda: encoder_bert.BertEncoderModel(s, attention_cfg, rngs=nnx.Rngs(params=seed)),
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
            model_type=kind,
            num_labels=labels,
            problem_type=problem,
            id2label={str(k): v for k, v in (id2label or {}).items()},
            head_from_checkpoint=from_checkpoint,
            initialised=fresh,
            ignored=ignored,
        )
    )
    return model, config


def _set(param: nnx.Variable, value) -> None:
    value = np.asarray(value, np.float32)
    if tuple(param.shape) != value.shape:  # shapes were checked against the file: our mapping
        raise AssertionError(f"mapping error: {value.shape} into {param.shape}")
    param.set_value(jnp.asarray(value))


def _linear(layer: nnx.Linear, t: dict, name: str) -> None:
    """torch Linear `[out, in]` weight + bias into a flax Linear (kernel `[in, out]`)."""
    if name + ".weight" in t:
        _set(layer.kernel, t[name + ".weight"].T)
        _set(layer.bias, t[name + ".bias"])


def _norm(norm: nnx.LayerNorm, t: dict, name: str) -> None:
    _set(norm.scale, t[name + ".weight"])
    _set(norm.bias, t[name + ".bias"])


def _assign(model: encoder_bert.BertEncoderModel, t: dict, s: dict) -> None:
    """Copies the HF tensors `t` into `model`'s parameters (head tensors only when present)."""
    d, h = s["dim"], s["num_heads"]
    hd = d // h
    _set(model.word_embeddings.embedding, t["embeddings.word_embeddings.weight"])
    _set(model.position_embeddings.embedding, t["embeddings.position_embeddings.weight"])
    _set(model.token_type_embeddings.embedding, t["embeddings.token_type_embeddings.weight"])
    _norm(model.embed_norm, t, "embeddings.LayerNorm")
    for i, layer in enumerate(model.layers):
        p = f"encoder.layer.{i}."
        attn = layer.attn
        if not attn.mechanism.needs_qk:
            raise errors.ConfigError(
                f"attention {attn.mechanism.name!r} has no query/key projections, so the "
                "checkpoint's attention.self.query/key cannot be loaded; pick a mechanism "
                "with q/k (softmax, gfsa, ...)"
            )
        for name, proj in (("query", attn.query), ("key", attn.key), ("value", attn.value)):
            w, b = t[f"{p}attention.self.{name}.weight"], t[f"{p}attention.self.{name}.bias"]
            _set(proj.kernel, w.T.reshape(d, h, hd))  # out axis = heads x head_dim
            _set(proj.bias, b.reshape(h, hd))
        _set(attn.out.kernel, t[p + "attention.output.dense.weight"].T.reshape(h, hd, d))
        _set(attn.out.bias, t[p + "attention.output.dense.bias"])
        _norm(layer.attn_norm, t, p + "attention.output.LayerNorm")
        _linear(layer.fc1, t, p + "intermediate.dense")
        _linear(layer.fc2, t, p + "output.dense")
        _norm(layer.out_norm, t, p + "output.LayerNorm")
    if s["head"] == "bert":
        _linear(model.pooler, t, "pooler.dense")
        _linear(model.classifier, t, "classifier")
    else:
        _linear(model.dense, t, "classifier.dense")
        _linear(model.out_proj, t, "classifier.out_proj")


def check_tensors(
    path, tensors, expected, *, known, pooler, classifier, from_checkpoint: bool, what: str
) -> tuple[list[str], list[str]]:
    """The checks every encoder loader makes of a checkpoint's tensors against the model's
    `expected` shapes: no unknown name (beyond the `known` ignored ones), none missing except
    the heads drawn fresh, every shape as config.json says, float dtypes. Returns `(fresh,
    ignored)`: the head tensors to initialise (the classifier unless `from_checkpoint`; the
    pooler when the file has none of it) and the file's tensors that are skipped."""
    unknown = sorted(k for k in tensors if k not in expected and k not in known)
    if unknown:
        raise errors.DataError(
            f"{path}: unknown tensor(s) {', '.join(unknown[:5])}"
            f"{' ...' if len(unknown) > 5 else ''} (not {what} checkpoint of this config?)"
        )
    fresh = [] if from_checkpoint else sorted(classifier)
    if pooler and not any(k in tensors for k in pooler):
        fresh = sorted(pooler) + fresh
    missing = sorted(k for k in expected if k not in tensors and k not in fresh)
    if missing:
        raise errors.DataError(
            f"{path}: missing tensor(s) {', '.join(missing[:5])}"
            f"{' ...' if len(missing) > 5 else ''}"
        )
    for name, shape in expected.items():
        if name in tensors and tuple(tensors[name].shape) != shape:
            raise errors.DataError(
                f"{path}: tensor {name!r} has shape {tuple(tensors[name].shape)}, expected "
                f"{shape} from config.json"
            )
        if name in tensors and not np.issubdtype(tensors[name].dtype, np.floating):
            raise errors.DataError(
                f"{path}: tensor {name!r} has dtype {tensors[name].dtype}, expected a float"
            )
    return fresh, sorted(k for k in tensors if k in known)


def build_and_assign(build, assign):
    """`build()`'s model with the checkpoint copied in by `assign(model)`. Shapes first: when
    the checkpoint fills every variable nothing is drawn only to be overwritten; a fresh head
    or a mechanism's own arrays (GFSA's w_K) get a real init."""
    model = nnx.eval_shape(build)
    assign(model)
    if any(
        isinstance(v.get_value(), jax.ShapeDtypeStruct)
        for _, v in nnx.iter_graph(model)
        if isinstance(v, nnx.Variable)
    ):
        model = build()
        assign(model)
    return model
