"""`language.glue` end to end: the mini-GLUE stand-in (deterministic, labelled as a stand-in,
each label checked against the synthetic documents it was drawn from), the `glue` evaluator and
the STS-B regression loss against float64 numpy, a tiny Hugging Face BERT folder loaded through
`config.model.checkpoint` (the same forward as `load_hf_encoder`, and as the float64 reference of
tests/language/test_hf_encoders.py), GFSA at its initial values, the official TSV path, named
errors, the recipe, Table 1's cells, and smoke trainings through the real trainer."""

from __future__ import annotations

import json
import re
import statistics

import jax
import numpy as np
import pytest
from flax import nnx

from attnbench import config as config_lib
from attnbench import errors, tasks, train, validate
from attnbench.papers import tables
from configs.tables import gfsa_table1
from language import glue_metrics, glue_task, hf_encoders
from language.data import glue, glue_standin, standin
from tests import tolerances
from tests.language import test_hf_encoders as hf

RECIPE = "language/glue.py"
WORDS = "alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega rho".split()
N_DOCS = 12  # per class: library/ and tutorial/


# ----------------------------------------------------------------- a synthetic documentation


def _para(d: int, p: int, rng, sentences: dict) -> str:
    out = []
    for s in range(3):
        text = f"Marker d{d}p{p}s{s} " + " ".join(rng.choice(WORDS, 6)) + "."
        sentences[(d, p, s)] = text
        out.append(text)
    return " ".join(out)


def write_docs(root) -> dict:
    """2 x N_DOCS reST documents (library/ and tutorial/), every kept sentence carrying its
    marker d<doc>p<paragraph>s<sentence>; a literal block and directive lines that the parser
    must drop. Returns marker tuple -> sentence."""
    rng = np.random.default_rng(0)
    sentences: dict = {}
    for d in range(2 * N_DOCS):
        folder = root / ("library" if d < N_DOCS else "tutorial")
        folder.mkdir(parents=True, exist_ok=True)
        text = [f"Title d{d}", "=" * 10, "", ".. module:: m", "   :synopsis: Dropped.", ""]
        text += [_para(d, 0, rng, sentences), ""]
        text += [f"Section d{d}h1", "-" * 14, ""]
        text += [_para(d, 1, rng, sentences), "", "An example::", ""]
        text += ["    Marker code alpha beta gamma delta epsilon.", "    x = 1", ""]
        text += [_para(d, 2, rng, sentences), "", ".. note::", ""]
        text += ["   " + _para(d, 3, rng, sentences), ""]
        (folder / f"doc{d}.rst.txt").write_text("\n".join(text))
    return sentences


@pytest.fixture(scope="module")
def docs(tmp_path_factory):
    root = tmp_path_factory.mktemp("docs")
    return root, write_docs(root)


def _marker(text: str) -> tuple[int, int, int]:
    m = re.search(r"d(\d+)p(\d+)s(\d+)", text)
    assert m, text
    return tuple(int(x) for x in m.groups())


def _build(docs, task, **kw):
    root, _ = docs
    return glue_standin.build(task, sizes=SIZES, vocab_size=120, source_dir=root, **kw)


SIZES = dict(train=80, val=40, test=40)


# ------------------------------------------------------------------------------ the stand-in


def test_parse_keeps_prose_and_drops_markup():
    text = "\n".join(
        [
            ":mod:`json` --- JSON",
            "=====================",
            "",
            ".. function:: dumps(obj)",
            "",
            "   Serialize *obj* with :func:`~json.encoder.dump` and ``indent``. See",
            "   `the spec <https://json.org>`_ for details! Short one.",
            "",
            "Example::",
            "",
            "    This looks like a sentence but is code.",
            "",
            ".. code-block:: python",
            "",
            "   Also code that reads like prose here.",
            "",
            "* A list item is not a paragraph here at all.",
            "",
            "Back to prose after the code blocks here.",
        ]
    )
    sections = glue_standin.parse_document(text)
    assert [s["heading"] for s in sections] == ["json - JSON"]
    assert sections[0]["paragraphs"] == [
        ["Serialize obj with dump and indent.", "See the spec for details!"],
        ["Back to prose after the code blocks here."],
    ]
    assert glue_standin.clean_inline(":class:`Foo <mod.Foo>` and **bold**") == "Foo and bold"


