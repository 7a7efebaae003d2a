"""LRA Retrieval: official TSV reader/writer, byte encoding, cache and the Python-doc stand-in."""

import json
import os
import pathlib
import re

import numpy as np
import pytest

from attnbench.data import cache
from lra.data import retrieval
from lra.data import text as lra_text

ROWS = [
    (1, "P00-1001", "P99-1002", 'A "quoted" text, quotes are plain', "short"),
    (0, "W05-0001", "J93-2004", "caf\u00e9 \u2014 bytes, not chars", ""),
    (1, "C10-1", "C10-2", "x" * 30, "y" * 3),
]


def _write_official(folder: pathlib.Path, splits=None) -> None:
    splits = splits or {"train": ROWS, "val": ROWS[:2], "test": ROWS[2:]}
    for split, rows in splits.items():
        retrieval.write_tsv(folder / retrieval.SPLIT_FILES[split], rows)


def _expected_tokens(texts, max_length, cap=10_000):
    out = np.zeros((len(texts), max_length), np.uint16)
    for i, text in enumerate(texts):
        b = text.encode()[:cap][:max_length]
        out[i, : len(b)] = np.frombuffer(b, np.uint8).astype(np.uint16) + 1
    return out


def _config(**kw):
    d = retrieval.data_config()
    for k, v in kw.items():
        setattr(d, k, v)
    return d


# ---------------------------------------------------------------------------- config & encoding


def test_data_config_has_the_lra_values():
    d = retrieval.data_config()
    assert (d.source, d.dir, d.max_length, d.text_cap, d.seed) == ("official", "", 4000, 10000, 0)
    assert d.standin_dir == "/usr/share/doc/python3.11/html/_sources"
    assert (retrieval.NUM_CLASSES, retrieval.VOCAB_SIZE) == (2, 257)


def test_encode_bytes_is_byte_plus_one_truncated_and_padded():
    out = lra_text.encode_bytes([b"\x00\xffab", b"", b"abcdefgh"], 5)
    assert out.dtype == np.uint16 and out.shape == (3, 5)
    np.testing.assert_array_equal(out[0], [1, 256, 98, 99, 0])
    np.testing.assert_array_equal(out[1], 0)
    np.testing.assert_array_equal(out[2], np.frombuffer(b"abcde", np.uint8) + 1)


# ---------------------------------------------------------------------------- official files


def test_write_then_read_tsv_round_trips(tmp_path):
    path = tmp_path / "x.tsv"
    retrieval.write_tsv(path, ROWS)
    assert path.read_bytes().count(b"\n") == 3 and b"\r" not in path.read_bytes()
    assert retrieval.read_tsv(path) == ROWS


def test_tokenize_tsv_exact_values(tmp_path):
    path = tmp_path / "x.tsv"
    retrieval.write_tsv(path, ROWS)
    arrays = retrieval.tokenize_tsv(path, max_length=12)
    np.testing.assert_array_equal(arrays["label"], [1, 0, 1])
    assert arrays["label"].dtype == np.int32 and arrays["tokens1"].dtype == np.uint16
    np.testing.assert_array_equal(arrays["tokens1"], _expected_tokens([r[3] for r in ROWS], 12))
    np.testing.assert_array_equal(arrays["tokens2"], _expected_tokens([r[4] for r in ROWS], 12))
    # "café" is 5 bytes: byte-level, so the cut at 4 splits the "é".
    assert arrays["tokens1"][1, 3] == 0xC3 + 1
    # The 10,000-byte cap of LRA applies before max_length.
    capped = retrieval.tokenize_tsv(path, max_length=12, text_cap=4)
    np.testing.assert_array_equal(capped["tokens1"], _expected_tokens([r[3] for r in ROWS], 12, 4))
    assert (capped["tokens1"][:, 4:] == 0).all()


