"""Language-modelling corpora: the papers' official files and offline stand-ins, as token streams.

    corpus = corpora.load(corpora.data_config())            # the offline byte stand-in
    corpus.splits["train"]                                   # uint8 [n] byte stream
    corpus = corpora.wikitext("/data/wikitext-103")          # word level, fairseq's dictionary
    corpus = corpora.cifar10_pixels("/data/cifar-10-batches-py")   # uint8 [n, 3072] images

A `Corpus` holds, per split ("train", "val", "test"), either a 1-D token stream (text: word ids or
bytes, every document of the split concatenated in file order) or a 2-D array of images flattened to
sub-pixel sequences ([n, D], one sequence per image); `language.windows` cuts either into model
inputs. Tokenised text is built once and cached with `attnbench.data.cache.build_once` under `<data
root>/language/` (the key holds the source files' paths, sizes and modification times); raw bytes
and pixels are read directly.

Official data
-------------
* WikiText-103 / WikiText-2 (Merity et al. 2016): ``wiki.{train,valid,test}.tokens`` in
  ``config.data.dir`` (or its ``wikitext-103/`` / ``wikitext-2/`` subfolder, as the release
  zips unpack). Word level with the files' own tokenisation, as ``fairseq-preprocess
  --only-source`` binarises them for SSA's recipe (fairseq ``tokenizer.tokenize_line``:
  whitespace runs collapse, the line is stripped and split; ``Dictionary.encode_line`` with
  ``append_eos=True``): every line, an empty one included, gives its words and then the
  end-of-line symbol ``</s>``. Lines are the file's lines (``\\n``, ``\\r\\n`` or ``\\r``, as
  Python's text mode reads them); whitespace is Unicode whitespace (``str.split``).
  Dictionary (fairseq ``Dictionary`` and ``finalize``, read for the rule, not copied): the
  specials ``<s>`` 0, ``<pad>`` 1, ``</s>`` 2, ``<unk>`` 3 first; then every other word of the
  TRAIN split by count, most frequent first, ties in code-point order of the word; then
  ``madeupword0000``, ... up to a multiple of ``padding_factor`` = 8 (fairseq's default). A word
  of valid/test not in train maps to ``<unk>`` (WikiText has none: its files already carry
  ``<unk>``). The published WikiText-103 vocabulary is 267,735 types including ``<unk>``, so
  this rule gives 4 + 267,734 = 267,738 symbols, padded to 267,744 [derived; the full files are
  not on this machine, so it is checked on fixtures only]. The dictionary is saved as
  fairseq's ``dict.txt`` (``symbol count`` per line, specials excluded).
  Speed: words are cut, keyed and looked up with whole-array numpy operations (`_spans`,
  `_KeyTable`: a word of <= 15 bytes has an exact 128-bit key in an open-addressing table;
  longer words and the first occurrence of each word take a Python dict), one pass over the
  train file (provisional ids in order of first occurrence, then renumbered by the
  dictionary) and one over valid and test. `scripts.tokenizer_speed` measures it at
  WikiText-103's size (540 MB of the Python docs repeated, 82M tokens, 135k types; one core
  of the idle 2-core CI-class machine): building 22.9 MB/s, encoding with the dictionary
  28.9 MB/s (results/bench/tokenizer_speed.md); a plain ``bytes.split`` + dict version
  measured 11-13 MB/s (under load).
* PTB (Mikolov's ``ptb.{train,valid,test}.txt``): the same word-level rule.
* GPT-2 BPE (GFSA's GPT-2 fine-tuning on PTB / WikiText-2 / WikiText-103): with ``bpe_dir`` (a
  directory holding Hugging Face ``vocab.json`` and ``merges.txt``, as a GPT-2 checkpoint
  directory does) the same files are read as text and encoded with `GPT2BPE`, line by line as
  HF's ``run_clm.py`` tokenises the HF datasets GFSA loads: PTB (``ptb_text_only``) lines are
  stripped of surrounding whitespace, newline included; WikiText lines keep their newline, and
  blank lines are empty texts (HF's loaders as remembered, not re-checked here). WikiText's
  ``wiki.*.raw`` files (GFSA used the ``-raw-v1`` configs) are read when present, else the
  ``.tokens`` files. The encoded ids are concatenated with nothing added (``run_clm`` adds no
  end-of-text token).
* enwik8 (Hutter prize, http://mattmahoney.net/dc/enwik8.zip): the ``enwik8`` file, or the
  ``enwik8`` member of ``enwik8.zip``; 100,000,000 raw bytes split 90M / 5M / 5M (first 90M
  train, next 5M valid, last 5M test: the standard split of Transformer-XL's
  ``prep_enwik8.py``; SSA does not state it, ssa.md §2.2). Tokens are the byte values 0..255
  themselves (vocabulary 256; no specials).
* CIFAR-10 (``cifar-10-batches-py/``, read by `attnbench.data.formats.cifar`) as sub-pixel sequences
  of 3,072 tokens: raster order over pixels, row by row and left to right, with each pixel's R, G, B
  values consecutive (sequence index ``(row * 32 + col) * 3 + channel``). SSA flattens "each image
  to a sequence of 3072 sub-pixel tokens (raster, row by row)" (ssa.md §2.3) without naming the
  channel order; channels interleaved per pixel is the Image Transformer's and the Sparse
  Transformer's order, which SSA follows [inferred]. The pickles are channel-major (1024 R, 1024 G,
  1024 B), so they are transposed. Vocabulary 256 (the sub-pixel value). Splits: train = the 50,000
  training images; test = the 10,000 of ``test_batch``; val = test (image-generation papers report
  their "validation" bits per dim on the test images [inferred]) unless ``val_images > 0`` holds out
  the last that many training images.

Offline stand-ins (``source="standin"``, labelled as such in every description)
-------------------------------------------------------------------------------
* Bytes: the reST sources of the Python 3.11 documentation (Debian ``python3.11-doc``:
  ``/usr/share/doc/python3.11/html/_sources/**/*.rst.txt``, 497 documents, ~11 MB;
  offline_data.md §4). Split BY DOCUMENT: documents in a seeded random order fill valid, then
  test, each until it holds ``standin_fraction`` (5%) of all bytes, the rest is train (90%);
  each split concatenates its documents in that order. Bytes as tokens, vocabulary 256.
  `unigram_bits` gives the train split's unigram entropy and the valid split's cross-entropy
  under it (the baseline the byte-level ``cpu`` recipe must beat).
* Pixels: Fashion-MNIST (Debian ``dataset-fashion-mnist``, `attnbench.data.formats.fashion_mnist`),
  28 x 28 grayscale = 784 tokens per image in raster order, vocabulary 256; train 60,000, test
  10,000, val as for CIFAR-10.

Missing or malformed files raise `attnbench.errors.DataError` naming the path and where to get the
data; a bad config field raises `attnbench.errors.ConfigError`.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import itertools
import json
import os
import pathlib
import sys
import time
import unicodedata
import zipfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import ml_collections
import numpy as np

from attnbench import errors
from attnbench.data import cache
from attnbench.data.formats import cifar, fashion_mnist

__all__ = [
    "SPLITS",
    "SPECIALS",
    "BOS",
    "PAD",
    "EOS",
    "UNK",
    "ENWIK8_SPLIT",
    "STANDIN_PACKAGE",
    "STANDIN_DIR",
    "STANDIN_DIRS",
    "Corpus",
    "Dictionary",
    "GPT2BPE",
    "bytes_to_unicode",
    "data_config",
    "load",
    "wikitext",
    "ptb",
    "word_files",
    "enwik8",
    "cifar10_pixels",
    "fashion_mnist_pixels",
    "python_docs_bytes",
    "find_standin_dir",
    "tokenize_words",
    "build_word_level",
    "unigram_bits",
]

SPLITS = ("train", "val", "test")
SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")  # fairseq Dictionary's specials, in index order
BOS, PAD, EOS, UNK = 0, 1, 2, 3
PADDING_FACTOR = 8  # fairseq Dictionary.finalize default: vocabulary a multiple of 8
ENWIK8_SPLIT = (90_000_000, 5_000_000, 5_000_000)  # train / valid / test bytes
STANDIN_PACKAGE = "python3.11-doc"
# Where Debian's python3.X-doc packages put the reST sources: 3.11 first (what
# .ci/run installs, then the others); `find_standin_dir` takes the first that holds *.rst.txt files.
STANDIN_DIR = "/usr/share/doc/python3.11/html/_sources"
STANDIN_DIRS = (
    STANDIN_DIR,
    *(f"/usr/share/doc/python3.{v}/html/_sources" for v in (14, 13, 12, 10)),
)

_WORD_VERSION = 1  # bump when the word-level encoding of the same files changes
_BPE_VERSION = 1
_STANDIN_VERSION = 1
_CHUNK = 8 << 20  # bytes per tokenisation chunk (split at a line end)
_FILE_SPLITS = {"train": "train", "val": "valid", "test": "test"}  # our name -> file name
# Whitespace as str.split() and re's \s (fairseq's tokenize_line) see it, as UTF-8: ASCII
# \t \n \v \f \r, U+001C..U+001F and space; and U+0085, U+00A0, U+1680, U+2000..U+200A,
# U+2028, U+2029, U+202F, U+205F, U+3000 (Python's str.isspace()).
_ASCII_SPACES = bytes([9, 10, 11, 12, 13, 28, 29, 30, 31, 32])
_UNICODE_SPACES = tuple(
    chr(c).encode()
    for c in (0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F, 0x205F, 0x3000)
)
assert all(c.decode().isspace() for c in (*_UNICODE_SPACES, *(bytes([b]) for b in _ASCII_SPACES)))


# --------------------------------------------------------------------------------------------
# Corpus
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Corpus:
    """Token streams or image sequences per split.

    Attributes:
      splits: {"train", "val", "test"} -> a 1-D stream (uint8 bytes/pixels, uint16 or int32
        word ids) or, for images, uint8 [n, D] sequences.
      vocab_size: ids lie in 0..vocab_size-1.
      unit: what a token is, for the evaluator: "token" (words, BPE), "byte", "dim" (sub-pixel).
      source: "official" or "standin".
      description: JSON-able: dataset, files, sizes, rules.
      symbols: the word of each id (word-level and BPE corpora), else None.
      image_shape: (height, width, channels) for image corpora, else None.
    """

    splits: Mapping[str, np.ndarray]
    vocab_size: int
    unit: str
    source: str
    description: Mapping[str, Any]
    symbols: tuple[str, ...] | None = None
    image_shape: tuple[int, int, int] | None = None

    @property
    def is_images(self) -> bool:
        return self.image_shape is not None


# --------------------------------------------------------------------------------------------
# Config and dispatch
# --------------------------------------------------------------------------------------------

DATASETS = ("wikitext-103", "wikitext-2", "ptb", "enwik8", "cifar10")


def data_config() -> ml_collections.ConfigDict:
    """`config.data` of the language tasks; the defaults read the offline byte stand-in."""
    d = ml_collections.ConfigDict()
    d.dataset = "enwik8"  # wikitext-103 | wikitext-2 | ptb | enwik8 | cifar10
    d.source = "standin"  # official (files in `dir`) | standin (offline: docs bytes / F-MNIST)
    d.dir = ""  # official: the folder of the dataset's files; "" = <data root>/<dataset>
    d.cache_dir = ""  # data root for caches ("" = $ATTNBENCH_DATA or ~/.cache/attnbench)
    d.bpe_dir = ""  # GPT-2 checkpoint/tokenizer folder (vocab.json, merges.txt): BPE text
    d.standin_dir = ""  # text stand-in: reST sources folder ("" = find python3.X-doc)
    d.standin_fraction = 0.05  # text stand-in: share of bytes in valid and in test each
    d.standin_images = fashion_mnist.DEFAULT_DIR  # image stand-in: Fashion-MNIST IDX folder
    d.val_images = 0  # images: 0 = val is the test set, k = hold out the last k train images
    # images: Distribution Augmentation of the training images (language/distaug.py), e.g.
    # "rotation,transposition"; "" = none
    d.distaug = ""
    d.seed = 0  # text stand-in's document shuffle
    return d


def load(d) -> Corpus:
    """The corpus `config.data` names (see `data_config`)."""
    dataset, source = str(d.dataset), str(d.source)
    if dataset not in DATASETS:
        raise errors.ConfigError(f"config.data.dataset={dataset!r}; known: {', '.join(DATASETS)}")
    if source not in ("official", "standin"):
        raise errors.ConfigError(f"config.data.source={source!r}; known: official, standin")
    root = cache.data_root(d.get("cache_dir", ""))
    if source == "standin":
        if dataset == "cifar10":
            return fashion_mnist_pixels(d.standin_images, val_images=int(d.val_images))
        return python_docs_bytes(
            d.standin_dir or None,
            seed=int(d.seed),
            fraction=float(d.standin_fraction),
            cache_root=root,
        )
    directory = pathlib.Path(d.dir).expanduser() if d.dir else root / dataset
    if dataset == "enwik8":
        return enwik8(directory)
    if dataset == "cifar10":
        return cifar10_pixels(directory, val_images=int(d.val_images))
    bpe = GPT2BPE(d.bpe_dir) if d.bpe_dir else None
    if dataset == "ptb":
        return ptb(directory, cache_root=root, bpe=bpe)
    return wikitext(directory, cache_root=root, name=dataset, bpe=bpe)


# --------------------------------------------------------------------------------------------
# Word-level tokenisation (fairseq's rule, fast)
# --------------------------------------------------------------------------------------------


def _check_utf8(data: bytes, path: pathlib.Path, offset: int) -> None:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise cache.DataError(
            f"{path}: not UTF-8 at byte {offset + e.start} ({e.reason}); the corpus files are "
            "UTF-8 text"
        ) from None


def _chunks(path: pathlib.Path, what: str) -> Iterator[bytes]:
    """The file's bytes (checked to be UTF-8) in pieces of about `_CHUNK` bytes cut after a
    "\\n"; the last piece ends with a line end (a "\\n" is added to a file that lacks it)."""
    try:
        f = path.open("rb")
    except OSError as e:
        raise cache.DataError(f"{path}: cannot read {what} ({e})") from None
    with f:
        rest, offset = b"", 0
        while True:
            block = f.read(_CHUNK)
            if not block:
                break
            block = rest + block
            cut = block.rfind(b"\n") + 1
            if cut == 0:
                rest = block
                continue
            # Cut after a "\n": a "\r\n" pair is never cut apart.
            piece, rest = block[:cut], block[cut:]
            _check_utf8(piece, path, offset)
            yield piece
            offset += len(piece)
        if rest:
            _check_utf8(rest, path, offset)
            yield rest if rest.endswith(b"\n") else rest + b"\n"


# Vectorised word lookup. A word of at most 15 bytes has an exact 128-bit key: its first 8
# bytes (little-endian, zero-padded) and its bytes 8..14 with its length in the top byte. Keys
# live in an open-addressing hash table of numpy arrays (linear probing), so a chunk's words are
# cut, keyed and looked up with whole-array operations; only longer words and words the table
# does not hold yet take the Python dict. Exact: a hit compares the full key.
_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1], np.uint64)
_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F), np.uint64(29))
_SHORT = 15  # longest word with an exact key


def _spans(data: bytes):
    """Tokens of UTF-8 text ending with a line end, as fairseq's rule cuts them: words are
    maximal runs of non-whitespace (`_ASCII_SPACES`, `_UNICODE_SPACES`); a line ends at
    "\\n", "\\r\\n" or a lone "\\r" (Python's universal newlines).

    Returns:
      positions: int64 [tokens], where each token (word or line end) starts, in order.
      is_eol: bool [tokens], True for a line end.
      starts, ends: int64 [words], each word's span.
      k0, k1, h: the words' keys and hashes (exact where end - start <= _SHORT).
    """
    n = len(data)
    buf = np.frombuffer(data + bytes(16), np.uint8)
    arr = buf[:n]
    space = (arr == 32) | ((arr - np.uint8(9)) <= 4) | ((arr - np.uint8(28)) <= 3)
    if not data.isascii():  # mark the bytes of multi-byte Unicode whitespace
        lead = np.flatnonzero((arr == 0xC2) | ((arr - np.uint8(0xE1)) <= 2))
        if lead.size:
            b = buf[lead[:, None] + np.arange(3)]
            for seq in _UNICODE_SPACES:
                hit = lead[(b[:, : len(seq)] == np.frombuffer(seq, np.uint8)).all(1)]
                for j in range(len(seq)):
                    space[hit + j] = True
    eol = arr == 10
    cr = np.flatnonzero(arr == 13)
    if cr.size:
        eol[cr[buf[cr + 1] != 10]] = True  # a lone \r ends a line; \r\n ends it at the \n
    word = ~space
    first = word.copy()
    first[1:] &= space[:-1]
    positions = np.flatnonzero(first | eol)
    is_eol = eol[positions]
    starts = positions[~is_eol]
    last = word.copy()
    last[:-1] &= space[1:]
    ends = np.flatnonzero(last) + 1
    windows = np.ndarray((n + 9,), "<u8", buffer=buf, strides=(1,))  # 8 bytes from each offset
    length = ends - starts
    k0 = windows[starts] & _MASKS[np.minimum(length, 8)]
    k1 = windows[starts + 8] & _MASKS[np.clip(length - 8, 0, 7)]
    k1 |= length.astype(np.uint64) << np.uint64(56)
    return positions, is_eol, starts, ends, k0, k1, _hash(k0, k1)


def _is_word(w: bytes) -> bool:
    """Non-empty and free of whitespace (so `_spans` reads it as one word)."""
    return (
        bool(w)
        and len(w.translate(None, _ASCII_SPACES)) == len(w)
        and (w.isascii() or not any(u in w for u in _UNICODE_SPACES))
    )


def _hash(k0: np.ndarray, k1: np.ndarray) -> np.ndarray:
    h = (k0 * _MIX[0]) ^ (k1 * _MIX[1])
    return h ^ (h >> _MIX[2])


class _KeyTable:
    """Open-addressing table (k0, k1) -> id; at most half full."""

    def __init__(self, size: int = 1 << 16):
        self.k0 = np.zeros(size, np.uint64)
        self.k1 = np.zeros(size, np.uint64)
        self.ids = np.full(size, -1, np.int32)
        self.used = 0

    def get(self, k0, k1, h) -> np.ndarray:
        """ids of the keys; -1 where absent."""
        out = np.full(len(k0), -1, np.int32)
        mask = len(self.ids) - 1
        pending = np.arange(len(k0))
        slot = (h & np.uint64(mask)).astype(np.int64)
        while pending.size:
            v = self.ids[slot]
            hit = (v >= 0) & (self.k0[slot] == k0[pending]) & (self.k1[slot] == k1[pending])
            out[pending[hit]] = v[hit]
            go_on = (v >= 0) & ~hit
            pending, slot = pending[go_on], (slot[go_on] + 1) & mask
        return out

    def insert(self, k0, k1, ids) -> None:
        """Adds keys that are absent and distinct."""
        if 2 * (self.used + len(ids)) > len(self.ids):
            size = len(self.ids)
            while 2 * (self.used + len(ids)) > size:
                size *= 2
            keep = self.ids >= 0
            old = self.k0[keep], self.k1[keep], self.ids[keep]
            self.__init__(size)
            self.insert(*old)
        mask = len(self.ids) - 1
        slot = (_hash(k0, k1) & np.uint64(mask)).astype(np.int64)
        pending = np.arange(len(ids))
        while pending.size:
            s = slot[pending]
            free = self.ids[s] < 0
            _, first = np.unique(s[free], return_index=True)  # one key per free slot
            placed = pending[free][first]
            at = slot[placed]
            self.k0[at], self.k1[at], self.ids[at] = k0[placed], k1[placed], ids[placed]
            done = np.zeros(len(ids), bool)
            done[placed] = True
            pending = pending[~done[pending]]
            slot[pending] = (slot[pending] + 1) & mask
        self.used += len(ids)


def _chunk_ids(data: bytes, table: _KeyTable, fallback, eos: int, learn: bool) -> np.ndarray:
    """Ids of a normalised chunk's words with `eos` after every line. Words the table lacks
    (and long ones) go through `fallback(list of bytes) -> int32 ids`; with `learn`, the short
    ones among them are added to the table."""
    positions, is_eol, starts, ends, k0, k1, h = _spans(data)
    short = (ends - starts) <= _SHORT
    ids = np.full(len(starts), -1, np.int32)
    si = np.flatnonzero(short)
    ids[si] = table.get(k0[si], k1[si], h[si])
    miss = np.flatnonzero(ids < 0)
    if miss.size:
        words = [data[s:e] for s, e in zip(starts[miss].tolist(), ends[miss].tolist(), strict=True)]
        ids[miss] = fallback(words)
        if learn:
            new = miss[short[miss]]
            _, first = np.unique(ids[new], return_index=True)
            new = new[first]
            table.insert(k0[new], k1[new], ids[new])
    out = np.full(len(positions), eos, np.int32)
    out[~is_eol] = ids
    return out


def tokenize_words(
    path: str | os.PathLike,
    index: Mapping[bytes, int] | None = None,
    *,
    progress: bool = False,
) -> tuple[np.ndarray, list[bytes]]:
    """Word ids of a text file under fairseq's rule (each line's words, then ``</s>``).

    Args:
      index: {word as UTF-8 bytes: id} (a `Dictionary`'s); words missing from it get `UNK`.
        None: ids are provisional, in order of first occurrence (``</s>`` is 0), for building
        a dictionary.

    Returns:
      ids: int32 [tokens].
      words: with `index=None`, the word (bytes) of each provisional id; else [].
    """
    path = pathlib.Path(path)
    table = _KeyTable()
    if index is None:
        seen = collections.defaultdict(itertools.count().__next__)
        eos = seen[b"</s>"]

        def fallback(words):
            return np.fromiter(map(seen.__getitem__, words), np.int32, len(words))

        *_, k0, k1, _ = _spans(b"</s>\n")
        table.insert(k0, k1, np.array([eos], np.int32))
    else:
        eos = int(index.get(b"</s>", EOS))

        def fallback(words):
            return np.fromiter(map(index.get, words, itertools.repeat(UNK)), np.int32, len(words))

        plain = [w for w in index if len(w) <= _SHORT and _is_word(w)]
        if plain:
            *_, k0, k1, _ = _spans(b" ".join(plain) + b"\n")
            table.insert(k0, k1, np.array([index[w] for w in plain], np.int32))
    parts: list[np.ndarray] = []
    size, done, t0 = max(path.stat().st_size, 1), 0, time.perf_counter()
    for chunk in _chunks(path, "text"):
        parts.append(_chunk_ids(chunk, table, fallback, eos, learn=index is None))
        done += len(chunk)
        if progress:
            rate = done / 1e6 / max(time.perf_counter() - t0, 1e-9)
            _progress(f"tokenising {path.name}: {min(done / size, 1):.0%} ({rate:.0f} MB/s)")
    ids = np.concatenate(parts) if parts else np.zeros(0, np.int32)
    return ids, (list(seen) if index is None else [])


def _progress(msg: str) -> None:
    if sys.stderr.isatty():
        print(f"\r{msg}", end="", file=sys.stderr, flush=True)


class Dictionary:
    """fairseq's dictionary rule: specials, then train words by count (ties in code-point
    order), padded with ``madeupwordNNNN`` to a multiple of `padding_factor`.

    Attributes:
      symbols: tuple of str, the word of each id.
      counts: int64 [len] train counts (specials: their count in train; padding: 0).
      index: {word as UTF-8 bytes: id}.
    """

    def __init__(self, symbols: Sequence[str], counts: Sequence[int]):
        self.symbols = tuple(symbols)
        self.counts = np.asarray(counts, np.int64)
        self.index = {s.encode(): i for i, s in enumerate(self.symbols)}
        if len(self.index) != len(self.symbols) or self.symbols[:4] != SPECIALS:
            raise ValueError("symbols must start with the specials and hold no repeats")

    def __len__(self) -> int:
        return len(self.symbols)

    @classmethod
    def build(
        cls, words: Sequence[bytes], counts: Sequence[int], padding_factor: int = PADDING_FACTOR
    ) -> tuple[Dictionary, np.ndarray]:
        """From the train split's distinct words (bytes) and their counts.

        Returns:
          the dictionary, and int32 [len(words)]: the dictionary id of each word.
        """
        counts = np.asarray(counts, np.int64)
        special = {s.encode(): i for i, s in enumerate(SPECIALS)}
        numbers = [0] * len(SPECIALS)
        remap = np.empty(len(words), np.int32)
        rest = []
        for i, w in enumerate(words):
            if w in special:
                numbers[special[w]] += int(counts[i])
                remap[i] = special[w]
            else:
                rest.append(i)
        # By count, most frequent first; ties by the word (UTF-8 byte order = code-point order).
        rest.sort(key=lambda i: (-counts[i], words[i]))
        symbols = [*SPECIALS, *(words[i].decode() for i in rest)]
        numbers += [int(counts[i]) for i in rest]
        remap[rest] = np.arange(len(SPECIALS), len(symbols), dtype=np.int32)
        k = 0
        while len(symbols) % padding_factor:
            symbols.append(f"madeupword{k:04d}")
            numbers.append(0)
            k += 1
        return cls(symbols, numbers), remap

    def save(self, path: str | os.PathLike) -> None:
        """fairseq's ``dict.txt``: ``symbol count`` per line, without the 4 specials."""
        lines = (f"{s} {int(c)}\n" for s, c in zip(self.symbols[4:], self.counts[4:], strict=True))
        pathlib.Path(path).write_text("".join(lines), encoding="utf-8")

    @classmethod
    def load(cls, path: str | os.PathLike, specials: Sequence[int] = (0, 0, 0, 0)):
        path = pathlib.Path(path)
        symbols, numbers = list(SPECIALS), list(specials)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise cache.DataError(
                f"{path}: cannot read dictionary ({e}); delete it to rebuild"
            ) from None
        for k, line in enumerate(text.split("\n")[:-1], 1):
            word, _, count = line.rpartition(" ")
            if not word or not count.isdigit():
                raise cache.DataError(f"{path}:{k}: expected `symbol count`; delete to rebuild")
            symbols.append(word)
            numbers.append(int(count))
        return cls(symbols, numbers)