def test_standin_is_deterministic_and_labelled_as_a_standin(docs):
    a, b = _build(docs, "mrpc"), _build(docs, "mrpc")
    for name in ("train", "val", "test"):
        assert a.splits[name].text_a == b.splits[name].text_a
        assert a.splits[name].text_b == b.splits[name].text_b
        np.testing.assert_array_equal(a.splits[name].labels, b.splits[name].labels)
        assert a.splits[name].source == "standin" and len(a.splits[name]) == SIZES[name]
    assert a.vocab == b.vocab and list(a.vocab)[:5] == list(glue_standin.SPECIAL_TOKENS)
    other = _build(docs, "mrpc", seed=1)
    assert other.splits["train"].text_a != a.splits["train"].text_a
    assert "NOT GLUE" in a.description["standin_for"] and "mrpc" in a.description["standin_for"]
    # splits by document: no document gives text to two splits
    docs_of = {n: {_marker(t)[0] for t in a.splits[n].text_a} for n in ("train", "val", "test")}
    assert not (docs_of["train"] & docs_of["val"]) and not (docs_of["val"] & docs_of["test"])
    # the literal block and the directive lines never become text
    everything = [t for s in a.splits.values() for t in s.text_a + s.text_b]
    assert not any("code" in t or "Dropped" in t for t in everything)


def test_standin_labels_follow_where_the_text_comes_from(docs):
    _, sentences = docs
    by_text = {v: k for k, v in sentences.items()}
    rte = _build(docs, "rte").splits["train"]  # entailment = 0: the next sentence
    mrpc = _build(docs, "mrpc").splits["train"]  # equivalent = 1
    for split, positive in ((rte, 0), (mrpc, 1)):
        assert abs(np.mean(split.labels == positive) - 0.5) < 0.25  # half and half, n = 80
        for x, y, label in zip(split.text_a, split.text_b, split.labels, strict=True):
            (d, p, s), (d2, p2, s2) = _marker(x), _marker(y)
            if label == positive:
                assert (d2, p2, s2) == (d, p, s + 1)
            else:
                assert d2 != d
    mnli = _build(docs, "mnli")
    assert set(mnli.splits) == {"train", "val", "test", "test_mismatched"}
    names = glue.TASKS["mnli"].label_names
    m = mnli.splits["train"]
    assert sorted(set(m.labels.tolist())) == [0, 1, 2]
    for x, y, label in zip(m.text_a, m.text_b, m.labels, strict=True):
        (d, p, s), (d2, p2, s2) = _marker(x), _marker(y)
        relation = names[label]
        if relation == "entailment":
            assert (d2, p2, s2) == (d, p, s + 1)
        elif relation == "neutral":
            assert d2 == d and p2 != p
        else:
            assert d2 != d
    qnli = _build(docs, "qnli").splits["train"]
    for heading, y, label in zip(qnli.text_a, qnli.text_b, qnli.labels, strict=True):
        d, p, _ = _marker(y)
        home = int(re.search(r"d(\d+)", heading).group(1))
        if label == 0:  # entailment: the sentence is under that heading
            assert d == home and (p == 0) == heading.startswith("Title")
        else:
            assert d != home
    sst2 = _build(docs, "sst2").splits["train"]
    for x, label in zip(sst2.text_a, sst2.labels, strict=True):
        assert (_marker(x)[0] < N_DOCS) == (label == 1)  # positive: library/
    cola = _build(docs, "cola").splits["train"]
    assert sst2.text_b is None and cola.text_b is None
    for x, label in zip(cola.text_a, cola.labels, strict=True):
        original = sentences[_marker(x)]
        if label == 1:  # acceptable: as written
            assert x == original
        else:  # its words in another order, the final full stop kept last
            assert x != original and x[-1] == original[-1] == "."
            assert sorted(x[:-1].split()) == sorted(original[:-1].split())
    stsb = _build(docs, "stsb").splits["train"]
    assert stsb.labels.dtype == np.float32 and stsb.labels.min() >= 0 and stsb.labels.max() <= 5
    assert len(set(stsb.labels.tolist())) > 5
    for x, y, score in zip(stsb.text_a, stsb.text_b, stsb.labels, strict=True):
        assert x in by_text  # the first sentence as written
        xs, ys = x.split(), y.split()
        changed = sum(u != v for u, v in zip(xs, ys, strict=True))
        assert changed <= round(len(xs) * (1 - score / 5))  # at most the m words replaced