def test_float_labels_crlf_and_trailing_blank_lines_are_accepted(tmp_path):
    path = tmp_path / "x.tsv"
    path.write_bytes(b"1.0\ta\tb\tt1\tt2\r\n0.0\tc\td\tu1\tu2\r\n0\te\tf\tv\tw\n1\tg\th\ti\tj\n\n")
    arrays = retrieval.tokenize_tsv(path, max_length=3)
    np.testing.assert_array_equal(arrays["label"], [1, 0, 0, 1])
    np.testing.assert_array_equal(arrays["tokens2"][0], [ord("t") + 1, ord("2") + 1, 0])
    assert [r[0] for r in retrieval.read_tsv(path)] == [1, 0, 0, 1]


@pytest.mark.parametrize(
    "content, where, what",
    [
        (b"1\ta\tb\tt1\tt2\n0\ta\tb\tt1\n", ":2:", "expected 5 tab-separated fields"),
        (b"1\ta\tb\tt1\tt2\textra\n", ":1:", "found 6"),
        (b"1\ta\tb\tt1\tt2\n2\ta\tb\tt1\tt2\n", ":2:", "label b'2' is not 0 or 1"),
        (b"0.5\ta\tb\tt1\tt2\n", ":1:", "label b'0.5' is not 0 or 1"),
        (b"yes\ta\tb\tt1\tt2\n", ":1:", "label b'yes' is not 0 or 1"),
        (b"1\ta\tb\tt1\tt2\n\n0\ta\tb\tt1\tt2\n", ":2:", "blank line between records"),
        (b"", "", "no records"),
    ],
)
def test_malformed_files_name_path_and_line(tmp_path, content, where, what):
    path = tmp_path / "bad.tsv"
    path.write_bytes(content)
    with pytest.raises(cache.DataError) as e:
        retrieval.tokenize_tsv(path, max_length=4)
    assert f"{path}{where}" in str(e.value) and what in str(e.value)
    if content:
        with pytest.raises(cache.DataError, match=re.escape(f"{path}{where}")):
            retrieval.read_tsv(path)


def test_write_tsv_rejects_what_the_format_cannot_hold(tmp_path):
    with pytest.raises(cache.DataError, match="row 0: label 2 is not 0 or 1"):
        retrieval.write_tsv(tmp_path / "x.tsv", [(2, "a", "b", "c", "d")])
    with pytest.raises(cache.DataError, match="row 1: text1 must be a str without tabs"):
        retrieval.write_tsv(tmp_path / "x.tsv", [ROWS[0], (1, "a", "b", "c\td", "e")])
    with pytest.raises(cache.DataError, match="row 0: text2 must be a str without tabs"):
        retrieval.write_tsv(tmp_path / "x.tsv", [(1, "a", "b", "c", "line\nbreak")])


def test_load_official_splits_and_description(tmp_path):
    data = tmp_path / "aan"
    data.mkdir()
    _write_official(data)
    splits, desc = retrieval.load(_config(dir=str(data), max_length=16), tmp_path / "cache")
    assert set(splits) == {"train", "val", "test"}
    for split, rows in {"train": ROWS, "val": ROWS[:2], "test": ROWS[2:]}.items():
        a = splits[split]
        assert set(a) == {"tokens1", "tokens2", "label"}
        np.testing.assert_array_equal(a["label"], [r[0] for r in rows])
        np.testing.assert_array_equal(a["tokens1"], _expected_tokens([r[3] for r in rows], 16))
        np.testing.assert_array_equal(a["tokens2"], _expected_tokens([r[4] for r in rows], 16))
    assert desc["sizes"] == {"train": 3, "val": 2, "test": 1}
    assert desc["files"]["val"] == "new_aan_pairs.eval.tsv"
    assert desc["cache"].startswith("lra/retrieval-official-")
    text = json.dumps(desc)
    assert str(tmp_path / "cache") not in text


def test_load_official_finds_the_release_subfolder(tmp_path):
    _write_official(tmp_path / "lra_release" / "tsv_data")
    splits, _ = retrieval.load(_config(dir=str(tmp_path), max_length=4), tmp_path / "cache")
    assert len(splits["train"]["label"]) == 3


