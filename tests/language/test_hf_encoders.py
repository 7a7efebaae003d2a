"""BERT / RoBERTa: tiny Hugging Face checkpoints (config.json + model.safetensors in torch
layout, written here) loaded by `language.hf_encoders` and compared with an independent float64
numpy forward of the HF architecture; errors; GFSA plugged in; gradients under jit."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import optax
import pytest
import safetensors.numpy
from flax import nnx
from scipy.special import erf

import attention
from attnbench import errors
from language import hf_encoders
from language.backbones import encoder_bert
from tests import tolerances
from tests.attnbench.nn.test_contranorm import ref_update

LAYERS, DIM, HEADS, MLP, VOCAB, MAX_LEN = 2, 16, 2, 32, 50, 10
PAD = {"bert": 0, "roberta": 1}
EPS = {"bert": 1e-12, "roberta": 1e-5}

# Three rows with 8, 5 and 3 real tokens, padded on the right with the pad id (no pad id among
# the real tokens, so RoBERTa's position ids count exactly the real ones).
LENGTHS = (8, 5, 3)


def inputs(kind: str):
    rng = np.random.default_rng(7)
    ids = rng.integers(2, VOCAB, (len(LENGTHS), 8))
    mask = np.zeros_like(ids)
    for r, n in enumerate(LENGTHS):
        mask[r, :n] = 1
    ids = np.where(mask == 1, ids, PAD[kind])
    types = np.zeros_like(ids)
    types[:, 4:] = 1  # a second segment (BERT), ones also on pads as HF tokenizers do
    return ids, mask, (types if kind == "bert" else None)


# ------------------------------------------------------------------ the checkpoint (HF format)


def hf_config(kind: str, **over) -> dict:
    cfg = dict(
        model_type=kind,
        vocab_size=VOCAB,
        hidden_size=DIM,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        intermediate_size=MLP,
        max_position_embeddings=MAX_LEN + (2 if kind == "roberta" else 0),
        type_vocab_size=2 if kind == "bert" else 1,
        layer_norm_eps=EPS[kind],
        hidden_act="gelu",
        pad_token_id=PAD[kind],
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        initializer_range=0.02,
        position_embedding_type="absolute",
        id2label={"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"},
        label2id={"LABEL_0": 0, "LABEL_1": 1, "LABEL_2": 2},
    )
    cfg.update(over)
    return cfg


def random_weights(kind: str, *, seed=0, labels=3, head=True, pooler=True) -> dict:
    """HF state-dict names (no prefix), torch layout: Linear weights [out, in]."""
    rng = np.random.default_rng(seed)
    cfg = hf_config(kind)

    def lin(out, inp, scale=0.3):
        return rng.normal(0, scale, (out, inp)), rng.normal(0, 0.2, out)

    w = {
        "embeddings.word_embeddings.weight": rng.normal(0, 0.5, (VOCAB, DIM)),
        "embeddings.position_embeddings.weight": rng.normal(
            0, 0.5, (cfg["max_position_embeddings"], DIM)
        ),
        "embeddings.token_type_embeddings.weight": rng.normal(
            0, 0.5, (cfg["type_vocab_size"], DIM)
        ),
        "embeddings.LayerNorm.weight": 1 + rng.normal(0, 0.2, DIM),
        "embeddings.LayerNorm.bias": rng.normal(0, 0.2, DIM),
    }
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        for name in ("query", "key", "value"):
            w[f"{p}attention.self.{name}.weight"], w[f"{p}attention.self.{name}.bias"] = lin(
                DIM, DIM, 0.4
            )
        w[p + "attention.output.dense.weight"], w[p + "attention.output.dense.bias"] = lin(DIM, DIM)
        w[p + "intermediate.dense.weight"], w[p + "intermediate.dense.bias"] = lin(MLP, DIM)
        w[p + "output.dense.weight"], w[p + "output.dense.bias"] = lin(DIM, MLP, 0.2)
        for ln in ("attention.output.LayerNorm", "output.LayerNorm"):
            w[p + ln + ".weight"] = 1 + rng.normal(0, 0.2, DIM)
            w[p + ln + ".bias"] = rng.normal(0, 0.2, DIM)
    if pooler:
        w["pooler.dense.weight"], w["pooler.dense.bias"] = lin(DIM, DIM)
    if head and kind == "bert":
        w["classifier.weight"], w["classifier.bias"] = lin(labels, DIM)
    if head and kind == "roberta":
        w["classifier.dense.weight"], w["classifier.dense.bias"] = lin(DIM, DIM)
        w["classifier.out_proj.weight"], w["classifier.out_proj.bias"] = lin(labels, DIM)
    # float32-representable, so the file holds exactly what the reference uses
    return {k: v.astype(np.float32).astype(np.float64) for k, v in w.items()}


def write_checkpoint(directory, weights: dict, config: dict, *, prefix: str = ""):
    """config.json + model.safetensors; backbone names get `prefix` (as the task models save),
    head names (classifier.*, cls.*, lm_head.*) never do."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config))
    top = ("classifier.", "cls.", "lm_head.")
    named = {(k if k.startswith(top) else prefix + k): v for k, v in weights.items()}
    arrays = {
        k: np.ascontiguousarray(v, np.int64 if v.dtype.kind == "i" else np.float32)
        for k, v in named.items()
    }
    safetensors.numpy.save_file(arrays, str(directory / "model.safetensors"))
    return directory