def test_standin_tokenizer_layouts(docs):
    s = _build(docs, "mrpc")
    bert, roberta = s.tokenizer("bert"), s.tokenizer("roberta")
    e = bert.encode("Marker alpha", "beta")
    assert e.tokens[0] == "[CLS]" and e.tokens.count("[SEP]") == 2
    assert e.type_ids == [0] * (e.tokens.index("[SEP]") + 1) + [1] * (
        len(e.tokens) - e.tokens.index("[SEP]") - 1
    )
    r = roberta.encode("Marker alpha", "beta")
    assert r.tokens[r.tokens.index("[SEP]") + 1] == "[SEP]" and set(r.type_ids) == {0}
    assert "alpha" in s.vocab and e.ids[2] == s.vocab["alpha"]  # lowercased whole words


@pytest.mark.slow
def test_standin_on_the_python_documentation():
    try:
        standin.find_standin_dir(None)
    except errors.UserError:
        pytest.skip("apt-get install python3.11-doc (the stand-in's text)")
    s = glue_standin.build("qnli", sizes=dict(train=200, val=50, test=50), vocab_size=2000)
    d = s.description
    assert d["documents"]["train"] > 300 and d["sentences"]["train"] > 20_000
    assert len(s.vocab) == 2000 and abs(np.mean(s.splits["train"].labels) - 0.5) < 0.15


# ---------------------------------------------------------------- evaluator and regression


def test_glue_evaluator_is_glue_metrics_on_the_real_examples():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(40, 2))
    labels = rng.integers(0, 2, 40)
    weight = np.ones(40)
    weight[-5:] = 0  # batch padding
    ev = glue_task.GlueEvaluator(task="mrpc")
    for rows in (slice(0, 17), slice(17, 40)):
        ev.update({"logits": logits[rows]}, {"label": labels[rows], "weight": weight[rows]})
    got = ev.result()
    pred, y = logits[:35].argmax(-1), labels[:35]
    assert got["f1"] == glue_metrics.f1(pred, y) and got["accuracy"] == np.mean(pred == y)
    log_p = logits[:35] - np.log(np.exp(logits[:35]).sum(-1, keepdims=True))
    assert got["loss"] == pytest.approx(-log_p[np.arange(35), y].mean(), rel=1e-12)
    assert ev.reports == ("f1", "accuracy", "loss")
    assert ev.reference()["majority_class_rate"] == max(np.mean(y), 1 - np.mean(y))
    st = glue_task.GlueEvaluator(task="stsb")
    scores = rng.uniform(0, 5, 40)
    st.update({"logits": logits[:, :1]}, {"label": scores, "weight": weight})
    r = st.result()
    assert r["spearman"] == glue_metrics.spearman(logits[:35, 0], scores[:35])
    assert r["pearson"] == glue_metrics.pearson(logits[:35, 0], scores[:35])
    assert r["loss"] == pytest.approx(np.mean((logits[:35, 0] - scores[:35]) ** 2), rel=1e-12)
    const = glue_task.GlueEvaluator(task="stsb")
    const.update({"logits": np.ones((4, 1))}, {"label": np.arange(4.0), "weight": np.ones(4)})
    assert np.isnan(const.result()["spearman"])  # undefined, not a number
    assert glue_task.GlueEvaluator(task="cola").reports == ("mcc", "loss")
    assert glue_task.GlueEvaluator(task="mnli-mm").task == "mnli"


def test_stsb_regression_head_and_weighted_mse():
    config = config_lib.load(f"{RECIPE}:preset=smoke,task=stsb")
    task = tasks.get(config.task)
    model = task.build_model(config, nnx.Rngs(params=0))
    assert model.settings["num_labels"] == 1
    batch = task.example_batch(config, 6, seed=1)
    batch["weight"][4:] = 0
    both = jax.jit(
        lambda b: (task.loss(model, b, train=False, key=None), task.eval_outputs(model, b))
    )
    (loss, metrics), outputs = both(batch)  # one compiled program
    logits = np.asarray(outputs["logits"], np.float64)
    assert logits.shape == (6, 1)
    err = (logits[:4, 0] - batch["label"][:4].astype(np.float64)) ** 2
    tolerances.assert_close(float(loss), err.mean(), rtol=1e-5, atol=1e-6)
    assert float(metrics["loss"][1]) == 4.0


# ------------------------------------------------------------- checkpoints (tiny HF folders)


