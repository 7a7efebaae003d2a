"""Tests of language/data/standin.py: the Python-documentation byte stand-in split by document
(seeded, cached, every document in one split), its errors, the real Debian sources when
installed, and the unigram baseline by hand."""

from __future__ import annotations

import math
import pathlib

import numpy as np
import pytest

from attnbench import errors
from language.data import corpora, standin


def _write_docs(root: pathlib.Path, n: int = 40) -> dict[str, bytes]:
    docs = {}
    for i in range(n):
        rel = f"{'library' if i % 2 else 'howto'}/doc{i:02d}.rst.txt"
        docs[rel] = (f"Title {i}\n=====\n\n" + "text " * (10 + 7 * i)).encode() + b"\n"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(docs[rel])
    (root / "notes.txt").write_text("ignored: not .rst.txt")
    return docs


def test_python_docs_bytes_split_by_document(tmp_path):
    docs = _write_docs(tmp_path / "src")
    corpus = standin.python_docs_bytes(tmp_path / "src", seed=3, cache_root=tmp_path / "c")
    assert corpus.source == "standin" and corpus.vocab_size == 256 and corpus.unit == "byte"
    z = np.load(next((tmp_path / "c" / "language").iterdir()) / "bytes.npz")
    seen = []
    for split in corpora.SPLITS:
        names = [str(n) for n in z[f"{split}_documents"]]
        seen += names
        assert corpus.splits[split].tobytes() == b"".join(docs[n] for n in names)
    assert sorted(seen) == sorted(docs)  # every document in exactly one split
    total = sum(len(d) for d in docs.values())
    sizes = {s: len(corpus.splits[s]) for s in corpora.SPLITS}
    biggest = max(len(d) for d in docs.values())
    for s in ("val", "test"):
        assert 0.05 * total <= sizes[s] < 0.05 * total + biggest
    other = standin.python_docs_bytes(tmp_path / "src", seed=4, cache_root=tmp_path / "c")
    assert other.splits["val"].tobytes() != corpus.splits["val"].tobytes()
    same = standin.python_docs_bytes(tmp_path / "src", seed=3, cache_root=tmp_path / "c")
    assert same.splits["train"].tobytes() == corpus.splits["train"].tobytes()


def test_python_docs_bytes_errors(tmp_path):
    with pytest.raises(errors.DataError, match=r"not found; install.*python3.11-doc"):
        standin.python_docs_bytes(tmp_path / "none", cache_root=tmp_path / "c")
    (tmp_path / "empty").mkdir()
    with pytest.raises(errors.DataError, match=r"no \*.rst.txt files"):
        standin.python_docs_bytes(tmp_path / "empty", cache_root=tmp_path / "c")


def test_unigram_bits_by_hand():
    out = standin.unigram_bits(np.array([0, 0, 1, 1]), np.array([0, 2]), vocab_size=4)
    assert out["entropy"] == pytest.approx(1.0)
    # Add-one: q = (count + 1) / (4 + 4): q0 = 3/8, q2 = 1/8.
    expected = -(math.log2(3 / 8) + math.log2(1 / 8)) / 2
    assert out["valid_cross_entropy"] == pytest.approx(expected)


@pytest.mark.skipif(
    not pathlib.Path(standin.STANDIN_DIR).is_dir(), reason="python3.11-doc not installed"
)
def test_real_python_docs_stand_in(tmp_path):
    corpus = standin.python_docs_bytes(cache_root=tmp_path)
    sizes = {s: len(v) for s, v in corpus.splits.items()}
    total = sum(sizes.values())
    assert total > 5_000_000 and 0.04 < sizes["val"] / total < 0.07
    bits = standin.unigram_bits(corpus.splits["train"], corpus.splits["val"])
    assert 4.0 < bits["entropy"] < 6.0 and bits["valid_cross_entropy"] > bits["entropy"] - 0.2