def build_word_level(
    files: Mapping[str, str | os.PathLike], *, progress: bool = False
) -> tuple[dict[str, np.ndarray], Dictionary]:
    """Word-level int32 streams of {split: file} and the dictionary of the "train" file."""
    ids, words = tokenize_words(files["train"], progress=progress)
    vocab, remap = Dictionary.build(words, np.bincount(ids, minlength=len(words)))
    out = {"train": remap[ids]}
    for split, path in files.items():
        if split != "train":
            out[split] = tokenize_words(path, vocab.index, progress=progress)[0]
    return out, vocab


def _file_spec(paths: Iterable[pathlib.Path]) -> list:
    out = []
    for p in paths:
        st = p.stat()
        out.append([str(p.resolve()), st.st_size, st.st_mtime_ns])
    return out


def _word_corpus(
    files: Mapping[str, pathlib.Path], cache_root, name: str, description: dict
) -> Corpus:
    """Word-level streams of the files {split: path}, cached."""
    spec = dict(version=_WORD_VERSION, kind="words", files=_file_spec(files.values()))

    def build(tmp: pathlib.Path) -> None:
        t0 = time.perf_counter()
        streams, vocab = build_word_level(files, progress=True)
        dtype = np.uint16 if len(vocab) <= 1 << 16 else np.int32
        arrays = {s: v.astype(dtype, copy=False) for s, v in streams.items()}
        cache.save_arrays(tmp / "tokens.npz", arrays)
        vocab.save(tmp / "dict.txt")
        specials = [int(c) for c in vocab.counts[:4]]
        (tmp / "specials.json").write_text(json.dumps(specials) + "\n")
        if sys.stderr.isatty():
            print(f"\r{name}: tokenised in {time.perf_counter() - t0:.1f} s", file=sys.stderr)

    directory = cache.build_once(pathlib.Path(cache_root) / "language", name, spec, build)
    arrays = cache.load_arrays(directory / "tokens.npz", SPLITS)
    try:
        specials = json.loads((directory / "specials.json").read_text())
    except (OSError, ValueError) as e:
        raise cache.DataError(
            f"{directory}: corrupt specials.json ({e}); delete it to rebuild"
        ) from None
    vocab = Dictionary.load(directory / "dict.txt", specials)
    unknown = {s: int(np.count_nonzero(arrays[s] == UNK)) for s in SPLITS}
    return Corpus(
        splits={s: arrays[s] for s in SPLITS},
        vocab_size=len(vocab),
        unit="token",
        source="official",
        description=dict(
            description,
            tokenisation="word level (fairseq): each line's whitespace-separated words, then "
            "</s>; dictionary from train by count, padded to a multiple of 8",
            vocab_size=len(vocab),
            types_in_train=int(np.count_nonzero(vocab.counts[4:])) + int(specials[3] > 0),
            tokens={s: int(len(arrays[s])) for s in SPLITS},
            unk_tokens=unknown,
            cache=f"language/{directory.name}",
        ),
        symbols=vocab.symbols,
    )


