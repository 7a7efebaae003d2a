"""ALBERT: tiny Hugging Face checkpoints (config.json + model.safetensors in torch layout,
written here) loaded by `language.hf_albert` and compared with an independent float64 numpy
forward of the HF ALBERT architecture (factorised embedding, shared layer groups); padding;
the shared-parameter count (albert-base-v2's 11,683,584 included); GFSA plugged into the shared
layer; named errors; the tokeniser from a tokenizer.json written with the tokenizers package."""

from __future__ import annotations

import functools
import io
import json
import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
import safetensors.numpy
from flax import nnx
from scipy.special import erf

import attention
from attnbench import errors
from language import hf_albert
from language.backbones import encoder_albert
from language.data import glue
from tests import tolerances
from tests.attnbench.nn.test_contranorm import ref_update

E, DIM, HEADS, MLP, VOCAB, MAX_LEN = 8, 16, 2, 32, 50, 10
LENGTHS = (8, 5, 3)  # real tokens per row, padded on the right with id 0


def inputs():
    rng = np.random.default_rng(7)
    ids = rng.integers(5, VOCAB, (len(LENGTHS), 8))
    mask = np.zeros_like(ids)
    for r, n in enumerate(LENGTHS):
        mask[r, :n] = 1
    ids = np.where(mask == 1, ids, 0)
    types = np.zeros_like(ids)
    types[:, 4:] = 1  # a second segment, ones also on pads as HF tokenizers do
    return ids, mask, types


# ------------------------------------------------------------------ the checkpoint (HF format)


def hf_config(**over) -> dict:
    cfg = dict(
        model_type="albert",
        architectures=["AlbertForSequenceClassification"],
        vocab_size=VOCAB,
        embedding_size=E,
        hidden_size=DIM,
        num_hidden_layers=3,
        num_hidden_groups=1,
        inner_group_num=1,
        num_attention_heads=HEADS,
        intermediate_size=MLP,
        max_position_embeddings=MAX_LEN,
        type_vocab_size=2,
        layer_norm_eps=1e-12,
        hidden_act="gelu_new",
        hidden_dropout_prob=0,
        attention_probs_dropout_prob=0,
        classifier_dropout_prob=0.1,
        initializer_range=0.02,
        pad_token_id=0,
        bos_token_id=2,
        eos_token_id=3,
        # keys albert-base-v2's config.json carries and HF ignores
        down_scale_factor=1,
        gap_size=0,
        net_structure_type=0,
        num_memory_blocks=0,
        id2label={"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"},
        label2id={"LABEL_0": 0, "LABEL_1": 1, "LABEL_2": 2},
    )
    cfg.update(over)
    return cfg


def layer_prefix(g, j):
    return f"encoder.albert_layer_groups.{g}.albert_layers.{j}."


def random_weights(cfg: dict, *, seed=0, labels=3, head=True, pooler=True) -> dict:
    """HF state-dict names (no prefix), torch layout: Linear weights [out, in]."""
    rng = np.random.default_rng(seed)

    def lin(out, inp, scale=0.3):
        return rng.normal(0, scale, (out, inp)), rng.normal(0, 0.2, out)

    def ln(width):
        return 1 + rng.normal(0, 0.2, width), rng.normal(0, 0.2, width)

    w = {
        "embeddings.word_embeddings.weight": rng.normal(0, 0.5, (VOCAB, E)),
        "embeddings.position_embeddings.weight": rng.normal(0, 0.5, (MAX_LEN, E)),
        "embeddings.token_type_embeddings.weight": rng.normal(0, 0.5, (2, E)),
    }
    w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"] = ln(E)
    mapping = "encoder.embedding_hidden_mapping_in"
    w[mapping + ".weight"], w[mapping + ".bias"] = lin(DIM, E, 0.4)
    for g in range(cfg["num_hidden_groups"]):
        for j in range(cfg["inner_group_num"]):
            p = layer_prefix(g, j)
            for name in ("query", "key", "value"):
                w[f"{p}attention.{name}.weight"], w[f"{p}attention.{name}.bias"] = lin(
                    DIM, DIM, 0.4
                )
            w[p + "attention.dense.weight"], w[p + "attention.dense.bias"] = lin(DIM, DIM)
            w[p + "attention.LayerNorm.weight"], w[p + "attention.LayerNorm.bias"] = ln(DIM)
            w[p + "ffn.weight"], w[p + "ffn.bias"] = lin(MLP, DIM)
            w[p + "ffn_output.weight"], w[p + "ffn_output.bias"] = lin(DIM, MLP, 0.2)
            norm = p + "full_layer_layer_norm"
            w[norm + ".weight"], w[norm + ".bias"] = ln(DIM)
    if pooler:
        w["pooler.weight"], w["pooler.bias"] = lin(DIM, DIM)
    if head:
        w["classifier.weight"], w["classifier.bias"] = lin(labels, DIM)
    # float32-representable, so the file holds exactly what the reference uses
    return {k: v.astype(np.float32).astype(np.float64) for k, v in w.items()}


