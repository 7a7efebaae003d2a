"""GPT-2 as a `language.models.Decoder` configuration, and Hugging Face GPT-2 checkpoints.

GPT-2 (Radford et al. 2019; GFSA fine-tunes the 117M "small" model, GFSA Sec. 5.2 / App. L):
pre-LN blocks with a final LayerNorm `ln_f`, learned positions (`wpe`, 1024), token embedding
`wte` tied to the output, GELU tanh (`gelu_new`), LayerNorm eps 1e-5, biases on every
projection, vocabulary 50,257. The small model (12 layers, width 768, 12 heads, MLP 3072) has
124,439,808 parameters (the "117M" of the GPT-2 paper, which GFSA prints); GFSA adds one w_K per
head and layer, 12 x 12 = 144 (GFSA Sec. 5.2).

    model, config = gpt2.load_hf_gpt2("path/to/gpt2")                      # softmax attention
    model, config = gpt2.load_hf_gpt2("path/to/gpt2", attention_cfg={"name": "gfsa", "order": 3})

`load_hf_gpt2` reads a Hugging Face checkpoint directory (`config.json` + `model.safetensors`)
without torch: `read_safetensors` reads the file with the `safetensors` package (a base
dependency, as for `language.hf_encoders`), BF16 tensors widened to float32.

Name mapping (HF `GPT2Model`; a `transformer.` prefix, as `GPT2LMHeadModel` saves, is
stripped): `wte` -> token embedding; `wpe` -> learned positions; `h.{i}.ln_1` / `ln_2` -> the
block's LayerNorms; `h.{i}.attn.c_attn` (a Conv1D: weight `[in, out]` = `[D, 3D]`, the out axis
q | k | v, each split into heads as `[H, D/H]`) -> query / key / value; `h.{i}.attn.c_proj`
(`[D, D]`, the in axis heads x head_dim) -> the output projection; `h.{i}.mlp.c_fc` / `c_proj`
-> the MLP; `ln_f` -> the final norm. The causal-mask buffers `h.{i}.attn.bias` /
`attn.masked_bias` that older checkpoints carry are skipped; a `lm_head.weight` must equal
`wte` (GPT-2 ties them).
"""

from __future__ import annotations

import json
import os

import jax
import jax.numpy as jnp
import ml_collections
import ml_dtypes
import numpy as np
import safetensors
import safetensors.numpy
from flax import nnx

from attnbench import errors
from language import models

__all__ = [
    "VOCAB_SIZE",
    "MAX_LEN",
    "SMALL",
    "model_config",
    "attention_config",
    "read_safetensors",
    "hf_shapes",
    "load_hf_gpt2",
]

VOCAB_SIZE = 50257  # GPT-2's byte-level BPE vocabulary (HF config.json `vocab_size`)
MAX_LEN = 1024  # `n_positions`
# GPT-2 small (HF `gpt2` config.json): n_layer 12, n_embd 768, n_head 12, n_inner 4 * 768
SMALL = dict(num_layers=12, dim=768, num_heads=12, mlp_dim=3072)

_GELUS = {"gelu_new": "tanh", "gelu_pytorch_tanh": "tanh", "gelu_fast": "tanh", "gelu": "erf"}


def model_config(
    *,
    num_layers: int = SMALL["num_layers"],
    dim: int = SMALL["dim"],
    num_heads: int = SMALL["num_heads"],
    mlp_dim: int | None = None,
    dropout: float = 0.1,
    norm_eps: float = 1e-5,
    gelu: str = "tanh",
) -> ml_collections.ConfigDict:
    """GPT-2's model section for `language.models` (defaults: GPT-2 small; HF's
    `resid_pdrop = embd_pdrop = 0.1`, `layer_norm_epsilon = 1e-5`, `gelu_new`)."""
    return ml_collections.ConfigDict(
        dict(
            num_layers=num_layers,
            dim=dim,
            num_heads=num_heads,
            mlp_dim=mlp_dim or 4 * dim,  # HF n_inner = None means 4 * n_embd
            qkv_dim=dim,
            dropout=dropout,
            activation_dropout=0.0,  # GPT-2's MLP has no dropout after the GELU
            positions="learned",
            gelu=gelu,
            qkv_bias=True,
            out_bias=True,
            norm_eps=norm_eps,
            final_norm=True,  # ln_f
            input="embedding",
            output="tied",
            scale_embedding=False,
            embed_init_std=0.02,  # HF initializer_range
            dtype="float32",
        )
    )