def word_files(
    directory: str | os.PathLike, pattern: str, subdirs: Sequence[str], what: str, url: str
) -> dict[str, pathlib.Path]:
    """{split: path} of `pattern.format(split=file split)` in `directory` or a subfolder."""
    directory = pathlib.Path(directory).expanduser()
    names = {s: pattern.format(split=f) for s, f in _FILE_SPLITS.items()}
    expected = f"expected {', '.join(names.values())} ({what}, {url}) in config.data.dir"
    if not directory.is_dir():
        raise cache.DataError(f"{directory}: {what} folder not found; {expected}")
    for sub in subdirs:
        if not (directory / names["train"]).is_file() and (directory / sub).is_dir():
            directory = directory / sub
    missing = [n for n in names.values() if not (directory / n).is_file()]
    if missing:
        raise cache.DataError(f"{directory}: missing {', '.join(missing)}; {expected}")
    return {s: directory / n for s, n in names.items()}


_WIKITEXT_URL = "https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-103-v1.zip"


def wikitext(
    directory: str | os.PathLike,
    *,
    cache_root: str | os.PathLike | None = None,
    name: str = "wikitext-103",
    bpe: GPT2BPE | None = None,
) -> Corpus:
    """WikiText-103 or WikiText-2: word level (fairseq), or GPT-2 BPE with `bpe`."""
    if name not in ("wikitext-103", "wikitext-2"):
        raise errors.ConfigError(f"wikitext name={name!r}; known: wikitext-103, wikitext-2")
    root = cache.data_root() if cache_root is None else cache_root
    url = _WIKITEXT_URL.replace("wikitext-103", name)
    if bpe is not None:
        try:
            files = word_files(directory, "wiki.{split}.raw", (name,), name, url)
        except cache.DataError:
            files = word_files(directory, "wiki.{split}.tokens", (name,), name, url)
        return _bpe_corpus(files, root, name, bpe, strip=False)
    files = word_files(directory, "wiki.{split}.tokens", (name,), name, url)
    return _word_corpus(files, root, name, dict(dataset=name, files=_names(files)))