def write_checkpoint(directory, weights: dict, config: dict, *, prefix: str = ""):
    """config.json + model.safetensors; backbone names get `prefix` (as the task models save),
    head names (classifier.*, predictions.*, sop_classifier.*) never do."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config))
    top = ("classifier.", "predictions.", "sop_classifier.")
    named = {(k if k.startswith(top) else prefix + k): v for k, v in weights.items()}
    arrays = {
        k: np.ascontiguousarray(v, np.int64 if v.dtype.kind == "i" else np.float32)
        for k, v in named.items()
    }
    safetensors.numpy.save_file(arrays, str(directory / "model.safetensors"))
    return directory


# ------------------------------------------------------- the reference: HF's forward, float64


def ref_forward(w: dict, cfg: dict, ids, mask, types=None, cn=None):
    """(sequence output [B, N, D], logits [B, L]) of HF AlbertForSequenceClassification in
    evaluation mode, float64, written from the architecture: embeddings (word + position 0..N-1
    + type, LayerNorm in E) -> embedding_hidden_mapping_in (E -> D); for step i of L the layers
    of group floor(i G / L) in turn, each h = LN(x + dense(softmax(QK^T/sqrt(d) masked on keys)
    V)), x = LN(h + ffn_output(act(ffn(h)))) (no dropout on the FFN: evaluation anyway); pooler
    tanh(W h0 + b) -> classifier. act: gelu_new = tanh form, gelu = erf form. `cn` (dict of
    `scale`, `at`): ContraNorm's X - s A X (the float64 reference of
    tests/attnbench/nn/test_contranorm.py, padded tokens left out) on the residual sum before
    the attention ("attention") or the feed-forward ("ffn") LayerNorm, at every step."""

    def contra(x, at):
        if cn is None or cn["at"] != at:
            return x
        return ref_update(x, scale=cn["scale"], mask=mask.astype(bool))

    eps = cfg["layer_norm_eps"]
    n_layers, groups, inner = (
        cfg["num_hidden_layers"],
        cfg["num_hidden_groups"],
        cfg["inner_group_num"],
    )
    b, n = ids.shape
    hd = DIM // HEADS

    def ln(x, name):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * w[name + ".weight"] + w[name + ".bias"]

    def dense(x, name):
        return x @ w[name + ".weight"].T + w[name + ".bias"]

    def act(x):
        if cfg["hidden_act"] == "gelu":
            return 0.5 * x * (1 + erf(x / np.sqrt(2)))
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))

    types = np.zeros_like(ids) if types is None else types
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][np.arange(n)][None]
        + w["embeddings.token_type_embeddings.weight"][types]
    )
    x = dense(ln(x, "embeddings.LayerNorm"), "encoder.embedding_hidden_mapping_in")
    keep = mask.astype(bool)[:, None, None, :]  # [B, 1, 1, M] on the keys
    for i in range(n_layers):
        for j in range(inner):
            p = layer_prefix(i * groups // n_layers, j)

            def heads(name, x=x, p=p):
                return dense(x, f"{p}attention.{name}").reshape(b, n, HEADS, hd)

            q, k, v = heads("query"), heads("key"), heads("value")
            s = np.einsum("bnhd,bmhd->bhnm", q, k) / np.sqrt(hd)
            s = np.where(keep, s, -np.inf)
            e = np.where(keep, np.exp(s - s.max(-1, keepdims=True)), 0.0)
            probs = e / e.sum(-1, keepdims=True)
            ctx = np.einsum("bhnm,bmhd->bnhd", probs, v).reshape(b, n, DIM)
            h = contra(x + dense(ctx, p + "attention.dense"), "attention")
            h = ln(h, p + "attention.LayerNorm")
            f = dense(act(dense(h, p + "ffn")), p + "ffn_output")
            x = ln(contra(h + f, "ffn"), p + "full_layer_layer_norm")
    logits = dense(np.tanh(dense(x[:, 0], "pooler")), "classifier")
    return x, logits


@functools.partial(nnx.jit, static_argnames="check_call")
def _run(model, ids, mask, types, check_call):
    h = model.encode(ids, attention_mask=mask, token_type_ids=types)
    logits = model.head(h)
    if check_call:
        return h, logits, model(ids, attention_mask=mask, token_type_ids=types)
    return h, logits, logits


def forward(model, ids, mask, types=None, *, check_call=False):
    """(sequence output, logits) as one compiled program (reused for the same model object and
    shapes); with `check_call`, the logits of `__call__` must be those of encode + head."""
    h, logits, called = _run(model, ids, mask, types, check_call)
    np.testing.assert_array_equal(called, logits)
    return np.asarray(h), np.asarray(logits)


def close(got, want):
    tolerances.assert_close(got, want, rtol=1e-5, atol=1e-5)


def n_params(model) -> int:
    return sum(int(np.prod(x.shape)) for x in jax.tree.leaves(nnx.state(model, nnx.Param)))


# ------------------------------------------------------------------------------------ tests


def test_albert_matches_numpy_reference_with_padding(tmp_path):
    cfg = hf_config()
    w = random_weights(cfg)
    stored = dict(w)
    # an old TF-converted name, the buffer and the pre-training heads HF checkpoints carry
    norm = layer_prefix(0, 0) + "full_layer_layer_norm"
    stored[norm + ".gamma"] = stored.pop(norm + ".weight")
    stored[norm + ".beta"] = stored.pop(norm + ".bias")
    stored["embeddings.position_ids"] = np.arange(MAX_LEN)[None]
    stored["predictions.bias"] = np.zeros(VOCAB)
    stored["predictions.decoder.weight"] = np.zeros((VOCAB, E))
    stored["sop_classifier.classifier.weight"] = np.zeros((2, DIM))
    d = write_checkpoint(tmp_path / "albert", stored, cfg, prefix="albert.")
    model, config = hf_albert.load_hf_albert(d)
    assert config.model_type == "albert" and config.num_labels == 3
    assert config.head_from_checkpoint and list(config.initialised) == []
    assert {"embeddings.position_ids", "predictions.bias", "sop_classifier.classifier.weight"} <= (
        set(config.ignored)
    )
    assert config.attention.name == "softmax" and config.attention.dropout_rate == 0.0
    assert config.model.gelu == "tanh" and config.model.classifier_dropout == 0.1
    assert len(model.layers) == 1 and model.steps == (0, 0, 0)  # one layer, three steps
    ids, mask, types = inputs()
    h, logits = forward(model, ids, mask, types, check_call=True)
    ref_h, ref_logits = ref_forward(w, cfg, ids, mask, types)
    close(h, ref_h)  # every position, padded ones included
    close(logits, ref_logits)
    # token types matter (the reference uses them): a model ignoring them would differ
    assert np.abs(ref_forward(w, cfg, ids, mask)[1] - ref_logits).max() > 1e-2
    # sharing matters: the reference with 1 step differs from 3 steps
    one_step = ref_forward(w, {**cfg, "num_hidden_layers": 1}, ids, mask, types)[1]
    assert np.abs(one_step - ref_logits).max() > 1e-2
    # padding: other ids on padded positions change nothing at the real ones, and a row cut to
    # its real tokens gives the same outputs as padded
    noisy = np.where(mask == 1, ids, np.random.default_rng(1).integers(1, VOCAB, ids.shape))
    h2, logits2 = forward(model, noisy, mask, types, check_call=True)
    for r, n in enumerate(LENGTHS):
        close(h2[r, :n], h[r, :n])
    close(logits2, logits)
    n = LENGTHS[1]
    h3, logits3 = forward(model, ids[1:2, :n], mask[1:2, :n], types[1:2, :n])
    close(h3[0], h[1, :n])
    close(logits3[0], logits[1])
    with pytest.raises(ValueError, match="exceeds"):
        model(np.full((1, MAX_LEN + 1), 5))


@pytest.mark.parametrize("at", ["attention", "ffn"])
def test_contranorm_loads_into_the_shared_layer_and_matches_the_reference(tmp_path, at):
    """GFSA Table 1's "ALBERT-base + ContraNorm": the checkpoint loads unchanged (no parameter
    is added or drawn), ContraNorm (Guo et al.'s ALBERT form X - s A X) applies at every step of
    the shared layer, padded tokens left out."""
    cfg = hf_config()
    w = random_weights(cfg)
    d = write_checkpoint(tmp_path / "albert", w, cfg)
    cn = {"contranorm_scale": 0.3, "contranorm_at": at}
    model, config = hf_albert.load_hf_albert(d, contranorm=cn)
    plain, _ = hf_albert.load_hf_albert(d)
    assert list(config.initialised) == [] and n_params(model) == n_params(plain)
    assert not model.settings["contranorm_identity"]
    ids, mask, types = inputs()
    h, logits = forward(model, ids, mask, types)
    ref_h, ref_logits = ref_forward(w, cfg, ids, mask, types, cn=dict(scale=0.3, at=at))
    close(h, ref_h)
    close(logits, ref_logits)
    assert np.abs(ref_forward(w, cfg, ids, mask, types)[1] - ref_logits).max() > 1e-3
    with pytest.raises(errors.ConfigError, match="contranorm= takes"):
        hf_albert.load_hf_albert(d, contranorm={"embedding_dim": 4})


def test_groups_inner_layers_and_exact_gelu(tmp_path):
    """3 steps over 2 groups of 2 layers: HF applies group int(i / 1.5) = 0, 0, 1 at step i,
    each group's 2 layers in turn; a bare AlbertModel (no prefix)."""
    cfg = hf_config(num_hidden_groups=2, inner_group_num=2, hidden_act="gelu")
    w = random_weights(cfg, seed=3)
    model, config = hf_albert.load_hf_albert(write_checkpoint(tmp_path / "a", w, cfg))
    assert config.model.gelu == "erf"
    assert len(model.layers) == 4 and model.steps == (0, 1, 0, 1, 2, 3)
    ids, mask, types = inputs()
    h, logits = forward(model, ids, mask, types)
    ref_h, ref_logits = ref_forward(w, cfg, ids, mask, types)
    close(h, ref_h)
    close(logits, ref_logits)
    # the gelu form matters at this tolerance
    tanh_logits = ref_forward(w, {**cfg, "hidden_act": "gelu_new"}, ids, mask, types)[1]
    assert np.abs(tanh_logits - ref_logits).max() > 1e-5


def test_parameter_count_is_shared():
    """Parameters do not grow with the steps; albert-base-v2's count is HF's 11,683,584 for
    AlbertModel (+ 768 * 2 + 2 for a two-label classifier); GFSA adds one w_K per head of each
    distinct layer (12 for albert-base-v2, GFSA Sec. 5.1)."""

    def count(attn="softmax", **over):
        s = dict(
            vocab_size=VOCAB,
            embedding_dim=E,
            dim=DIM,
            num_layers=3,
            num_heads=HEADS,
            mlp_dim=MLP,
            max_positions=MAX_LEN,
            num_labels=3,
        )
        s.update(over)

        def make():
            return encoder_albert.AlbertEncoderModel(s, {"name": attn}, rngs=nnx.Rngs(params=0))

        return n_params(nnx.eval_shape(make))  # shapes only: no 11.7M draws

    per_layer = 4 * (DIM * DIM + DIM) + 2 * DIM + (DIM * MLP + MLP) + (MLP * DIM + DIM) + 2 * DIM
    fixed = (VOCAB + MAX_LEN + 2) * E + 2 * E + (E * DIM + DIM) + (DIM * DIM + DIM)
    fixed += DIM * 3 + 3
    assert count() == fixed + per_layer
    assert count(num_layers=12) == fixed + per_layer
    assert count(num_groups=2, inner_group_num=2) == fixed + 4 * per_layer
    assert count("gfsa") == fixed + per_layer + HEADS
    base = dict(
        vocab_size=30000,
        embedding_dim=128,
        dim=768,
        num_layers=12,
        num_heads=12,
        mlp_dim=3072,
        max_positions=512,
        num_labels=2,
    )
    assert count(**base) == 11_683_584 + 768 * 2 + 2
    assert count("gfsa", **base) == 11_683_584 + 768 * 2 + 2 + 12


def test_gfsa_plugs_in_shared_and_starts_as_softmax(tmp_path):
    """GFSA's init (attention/gfsa.py: w_K = 0, w_0 = 0, w_1 = 1) makes its filter w_1 Ā V =
    softmax attention, so the loaded GFSA model equals HF's softmax forward, padding included;
    its w_K lives once, in the shared layer, and moving it moves the outputs."""
    assert attention.defaults("gfsa")["init_wk"] == 0.0 and attention.defaults("gfsa")["w0"] == 0.0
    cfg = hf_config()
    w = random_weights(cfg)
    d = write_checkpoint(tmp_path / "a", w, cfg)
    gf, config = hf_albert.load_hf_albert(d, attention_cfg={"name": "gfsa", "order": 3})
    assert config.attention.name == "gfsa" and config.attention.dropout_rate == 0.0
    w_k = [
        (path, v)
        for path, v in nnx.iter_graph(gf)
        if isinstance(v, nnx.Param) and path and path[-1] == "w_k"
    ]
    assert len(w_k) == 1 and w_k[0][1].shape == (HEADS,)
    np.testing.assert_array_equal(w_k[0][1][...], 0.0)
    ids, mask, types = inputs()
    h_gf, logits_gf = forward(gf, ids, mask, types)
    ref_h, ref_logits = ref_forward(w, cfg, ids, mask, types)
    close(h_gf, ref_h)
    close(logits_gf, ref_logits)
    # once w_K moves, it no longer does (the test can fail)
    gf.layers[0].attn.mechanism_params["w_k"].set_value(jnp.full((HEADS,), 0.5))
    assert np.abs(forward(gf, ids, mask, types)[1] - ref_logits).max() > 1e-4
    # GFSA_even cannot be told apart on a shared layer: refused
    with pytest.raises(errors.ConfigError, match="even_layers_only"):
        hf_albert.load_hf_albert(d, attention_cfg={"name": "gfsa", "even_layers_only": True})


def test_pretrained_only_checkpoint_gets_fresh_pooler_and_head(tmp_path):
    cfg = hf_config()
    w = random_weights(cfg, head=False, pooler=False)
    d = write_checkpoint(tmp_path / "a", w, cfg, prefix="albert.")
    model, config = hf_albert.load_hf_albert(d, num_labels=4)
    assert not config.head_from_checkpoint and config.num_labels == 4
    assert list(config.initialised) == [
        "pooler.bias",
        "pooler.weight",
        "classifier.bias",
        "classifier.weight",
    ]
    kernel = np.asarray(model.classifier.kernel[...])
    assert kernel.shape == (DIM, 4) and 0.01 < kernel.std() < 0.03  # normal(0, 0.02)
    np.testing.assert_array_equal(model.classifier.bias[...], 0.0)
    ids, mask, types = inputs()
    # the backbone is the checkpoint's (random_weights draws the backbone first: same values)
    ref_h = ref_forward(random_weights(cfg), cfg, ids, mask, types)[0]
    close(forward(model, ids, mask, types)[0], ref_h)
    _, config = hf_albert.load_hf_albert(d, num_labels=1)
    assert config.problem_type == "regression"
    # a saved head of another size than asked
    d2 = write_checkpoint(tmp_path / "b", random_weights(cfg), cfg)
    with pytest.raises(errors.DataError, match="3 outputs but num_labels=2"):
        hf_albert.load_hf_albert(d2, num_labels=2)


def test_errors_name_file_and_tensor(tmp_path):
    with pytest.raises(errors.DataError, match="config.json: no such file"):
        hf_albert.load_hf_albert(tmp_path / "nothing")
    d = tmp_path / "albert"
    d.mkdir()
    cfg = hf_config()
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(errors.DataError, match="model.safetensors: no such file"):
        hf_albert.load_hf_albert(d)

    def fails(weights, match, config=None):
        write_checkpoint(d, weights, config or cfg, prefix="albert.")
        with pytest.raises(errors.DataError, match=match):
            hf_albert.load_hf_albert(d)

    p = layer_prefix(0, 0)
    w = random_weights(cfg)
    del w[p + "ffn.bias"]
    fails(w, r"missing tensor\(s\) encoder\.albert_layer_groups\.0\.albert_layers\.0\.ffn\.bias")
    w = random_weights(cfg)
    w["encoder.embedding_hidden_mapping_in.weight"] = np.zeros((DIM, E + 1))
    fails(
        w,
        r"model\.safetensors: tensor 'encoder\.embedding_hidden_mapping_in\.weight' has shape "
        r"\(16, 9\), expected \(16, 8\)",
    )
    w = random_weights(cfg)
    w[layer_prefix(1, 0) + "ffn.bias"] = np.zeros(MLP)  # a second group the config lacks
    fails(w, r"unknown tensor\(s\) encoder\.albert_layer_groups\.1\.albert_layers\.0\.ffn\.bias")
    w = random_weights(cfg)
    del w["classifier.bias"]
    fails(w, r"missing tensor\(s\) classifier\.bias of the head")
    fails(random_weights(cfg), "model_type='bert'", hf_config(model_type="bert"))
    fails(random_weights(cfg), "hidden_act='relu'", hf_config(hidden_act="relu"))
    fails(random_weights(cfg), "num_hidden_groups=0", hf_config(num_hidden_groups=0))
    (d / "config.json").write_text(json.dumps(cfg))
    (d / "model.safetensors").write_bytes(b"\x05\x00")
    with pytest.raises(errors.DataError, match="not a readable safetensors file"):
        hf_albert.load_hf_albert(d)


@pytest.mark.slow  # ~5 s: `make test-slow`
def test_train_step_gradients_reach_shared_layer_under_jit(tmp_path):
    cfg = hf_config(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    d = write_checkpoint(tmp_path / "a", random_weights(cfg), cfg)
    model, _ = hf_albert.load_hf_albert(d, attention_cfg={"name": "gfsa"})
    ids, mask, types = inputs()
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
    assert np.abs(np.asarray(g["layers"][0]["attn"]["mechanism_params"]["w_k"][...])).max() > 0
    assert np.abs(np.asarray(g["embed_proj"]["kernel"][...])).max() > 0


# ------------------------------------------------------------------------------- tokeniser


def write_tokenizer_json(directory, *, post_processor=True):
    """A tiny ALBERT-style Unigram tokenizer.json: the pieces of albert-base-v2's first ids
    (<pad> 0, <unk> 1, [CLS] 2, [SEP] 3, [MASK] 4), HF's ALBERT normaliser without the
    SentencePiece charsmap, Metaspace, the [CLS] A [SEP] B [SEP] template; no padding set."""
    from tokenizers import (
        AddedToken,
        Regex,
        Tokenizer,
        models,
        normalizers,
        pre_tokenizers,
        processors,
    )

    specials = ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]
    words = ["▁the", "▁cat", "▁sat", "▁on", "▁mat", "▁", "s", "t", "a", "."]
    vocab = [(t, 0.0) for t in specials] + [(t, -1.0 - 0.1 * i) for i, t in enumerate(words)]
    tok = Tokenizer(models.Unigram(vocab, 1, byte_fallback=False))
    tok.add_special_tokens([AddedToken(t, normalized=False) for t in specials if t != "<unk>"])
    tok.normalizer = normalizers.Sequence(
        [
            normalizers.Replace("``", '"'),
            normalizers.Replace("''", '"'),
            normalizers.NFKD(),
            normalizers.StripAccents(),
            normalizers.Lowercase(),
            normalizers.Replace(Regex(" {2,}"), " "),
        ]
    )
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    if post_processor:
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS]:0 $A:0 [SEP]:0",
            pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
            special_tokens=[("[CLS]", 2), ("[SEP]", 3)],
        )
    directory.mkdir(parents=True, exist_ok=True)
    tok.save(str(directory / "tokenizer.json"))
    return directory


