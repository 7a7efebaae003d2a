"""Tokenisers of the language corpora: fairseq's word-level rule and GPT-2's byte-level BPE.

    ids, words = tokenizers.tokenize_words("wiki.train.tokens")    # provisional ids, its words
    streams, vocab = tokenizers.build_word_level({"train": ..., "val": ..., "test": ...})
    bpe = tokenizers.GPT2BPE("/models/gpt2")                       # vocab.json + merges.txt
    bpe.encode(" Hello world")                                     # GPT-2 token ids

Word level (WikiText-103 / WikiText-2, PTB; `language.data.corpora` reads the files and caches
the streams): the files' own tokenisation, as ``fairseq-preprocess --only-source`` binarises them
for SSA's recipe (fairseq ``tokenizer.tokenize_line``: whitespace runs collapse, the line is
stripped and split; ``Dictionary.encode_line`` with ``append_eos=True``): every line, an empty
one included, gives its words and then the end-of-line symbol ``</s>``. Lines are the file's
lines (``\\n``, ``\\r\\n`` or ``\\r``, as Python's text mode reads them); whitespace is Unicode
whitespace (``str.split``).
Dictionary (fairseq ``Dictionary`` and ``finalize``, read for the rule, not copied): the specials
``<s>`` 0, ``<pad>`` 1, ``</s>`` 2, ``<unk>`` 3 first; then every other word of the TRAIN split
by count, most frequent first, ties in code-point order of the word; then ``madeupword0000``,
... up to a multiple of ``padding_factor`` = 8 (fairseq's default). A word of valid/test not in
train maps to ``<unk>``. `Dictionary.save` writes fairseq's ``dict.txt`` (``symbol count`` per
line, specials excluded).
Speed: words are cut, keyed and looked up with whole-array numpy operations (`_spans`,
`_KeyTable`: a word of <= 15 bytes has an exact 128-bit key in an open-addressing table; longer
words and the first occurrence of each word take a Python dict), one pass over the train file
(provisional ids in order of first occurrence, then renumbered by the dictionary) and one over
valid and test. `scripts.tokenizer_speed` measures it at WikiText-103's size (540 MB of the
Python docs repeated, 82M tokens, 135k types; one core of the idle 2-core CI-class machine):
building 22.9 MB/s, encoding with the dictionary 28.9 MB/s (results/bench/tokenizer_speed.md); a
plain ``bytes.split`` + dict version measured 11-13 MB/s (under load).

GPT-2 BPE (GFSA's GPT-2 fine-tuning on PTB / WikiText-2 / WikiText-103): `GPT2BPE` reads a
Hugging Face tokenizer folder (``vocab.json`` and ``merges.txt``, as a GPT-2 checkpoint folder
holds them) and encodes text with the published algorithm (its class docstring);
`bytes_to_unicode` is GPT-2's byte-to-character map. Which text is encoded, line by line as HF's
``run_clm.py`` does: `language.data.corpora`.

Unreadable or malformed files raise `attnbench.errors.DataError` naming the path.
"""

from __future__ import annotations

import collections
import functools
import itertools
import json
import os
import pathlib
import sys
import time
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence

import numpy as np

from attnbench.data import cache

__all__ = [
    "SPECIALS",
    "BOS",
    "PAD",
    "EOS",
    "UNK",
    "Dictionary",
    "GPT2BPE",
    "bytes_to_unicode",
    "tokenize_words",
    "count_tokens",
    "build_word_level",
]

SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")  # fairseq Dictionary's specials, in index order
BOS, PAD, EOS, UNK = 0, 1, 2, 3
PADDING_FACTOR = 8  # fairseq Dictionary.finalize default: vocabulary a multiple of 8
_CHUNK = 8 << 20  # bytes per tokenisation chunk (split at a line end)
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


def count_tokens(path: str | os.PathLike) -> int:
    """How many tokens `tokenize_words` gives for the file (each line's words, then ``</s>``),
    without building ids: the same cut (`_chunks`, `_spans`), for `attnbench-data verify`."""
    path = pathlib.Path(path)
    total = 0
    for chunk in _chunks(path, "text"):
        positions, *_ = _spans(chunk)
        total += len(positions)
    return total


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