def _vocab_txt(directory) -> list[str]:
    """A 50-token WordPiece vocabulary (the tiny checkpoints' vocab_size)."""
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"abcdefghijklmnopqrstuvwxyz"]
    tokens += ["##" + c for c in "abcdefghijklmnopqrs"]
    assert len(tokens) == hf.VOCAB
    (directory / "vocab.txt").write_text("\n".join(tokens) + "\n")
    return tokens


def _checkpoint(tmp_path, labels: int, name: str = "bert"):
    w = hf.random_weights("bert", labels=labels)
    d = hf.write_checkpoint(tmp_path / name, w, hf.hf_config("bert", id2label=None))
    _vocab_txt(d)
    return d, w


def _config(arg: str, length: int = hf.MAX_LEN, **data):
    config = config_lib.load(f"{RECIPE}:preset=smoke,length={length},{arg}")
    with config.unlocked():
        for k, v in data.items():
            config.data[k] = v
    return config


def test_checkpoint_loads_as_load_hf_encoder_and_the_numpy_reference(tmp_path):
    d, w = _checkpoint(tmp_path, labels=2)
    config = _config(f"task=rte,checkpoint={d}")
    model = tasks.get(config.task).build_model(config, nnx.Rngs(params=0))
    direct, _ = hf_encoders.load_hf_encoder(d, num_labels=2, attention_cfg=config.attention)
    ids, mask, types = hf.inputs("bert")
    h, logits = hf.forward(model, ids, mask, types)  # under jit
    np.testing.assert_array_equal(logits, hf.forward(direct, ids, mask, types)[1])
    ref_h, ref_logits = hf.ref_forward(w, "bert", ids, mask, types)  # float64 numpy
    hf.close(h, ref_h)
    hf.close(logits, ref_logits)


def _loaded_logits(tmp_path, arg: str, labels: int):
    """(config, logits) of the tiny checkpoint (a saved head of `labels` outputs) built by the
    task with the recipe argument `arg`."""
    ids, mask, types = hf.inputs("bert")
    d, _ = _checkpoint(tmp_path, labels, name=f"l{labels}")
    config = _config(f"{arg},checkpoint={d}")
    model = tasks.get(config.task).build_model(config, nnx.Rngs(params=0))
    return config, np.asarray(model(ids, attention_mask=mask, token_type_ids=types))


def test_gfsa_at_its_initial_values_is_the_softmax_model(tmp_path):
    """w_K starts at 0 (attention/gfsa.py), so GFSA is w_0 I + A: with STS-B's w_0 = 0 the
    loaded model's logits are the softmax model's."""
    _, soft = _loaded_logits(tmp_path, "task=stsb", 1)
    config, gfsa = _loaded_logits(tmp_path, "task=stsb,attn=gfsa", 1)
    assert config.attention.order == 3 and config.attention.w0 == 0.0
    tolerances.assert_close(gfsa, soft, rtol=1e-6, atol=1e-6)


def test_contranorm_goes_into_the_checkpoint_model(tmp_path):
    """`contranorm=1` with a checkpoint: the loaded model carries the model section's ContraNorm
    settings (the checkpoint lacks nothing: ContraNorm has no parameters) and its forward is the
    float64 reference's with ContraNorm (tests/language/test_hf_encoders.py)."""
    d, w = _checkpoint(tmp_path, labels=2)
    config = _config(f"task=rte,checkpoint={d},contranorm=1,cn_scale=0.3")
    model = tasks.get(config.task).build_model(config, nnx.Rngs(0))
    assert model.settings["contranorm_scale"] == 0.3 and model.settings["contranorm_identity"]
    ids, mask, types = hf.inputs("bert")
    h, logits = hf.forward(model, ids, mask, types)
    ref_h, ref_logits = hf.ref_forward(
        w, "bert", ids, mask, types, cn=dict(scale=0.3, identity=True, at="attention")
    )
    hf.close(h, ref_h)
    hf.close(logits, ref_logits)


@pytest.mark.slow
def test_gfsa_with_the_cola_w0_is_not_the_softmax_model(tmp_path):
    """The CoLA recipe's w_0 = -0.01 (the authors' script) adds -0.01 V at step 0."""
    _, soft = _loaded_logits(tmp_path, "task=cola", 2)
    config, gfsa = _loaded_logits(tmp_path, "task=cola,attn=gfsa", 2)
    assert config.attention.w0 == -0.01 and config.attention.order == 4
    assert np.abs(gfsa - soft).max() > 1e-4