def test_load_official_missing_files(tmp_path):
    with pytest.raises(
        cache.DataError, match="config.data.dir is empty.*`attnbench-data fetch aan`"
    ):
        retrieval.load(_config(), tmp_path)
    with pytest.raises(cache.DataError, match="directory not found"):
        retrieval.load(_config(dir=str(tmp_path / "nope")), tmp_path)
    data = tmp_path / "aan"
    data.mkdir()
    _write_official(data, {"train": ROWS, "test": ROWS})
    with pytest.raises(cache.DataError) as e:
        retrieval.load(_config(dir=str(data)), tmp_path / "cache")
    message = str(e.value)
    assert message.startswith(f"{data}: missing new_aan_pairs.eval.tsv;")
    assert all(name in message for name in retrieval.SPLIT_FILES.values())


def test_malformed_official_file_error_names_path_and_line(tmp_path):
    data = tmp_path / "aan"
    data.mkdir()
    _write_official(data)
    bad = data / "new_aan_pairs.test.tsv"
    bad.write_bytes(bad.read_bytes() + b"1\tonly\tthree\n")
    with pytest.raises(cache.DataError, match=re.escape(f"{bad}:2: expected 5")):
        retrieval.load(_config(dir=str(data), max_length=8), tmp_path / "cache")


def test_official_second_load_is_a_cache_hit_and_edits_rebuild(tmp_path, monkeypatch):
    data = tmp_path / "aan"
    data.mkdir()
    _write_official(data)
    d = _config(dir=str(data), max_length=8)
    first, desc1 = retrieval.load(d, tmp_path / "cache")

    def fail(*args, **kwargs):
        raise AssertionError("rebuilt instead of reading the cache")

    monkeypatch.setattr(retrieval, "tokenize_tsv", fail)
    second, desc2 = retrieval.load(d, tmp_path / "cache")
    assert desc1 == desc2
    for split in first:
        for key in first[split]:
            np.testing.assert_array_equal(first[split][key], second[split][key])
            assert first[split][key].dtype == second[split][key].dtype
    # A changed source file is a new spec: rebuilt, not served stale.
    _write_official(data, {"train": ROWS[:1], "val": ROWS, "test": ROWS})
    os.utime(data / "new_aan_pairs.train.tsv", ns=(1, 1))
    with pytest.raises(AssertionError, match="rebuilt"):
        retrieval.load(d, tmp_path / "cache")


# ---------------------------------------------------------------------------- stand-in

FAKE_DOCS = {
    "index.rst.txt": (
        "Welcome INDEX-PAGE\n\n.. _top-label:\n\n"
        "See :doc:`library/spam` and :doc:`Eggs page <library/eggs>` for more.\n"
    ),
    "library/spam.rst.txt": (
        ":mod:`spam` --- SPAM-PAGE\n=========================\n\n.. module:: spam\n\n"
        ".. _spam-details:\n\nSpam uses :mod:`eggs` and a reference split over\nlines: :ref:`the\n"
        "   details <ham-intro>`. Itself: :mod:`spam`. Unknown: :mod:`nosuchmod`.\n\n"
        ".. function:: fry()\n\n   Fries.\n"
    ),
    "library/eggs.rst.txt": (
        ":mod:`eggs` --- EGGS-PAGE\n=========================\n\n.. module:: eggs\n\n"
        "Eggs go to :ref:`top-label`. They call :func:`spam.fry` (an object role).\n"
        ".. _External: https://example.org\n"
    ),
    "library/ham.rst.txt": (
        ".. _ham-intro:\n\nHAM-PAGE. Back to :doc:`../index`, on to :mod:`~toast`; a\n"
        ":term:`word` of the glossary.\n"
    ),
    "library/toast.rst.txt": "TOAST-PAGE: no module directive, found by its file name.\n",
    "glossary.rst.txt": "GLOSSARY-PAGE\n\n.. glossary::\n\n   word\n      A word.\n",
    **{f"other/filler{i}.rst.txt": f"FILLER-{i}-PAGE with no links at all.\n" for i in range(6)},
}
REFS = {
    ("index", "library/spam"),
    ("index", "library/eggs"),
    ("library/spam", "library/eggs"),
    ("library/spam", "library/ham"),
    ("library/eggs", "index"),
    ("library/ham", "index"),
    ("library/ham", "library/toast"),
}
OTHER_LINKS = {("library/eggs", "library/spam"), ("library/ham", "glossary")}
ROLE = re.compile(rb":(ref|mod|doc):`")


