"""GPT-2: the decoder configuration's parameter counts, the safetensors reader on files written
to the format's specification by hand here (tests/language/test_gpt2_safetensors.py: on files
the `safetensors` package writes), and a Hugging Face checkpoint loaded into the decoder against
an independent float64 numpy GPT-2 forward."""

from __future__ import annotations

import json
import math

import jax
import numpy as np
import pytest
from flax import nnx

import attention
from attnbench import errors
from language import gpt2, models
from tests import tolerances

# The tiny checkpoint: 2 layers, width 16, 2 heads, vocabulary 50, 12 positions.
LAYERS, DIM, HEADS, VOCAB, POSITIONS = 2, 16, 2, 50, 12


# ---------------------------------------------------------------- a safetensors writer (spec)


def write_safetensors(path, tensors: dict, *, dtypes=None, metadata=None, pad=0):
    """Writes `tensors` ({name: float64/float32 array}) in the safetensors format: 8-byte
    little-endian header size, JSON header {name: {dtype, shape, data_offsets}}, data.
    `dtypes` maps a name to "F32" (default), "F16", "BF16" or "F64"; `pad` appends spaces to
    the header, which the format allows."""
    dtypes = dtypes or {}
    header, chunks, offset = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, arr in tensors.items():
        kind = dtypes.get(name, "F32")
        a = np.asarray(arr)
        if kind == "BF16":  # round-to-nearest-even is not needed: the test feeds exact values
            raw = (a.astype("<f4").view("<u4") >> 16).astype("<u2").tobytes()
        else:
            raw = a.astype({"F32": "<f4", "F16": "<f2", "F64": "<f8"}[kind]).tobytes()
        header[name] = {
            "dtype": kind,
            "shape": list(a.shape),
            "data_offsets": [offset, offset + len(raw)],
        }
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode() + b" " * pad
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for c in chunks:
            f.write(c)


def hf_config(**over):
    cfg = dict(
        model_type="gpt2",
        n_embd=DIM,
        n_layer=LAYERS,
        n_head=HEADS,
        n_positions=POSITIONS,
        n_ctx=POSITIONS,
        vocab_size=VOCAB,
        n_inner=None,
        activation_function="gelu_new",
        layer_norm_epsilon=1e-5,
        resid_pdrop=0.1,
        embd_pdrop=0.1,
        attn_pdrop=0.1,
    )
    cfg.update(over)
    return cfg


def random_weights(seed=0, prefix=""):
    rng = np.random.default_rng(seed)
    w = {
        "wte.weight": rng.normal(0, 0.5, (VOCAB, DIM)),
        "wpe.weight": rng.normal(0, 0.3, (POSITIONS, DIM)),
        "ln_f.weight": 1 + rng.normal(0, 0.2, DIM),
        "ln_f.bias": rng.normal(0, 0.2, DIM),
    }
    for i in range(LAYERS):
        p = f"h.{i}."
        w |= {
            p + "ln_1.weight": 1 + rng.normal(0, 0.2, DIM),
            p + "ln_1.bias": rng.normal(0, 0.2, DIM),
            p + "attn.c_attn.weight": rng.normal(0, 0.4, (DIM, 3 * DIM)),
            p + "attn.c_attn.bias": rng.normal(0, 0.2, 3 * DIM),
            p + "attn.c_proj.weight": rng.normal(0, 0.3, (DIM, DIM)),
            p + "attn.c_proj.bias": rng.normal(0, 0.2, DIM),
            p + "ln_2.weight": 1 + rng.normal(0, 0.2, DIM),
            p + "ln_2.bias": rng.normal(0, 0.2, DIM),
            p + "mlp.c_fc.weight": rng.normal(0, 0.3, (DIM, 4 * DIM)),
            p + "mlp.c_fc.bias": rng.normal(0, 0.2, 4 * DIM),
            p + "mlp.c_proj.weight": rng.normal(0, 0.2, (4 * DIM, DIM)),
            p + "mlp.c_proj.bias": rng.normal(0, 0.2, DIM),
        }
    # float32-representable, so the file holds exactly what the reference uses
    return {prefix + k: v.astype(np.float32).astype(np.float64) for k, v in w.items()}


def write_checkpoint(directory, weights=None, config=None, **kw):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config or hf_config()))
    write_safetensors(directory / "model.safetensors", weights or random_weights(), **kw)
    return directory


# ---------------------------------------------------------- the reference: GPT-2 in float64