def _rte(root) -> None:
    rows = [("a b c", "d e", "entailment"), ("f g", "h i j", "not_entailment")]
    (root / "RTE").mkdir(parents=True)
    for name, n in (("train.tsv", 16), ("dev.tsv", 3)):
        lines = ["index\tsentence1\tsentence2\tlabel"]
        lines += [f"{i}\t{rows[i % 2][0]}\t{rows[i % 2][1]}\t{rows[i % 2][2]}" for i in range(n)]
        (root / "RTE" / name).write_text("\n".join(lines) + "\n")


def test_official_tsv_data_and_the_checkpoint_tokenizer(tmp_path):
    d, _ = _checkpoint(tmp_path, labels=2)
    _rte(tmp_path / "glue")
    config = _config(f"task=rte,source=official,checkpoint={d}", dir=str(tmp_path / "glue"))
    data = tasks.get(config.task).load_data(config)
    assert data.source == "official" and data.description["splits"]["test"] == "validation"
    assert len(data.train) == 16 and len(data.val) == len(data.test) == 3
    for key in ("input_ids", "attention_mask", "token_type_ids", "label"):
        np.testing.assert_array_equal(data.val.arrays[key], data.test.arrays[key])
    # [CLS] a b c [SEP] d e [SEP], types 0 | 1, padded to length=10 with [PAD] = 0
    np.testing.assert_array_equal(data.val.arrays["input_ids"][0], [2, 5, 6, 7, 3, 8, 9, 3, 0, 0])
    np.testing.assert_array_equal(data.val.arrays["token_type_ids"][0], [0] * 5 + [1] * 3 + [0] * 2)
    np.testing.assert_array_equal(data.val.arrays["attention_mask"][0], [1] * 8 + [0] * 2)
    np.testing.assert_array_equal(data.val.arrays["label"], [0, 1, 0])


def test_errors_are_named(tmp_path, monkeypatch):
    task = tasks.get("language.glue")
    missing = tmp_path / "nowhere"
    config = _config(f"task=rte,checkpoint={missing}")
    with pytest.raises(errors.ConfigError, match=r"config.model.checkpoint=.*nowhere.*no such"):
        task.build_model(config, nnx.Rngs(0))
    d, _ = _checkpoint(tmp_path, labels=2)
    config = _config(f"task=rte,source=official,checkpoint={d}", dir=str(missing))
    with pytest.raises(errors.DataError, match=r"nowhere: GLUE data folder not found") as e:
        task.load_data(config)
    assert "`attnbench-data fetch glue`" in str(e.value) and "nyu-mll/glue parquet" in str(e.value)
    # no config.data.dir: the catalog's folder <data root>/glue, or the fetch command
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path / "root"))
    config = _config(f"task=rte,source=official,checkpoint={d}")
    with pytest.raises(errors.DataError, match=r"not in the data root .*root.glue") as e:
        task.load_data(config)
    for part in ("`attnbench-data fetch glue`", "config.data.dir", "nyu-mll/glue parquet"):
        assert part in str(e.value)
    _rte(tmp_path / "root" / "glue")
    data = task.load_data(config)  # what `attnbench-data fetch glue` lays out
    assert data.description["dir"] == "<data root>/glue" and len(data.train) == 16
    (tmp_path / "glue").mkdir()
    config = _config(f"task=rte,source=official,checkpoint={d}", dir=str(tmp_path / "glue"))
    with pytest.raises(errors.DataError, match=r"GLUE rte train not found: neither .*train.tsv"):
        task.load_data(config)
    _rte(tmp_path / "glue")
    (d / "vocab.txt").unlink()
    with pytest.raises(errors.DataError, match=r"no tokenizer files"):
        task.load_data(config)
    tokens = _vocab_txt(d)
    (d / "vocab.txt").write_text("\n".join(tokens + ["##t", "##u"]) + "\n")  # 52 > 50 rows
    _rte_t = tmp_path / "glue" / "RTE" / "dev.tsv"
    _rte_t.write_text("index\tsentence1\tsentence2\tlabel\n0\tat\tb\tentailment\n")
    with pytest.raises(errors.DataError, match=r"token id 50 .* 50 token embeddings"):
        task.load_data(config)
    with pytest.raises(errors.ConfigError, match=r"family='roberta' but .* bert checkpoint"):
        task.build_model(_config(f"task=rte,encoder=roberta,checkpoint={d}"), nnx.Rngs(0))
    tokens_ok = tmp_path / "glue2"
    _rte(tokens_ok)
    (d / "vocab.txt").write_text("\n".join(tokens) + "\n")
    long = _config(f"task=rte,source=official,checkpoint={d}", 11, dir=str(tokens_ok))
    with pytest.raises(errors.ConfigError, match=r"max_length=11 exceeds the 10 positions"):
        task.load_data(long)