def ptb(
    directory: str | os.PathLike,
    *,
    cache_root: str | os.PathLike | None = None,
    bpe: GPT2BPE | None = None,
) -> Corpus:
    """Penn Treebank (Mikolov's ``ptb.{train,valid,test}.txt``): word level, or GPT-2 BPE."""
    root = cache.data_root() if cache_root is None else cache_root
    url = "http://www.fit.vutbr.cz/~imikolov/rnnlm/simple-examples.tgz (data/)"
    files = word_files(directory, "ptb.{split}.txt", ("data", "ptb"), "Penn Treebank", url)
    if bpe is not None:
        return _bpe_corpus(files, root, "ptb", bpe, strip=True)
    return _word_corpus(files, root, "ptb", dict(dataset="ptb", files=_names(files)))


def _names(files: Mapping[str, pathlib.Path]) -> dict[str, str]:
    return {s: str(p) for s, p in files.items()}


# --------------------------------------------------------------------------------------------
# GPT-2 byte-level BPE
# --------------------------------------------------------------------------------------------


@functools.cache
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible map of the 256 byte values to printable characters (Radford et al.
    2019, the released ``encoder.py``): the printable Latin-1 bytes ``!``..``~``, ``¡``..``¬``
    and ``®``..``ÿ`` map to themselves; the other 68 bytes, in increasing order, to
    U+0100, U+0101, ... ."""
    keep = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    out = {b: chr(b) for b in keep}
    extra = 0
    for b in range(256):
        if b not in out:
            out[b] = chr(256 + extra)
            extra += 1
    return out


_WHITE_SPACE = (  # the Unicode White_Space property (the `regex` module's \s)
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
)


# No letter or number lies above plane 3 (planes 4-13 are unassigned; 14 holds format and
# combining marks, 15-16 private use): scanning stops at the end of plane 3.
_LAST_LETTER = 0x3FFFF


@functools.cache
def _pretokenizer():
    """GPT-2's pre-tokenisation pattern ``'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+|
    ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+`` in the standard `re` module: \\p{L} and \\p{N}
    become explicit classes built from `unicodedata` (general categories L* and N*)."""
    import re

    letters, numbers = [], []
    for table, prefix in ((letters, "L"), (numbers, "N")):
        start = None
        for c in range(_LAST_LETTER + 2):
            inside = c <= _LAST_LETTER and unicodedata.category(chr(c)).startswith(prefix)
            if inside and start is None:
                start = c
            elif not inside and start is not None:
                table.append((start, c - 1))
                start = None

    def cls(ranges):
        return "".join(
            re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
            for a, b in ranges
        )

    L, N, S = cls(letters), cls(numbers), _WHITE_SPACE
    return re.compile(
        rf"""'s|'t|'re|'ve|'m|'ll|'d| ?[{L}]+| ?[{N}]+| ?[^{S}{L}{N}]+|[{S}]+(?![^{S}])|[{S}]+"""
    )