def ref_gpt2_logits(w: dict, tokens: np.ndarray) -> np.ndarray:
    """HF GPT2LMHeadModel's forward in float64 numpy, written from the model's definition:
    x = wte[t] + wpe[pos]; per layer x += c_proj(attn(ln_1(x))), x += mlp(ln_2(x)) with
    LayerNorm eps 1e-5, causal softmax attention scaled by 1/sqrt(head_dim), GELU tanh;
    ln_f; logits = x wte^T."""

    def ln(x, g, b):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-5) * g + b

    def gelu(x):
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))

    b, n = tokens.shape
    hd = DIM // HEADS
    x = w["wte.weight"][tokens] + w["wpe.weight"][np.arange(n)][None]
    for i in range(LAYERS):
        p = f"h.{i}."
        h = ln(x, w[p + "ln_1.weight"], w[p + "ln_1.bias"])
        qkv = h @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
        att_out = np.zeros((b, n, DIM))
        for bi in range(b):
            for head in range(HEADS):
                sl = slice(head * hd, (head + 1) * hd)
                q = qkv[bi, :, sl]
                k = qkv[bi, :, DIM:][:, sl]
                v = qkv[bi, :, 2 * DIM :][:, sl]
                for t in range(n):
                    s = q[t] @ k[: t + 1].T / math.sqrt(hd)
                    pr = np.exp(s - s.max())
                    pr /= pr.sum()
                    att_out[bi, t, sl] = pr @ v[: t + 1]
        x = x + att_out @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        h = ln(x, w[p + "ln_2.weight"], w[p + "ln_2.bias"])
        h = gelu(h @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"])
        x = x + h @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
    x = ln(x, w["ln_f.weight"], w["ln_f.bias"])
    return x @ w["wte.weight"].T


TOKENS = np.array([[3, 17, 42, 0, 49, 8, 8, 21, 33, 5], [11, 2, 2, 47, 30, 6, 19, 1, 40, 12]])
TARGETS = np.roll(TOKENS, -1, axis=1)


def forward(model):
    """(logits, nll) of TOKENS, compiled as one program (op-by-op dispatch compiles every op)."""
    logits, nll = jax.jit(lambda t: (model(t), model.nll(t, TARGETS)))(TOKENS)
    return np.asarray(logits), np.asarray(nll)


# ------------------------------------------------------------------------------------ tests


def test_loaded_logits_equal_numpy_reference(tmp_path):
    w = random_weights(prefix="transformer.")  # GPT2LMHeadModel's names
    w["lm_head.weight"] = w["transformer.wte.weight"]  # tied, stored twice
    w["transformer.h.0.attn.bias"] = np.tril(np.ones((POSITIONS, POSITIONS)))[None, None]
    d = write_checkpoint(tmp_path / "gpt2", w, metadata={"format": "pt"}, pad=5)
    model, config = gpt2.load_hf_gpt2(d)
    assert config.model.positions == "learned" and config.model.output == "tied"
    assert config.vocab_size == VOCAB and config.max_len == POSITIONS
    ref = ref_gpt2_logits(random_weights(), TOKENS)
    got, nll = forward(model)
    tolerances.assert_close(got, ref, rtol=1e-5, atol=1e-5)
    # nll is the cross-entropy of those logits
    lse = np.log(np.exp(ref - ref.max(-1, keepdims=True)).sum(-1)) + ref.max(-1)
    ref_nll = lse - np.take_along_axis(ref, TARGETS[..., None], -1)[..., 0]
    tolerances.assert_close(nll, ref_nll, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_gfsa_at_init_equals_softmax(tmp_path):
    """GFSA with w_K = 0 (attention/gfsa.py: `init_wk` default 0.0, `w0` default 0.0, w_1 = 1)
    is the identity on Ā: the swapped model's logits are the softmax model's."""
    assert attention.defaults("gfsa")["init_wk"] == 0.0
    assert attention.defaults("gfsa")["w0"] == 0.0
    d = write_checkpoint(tmp_path / "gpt2")
    soft, _ = gpt2.load_hf_gpt2(d)
    gf, cfg = gpt2.load_hf_gpt2(d, attention_cfg=gpt2.attention_config("gfsa", order=3))
    assert cfg.attention.name == "gfsa"
    np.testing.assert_array_equal(gf.stack.blocks[0].attn.mechanism_params["w_k"][...], 0.0)
    tolerances.assert_close(forward(gf)[0], forward(soft)[0], atol=1e-5)


@pytest.mark.parametrize("kind", ["F16", "BF16", "F64"])
def test_safetensors_dtypes(tmp_path, kind):
    rng = np.random.default_rng(1)
    a = rng.normal(size=(3, 4))
    if kind == "BF16":  # values with 8 significant bits are exact in bfloat16
        a = np.round(a * 64) / 64
    write_safetensors(tmp_path / "t.safetensors", {"a": a, "b": np.ones(2)}, dtypes={"a": kind})
    got = gpt2.read_safetensors(tmp_path / "t.safetensors")
    want = a.astype({"F16": np.float16, "BF16": np.float32, "F64": np.float64}[kind])
    np.testing.assert_array_equal(got["a"], want)
    assert got["a"].shape == (3, 4) and got["b"].dtype == np.float32


@pytest.mark.slow
def test_half_precision_checkpoint_loads(tmp_path):
    w = random_weights()
    w = {k: v.astype(np.float16).astype(np.float64) for k, v in w.items()}
    d = write_checkpoint(tmp_path / "gpt2", w, dtypes=dict.fromkeys(w, "F16"))
    model, _ = gpt2.load_hf_gpt2(d)
    tolerances.assert_close(forward(model)[0], ref_gpt2_logits(w, TOKENS), rtol=1e-5, atol=1e-5)


def test_errors_name_file_and_tensor(tmp_path):
    with pytest.raises(errors.DataError, match="config.json"):
        gpt2.load_hf_gpt2(tmp_path / "nothing")
    d = tmp_path / "gpt2"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(hf_config()))
    with pytest.raises(errors.DataError, match="model.safetensors: no such file"):
        gpt2.load_hf_gpt2(d)
    w = random_weights()
    w["h.1.mlp.c_fc.weight"] = w["h.1.mlp.c_fc.weight"][:, :10]
    write_checkpoint(d, w)
    with pytest.raises(errors.DataError, match=r"'h\.1\.mlp\.c_fc\.weight' has shape \(16, 10\)"):
        gpt2.load_hf_gpt2(d)
    w = random_weights()
    w["h.0.attn.rotary"] = np.zeros(3)
    write_checkpoint(d, w)
    with pytest.raises(errors.DataError, match=r"unknown tensor\(s\) h\.0\.attn\.rotary"):
        gpt2.load_hf_gpt2(d)
    w = random_weights()
    del w["ln_f.bias"]
    write_checkpoint(d, w)
    with pytest.raises(errors.DataError, match=r"missing tensor\(s\) ln_f\.bias"):
        gpt2.load_hf_gpt2(d)
    w = random_weights()
    w["lm_head.weight"] = w["wte.weight"] + 1
    write_checkpoint(d, w)
    with pytest.raises(errors.DataError, match="lm_head.weight"):
        gpt2.load_hf_gpt2(d)
    # a header longer than the file, a header that is not JSON, offsets that do not hold the
    # tensor: one DataError each, naming the file (tests/language/test_gpt2_safetensors.py)
    bad = json.dumps({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 8]}}).encode()
    for raw, reason in (
        ((10**6).to_bytes(8, "little") + b"{}", "invalid header length"),
        ((2).to_bytes(8, "little") + b"{x", "invalid JSON in header"),
        (len(bad).to_bytes(8, "little") + bad + bytes(8), "offset for tensor"),
    ):
        (d / "model.safetensors").write_bytes(raw)
        with pytest.raises(errors.DataError, match="not a readable safetensors file") as e:
            gpt2.load_hf_gpt2(d)
        assert str(d / "model.safetensors") in str(e.value) and reason in str(e.value)
    (d / "config.json").write_text(json.dumps(hf_config(activation_function="relu")))
    with pytest.raises(errors.DataError, match="activation_function"):
        gpt2.load_hf_gpt2(d)