# ------------------------------------------------------- the reference: HF's forward, float64


def ref_forward(w: dict, kind: str, ids, mask, types=None, cn=None):
    """(sequence output [B, N, D], logits [B, L]) of HF Bert/RobertaForSequenceClassification
    in evaluation mode, float64, written from the architecture: embeddings (word + position +
    type, LayerNorm); per layer h = LN(x + O(softmax(QK^T/sqrt(d) masked on keys) V)),
    x = LN(h + W2 gelu_erf(W1 h)); BERT head tanh(pooler(h0)) -> classifier; RoBERTa head
    tanh(dense(h0)) -> out_proj. RoBERTa positions: pad + cumsum(ids != pad), pads at pad.
    A query with no key (a fully masked row) gets a zero context: the documented choice.
    `cn` (dict of `scale`, `identity`, `at`): ContraNorm's update (the float64 reference of
    tests/attnbench/nn/test_contranorm.py, padded tokens left out) on the residual sum before
    the attention ("attention") or the feed-forward ("ffn") LayerNorm, as Guo et al.'s BERT."""

    def contra(x, at):
        if cn is None or cn["at"] != at:
            return x
        return ref_update(x, scale=cn["scale"], identity=cn["identity"], mask=mask.astype(bool))

    eps, pad = EPS[kind], PAD[kind]
    b, n = ids.shape
    hd = DIM // HEADS

    def ln(x, name):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * w[name + ".weight"] + w[name + ".bias"]

    def dense(x, name):
        return x @ w[name + ".weight"].T + w[name + ".bias"]

    if kind == "bert":
        pos = np.broadcast_to(np.arange(n), (b, n))
    else:
        real = (ids != pad).astype(int)
        pos = np.cumsum(real, axis=1) * real + pad
    types = np.zeros_like(ids) if types is None else types
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][pos]
        + w["embeddings.token_type_embeddings.weight"][types]
    )
    x = ln(x, "embeddings.LayerNorm")
    keep = mask.astype(bool)[:, None, None, :]  # [B, 1, 1, M] on the keys
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."

        def heads(name, x=x, p=p):
            return dense(x, f"{p}attention.self.{name}").reshape(b, n, HEADS, hd)

        q, k, v = heads("query"), heads("key"), heads("value")
        s = np.einsum("bnhd,bmhd->bhnm", q, k) / np.sqrt(hd)
        s = np.where(keep, s, -np.inf)
        top = np.where(np.isfinite(s), s, -1e300).max(-1, keepdims=True)
        e = np.where(keep, np.exp(s - top), 0.0)
        z = e.sum(-1, keepdims=True)
        probs = e / np.where(z > 0, z, 1.0)
        ctx = np.einsum("bhnm,bmhd->bnhd", probs, v).reshape(b, n, DIM)
        h = contra(x + dense(ctx, p + "attention.output.dense"), "attention")
        h = ln(h, p + "attention.output.LayerNorm")
        f = dense(h, p + "intermediate.dense")
        f = 0.5 * f * (1 + erf(f / np.sqrt(2)))
        x = ln(contra(h + dense(f, p + "output.dense"), "ffn"), p + "output.LayerNorm")
    if kind == "bert":
        logits = dense(np.tanh(dense(x[:, 0], "pooler.dense")), "classifier")
    else:
        logits = dense(np.tanh(dense(x[:, 0], "classifier.dense")), "classifier.out_proj")
    return x, logits