# --------------------------------------------------------------------- recipe and the table


@pytest.mark.parametrize("preset", ["paper", "cpu", "smoke"])
@pytest.mark.parametrize(
    "arg",
    [
        "task=cola",
        "task=stsb,attn=gfsa",
        "task=mnli-mm,encoder=roberta,attn=gfsa,even=1",
        "task=rte,encoder=albert,contranorm=1",
    ],
)
def test_recipes_validate(preset, arg):
    c = config_lib.load(f"{RECIPE}:preset={preset},{arg}")
    assert validate.problems(c, tasks.get(c.task)) == [], (preset, arg)


def test_paper_recipe(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path))
    c = config_lib.load(f"{RECIPE}:task=qnli,attn=gfsa")
    assert (c.optimizer.lr, c.batch_size, c.epochs, c.schedule.warmup_steps) == (2e-5, 32, 5, 0)
    assert (c.seed, c.data.max_length, c.optimizer.weight_decay) == (2023, 128, 0.0)
    assert c.schedule.name == "constant*linear_warmup*linear_decay"
    assert c.data.source == "official" and c.model.checkpoint == str(tmp_path / "bert-base-uncased")
    assert (c.attention.name, c.attention.order, c.attention.w0) == ("gfsa", 8, 0.0)
    assert c.best_metric == "accuracy" and c.evals.glue.task == "qnli"
    r = config_lib.load(f"{RECIPE}:task=cola,encoder=roberta,attn=gfsa")
    assert (r.attention.order, r.attention.w0) == (6, -0.05)
    assert r.model.checkpoint.endswith("roberta-base") and r.best_metric == "mcc"
    assert config_lib.load(f"{RECIPE}:task=mnli-mm,attn=gfsa").attention.order == 4
    assert config_lib.load(f"{RECIPE}:task=stsb,attn=gfsa,exact=1").attention.name == "gfsa_exact"
    a = config_lib.load(f"{RECIPE}:task=rte,encoder=albert")
    assert a.model.checkpoint.endswith("albert-base-v2") and a.attention.dropout_rate == 0.0
    assert config_lib.load(f"{RECIPE}:preset=cpu").model.checkpoint == ""
    for bad, match in (
        ("order=3", "GFSA's K"),
        ("even=1", "even=1 is a GFSA variant"),
        ("task=wnlx", "unknown GLUE task='wnlx'"),
        ("encoder=gpt2", "unknown encoder"),
    ):
        with pytest.raises(errors.ConfigError, match=match):
            config_lib.load(f"{RECIPE}:{bad}")


def test_contranorm_recipe():
    """Table 1's "+ ContraNorm": Guo et al.'s placement and form per encoder, the README's
    scales (RTE 0.005, CoLA 0.01), 0.01 elsewhere, `cn_scale=` / `cn_at=`; not with GFSA."""
    c = config_lib.load(f"{RECIPE}:task=rte,contranorm=1")
    m = c.model
    assert (m.contranorm_scale, m.contranorm_temperature, m.contranorm_dual) == (0.005, 1.0, False)
    assert m.contranorm_identity and m.contranorm_at == "attention"
    assert c.attention.name == "softmax"
    a = config_lib.load(f"{RECIPE}:task=sst2,encoder=albert,contranorm=1,cn_scale=0.1,cn_at=ffn")
    assert (a.model.contranorm_scale, a.model.contranorm_at) == (0.1, "ffn")
    assert not a.model.contranorm_identity  # Guo et al.'s ALBERT: X - s A X
    assert config_lib.load(f"{RECIPE}:task=cola,contranorm=1").model.contranorm_scale == 0.01
    assert "contranorm_scale" not in config_lib.load(f"{RECIPE}:task=cola").model
    # the stand-in's fresh encoder takes the settings from the model section
    smoke = config_lib.load(f"{RECIPE}:preset=smoke,task=mrpc,contranorm=1")
    s = glue_task.encoder_settings(smoke.model, 2)
    assert s["contranorm_scale"] == 0.01 and s["contranorm_at"] == "attention"
    for bad, match in (
        ("contranorm=1,attn=gfsa", "never combines them"),
        ("cn_scale=0.1", "give contranorm=1"),
        ("contranorm=1,cn_at=middle", "unknown ContraNorm position"),
        ("contranorm=1,cn_scale=-1", "cn_scale=-1"),
        ("contranorm=2", "contranorm=2"),
    ):
        with pytest.raises(errors.ConfigError, match=match):
            config_lib.load(f"{RECIPE}:{bad}")