def test_tokenizer_json_encodes_pairs_with_token_types(tmp_path):
    tok = hf_albert.albert_tokenizer(write_tokenizer_json(tmp_path / "a"))
    enc = tok.encode("The  CÁT", "sat on the mat.")
    assert enc.tokens == [
        "[CLS]",
        "▁the",
        "▁cat",  # lowercased, accent stripped, two spaces one
        "[SEP]",
        "▁sat",
        "▁on",
        "▁the",
        "▁mat",
        ".",
        "[SEP]",
    ]
    assert enc.ids == [2, 5, 6, 3, 7, 8, 5, 9, 14, 3]
    assert enc.type_ids == [0, 0, 0, 0, 1, 1, 1, 1, 1, 1]
    assert tok.padding["pad_id"] == 0 and tok.padding["pad_token"] == "<pad>"
    split = glue.GlueSplit("rte", "validation", ["The cat"], ["sat."], None, "test", "-")
    batch = glue.encode(split, tok, max_length=8)
    np.testing.assert_array_equal(batch["input_ids"][0], [2, 5, 6, 3, 7, 14, 3, 0])
    np.testing.assert_array_equal(batch["attention_mask"][0], [1, 1, 1, 1, 1, 1, 1, 0])
    np.testing.assert_array_equal(batch["token_type_ids"][0], [0, 0, 0, 0, 1, 1, 1, 0])