def _fake_tree(root: pathlib.Path) -> pathlib.Path:
    for name, text in FAKE_DOCS.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_read_corpus_resolves_the_known_references(tmp_path):
    corpus = retrieval.read_corpus(_fake_tree(tmp_path))
    assert len(corpus.texts) == len(FAKE_DOCS)
    assert {(a, b) for a, b, _ in corpus.references} == REFS
    assert len(corpus.references) == len(REFS)
    assert corpus.linked == {frozenset(p) for p in REFS | OTHER_LINKS}
    c = corpus.counts
    # Self references: the two page titles and "Itself"; unresolved: nosuchmod.
    assert (c["mod_self"], c["mod_unresolved"], c["mod_resolved"]) == (3, 1, 2)
    assert (c["ref_resolved"], c["doc_resolved"], c["references"]) == (2, 3, 7)
    for page, text in corpus.texts.items():
        assert not ROLE.search(text), page  # every page-level role is gone, title and target
        assert not re.search(rb"^\.\. _[\w-]+:\s*$", text, re.M), page  # so are label lines
    assert b".. _External: https://example.org" in corpus.texts["library/eggs"]  # a hyperlink
    assert b".. module:: spam" in corpus.texts["library/spam"]
    assert b"a reference split over\nlines: . Itself: . Unknown: ." in corpus.texts["library/spam"]
    # The offset is where the role was: "See " + role -> 4 bytes after the line start.
    index = corpus.texts["index"]
    offsets = sorted(o for a, _, o in corpus.references if a == "index")
    assert (
        index[offsets[0] - 4 : offsets[0]] == b"See "
        and index[offsets[1] - 5 : offsets[1]] == b" and "
    )


def _check_examples(corpus, examples, width):
    texts = corpus.texts
    split_of = {}
    for split, rows in examples.items():
        labels = [r[0] for r in rows]
        assert len(rows) > 0 and sum(labels) * 2 == len(rows), split  # exactly balanced
        for label, page1, page2, text1, text2 in rows:
            pair = frozenset((page1, page2))
            assert split_of.setdefault(pair, split) == split  # no page pair in two splits
            assert len(text1) == min(width, len(texts[page1])) and text2 == texts[page2][:width]
            start = texts[page1].find(text1)
            assert start >= 0
            if label == 1:
                offsets = [o for a, b, o in corpus.references if (a, b) == (page1, page2)]
                assert offsets and any(start <= o <= start + len(text1) for o in offsets)
            else:
                assert page1 != page2 and pair not in corpus.linked
                assert (page1, page2) not in REFS and (page2, page1) not in REFS


def test_standin_examples_are_real_links_and_real_non_links(tmp_path):
    corpus = retrieval.read_corpus(_fake_tree(tmp_path))
    for width in (24, 1000):
        examples = retrieval.standin_examples(corpus, width=width, seed=3)
        _check_examples(corpus, examples, width)
        assert sum(len(r) for r in examples.values()) == 2 * len(REFS)
    again = retrieval.standin_examples(corpus, width=24, seed=3)
    assert again == retrieval.standin_examples(corpus, width=24, seed=3)
    other = [retrieval.standin_examples(corpus, width=24, seed=s) for s in range(4, 8)]
    assert any(o != again for o in other)