def test_table1_cells_run_the_recipe_and_average_as_gfsa():
    t = tables.load("gfsa.table1")
    tables.validate(t)  # every config loads (smoke), task and mechanism registered
    runnable = [c for c in t.cells if c.config is not None]
    assert len(runnable) == 9 * (9 if gfsa_table1.ALBERT else 6)
    for cell in runnable:
        c = config_lib.load(cell.config + ",preset=smoke")
        section, _, name = cell.metric.partition(".")
        assert section == "test_last" and name in glue_task.metrics_of(c.data.task)
        assert name == glue_task.primary_metric(c.data.task)
    bert = t.cell("BERT-base + GFSA", "MNLI-mm")
    assert bert.config == f"{RECIPE}:task=mnli-mm,encoder=bert,attn=gfsa"
    for row in t.rows:
        avg = t.cell(row, "Avg")
        if avg.mean_of:
            assert avg.mean_of == tuple(glue_metrics.GFSA_COLUMNS)
            nine = {c: t.cell(row, c).paper for c in avg.mean_of}
            assert statistics.fmean(nine.values()) == pytest.approx(
                glue_metrics.gfsa_average(nine), abs=1e-12
            )
    cn = t.cell("RoBERTa-base + ContraNorm", "CoLA")
    assert cn.needs is None and cn.config == f"{RECIPE}:task=cola,encoder=roberta,contranorm=1"


# ----------------------------------------------------------------------- smoke trainings


def _standin_config(docs, arg):
    root, _ = docs
    config = config_lib.load(f"{RECIPE}:preset=smoke,{arg}")
    with config.unlocked():
        config.data.standin_dir = str(root)
    return config


@pytest.mark.slow
def test_smoke_trains_stsb_on_the_standin(docs, tmp_path):
    config = _standin_config(docs, "task=stsb")
    summary = train.train_and_evaluate(config, tmp_path / "run")
    assert summary["data"]["source"] == "standin" and "NOT GLUE" in summary["data"]["standin_for"]
    for section in ("test_last", "val_last", "test_best"):
        m = summary["metrics"][section]
        assert {"spearman", "pearson", "loss"} <= set(m)
        assert all(np.isfinite(m[k]) for k in ("spearman", "pearson", "loss"))
        assert -1 <= m["spearman"] <= 1
    assert summary["num_examples"] == {"train": 64, "val": 32, "test": 32}


@pytest.mark.slow
@pytest.mark.parametrize(
    "arg, metric",
    [
        ("task=cola,attn=gfsa", "mcc"),
        ("task=mrpc,encoder=roberta", "f1"),
        ("task=mnli-mm", "accuracy"),
    ],
)
def test_smoke_trains_the_other_heads(docs, tmp_path, arg, metric):
    summary = train.train_and_evaluate(_standin_config(docs, arg), tmp_path / "run")
    assert np.isfinite(summary["metrics"]["test_last"][metric])
    assert summary["reference"]["majority_class_rate"]["test"] > 0


@pytest.mark.slow
def test_smoke_fine_tunes_a_checkpoint_on_official_files(tmp_path):
    d, _ = _checkpoint(tmp_path, labels=2)
    _rte(tmp_path / "glue")
    config = _config(
        f"task=rte,source=official,checkpoint={d},attn=gfsa", dir=str(tmp_path / "glue")
    )
    summary = train.train_and_evaluate(config, tmp_path / "run")
    m = summary["metrics"]["test_last"]
    assert m["num_examples"] == 3 and m["accuracy"] in (0.0, 1 / 3, 2 / 3, 1.0)
    assert json.loads((tmp_path / "run" / "config.json").read_text())["data"]["task"] == "rte"