def forward(model, ids, mask, types=None):
    """(sequence output, logits) as one compiled program."""

    @jax.jit
    def run(ids, mask, types):
        h = model.encode(ids, attention_mask=mask, token_type_ids=types)
        return h, model.head(h)

    h, logits = run(ids, mask, types)
    return np.asarray(h), np.asarray(logits)


def close(got, want):
    tolerances.assert_close(got, want, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------------ tests


def test_bert_matches_numpy_reference(tmp_path):
    w = random_weights("bert")
    stored = dict(w)
    # an old TF-converted name, the buffers and pre-training heads HF checkpoints carry
    stored["embeddings.LayerNorm.gamma"] = stored.pop("embeddings.LayerNorm.weight")
    stored["embeddings.LayerNorm.beta"] = stored.pop("embeddings.LayerNorm.bias")
    stored["embeddings.position_ids"] = np.arange(MAX_LEN)[None]
    stored["cls.seq_relationship.weight"] = np.zeros((2, DIM))
    stored["cls.predictions.bias"] = np.zeros(VOCAB)
    d = write_checkpoint(tmp_path / "bert", stored, hf_config("bert"), prefix="bert.")
    model, config = hf_encoders.load_hf_encoder(d)
    assert config.model_type == "bert" and config.num_labels == 3
    assert config.head_from_checkpoint and list(config.initialised) == []
    assert "embeddings.position_ids" in config.ignored and "cls.predictions.bias" in config.ignored
    assert config.attention.name == "softmax" and config.attention.dropout_rate == 0.1
    ids, mask, types = inputs("bert")
    h, logits = forward(model, ids, mask, types)
    ref_h, ref_logits = ref_forward(w, "bert", ids, mask, types)
    close(h, ref_h)  # every position, padded ones included
    close(logits, ref_logits)
    # token types matter (the reference uses them): a model ignoring them would differ
    assert np.abs(ref_forward(w, "bert", ids, mask)[1] - ref_logits).max() > 1e-2
    # __call__ is encode + head
    close(np.asarray(model(ids, attention_mask=mask, token_type_ids=types)), ref_logits)


def test_roberta_matches_numpy_reference(tmp_path):
    w = random_weights("roberta")
    stored = dict(w)
    stored["lm_head.dense.weight"] = np.zeros((DIM, DIM))
    stored["lm_head.bias"] = np.zeros(VOCAB)
    d = write_checkpoint(tmp_path / "roberta", stored, hf_config("roberta"), prefix="roberta.")
    model, config = hf_encoders.load_hf_encoder(d)
    assert config.model.position_ids == "from_padding" and config.model.head == "roberta"
    assert "pooler.dense.weight" in config.ignored  # saved by RobertaModel, unused by the head
    assert model.max_len == MAX_LEN  # 12 rows - pad 1 - 1
    ids, mask, _ = inputs("roberta")
    pos = np.asarray(encoder_bert.position_ids(ids, "from_padding", 1))
    np.testing.assert_array_equal(pos[2], [2, 3, 4, 1, 1, 1, 1, 1])
    h, logits = forward(model, ids, mask)
    ref_h, ref_logits = ref_forward(w, "roberta", ids, mask)
    close(h, ref_h)
    close(logits, ref_logits)
    with pytest.raises(ValueError, match="exceeds"):
        model(np.full((1, MAX_LEN + 1), 5))


def test_fully_padded_row_gets_zero_attention(tmp_path):
    """The documented difference from HF: a row with no real token attends to nothing (zero
    context), instead of HF's uniform average; outputs stay finite."""
    w = random_weights("bert")
    model, _ = hf_encoders.load_hf_encoder(write_checkpoint(tmp_path / "b", w, hf_config("bert")))
    ids, mask, types = inputs("bert")
    mask[1] = 0
    h, logits = forward(model, ids, mask, types)
    ref_h, ref_logits = ref_forward(w, "bert", ids, mask, types)
    assert np.isfinite(h).all()
    close(h, ref_h)
    close(logits, ref_logits)


def test_pretrained_only_checkpoint_gets_fresh_head(tmp_path):
    w = random_weights("bert", head=False, pooler=False)
    d = write_checkpoint(tmp_path / "bert", w, hf_config("bert"))
    model, config = hf_encoders.load_hf_encoder(d, num_labels=4)
    assert not config.head_from_checkpoint and config.num_labels == 4
    assert list(config.initialised) == [
        "pooler.dense.bias",
        "pooler.dense.weight",
        "classifier.bias",
        "classifier.weight",
    ]
    kernel = np.asarray(model.classifier.kernel[...])
    assert kernel.shape == (DIM, 4) and 0.01 < kernel.std() < 0.03  # normal(0, 0.02)
    np.testing.assert_array_equal(model.classifier.bias[...], 0.0)
    ids, mask, types = inputs("bert")
    # the backbone is the checkpoint's (random_weights draws the backbone first: same values)
    ref_h = ref_forward(random_weights("bert"), "bert", ids, mask, types)[0]
    close(forward(model, ids, mask, types)[0], ref_h)
    # without num_labels: the config's id2label (3 labels), regression for 1
    _, config = hf_encoders.load_hf_encoder(d)
    assert config.num_labels == 3
    _, config = hf_encoders.load_hf_encoder(d, num_labels=1)
    assert config.problem_type == "regression"
    # a saved head of another size than asked
    d2 = write_checkpoint(tmp_path / "b2", random_weights("bert"), hf_config("bert"))
    with pytest.raises(errors.DataError, match="3 outputs but num_labels=2"):
        hf_encoders.load_hf_encoder(d2, num_labels=2)


def test_errors_name_file_and_tensor(tmp_path):
    with pytest.raises(errors.DataError, match="config.json: no such file"):
        hf_encoders.load_hf_encoder(tmp_path / "nothing")
    d = tmp_path / "bert"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(hf_config("bert")))
    with pytest.raises(errors.DataError, match="model.safetensors: no such file"):
        hf_encoders.load_hf_encoder(d)

    def fails(weights, match, config=None):
        write_checkpoint(d, weights, config or hf_config("bert"), prefix="bert.")
        with pytest.raises(errors.DataError, match=match):
            hf_encoders.load_hf_encoder(d)

    w = random_weights("bert")
    del w["encoder.layer.1.output.LayerNorm.bias"]
    fails(w, r"missing tensor\(s\) encoder\.layer\.1\.output\.LayerNorm\.bias")
    w = random_weights("bert")
    w["encoder.layer.0.intermediate.dense.weight"] = np.zeros((MLP, DIM + 1))
    fails(
        w,
        r"model\.safetensors: tensor 'encoder\.layer\.0\.intermediate\.dense\.weight' has "
        r"shape \(32, 17\), expected \(32, 16\)",
    )
    w = random_weights("bert")
    w["encoder.layer.0.attention.self.rotary.weight"] = np.zeros(3)
    fails(w, r"unknown tensor\(s\) encoder\.layer\.0\.attention\.self\.rotary\.weight")
    w = random_weights("bert")
    del w["classifier.bias"]
    fails(w, r"missing tensor\(s\) classifier\.bias of the head")
    fails(random_weights("bert"), "model_type='albert'", hf_config("bert", model_type="albert"))
    fails(random_weights("bert"), "hidden_act='relu'", hf_config("bert", hidden_act="relu"))
    (d / "config.json").write_text(json.dumps(hf_config("bert")))
    (d / "model.safetensors").write_bytes(b"\x05\x00")
    with pytest.raises(errors.DataError, match="not a readable safetensors file"):
        hf_encoders.load_hf_encoder(d)