def _params(model_cfg, attention_cfg) -> int:
    model = nnx.eval_shape(
        lambda: models.build_decoder(
            model_cfg,
            attention_cfg,
            vocab_size=gpt2.VOCAB_SIZE,
            max_len=gpt2.MAX_LEN,
            rngs=nnx.Rngs(params=0),
        )
    )
    return sum(math.prod(v.shape) for _, v in nnx.iter_graph(model) if isinstance(v, nnx.Param))


@pytest.mark.slow
def test_gpt2_small_parameter_counts():
    """GPT-2 small with tied embeddings: 124,439,808 (HF `gpt2`; the GPT-2 paper's "117M",
    which GFSA Table 2 prints); GFSA adds 144 = 12 layers x 12 heads (GFSA Sec. 5.2)."""
    assert _params(gpt2.model_config(), gpt2.attention_config()) == 124_439_808
    assert _params(gpt2.model_config(), gpt2.attention_config("gfsa")) == 124_439_808 + 144


@pytest.mark.slow
def test_loaded_model_trains_under_jit(tmp_path):
    model, _ = gpt2.load_hf_gpt2(write_checkpoint(tmp_path / "gpt2"))
    graph, params, rest = nnx.split(model, nnx.Param, ...)

    @jax.jit
    def loss(params, key):
        m = nnx.merge(graph, params, rest)
        return m.nll(TOKENS, TARGETS, train=True, key=key).mean()

    value, grads = jax.value_and_grad(loss)(params, jax.random.key(0))
    assert np.isfinite(value)
    assert all(np.isfinite(g).all() for g in jax.tree.leaves(grads))