def test_tokenizer_errors(tmp_path, monkeypatch):
    with pytest.raises(errors.DataError, match="neither tokenizer.json nor spiece.model"):
        hf_albert.albert_tokenizer(tmp_path)
    d = write_tokenizer_json(tmp_path / "bare", post_processor=False)
    with pytest.raises(errors.DataError, match=r"does not encode a pair as \[CLS\] A \[SEP\] B"):
        hf_albert.albert_tokenizer(d)
    (d / "tokenizer.json").write_text("{not json")
    with pytest.raises(errors.DataError, match="not a tokenizers JSON file"):
        hf_albert.albert_tokenizer(d)
    # spiece.model alone, sentencepiece not importable
    spm = tmp_path / "spm"
    spm.mkdir()
    (spm / "spiece.model").write_bytes(b"\x00")
    monkeypatch.setitem(sys.modules, "sentencepiece", None)
    with pytest.raises(errors.DataError, match="tokenizer.json.*pip install sentencepiece"):
        hf_albert.albert_tokenizer(spm)


def test_spiece_model_converts_as_sentencepiece_encodes(tmp_path):
    """Where sentencepiece is installed (an optional extra): a tiny Unigram spiece.model trained
    here, converted, encodes lowercased text to the ids sentencepiece gives."""
    spm = pytest.importorskip("sentencepiece")
    pytest.importorskip("google.protobuf")
    text = [
        "the cat sat on the mat",
        "a dog ran in the park",
        "cats and dogs sat together on mats",
        "the park had a mat and a cat",
    ] * 20
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(text),
        model_writer=model,
        model_type="unigram",
        vocab_size=40,
        pad_id=0,
        unk_id=1,
        bos_id=-1,
        eos_id=-1,
        control_symbols=["[CLS]", "[SEP]", "[MASK]"],
        hard_vocab_limit=False,
    )
    d = tmp_path / "spm"
    d.mkdir()
    (d / "spiece.model").write_bytes(model.getvalue())
    tok = hf_albert.albert_tokenizer(d)
    sp = spm.SentencePieceProcessor(model_proto=model.getvalue())
    for a, b in [("The cat sat", "on the MAT"), ("dogs ran", "in parks")]:
        enc = tok.encode(a, b)
        want_a, want_b = sp.encode(a.lower()), sp.encode(b.lower())
        cls, sep = sp.piece_to_id("[CLS]"), sp.piece_to_id("[SEP]")
        assert enc.ids == [cls, *want_a, sep, *want_b, sep]
        assert enc.type_ids == [0] * (len(want_a) + 2) + [1] * (len(want_b) + 1)