def test_gfsa_plugs_in_and_starts_as_softmax(tmp_path):
    """GFSA's init (attention/gfsa.py: w_K = 0, w_0 = 0, w_1 = 1) makes its filter
    w_1 Ā V = softmax attention, so the loaded GFSA model equals the softmax one, padding
    included (masked keys stay at zero in Ā and Ā²)."""
    assert attention.defaults("gfsa")["init_wk"] == 0.0 and attention.defaults("gfsa")["w0"] == 0.0
    w = random_weights("roberta")
    d = write_checkpoint(tmp_path / "r", w, hf_config("roberta"))
    soft, _ = hf_encoders.load_hf_encoder(d)
    gf, config = hf_encoders.load_hf_encoder(d, attention_cfg={"name": "gfsa", "order": 3})
    assert config.attention.name == "gfsa" and config.attention.dropout_rate == 0.1
    np.testing.assert_array_equal(gf.layers[1].attn.mechanism_params["w_k"][...], 0.0)
    ids, mask, _ = inputs("roberta")
    h_gf, logits_gf = forward(gf, ids, mask)
    h_soft, logits_soft = forward(soft, ids, mask)
    close(h_gf, h_soft)
    close(logits_gf, logits_soft)
    # once w_K moves, it no longer does (the test can fail)
    gf.layers[0].attn.mechanism_params["w_k"].set_value(jnp.full((HEADS,), 0.5))
    assert np.abs(forward(gf, ids, mask)[1] - logits_soft).max() > 1e-4


