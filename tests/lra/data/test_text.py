"""Tests of lra/data/text.py: byte encoding, the aclImdb reader, the Python-docs stand-in and
the caches."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

from attnbench.data import cache
from lra.data import text

# --------------------------------------------------------------------------------------------
# encode_bytes
# --------------------------------------------------------------------------------------------


def test_encode_bytes_exact():
    out = text.encode_bytes([b"ab", b"", b"\x00\xff", b"abcdef", bytearray(b"z")], 4)
    assert out.dtype == np.uint16
    expected = [
        [98, 99, 0, 0],
        [0, 0, 0, 0],
        [1, 256, 0, 0],  # byte 0 is id 1, not padding; byte 255 is id 256
        [98, 99, 100, 101],  # truncated to max_length
        [123, 0, 0, 0],
    ]
    np.testing.assert_array_equal(out, expected)


def test_encode_bytes_memoryview_and_errors():
    flat = np.frombuffer(b"hello world", np.uint8)
    out = text.encode_bytes([memoryview(flat)[6:], memoryview(flat)[:5]], 6)
    np.testing.assert_array_equal(out[0, :5] - 1, np.frombuffer(b"world", np.uint8))
    np.testing.assert_array_equal(out[1, :5] - 1, np.frombuffer(b"hello", np.uint8))
    assert text.encode_bytes([], 3).shape == (0, 3)
    with pytest.raises(TypeError, match="text 1 is a str"):
        text.encode_bytes([b"a", "b"], 3)
    with pytest.raises(ValueError, match="max_length"):
        text.encode_bytes([b"a"], 0)


def _decode(row: np.ndarray) -> bytes:
    """Bytes of a token row (ids - 1 up to the first pad)."""
    n = int(np.count_nonzero(row))
    assert not row[n:].any(), "padding must be a suffix"
    return bytes((row[:n] - 1).astype(np.uint8))


# --------------------------------------------------------------------------------------------
# Official IMDB (aclImdb layout)
# --------------------------------------------------------------------------------------------

REVIEWS = {
    "train/pos": {"10_8.txt": b"Great film.<br /><br />Loved it", "2_9.txt": b"Superb \xc3\xa9",
                  "1_10.txt": b"best"},
    "train/neg": {"3_4.txt": b"meh \xff\xfe not utf-8", "0_1.txt": b"Awful.", "7_2.txt": b"bad"},
    "test/pos": {"5_7.txt": b"fine", "4_10.txt": b"wow"},
    "test/neg": {"9_3.txt": b"poor", "8_1.txt": b"terrible movie"},
}  # fmt: skip


def _write_imdb(parent: pathlib.Path, reviews=REVIEWS) -> pathlib.Path:
    root = parent / "aclImdb"
    for folder, files in reviews.items():
        (root / folder).mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            (root / folder / name).write_bytes(data)
    # Parts of the real release that the reader must ignore.
    (root / "train" / "unsup").mkdir(parents=True, exist_ok=True)
    (root / "train" / "unsup" / "0_0.txt").write_bytes(b"unlabelled")
    (root / "train" / "urls_pos.txt").write_text("http://example/0\n")
    (root / "imdb.vocab").write_text("the\n")
    return root


def _official(directory, **kw):
    d = text.data_config()
    d.source = "official"
    d.dir = str(directory)
    for k, v in kw.items():
        d[k] = v
    return d


def test_read_imdb_order_labels_bytes(tmp_path):
    root = _write_imdb(tmp_path)
    texts, labels = text.read_imdb(root, "train")
    # pos by numeric id (1, 2, 10: not the string order 1, 10, 2), then neg by id (0, 3, 7).
    assert texts == [b"best", b"Superb \xc3\xa9", b"Great film.<br /><br />Loved it",
                     b"Awful.", b"meh \xff\xfe not utf-8", b"bad"]  # fmt: skip
    np.testing.assert_array_equal(labels, [1, 1, 1, 0, 0, 0])
    assert labels.dtype == np.int32
    texts, labels = text.read_imdb(tmp_path, "test")  # the parent of aclImdb works too
    assert texts == [b"wow", b"fine", b"terrible movie", b"poor"]
    np.testing.assert_array_equal(labels, [1, 1, 0, 0])


def test_load_official_val_from_test(tmp_path):
    _write_imdb(tmp_path / "data")
    d = _official(tmp_path / "data", val_split="test", max_length=8)
    splits, desc = text.load(d, tmp_path / "cache")
    train = splits["train"]
    assert train["tokens"].shape == (6, 8) and train["tokens"].dtype == np.uint16
    assert [_decode(r) for r in train["tokens"]] == [
        b"best", b"Superb \xc3\xa9"[:8], b"Great fi", b"Awful.", b"meh \xff\xfe n", b"bad"
    ]  # fmt: skip
    np.testing.assert_array_equal(train["tokens"][0], [99, 102, 116, 117, 0, 0, 0, 0])
    np.testing.assert_array_equal(train["label"], [1, 1, 1, 0, 0, 0])
    np.testing.assert_array_equal(splits["val"]["tokens"], splits["test"]["tokens"])
    np.testing.assert_array_equal(splits["val"]["label"], [1, 1, 0, 0])
    assert desc["sizes"] == {"train": 6, "val": 4, "test": 4}
    assert desc["val_split"].startswith("test")
    assert desc["truncated_fraction"]["train"] == pytest.approx(3 / 6)
    assert desc["cache"].startswith("lra/text-imdb-") and str(tmp_path / "cache") not in str(desc)
    json.dumps(desc)  # JSON-able


def test_load_official_val_held_out_from_train(tmp_path):
    reviews = {
        "train/pos": {f"{i}_8.txt": f"positive review {i}".encode() for i in range(20)},
        "train/neg": {f"{i}_2.txt": f"negative review {i}".encode() for i in range(10)},
        "test/pos": {"0_9.txt": b"good"},
        "test/neg": {"0_1.txt": b"bad"},
    }
    root = _write_imdb(tmp_path, reviews)
    d = _official(root, val_fraction=0.2, seed=3, max_length=40)
    splits, desc = text.load(d, tmp_path / "cache")
    train = [_decode(r) for r in splits["train"]["tokens"]]
    val = [_decode(r) for r in splits["val"]["tokens"]]
    # Stratified: 20% of each class (4 pos, 2 neg); disjoint; together the train set.
    assert splits["val"]["label"].tolist() == [1, 1, 1, 1, 0, 0]
    assert len(train) == 24 and not set(train) & set(val)
    all_train, labels = text.read_imdb(root, "train")
    assert sorted(train + val) == sorted(all_train)
    for tokens, label in zip(splits["train"]["tokens"], splits["train"]["label"], strict=True):
        assert _decode(tokens).startswith(b"positive" if label else b"negative")
    # Order of the remaining train reviews is the file order (pos by id, then neg by id).
    assert train == [t for t in all_train if t in set(train)]
    assert [_decode(r) for r in splits["test"]["tokens"]] == [b"good", b"bad"]
    assert desc["val_split"].startswith("train")
    # Seeded: the same seed holds out the same reviews, another seed others.
    again, _ = text.load(d, tmp_path / "cache")
    np.testing.assert_array_equal(again["val"]["tokens"], splits["val"]["tokens"])
    d.seed = 4
    other, _ = text.load(d, tmp_path / "cache")
    assert not np.array_equal(other["val"]["tokens"], splits["val"]["tokens"])


def test_official_cache_hit_and_max_length(tmp_path, monkeypatch):
    _write_imdb(tmp_path / "data")
    d = _official(tmp_path / "data", max_length=5)
    first, desc = text.load(d, tmp_path / "cache")
    monkeypatch.setattr(text, "read_imdb", lambda *a: pytest.fail("cache was not used"))
    second, desc2 = text.load(d, tmp_path / "cache")
    assert desc2 == desc
    for name in ("train", "val", "test"):
        for key in ("tokens", "label"):
            np.testing.assert_array_equal(first[name][key], second[name][key])
    # Another max_length reuses the same cache (bytes are padded at load time).
    d.max_length = 50
    longer, desc3 = text.load(d, tmp_path / "cache")
    assert desc3["cache"] == desc["cache"]
    np.testing.assert_array_equal(longer["test"]["tokens"][:, :5], first["test"]["tokens"])
    assert len(list((tmp_path / "cache").iterdir())) == 1
    # A new file changes the folder fingerprint: rebuilt.
    monkeypatch.undo()
    (tmp_path / "data" / "aclImdb" / "test" / "pos" / "11_9.txt").write_bytes(b"new")
    rebuilt, desc4 = text.load(d, tmp_path / "cache")
    assert desc4["cache"] != desc["cache"] and desc4["sizes"]["test"] == 5


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda r: None, None),  # control: the tree is valid
        (lambda r: [p.unlink() for p in (r / "test/neg").iterdir()] and (r / "test/neg").rmdir(),
         r"missing folder\(s\) test/neg"),
        (lambda r: [p.unlink() for p in (r / "train/pos").iterdir()],
         r"train/pos: no review files"),
        (lambda r: (r / "train/neg/12.txt").write_bytes(b"x"),
         r"train/neg/12\.txt: unexpected file name"),
        (lambda r: (r / "train/neg/12_8.txt").write_bytes(b"x"),
         r"train/neg/12_8\.txt: rating 8 does not belong in 'neg'"),
        (lambda r: (r / "test/pos/5_9.txt").write_bytes(b"x"),
         r"test/pos/5_9\.txt: review id 5 appears twice"),
        (lambda r: (r / "test/pos/6_9.txt").write_bytes(b" \n"),
         r"test/pos/6_9\.txt: empty review file"),
    ],
)  # fmt: skip
def test_official_errors(tmp_path, mutate, message):
    root = _write_imdb(tmp_path / "data")
    mutate(root)
    d = _official(root)
    if message is None:
        text.load(d, tmp_path / "cache")
        return
    with pytest.raises(cache.DataError, match=message) as info:
        text.load(d, tmp_path / "cache")
    assert str(root) in str(info.value)


def test_official_missing_dir_and_bad_options(tmp_path):
    with pytest.raises(cache.DataError, match="config.data.dir is empty.*fetch imdb"):
        text.load(_official(""), tmp_path)
    with pytest.raises(cache.DataError, match=r"nowhere: IMDB folder not found.*pos,neg"):
        text.load(_official(tmp_path / "nowhere"), tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(cache.DataError, match=r"missing folder\(s\) train/pos, train/neg"):
        text.load(_official(tmp_path / "empty"), tmp_path)
    _write_imdb(tmp_path / "data")
    with pytest.raises(ValueError, match="val_split"):
        text.load(_official(tmp_path / "data", val_split="valid"), tmp_path)
    with pytest.raises(ValueError, match="val_fraction"):
        text.load(_official(tmp_path / "data", val_fraction=1.0), tmp_path)
    with pytest.raises(cache.DataError, match="cannot hold out"):  # 3 reviews per class
        text.load(_official(tmp_path / "data", val_fraction=0.9), tmp_path / "c")
    d = _official(tmp_path / "data")
    d.source = "generated"
    with pytest.raises(ValueError, match="knows 'official' and 'standin'"):
        text.load(d, tmp_path)


# --------------------------------------------------------------------------------------------
# Stand-in
# --------------------------------------------------------------------------------------------

WORDS = {
    "library": "module function returns argument raises object attribute default".split(),
    "other": "tutorial example change release improved howto reader section".split(),
}


def _document(section: str, index: int, rng: np.random.Generator) -> bytes:
    """A fake reST page: a preamble as in the real docs, then prose and code paragraphs, every
    paragraph tagged with its file so that a chunk can be traced back."""
    tag = f"{section}{index:02d}"
    if section == "library":
        head = (f":mod:`mod{index}` --- Module {index}\n=========================\n\n"
                f".. module:: mod{index}\n   :synopsis: Does things.\n\n"
                f".. sectionauthor:: Someone\n\n**Source code:** :source:`Lib/m{index}.py`\n\n"
                "--------------\n\n")  # fmt: skip
    else:
        head = f".. _{tag}-label:\n\n*******\nTitle {index}\n*******\n\n:Author: Someone\n\n"
    paragraphs = []
    for p in range(int(rng.integers(8, 20))):
        n = int(rng.integers(10, 60))
        words = " ".join(rng.choice(WORDS["library" if section == "library" else "other"], n))
        paragraphs.append(f"[{tag}.{p}] {words}.")
        if p % 5 == 4:
            paragraphs.append(".. code-block:: python\n\n   x = 1\n   print(x)")
    return (head + "\n\n".join(paragraphs) + "\n").encode()


def _write_docs(root: pathlib.Path, per_class: int = 12, seed: int = 0) -> pathlib.Path:
    rng = np.random.default_rng(seed)
    for i in range(per_class):
        section = ("tutorial", "howto", "whatsnew")[i % 3]
        for folder, name in (("library", f"m{i}.rst.txt"), (section, f"p{i}.rst.txt")):
            path = root / folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(_document(folder, i, rng))
    (root / "contents.rst.txt").write_bytes(b".. toctree::\n\n   library/index.rst\n")
    (root / "library" / "notes.txt").write_bytes(b"not a source: ignored " * 50)
    return root


def _standin(root, **kw):
    d = text.data_config()
    d.source = "standin"
    d.standin_dir = str(root)
    d.standin_min_bytes, d.standin_median_bytes, d.standin_max_bytes = 200, 400, 800
    d.max_length = 800  # whole chunks, so the tests can trace them to their files
    for k, v in kw.items():
        d[k] = v
    return d


def test_standin_labels_splits_balance(tmp_path):
    root = _write_docs(tmp_path / "docs")
    splits, desc = text.load(_standin(root), tmp_path / "cache")
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*.rst.txt")}
    docs_of = {}
    for name in ("train", "val", "test"):
        tokens, labels = splits[name]["tokens"], splits[name]["label"]
        assert tokens.dtype == np.uint16 and labels.dtype == np.int32
        assert tokens.shape == (len(labels), 800)
        # Balanced by subsampling the larger class.
        assert len(labels) > 0 and labels.sum() * 2 == len(labels)
        assert desc["majority_class_rate"][name] == 0.5
        docs_of[name] = set()
        for row, label in zip(tokens, labels, strict=True):
            chunk = _decode(row)
            assert 200 <= len(chunk) <= 800
            # The chunk is an exact substring of exactly one source file, of its label.
            owners = [rel for rel, data in files.items() if chunk in data]
            assert len(owners) == 1, owners
            assert label == int(owners[0].startswith("library/"))
            # Cut at paragraph boundaries: it starts a paragraph and ends one.
            data = files[owners[0]]
            at = data.index(chunk)
            assert data[at - 2 : at] == b"\n\n" and data[at + len(chunk) :][:1] in (b"\n", b"")
            # The preamble (module line, directives, source link, label, title) is gone.
            for marker in (b":mod:`", b".. module::", b"Source code", b"-label:", b"Title"):
                assert marker not in chunk
            docs_of[name].add(owners[0])
    # Split by document: no file has chunks in two splits.
    assert not docs_of["train"] & docs_of["val"]
    assert not docs_of["train"] & docs_of["test"]
    assert not docs_of["val"] & docs_of["test"]
    assert desc["standin_for"] == "IMDB reviews (LRA Text)" and desc["source"] == "standin"
    assert "stand-in" in desc["dataset"] and "library/" in desc["labels"]["1"]
    assert desc["sizes"]["train"] > desc["sizes"]["test"] >= desc["sizes"]["val"] > 0
    for name in ("train", "val", "test"):
        assert min(desc["chunks_before_balancing"][name].values()) * 2 == desc["sizes"][name]
    json.dumps(desc)


def test_standin_deterministic_and_seeded(tmp_path):
    root = _write_docs(tmp_path / "docs")
    a, desc_a = text.load(_standin(root), tmp_path / "c1")
    b, desc_b = text.load(_standin(root), tmp_path / "c2")  # a fresh build
    assert desc_a["cache"] == desc_b["cache"]
    for name in a:
        np.testing.assert_array_equal(a[name]["tokens"], b[name]["tokens"])
        np.testing.assert_array_equal(a[name]["label"], b[name]["label"])
    c, desc_c = text.load(_standin(root, seed=1), tmp_path / "c1")
    assert desc_c["cache"] != desc_a["cache"]
    assert not np.array_equal(c["train"]["tokens"][:5], a["train"]["tokens"][:5])


def test_standin_cache_hit(tmp_path, monkeypatch):
    root = _write_docs(tmp_path / "docs")
    d = _standin(root)
    first, desc = text.load(d, tmp_path / "cache")
    monkeypatch.setattr(text, "_build_standin", lambda *a: pytest.fail("cache was not used"))
    monkeypatch.setattr(text, "chunk_document", lambda *a, **k: pytest.fail("re-chunked"))
    second, desc2 = text.load(d, tmp_path / "cache")
    assert desc2 == desc
    for name in first:
        np.testing.assert_array_equal(first[name]["tokens"], second[name]["tokens"])
        np.testing.assert_array_equal(first[name]["label"], second[name]["label"])
    d.max_length = 100  # same cache, shorter rows
    short, desc3 = text.load(d, tmp_path / "cache")
    assert desc3["cache"] == desc["cache"] and desc3["truncated_fraction"]["train"] == 1.0
    np.testing.assert_array_equal(short["train"]["tokens"], first["train"]["tokens"][:, :100])


def test_standin_errors(tmp_path):
    with pytest.raises(cache.DataError, match=r"apt-get install python3\.11-doc.*standin_dir"):
        text.load(_standin(tmp_path / "missing"), tmp_path / "c")
    (tmp_path / "empty").mkdir()
    with pytest.raises(cache.DataError, match=r"empty: no \*\.rst\.txt files"):
        text.load(_standin(tmp_path / "empty"), tmp_path / "c")
    only_lib = tmp_path / "only_lib"
    (only_lib / "library").mkdir(parents=True)
    (only_lib / "library" / "a.rst.txt").write_bytes(b"text\n")
    with pytest.raises(cache.DataError, match="none in folders other than library/"):
        text.load(_standin(only_lib), tmp_path / "c")
    few = _write_docs(tmp_path / "few", per_class=2)  # 2 documents per class: no train chunks
    with pytest.raises(cache.DataError, match=r"few: the stand-in's train split has no chunk"):
        text.load(_standin(few), tmp_path / "c")
    with pytest.raises(ValueError, match="standin_min_bytes"):
        text.load(_standin(_write_docs(tmp_path / "ok"), standin_min_bytes=900), tmp_path / "c")
    with pytest.raises(ValueError, match="standin_test_fraction"):
        text.load(_standin(tmp_path / "ok", standin_test_fraction=0.95), tmp_path / "c")


def test_strip_preamble_and_chunking():
    doc = (b".. _x:\n\n:mod:`m` --- M\n=======\n\n.. module:: m\n   :synopsis: s\n\n"
           b"**Source code:** :source:`Lib/m.py`\n\n-----\n\n"
           b"First text.\n\n.. function:: f()\n")  # fmt: skip
    assert doc[text.strip_preamble(doc) :] == b"First text.\n\n.. function:: f()\n"
    # Comments and page-level directives with indented bodies are skipped; a content
    # directive ends the preamble; a page of header markup only has no content.
    doc = b".. comment\n\n   $Id$\n\n.. versionadded:: 3.2\n\n.. glossary::\n\n   term\n"
    assert doc[text.strip_preamble(doc) :] == b".. glossary::\n\n   term\n"
    header_only = b".. _a:\n\nTitle\n=====\n\n.. index:: x\n\n   single: y\n"
    assert text.strip_preamble(header_only) == len(header_only)
    # A paragraph longer than max_bytes is cut at line breaks, a long line at max_bytes.
    long_line = b"y" * 250
    doc = b"Intro.\n\n" + b"\n".join([b"x" * 40] * 10) + b"\n\n" + long_line + b"\n\nEnd.\n"
    rng = np.random.default_rng(0)
    spans = text.chunk_document(doc, rng, min_bytes=50, median_bytes=80, max_bytes=100)
    assert spans and all(50 <= e - s <= 100 for s, e in spans)
    assert spans == sorted(spans) and all(
        a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False)
    )
    covered = sum(e - s for s, e in spans)
    assert covered >= 0.8 * len(doc)  # little text is lost
    with pytest.raises(ValueError, match="standin_min_bytes"):
        text.chunk_document(doc, rng, min_bytes=200, median_bytes=100, max_bytes=300)


@pytest.mark.skipif(
    not pathlib.Path(text.STANDIN_DIR, "library").is_dir(),
    reason=f"Debian package {text.STANDIN_PACKAGE} is not installed",
)
def test_standin_real_package_small(tmp_path):
    d = text.data_config()
    d.source = "standin"
    d.standin_max_files = 12  # per class
    splits, desc = text.load(d, tmp_path)
    assert desc["documents"]["total"] == 24
    for name in ("train", "val", "test"):
        labels = splits[name]["label"]
        assert len(labels) > 0 and labels.mean() == 0.5
        assert splits[name]["tokens"].shape == (len(labels), 1000)
    assert 500 <= desc["bytes_median"]["train"] <= 4000