class GPT2BPE:
    """GPT-2's byte-level BPE from a Hugging Face tokenizer folder (``vocab.json``: token ->
    id; ``merges.txt``: one merge ``a b`` per line in rank order, after a ``#version`` line).

    Encoding (the published algorithm): the text is cut into pieces by the pre-tokenisation
    pattern; each piece's UTF-8 bytes become characters through `bytes_to_unicode`; then,
    repeatedly, the adjacent pair with the lowest merge rank is merged everywhere in the piece
    (left to right) until no pair has a rank; the resulting symbols are looked up in the
    vocabulary.
    """

    def __init__(self, directory: str | os.PathLike):
        directory = pathlib.Path(directory).expanduser()
        vocab_path, merges_path = directory / "vocab.json", directory / "merges.txt"
        need = (
            "a GPT-2 tokenizer in Hugging Face format (vocab.json and merges.txt, as in the "
            "`gpt2` checkpoint folder); set config.data.bpe_dir to that folder"
        )
        for p in (vocab_path, merges_path):
            if not p.is_file():
                raise cache.DataError(f"{p}: not found; expected {need}")
        try:
            vocab = json.loads(vocab_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise cache.DataError(f"{vocab_path}: not a JSON vocabulary ({e}); {need}") from None
        if not isinstance(vocab, dict) or not all(
            isinstance(k, str) and isinstance(v, int) for k, v in vocab.items()
        ):
            raise cache.DataError(f"{vocab_path}: expected a JSON object token -> int id")
        self.encoder: dict[str, int] = vocab
        self.decoder = {v: k for k, v in vocab.items()}
        self.ranks: dict[tuple[str, str], int] = {}
        try:
            lines = merges_path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as e:
            raise cache.DataError(f"{merges_path}: cannot read merges ({e})") from None
        for k, line in enumerate(lines, 1):
            if (k == 1 and line.startswith("#version")) or not line.strip():
                continue
            parts = line.split()
            if len(parts) != 2:
                raise cache.DataError(f"{merges_path}:{k}: expected two symbols, got {line!r}")
            self.ranks.setdefault((parts[0], parts[1]), len(self.ranks))
        self.byte_encoder = bytes_to_unicode()
        self.byte_decoder = {c: b for b, c in self.byte_encoder.items()}
        self.directory = directory
        self._cache: dict[str, tuple[int, ...]] = {}

    def __len__(self) -> int:
        return max(self.decoder) + 1 if self.decoder else 0

    def _bpe(self, piece: str) -> tuple[int, ...]:
        word = list(piece)
        ranks = self.ranks
        while len(word) > 1:
            best, best_rank = None, None
            for pair in zip(word, word[1:], strict=False):
                r = ranks.get(pair)
                if r is not None and (best_rank is None or r < best_rank):
                    best, best_rank = pair, r
            if best is None:
                break
            merged, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and word[i] == best[0] and word[i + 1] == best[1]:
                    merged.append(best[0] + best[1])
                    i += 2
                else:
                    merged.append(word[i])
                    i += 1
            word = merged
        try:
            return tuple(self.encoder[s] for s in word)
        except KeyError as e:
            raise cache.DataError(
                f"{self.directory / 'vocab.json'}: symbol {e.args[0]!r} (of {piece!r}) is not "
                "in the vocabulary; vocab.json and merges.txt do not belong together"
            ) from None

    def encode(self, text: str) -> list[int]:
        """Token ids of `text`."""
        out: list[int] = []
        enc = self.byte_encoder
        for piece in _pretokenizer().findall(text):
            ids = self._cache.get(piece)
            if ids is None:
                ids = self._bpe("".join(enc[b] for b in piece.encode("utf-8")))
                if len(self._cache) < 1 << 20:
                    self._cache[piece] = ids
            out.extend(ids)
        return out

    def decode(self, ids: Iterable[int]) -> str:
        chars = "".join(self.decoder[int(i)] for i in ids)
        return bytes(self.byte_decoder[c] for c in chars).decode("utf-8", errors="replace")


def _bpe_corpus(
    files: Mapping[str, pathlib.Path], cache_root, name: str, bpe: GPT2BPE, *, strip: bool
) -> Corpus:
    vocab_file, merges_file = bpe.directory / "vocab.json", bpe.directory / "merges.txt"
    spec = dict(
        version=_BPE_VERSION,
        kind="gpt2-bpe",
        strip=strip,
        files=_file_spec(files.values()),
        tokenizer=_file_spec([vocab_file, merges_file]),
    )

    def build(tmp: pathlib.Path) -> None:
        arrays = {}
        for split, path in files.items():
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as e:
                raise cache.DataError(f"{path}: cannot read as UTF-8 text ({e})") from None
            ids: list[int] = []
            lines = text.splitlines(keepends=True) if not strip else text.splitlines()
            for k, line in enumerate(lines):
                # HF `ptb_text_only` strips each line; HF `wikitext` keeps a line's newline
                # and gives a blank line as "".
                line = line.strip() if strip else (line if line.strip() else "")
                ids.extend(bpe.encode(line))
                if k % 10000 == 0:
                    _progress(f"BPE {path.name}: line {k}/{len(lines)}")
            arrays[split] = np.asarray(ids, np.uint16 if len(bpe) <= 1 << 16 else np.int32)
        cache.save_arrays(tmp / "tokens.npz", arrays)

    directory = cache.build_once(pathlib.Path(cache_root) / "language", f"{name}-bpe", spec, build)
    arrays = cache.load_arrays(directory / "tokens.npz", SPLITS)
    return Corpus(
        splits={s: arrays[s] for s in SPLITS},
        vocab_size=len(bpe),
        unit="token",
        source="official",
        description=dict(
            dataset=name,
            files=_names(files),
            tokenisation=f"GPT-2 byte-level BPE ({bpe.directory}), line by line as HF run_clm",
            vocab_size=len(bpe),
            tokens={s: int(len(arrays[s])) for s in SPLITS},
            cache=f"language/{directory.name}",
        ),
        symbols=tuple(bpe.decoder.get(i, "") for i in range(len(bpe))),
    )


# --------------------------------------------------------------------------------------------
# enwik8
# --------------------------------------------------------------------------------------------

_ENWIK8_URL = "http://mattmahoney.net/dc/enwik8.zip"


def enwik8(path: str | os.PathLike, *, split: Sequence[int] = ENWIK8_SPLIT) -> Corpus:
    """enwik8's bytes split `split` (train, valid, test byte counts; the file must hold exactly
    their sum). `path`: the ``enwik8`` file, ``enwik8.zip``, or a folder holding either."""
    path = pathlib.Path(path).expanduser()
    if path.is_dir():
        found = [path / n for n in ("enwik8", "enwik8.zip") if (path / n).is_file()]
        if not found:
            raise cache.DataError(
                f"{path}: no enwik8 or enwik8.zip in the folder; download {_ENWIK8_URL}"
            )
        path = found[0]
    if not path.is_file():
        raise cache.DataError(f"{path}: enwik8 not found; download {_ENWIK8_URL}")
    if zipfile.is_zipfile(path):
        try:
            with zipfile.ZipFile(path) as z:
                members = [n for n in z.namelist() if n.rsplit("/", 1)[-1] == "enwik8"]
                if not members:
                    raise cache.DataError(
                        f"{path}: no member `enwik8` in the zip (found {z.namelist()[:5]}); "
                        f"expected {_ENWIK8_URL}"
                    )
                data = z.read(members[0])
        except (zipfile.BadZipFile, OSError, EOFError, zipfile.LargeZipFile) as e:
            raise cache.DataError(f"{path}: corrupt zip ({e}); download {_ENWIK8_URL}") from None
    else:
        if path.suffix == ".zip":
            raise cache.DataError(f"{path}: not a zip file (corrupt?); download {_ENWIK8_URL}")
        data = path.read_bytes()
    sizes = [int(n) for n in split]
    if len(sizes) != 3 or min(sizes) < 1:
        raise errors.ConfigError(f"enwik8 split={list(split)}: need 3 positive byte counts")
    if len(data) != sum(sizes):
        raise cache.DataError(
            f"{path}: {len(data):,} bytes, expected {sum(sizes):,} (enwik8 is the first 10^8 "
            f"bytes of the Wikipedia dump; download {_ENWIK8_URL})"
        )
    stream = np.frombuffer(data, np.uint8)
    a, b = sizes[0], sizes[0] + sizes[1]
    splits = {"train": stream[:a], "val": stream[a:b], "test": stream[b:]}
    return Corpus(
        splits=splits,
        vocab_size=256,
        unit="byte",
        source="official",
        description=dict(
            dataset="enwik8",
            file=str(path),
            split="first / next / last bytes: " + " / ".join(f"{n:,}" for n in sizes),
            tokens="byte values 0..255 (vocabulary 256)",
            sizes={s: int(len(v)) for s, v in splits.items()},
        ),
    )


# --------------------------------------------------------------------------------------------
# Images as sub-pixel sequences
# --------------------------------------------------------------------------------------------


def _image_splits(train: np.ndarray, test: np.ndarray, val_images: int, what: str):
    if val_images < 0 or val_images >= len(train):
        raise errors.ConfigError(
            f"config.data.val_images={val_images}: need 0 (val = test) or 1..{len(train) - 1}"
        )
    if val_images:
        return {"train": train[:-val_images], "val": train[-val_images:], "test": test}, (
            f"val = the last {val_images} {what} training images (held out)"
        )
    return {"train": train, "val": test, "test": test}, "val = test (the test images)"


def cifar10_pixels(directory: str | os.PathLike, *, val_images: int = 0) -> Corpus:
    """CIFAR-10 as uint8 [n, 3072] sub-pixel sequences: raster order, R, G, B per pixel."""
    splits = cifar.read_cifar10(directory)

    def seq(planar: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(cifar.planar_to_hwc(planar).reshape(len(planar), -1))

    train, test = seq(splits["train"][0]), seq(splits["test"][0])
    out, val = _image_splits(train, test, val_images, "CIFAR-10")
    return Corpus(
        splits=out,
        vocab_size=256,
        unit="dim",
        source="official",
        description=dict(
            dataset="CIFAR-10 sub-pixels",
            dir=str(cifar.cifar10_dir(directory)),
            order="raster over pixels (row by row, left to right), R, G, B per pixel",
            split=val,
            sizes={s: int(len(v)) for s, v in out.items()},
        ),
        image_shape=(32, 32, 3),
    )


def fashion_mnist_pixels(
    directory: str | os.PathLike = fashion_mnist.DEFAULT_DIR, *, val_images: int = 0
) -> Corpus:
    """Fashion-MNIST (stand-in for CIFAR-10) as uint8 [n, 784] pixel sequences, raster order."""
    splits = fashion_mnist.read(directory)
    train, test = (splits[s][0].reshape(len(splits[s][0]), -1) for s in ("train", "test"))
    out, val = _image_splits(train, test, val_images, "Fashion-MNIST")
    return Corpus(
        splits=out,
        vocab_size=256,
        unit="dim",
        source="standin",
        description=dict(
            dataset="Fashion-MNIST pixels (stand-in for CIFAR-10 sub-pixels)",
            standin_for="CIFAR-10 image generation (SSA Table 2)",
            package=fashion_mnist.PACKAGE,
            dir=str(directory),
            order="raster over pixels (row by row), 1 grayscale channel",
            split=val,
            sizes={s: int(len(v)) for s, v in out.items()},
        ),
        image_shape=(fashion_mnist.SIZE, fashion_mnist.SIZE, 1),
    )


# --------------------------------------------------------------------------------------------
# Byte-level stand-in: the Python documentation sources
# --------------------------------------------------------------------------------------------


def find_standin_dir(source_dir: str | os.PathLike | None = None) -> pathlib.Path:
    """`source_dir`, else the first of `STANDIN_DIRS` holding ``*.rst.txt`` files."""
    how = (
        f"install the Python documentation with `apt-get install {STANDIN_PACKAGE}`, or set "
        "config.data.standin_dir to a folder holding **/*.rst.txt files"
    )
    if source_dir:
        root = pathlib.Path(source_dir).expanduser()
        if not root.is_dir():
            raise cache.DataError(f"{root}: stand-in source folder not found; {how}")
        if not any(root.rglob("*.rst.txt")):
            raise cache.DataError(f"{root}: no *.rst.txt files in the folder; {how}")
        return root
    for candidate in STANDIN_DIRS:
        root = pathlib.Path(candidate)
        if root.is_dir() and any(root.glob("*.rst.txt")):
            return root
    raise cache.DataError(f"{STANDIN_DIR}: the byte-level stand-in's sources not found; {how}")


def _assign(sizes: np.ndarray, fraction: float, rng: np.random.Generator) -> tuple[list, ...]:
    """Documents (indices) of train, val, test: a seeded order fills val, then test, each up
    to `fraction` of all bytes (the document that reaches it included); the rest is train."""
    quota, total = fraction * float(sizes.sum()), {"val": 0, "test": 0}
    out: dict[str, list[int]] = {"train": [], "val": [], "test": []}
    for i in rng.permutation(len(sizes)).tolist():
        split = next((s for s in ("val", "test") if total[s] < quota), "train")
        if split != "train":
            total[split] += int(sizes[i])
        out[split].append(i)
    return out["train"], out["val"], out["test"]


def python_docs_bytes(
    source_dir: str | os.PathLike | None = None,
    *,
    seed: int = 0,
    fraction: float = 0.05,
    cache_root: str | os.PathLike | None = None,
) -> Corpus:
    """The byte-level stand-in: Python documentation reST sources split by document."""
    if not 0 < fraction < 0.5:
        raise errors.ConfigError(f"config.data.standin_fraction={fraction}: need 0 < f < 0.5")
    root = find_standin_dir(source_dir).resolve()
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.rst.txt") if p.is_file())
    sizes = [(f, (root / f).stat().st_size) for f in files]
    if len(files) < 3:
        raise cache.DataError(f"{root}: {len(files)} *.rst.txt documents; need at least 3")
    spec = dict(
        version=_STANDIN_VERSION,
        source_dir=str(root),
        corpus=cache.spec_hash({"files": sizes}),
        seed=int(seed),
        fraction=float(fraction),
    )

    def build(tmp: pathlib.Path) -> None:
        rng = np.random.default_rng(int(seed))
        parts = _assign(np.asarray([s for _, s in sizes], np.int64), fraction, rng)
        arrays = {}
        for split, docs in zip(SPLITS, parts, strict=True):
            blobs = []
            for i in docs:
                try:
                    blobs.append((root / files[i]).read_bytes())
                except OSError as e:
                    raise cache.DataError(f"{root / files[i]}: cannot read ({e})") from None
            arrays[split] = np.frombuffer(b"".join(blobs), np.uint8)
            arrays[f"{split}_documents"] = np.asarray([files[i] for i in docs], dtype=str)
        cache.save_arrays(tmp / "bytes.npz", arrays)

    base = cache.data_root() if cache_root is None else cache_root
    directory = cache.build_once(pathlib.Path(base) / "language", "docs-bytes", spec, build)
    z = cache.load_arrays(directory / "bytes.npz", (*SPLITS, *(f"{s}_documents" for s in SPLITS)))
    splits = {s: z[s] for s in SPLITS}
    for s in SPLITS:
        if splits[s].dtype != np.uint8 or splits[s].ndim != 1 or not len(splits[s]):
            raise cache.DataError(f"{directory / 'bytes.npz'}: bad split {s}; delete to rebuild")
    return Corpus(
        splits=splits,
        vocab_size=256,
        unit="byte",
        source="standin",
        description=dict(
            dataset="Python 3 documentation reST sources as bytes (stand-in)",
            standin_for="enwik8 / WikiText (byte-level language modelling)",
            package=STANDIN_PACKAGE,
            source_dir=str(root),
            split=f"by document, seeded ({seed}): val and test ~{fraction:.0%} of the bytes each",
            documents={s: int(len(z[f"{s}_documents"])) for s in SPLITS},
            sizes={s: int(len(v)) for s, v in splits.items()},
            tokens="byte values 0..255 (vocabulary 256)",
            cache=f"language/{directory.name}",
        ),
    )


def unigram_bits(
    train: np.ndarray, valid: np.ndarray, vocab_size: int = 256, alpha: float = 1.0
) -> dict[str, float]:
    """Unigram baselines in bits per token (per byte for byte corpora).

    Returns:
      entropy: H of the train split's empirical unigram distribution (maximum likelihood).
      valid_cross_entropy: -mean log2 q(x) over the valid tokens, q the train unigram with
        add-`alpha` smoothing over `vocab_size` symbols (so an unseen symbol has q > 0).
    """
    counts = np.bincount(np.asarray(train).ravel(), minlength=vocab_size).astype(np.float64)
    if counts.sum() == 0 or len(counts) != vocab_size:
        raise ValueError(f"train must be non-empty with ids < {vocab_size}")
    p = counts[counts > 0] / counts.sum()
    q = (counts + alpha) / (counts.sum() + alpha * vocab_size)
    v = np.bincount(np.asarray(valid).ravel(), minlength=vocab_size).astype(np.float64)
    if len(v) != vocab_size or v.sum() == 0:
        raise ValueError(f"valid must be non-empty with ids < {vocab_size}")
    return {
        "entropy": float(-(p * np.log2(p)).sum()),
        "valid_cross_entropy": float(-(v * np.log2(q)).sum() / v.sum()),
    }