@pytest.mark.parametrize("kind, at", [("bert", "attention"), ("roberta", "ffn")])
def test_contranorm_loads_into_a_checkpoint_and_matches_the_reference(tmp_path, kind, at):
    """GFSA Table 1's "+ ContraNorm": the checkpoint loads unchanged (ContraNorm has no
    parameters: nothing is missing or drawn) and the forward is the reference's with the
    update before the LayerNorm, padded tokens left out of it."""
    w = random_weights(kind)
    d = write_checkpoint(tmp_path / kind, w, hf_config(kind))
    cn = {"contranorm_scale": 0.3, "contranorm_at": at}
    model, config = hf_encoders.load_hf_encoder(d, contranorm=cn)
    assert list(config.initialised) == [] and config.model.contranorm_scale == 0.3
    assert model.settings["contranorm_identity"]  # Guo et al.'s BERT: (1 + s) X - s A X
    ids, mask, types = inputs(kind)
    h, logits = forward(model, ids, mask, types)
    ref_h, ref_logits = ref_forward(
        w, kind, ids, mask, types, cn=dict(scale=0.3, identity=True, at=at)
    )
    close(h, ref_h)
    close(logits, ref_logits)
    assert np.abs(ref_forward(w, kind, ids, mask, types)[1] - ref_logits).max() > 1e-3
    with pytest.raises(errors.ConfigError, match="contranorm= takes"):
        hf_encoders.load_hf_encoder(d, contranorm={"dim": 8})
    with pytest.raises(errors.ConfigError, match="contranorm_at='middle'"):
        hf_encoders.load_hf_encoder(
            d, contranorm={"contranorm_scale": 0.1, "contranorm_at": "middle"}
        )


