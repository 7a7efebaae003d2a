"""Tests of language/data/tokenizers.py: fairseq's word-level rule against an independent
str-based reference (every kind of whitespace and line end, files cut into small chunks), and
GPT-2's byte-level BPE (byte map, hand-worked merges, pre-tokenisation classes, errors)."""

from __future__ import annotations

import io
import json
import pathlib

import numpy as np
import pytest

from attnbench import errors
from language.data import tokenizers

# --------------------------------------------------------------------------------------------
# Word level: fairseq's rule
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("chunk", [8 << 20, 7])
def test_build_word_level_matches_an_independent_reference(tmp_path, monkeypatch, chunk):
    """A str-based reference of fairseq's rule (text mode, str.split) on random text with
    every kind of whitespace and line end, long and short words; small chunks cut the files
    at many places."""
    monkeypatch.setattr(tokenizers, "_CHUNK", chunk)
    rng = np.random.default_rng(chunk)
    alphabet = [*"abcdé ", "\n", "  ", "\t", "\u2003", "\r\n", "\r", "xy", "\x0b", "\x0c",
                "\x1c", "\x1f", "\x01", "\x85", "\xa0", "\u2028", "\u3000", "\u200b", "</s>",
                "<unk>", "abcdefgh", "abcdefghijklmno", "abcdefghijklmnop", "abcdefghijklmnopq",
                "\u20ac\u20ac\u20ac\u20ac\u20ac\u20ac"]  # fmt: skip
    texts = {s: "".join(rng.choice(alphabet, 4000)) for s in ("train", "val", "test")}
    files = {}
    for s, t in texts.items():
        files[s] = tmp_path / f"{s}.txt"
        files[s].write_bytes(t.encode())
    streams, vocab = tokenizers.build_word_level(files)

    def words(text):  # text mode (universal newlines), str.split: fairseq's reading
        out = []
        for line in io.StringIO(text, newline=None):
            out += line.split() + ["</s>"]
        return out

    counts: dict[str, int] = {}
    for w in words(texts["train"]):
        counts[w] = counts.get(w, 0) + 1
    ordered = sorted(
        (w for w in counts if w not in tokenizers.SPECIALS), key=lambda w: (-counts[w], w)
    )
    ref = {w: i for i, w in enumerate([*tokenizers.SPECIALS, *ordered])}
    assert vocab.symbols[: len(ref)] == tuple(ref)
    assert len(vocab) % 8 == 0
    for s, t in texts.items():
        np.testing.assert_array_equal(streams[s], [ref.get(w, 3) for w in words(t)])
        # the count attnbench-data verify compares with the published token counts
        assert tokenizers.count_tokens(files[s]) == len(words(t)) == len(streams[s])


# --------------------------------------------------------------------------------------------
# GPT-2 BPE
# --------------------------------------------------------------------------------------------

VOCAB = {"h": 0, "e": 1, "l": 2, "o": 3, "Ġ": 4, "w": 5, "r": 6, "d": 7, "he": 8, "ll": 9,
         "hell": 10, "hello": 11, "Ġw": 12, "or": 13, "'": 14, "s": 15, "1": 16, "2": 17,
         "!": 18, "Ċ": 19, "t": 20}  # fmt: skip
MERGES = ["h e", "l l", "he ll", "hell o", "Ġ w", "o r"]


def _write_tokenizer(folder: pathlib.Path) -> pathlib.Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.json").write_text(json.dumps(VOCAB, ensure_ascii=False), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(MERGES) + "\n")
    return folder


def test_bytes_to_unicode():
    m = tokenizers.bytes_to_unicode()
    assert len(set(m.values())) == 256
    assert m[ord("a")] == "a" and m[ord("!")] == "!" and m[0xAE] == "®"
    assert m[0] == "\u0100" and m[ord(" ")] == "Ġ" and m[ord("\n")] == "Ċ" and m[0xAD] == "Ń"


def test_gpt2_bpe_hand_worked(tmp_path):
    bpe = tokenizers.GPT2BPE(_write_tokenizer(tmp_path / "gpt2"))
    # hello: h e l l o -> he l l o -> he ll o -> hell o -> hello.
    # " world": Ġ w o r l d -> Ġw o r l d (rank 4) -> Ġw or l d (rank 5).
    # "'s" is a contraction piece; " 12" a number piece; "!" punctuation; "\n" whitespace.
    ids = bpe.encode("hello world's 12!\n")
    assert ids == [11, 12, 13, 2, 7, 14, 15, 4, 16, 17, 18, 19]
    assert bpe.decode(ids) == "hello world's 12!\n"
    assert len(bpe) == 21


def test_gpt2_pretokenizer_classes():
    pattern = tokenizers._pretokenizer()
    assert pattern.findall("a  b") == ["a", " ", " b"]  # \s+(?!\S) leaves one space to b
    assert pattern.findall("xé ²3 _y it's") == ["xé", " ²3", " _", "y", " it", "'s"]
    assert pattern.findall("tab\t\n end  ") == ["tab", "\t\n", " end", "  "]


def test_gpt2_bpe_errors(tmp_path):
    with pytest.raises(errors.DataError, match=r"vocab.json: not found.*bpe_dir"):
        tokenizers.GPT2BPE(tmp_path)
    folder = _write_tokenizer(tmp_path / "t")
    (folder / "merges.txt").write_text("#version: 0.2\nh e x\n")
    with pytest.raises(errors.DataError, match=r"merges.txt:2: expected two symbols"):
        tokenizers.GPT2BPE(folder)
    (folder / "merges.txt").write_text("q u\n")
    with pytest.raises(errors.DataError, match="'q' .*not in the vocabulary"):
        tokenizers.GPT2BPE(folder).encode("q")