def attention_config(name: str = "softmax", *, dropout_rate: float = 0.1, **hparams):
    """An attention section for GPT-2: `name` with HF's `attn_pdrop = 0.1` (e.g. "gfsa" with
    `order`, GFSA's K)."""
    return ml_collections.ConfigDict(dict(name=name, dropout_rate=dropout_rate, **hparams))


# ------------------------------------------------------------------------------ safetensors


def read_safetensors(path) -> dict[str, np.ndarray]:
    """Every tensor of the safetensors file `path` as numpy arrays, read by the `safetensors`
    package (`safetensors.numpy.load_file`): BF16 widened to float32 (exact), every other dtype
    as stored; the header's `__metadata__` is not returned. A missing, truncated or malformed
    file is one DataError naming the file, with the package's reason.

    Package releases whose numpy reader has no bfloat16 (before its ml_dtypes support; their
    jax reader has none either, safetensors/safetensors issue 598) fail on a BF16 file: the
    file is then parsed and checked by the package's `safetensors.deserialize` and each
    tensor's bytes viewed with `_DTYPES` (the same arrays)."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise errors.DataError(f"{path}: no such file (a Hugging Face model.safetensors)")
    try:
        raw = safetensors.numpy.load_file(path)
    except Exception as e:  # noqa: BLE001 (the package raises several types for a bad file)
        raw = _deserialize(path, f"{type(e).__name__}: {e}")
    return {
        name: a.astype(np.float32) if a.dtype == ml_dtypes.bfloat16 else a
        for name, a in raw.items()
    }


# safetensors dtype names (the format's) -> numpy, for `_deserialize`
_DTYPES = {
    "F64": np.float64,
    "F32": np.float32,
    "F16": np.float16,
    "BF16": ml_dtypes.bfloat16,
    "I64": np.int64,
    "I32": np.int32,
    "I16": np.int16,
    "I8": np.int8,
    "U64": np.uint64,
    "U32": np.uint32,
    "U16": np.uint16,
    "U8": np.uint8,
    "BOOL": np.bool_,
}


def _deserialize(path: str, reason: str) -> dict[str, np.ndarray]:
    """The tensors of `path` through `safetensors.deserialize` (header and offsets checked by
    the package); DataError with `reason` (the numpy reader's) when it fails too."""
    try:
        with open(path, "rb") as f:
            flat = safetensors.deserialize(f.read())
    except Exception:  # noqa: BLE001
        raise errors.DataError(
            f"{path}: not a readable safetensors file ({reason}); it is truncated or corrupt: "
            "download it again"
        ) from None
    out = {}
    for name, view in flat:
        if view["dtype"] not in _DTYPES:
            raise errors.DataError(
                f"{path}: tensor {name!r} has dtype {view['dtype']}; known: {', '.join(_DTYPES)}"
            )
        dtype = np.dtype(_DTYPES[view["dtype"]]).newbyteorder("<")
        out[name] = np.frombuffer(view["data"], dtype=dtype).reshape(view["shape"])
    return out


# ------------------------------------------------------------------------------ checkpoints


def _read_config(directory) -> dict:
    path = os.path.join(directory, "config.json")
    if not os.path.isfile(path):
        raise errors.DataError(
            f"{path}: no such file; a Hugging Face GPT-2 directory holds config.json and "
            "model.safetensors"
        )
    try:
        with open(path) as f:
            cfg = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise errors.DataError(f"{path}: not a JSON file ({e})") from None
    missing = [k for k in ("n_embd", "n_layer", "n_head", "vocab_size") if k not in cfg]
    if missing:
        raise errors.DataError(f"{path}: lacks {', '.join(missing)} (not a GPT-2 config)")
    if cfg.get("model_type", "gpt2") != "gpt2":
        raise errors.DataError(f"{path}: model_type={cfg['model_type']!r}, expected 'gpt2'")
    act = cfg.get("activation_function", "gelu_new")
    if act not in _GELUS:
        raise errors.DataError(
            f"{path}: activation_function={act!r} is not supported; known: {', '.join(_GELUS)}"
        )
    for flag, ok in (
        ("scale_attn_by_inverse_layer_idx", False),
        ("scale_attn_weights", True),
        ("tie_word_embeddings", True),
    ):
        if cfg.get(flag, ok) != ok:
            raise errors.DataError(f"{path}: {flag}={cfg[flag]!r} is not supported ({ok} only)")
    return cfg


def hf_shapes(num_layers: int, dim: int, mlp_dim: int, vocab_size: int, max_len: int) -> dict:
    """The shape of every tensor of a Hugging Face `GPT2Model` (names without a prefix)."""
    shapes = {"wte.weight": (vocab_size, dim), "wpe.weight": (max_len, dim)}
    shapes |= {"ln_f.weight": (dim,), "ln_f.bias": (dim,)}
    for i in range(num_layers):
        p = f"h.{i}."
        for ln in ("ln_1", "ln_2"):
            shapes |= {p + ln + ".weight": (dim,), p + ln + ".bias": (dim,)}
        shapes |= {
            p + "attn.c_attn.weight": (dim, 3 * dim),
            p + "attn.c_attn.bias": (3 * dim,),
            p + "attn.c_proj.weight": (dim, dim),
            p + "attn.c_proj.bias": (dim,),
            p + "mlp.c_fc.weight": (dim, mlp_dim),
            p + "mlp.c_fc.bias": (mlp_dim,),
            p + "mlp.c_proj.weight": (mlp_dim, dim),
            p + "mlp.c_proj.bias": (dim,),
        }
    return shapes


def _strip(name: str) -> str:
    return name[len("transformer.") :] if name.startswith("transformer.") else name


def _is_mask_buffer(name: str) -> bool:
    parts = name.split(".")
    return (
        len(parts) == 4
        and parts[0] == "h"
        and parts[2] == "attn"
        and parts[3]
        in (
            "bias",
            "masked_bias",
        )
    )


def load_hf_gpt2(directory, *, attention_cfg=None, dtype: str = "float32"):
    """A `language.models.Decoder` holding the weights of the Hugging Face GPT-2 checkpoint in
    `directory` (`config.json` + `model.safetensors`), with attention `attention_cfg` (default
    softmax with HF's `attn_pdrop`; e.g. `{"name": "gfsa", "order": 3}`: GFSA's own parameters
    keep their initial values, w_K = 0, so the model starts as the checkpoint's).

    Returns:
      `(model, config)`: config a ConfigDict with `model` (the decoder's model section),
      `attention`, `vocab_size` and `max_len`.

    Raises:
      DataError: a missing or malformed file; a tensor missing, of the wrong shape or
        unknown (the message names the file and the tensor).
    """
    directory = os.fspath(directory)
    hf = _read_config(directory)
    dim, layers_, heads = int(hf["n_embd"]), int(hf["n_layer"]), int(hf["n_head"])
    mlp_dim = int(hf.get("n_inner") or 4 * dim)
    vocab = int(hf["vocab_size"])
    max_len = int(hf.get("n_positions", hf.get("n_ctx", MAX_LEN)))
    if dim % heads:
        raise errors.DataError(
            f"{directory}/config.json: n_embd={dim} is not divisible by n_head={heads}"
        )
    model_cfg = model_config(
        num_layers=layers_,
        dim=dim,
        num_heads=heads,
        mlp_dim=mlp_dim,
        dropout=float(hf.get("resid_pdrop", 0.1)),
        norm_eps=float(hf.get("layer_norm_epsilon", 1e-5)),
        gelu=_GELUS[hf.get("activation_function", "gelu_new")],
    )
    model_cfg.dtype = dtype
    if attention_cfg is None:
        attention_cfg = attention_config(dropout_rate=float(hf.get("attn_pdrop", 0.1)))
    path = os.path.join(directory, "model.safetensors")
    tensors = {_strip(k): v for k, v in read_safetensors(path).items()}
    expected = hf_shapes(layers_, dim, mlp_dim, vocab, max_len)
    lm_head = tensors.pop("lm_head.weight", None)
    unknown = sorted(k for k in tensors if k not in expected and not _is_mask_buffer(k))
    if unknown:
        raise errors.DataError(
            f"{path}: unknown tensor(s) {', '.join(unknown[:5])}"
            f"{' ...' if len(unknown) > 5 else ''} (not a GPT-2 checkpoint?)"
        )
    missing = sorted(k for k in expected if k not in tensors)
    if missing:
        raise errors.DataError(
            f"{path}: missing tensor(s) {', '.join(missing[:5])}"
            f"{' ...' if len(missing) > 5 else ''}"
        )
    for name, shape in expected.items():
        if tuple(tensors[name].shape) != shape:
            raise errors.DataError(
                f"{path}: tensor {name!r} has shape {tuple(tensors[name].shape)}, expected "
                f"{shape} from config.json"
            )
    if lm_head is not None and (
        lm_head.shape != tensors["wte.weight"].shape
        or not np.array_equal(lm_head, tensors["wte.weight"])
    ):
        raise errors.DataError(
            f"{path}: tensor 'lm_head.weight' differs from 'wte.weight'; GPT-2 ties them "
            "(untied heads are not supported)"
        )

    def build():
        return models.build_decoder(
            model_cfg, attention_cfg, vocab_size=vocab, max_len=max_len, rngs=nnx.Rngs(params=0)
        )

    # Shapes first: when the checkpoint fills every variable (softmax attention) nothing is
    # initialised at random only to be overwritten; a mechanism with its own arrays (GFSA's
    # w_K, SSA's sigma) gets a real init for them.
    model = nnx.eval_shape(build)
    _assign(model, tensors, heads)
    if any(
        isinstance(v.get_value(), jax.ShapeDtypeStruct)
        for _, v in nnx.iter_graph(model)
        if isinstance(v, nnx.Variable)
    ):
        model = build()
        _assign(model, tensors, heads)
    config = ml_collections.ConfigDict(
        dict(model=model_cfg, attention=attention_cfg, vocab_size=vocab, max_len=max_len)
    )
    return model, config


def _set(param, value) -> None:
    value = np.asarray(value, np.float32)
    if tuple(param.shape) != value.shape:  # hf_shapes checked the file; this is our mapping
        raise AssertionError(f"mapping error: {value.shape} into {param.shape}")
    param.set_value(jnp.asarray(value))


def _assign(model: models.Decoder, t: dict, heads: int) -> None:
    """Copies the HF tensors `t` into `model`'s parameters."""
    stack = model.stack
    dim = model.dim
    hd = dim // heads
    _set(model.embed.embedding, t["wte.weight"])
    _set(stack.pos_embedding, t["wpe.weight"])
    _set(stack.norm.scale, t["ln_f.weight"])
    _set(stack.norm.bias, t["ln_f.bias"])
    for i, block in enumerate(stack.blocks):
        p = f"h.{i}."
        _set(block.ln1.scale, t[p + "ln_1.weight"])
        _set(block.ln1.bias, t[p + "ln_1.bias"])
        _set(block.ln2.scale, t[p + "ln_2.weight"])
        _set(block.ln2.bias, t[p + "ln_2.bias"])
        w, b = t[p + "attn.c_attn.weight"], t[p + "attn.c_attn.bias"]
        for j, proj in enumerate((block.attn.query, block.attn.key, block.attn.value)):
            _set(proj.kernel, w[:, j * dim : (j + 1) * dim].reshape(dim, heads, hd))
            _set(proj.bias, b[j * dim : (j + 1) * dim].reshape(heads, hd))
        _set(block.attn.out.kernel, t[p + "attn.c_proj.weight"].reshape(heads, hd, dim))
        _set(block.attn.out.bias, t[p + "attn.c_proj.bias"])
        _set(block.mlp.fc1.kernel, t[p + "mlp.c_fc.weight"])
        _set(block.mlp.fc1.bias, t[p + "mlp.c_fc.bias"])
        _set(block.mlp.fc2.kernel, t[p + "mlp.c_proj.weight"])
        _set(block.mlp.fc2.bias, t[p + "mlp.c_proj.bias"])