@pytest.mark.parametrize(
    "kind,mech",
    [
        pytest.param("bert", "softmax", marks=pytest.mark.slow),
        pytest.param("roberta", "gfsa", marks=pytest.mark.slow),  # ~4 s each: `make test-slow`
    ],
)
def test_train_step_gradients_finite_under_jit(tmp_path, kind, mech):
    # rbg keys: the same dropout semantics as threefry, compiled in half the time on CPU
    d = write_checkpoint(tmp_path / kind, random_weights(kind), hf_config(kind))
    model, _ = hf_encoders.load_hf_encoder(d, attention_cfg={"name": mech})
    ids, mask, types = inputs(kind)
    labels = np.array([0, 2, 1])
    graphdef, params = nnx.split(model, nnx.Param)

    @jax.jit
    def loss_and_grad(params, key):
        def loss(params):
            m = nnx.merge(graphdef, params)
            logits = m(ids, attention_mask=mask, token_type_ids=types, train=True, key=key)
            return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

        return jax.value_and_grad(loss)(params)

    l1, g = loss_and_grad(params, jax.random.key(0, impl="rbg"))
    l2, _ = loss_and_grad(params, jax.random.key(1, impl="rbg"))
    leaves = jax.tree.leaves(g)
    assert np.isfinite(float(l1)) and all(np.isfinite(np.asarray(x)).all() for x in leaves)
    assert float(l1) != float(l2)  # dropout is on: another key, another loss
    grad_norm = sum(float(jnp.sum(jnp.square(x))) for x in leaves)
    assert grad_norm > 0
    if mech == "gfsa":
        assert np.abs(np.asarray(g["layers"][0]["attn"]["mechanism_params"]["w_k"][...])).max() > 0
    # evaluation ignores the key
    evaluate = jax.jit(lambda key: model(ids, attention_mask=mask, token_type_ids=types, key=key))
    np.testing.assert_array_equal(
        evaluate(jax.random.key(0, impl="rbg")), evaluate(jax.random.key(1, impl="rbg"))
    )


def test_bf16_checkpoint_loads_widened_to_float32_exactly(tmp_path):
    """A BF16 model.safetensors written by the `safetensors` package (whose numpy reader returns
    ml_dtypes.bfloat16) loads with float32 parameters holding exactly the stored values: the
    same model as the float32 file of those values, and the float64 reference's outputs."""
    w = random_weights("bert")
    w16 = {k: v.astype(ml_dtypes.bfloat16) for k, v in w.items()}
    exact = {k: v.astype(np.float64) for k, v in w16.items()}  # what the file holds, exactly
    stored = {"bert." + k if not k.startswith("classifier.") else k: v for k, v in w16.items()}
    stored["bert.embeddings.position_ids"] = np.arange(MAX_LEN, dtype=np.int64)[None]
    d = tmp_path / "bf16"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(hf_config("bert")))
    safetensors.numpy.save_file(stored, str(d / "model.safetensors"))
    raw = safetensors.numpy.load_file(str(d / "model.safetensors"))
    assert raw["classifier.weight"].dtype == ml_dtypes.bfloat16  # the package's BF16 type
    model, config = hf_encoders.load_hf_encoder(d)
    kernel = np.asarray(model.classifier.kernel[...])
    assert kernel.dtype == np.float32
    np.testing.assert_array_equal(kernel, exact["classifier.weight"].T)  # widened, exact
    d32 = write_checkpoint(tmp_path / "f32", exact, hf_config("bert"), prefix="bert.")
    ids, mask, types = inputs("bert")
    h, logits = forward(model, ids, mask, types)
    h32, logits32 = forward(hf_encoders.load_hf_encoder(d32)[0], ids, mask, types)
    np.testing.assert_array_equal(h, h32)
    np.testing.assert_array_equal(logits, logits32)
    ref_h, ref_logits = ref_forward(exact, "bert", ids, mask, types)
    close(h, ref_h)
    close(logits, ref_logits)


def test_bfloat16_compute_stays_near_reference(tmp_path):
    """dtype="bfloat16": blocks compute in bfloat16 (8-bit mantissa, ~4e-3 relative per
    rounding through 2 layers), the head in float32."""
    w = random_weights("roberta")
    d = write_checkpoint(tmp_path / "r", w, hf_config("roberta"))
    model, config = hf_encoders.load_hf_encoder(d, dtype="bfloat16")
    assert config.model.dtype == "bfloat16"
    ids, mask, _ = inputs("roberta")
    h, logits = forward(model, ids, mask)
    ref_h, ref_logits = ref_forward(w, "roberta", ids, mask)
    assert h.dtype == jnp.bfloat16 and logits.dtype == np.float32
    tolerances.assert_close(h.astype(np.float32), ref_h, rtol=5e-2, atol=5e-2)
    tolerances.assert_close(logits, ref_logits, rtol=5e-2, atol=5e-2)