def test_standin_caps_windows_per_pair(tmp_path):
    root = _fake_tree(tmp_path)
    many = "".join(f"Part {i} of the fry story, see :mod:`spam`.\n" for i in range(12))
    (root / "library/eggs.rst.txt").write_text(FAKE_DOCS["library/eggs.rst.txt"] + many)
    corpus = retrieval.read_corpus(root)
    examples = retrieval.standin_examples(corpus, width=64, seed=0, max_windows_per_pair=5)
    positives = [r for rows in examples.values() for r in rows if r[0] == 1]
    assert sum((r[1], r[2]) == ("library/eggs", "library/spam") for r in positives) == 5


def test_load_standin_tokens_description_and_cache(tmp_path, monkeypatch):
    src = _fake_tree(tmp_path / "src")
    d = _config(source="standin", standin_dir=str(src), max_length=32, seed=1)
    splits, desc = retrieval.load(d, tmp_path / "cache")
    corpus = retrieval.read_corpus(src)
    examples = retrieval.standin_examples(corpus, width=32, seed=1)
    for split, rows in examples.items():
        a = splits[split]
        np.testing.assert_array_equal(a["label"], [r[0] for r in rows])
        np.testing.assert_array_equal(a["tokens1"], lra_text.encode_bytes([r[3] for r in rows], 32))
        np.testing.assert_array_equal(a["tokens2"], lra_text.encode_bytes([r[4] for r in rows], 32))
        assert a["tokens1"].dtype == np.uint16 and a["label"].dtype == np.int32
    assert desc["standin_for"] == "ACL Anthology Network citation pairs (LRA Retrieval)"
    assert desc["source"] == "standin" and desc["cache"].startswith("lra/retrieval-standin-")
    assert desc["positive_fraction"] == {"train": 0.5, "val": 0.5, "test": 0.5}
    assert desc["corpus"]["references"] == len(REFS)
    assert str(tmp_path / "cache") not in json.dumps(desc)

    monkeypatch.setattr(retrieval, "read_corpus", lambda *a: pytest.fail("rebuilt"))
    again, desc2 = retrieval.load(d, tmp_path / "cache")
    assert desc2 == desc
    for split in splits:
        for key in splits[split]:
            np.testing.assert_array_equal(splits[split][key], again[split][key])


def test_standin_missing_package_says_how_to_install(tmp_path):
    for folder in (tmp_path / "absent", tmp_path):  # missing, and present without reST files
        d = _config(source="standin", standin_dir=str(folder))
        with pytest.raises(cache.DataError) as e:
            retrieval.load(d, tmp_path / "cache")
        assert str(folder) in str(e.value)
        assert "apt-get install python3.11-doc" in str(e.value)
        assert "config.data.standin_dir" in str(e.value)


def test_unknown_source_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="knows 'official' and 'standin'"):
        retrieval.load(_config(source="generated"), tmp_path)


@pytest.mark.skipif(
    not pathlib.Path(retrieval.DEFAULT_STANDIN_DIR).is_dir(), reason="python3.11-doc not installed"
)
def test_standin_from_the_real_python_docs(tmp_path):
    d = _config(source="standin", max_length=256)
    splits, desc = retrieval.load(d, tmp_path)
    assert desc["corpus"]["pages"] > 400 and desc["corpus"]["references"] > 3000
    assert desc["sizes"]["train"] > 5000 and min(desc["sizes"].values()) > 500
    for split, a in splits.items():
        assert a["label"].mean() == 0.5, split
        assert a["tokens1"].shape == (len(a["label"]), 256)
        assert (a["tokens1"][:, 0] > 0).all() and (a["tokens2"][:, 0] > 0).all()
    # Page 2 of the negatives is dealt from the positives' page 2: nearly identical marginals.
    assert sum(desc["negatives_off_pool"].values()) < 0.01 * sum(desc["sizes"].values())
