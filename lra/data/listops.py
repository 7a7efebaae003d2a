"""LRA ListOps: generator, TSV reader/writer and tokenizer (numpy + standard library only).

The task
--------
A sample is a random expression tree over single digits 0-9 with four list operators:
``[MIN``, ``[MAX``, ``[MED`` (``int(np.median(args))``, i.e. the floor of the mean of the two
middle values for an even count) and ``[SM`` (sum modulo 10). The label is the value of the
expression, one of ``NUM_CLASSES = 10`` classes.

Generator (the algorithm of the official ``lra_benchmarks/data/listops.py``)
----------------------------------------------------------------------------
* The root is at depth 1. At ``depth < max_depth`` a uniform ``r`` in [0, 1) is drawn and the node
  is a leaf iff ``r > value_p``, so it is an operator with probability ``value_p`` (0.25).
  At ``depth == max_depth`` the node is always a leaf.
* A leaf is a uniform digit 0-9. An operator has a uniform number of children in
  ``[2, max_args]`` *inclusive* (the original calls Python's ``random.randint``, which includes
  its upper bound) and a uniform operator out of the four.
* ``length`` counts tokens without parentheses: 1 per leaf, 2 per operator (``[OP`` and ``]``).
  A tree is kept iff ``min_length < length < max_length`` (both strict); official values 500 and
  2000. Trees are de-duplicated (here by source string, keeping the first occurrence) and split
  train/val/test = 96,000 / 2,000 / 2,000 in generation order.

Source format (exactly the official ``to_string``)
--------------------------------------------------
The original stores an operator node with children ``c1 .. ck`` as the left-nested pair tree
``((((OP, c1), c2), ..., ck), "]")`` and prints every pair as ``( left right )``. So
``[MAX 2 9 ]`` is written ``( ( ( [MAX 2 ) 9 ) ] )``: ``k + 1`` opening parentheses, the
operator, each child followed by ``)``, then ``] )``. Tokens are separated by single spaces. A leaf
is the bare digit. The reader and tokenizer only look at the non-parenthesis tokens, so sources
with or without parentheses (e.g. ``[MAX 2 9 ]``) are both accepted.

Files (the official release: ``listops-1000/basic_{train,val,test}.tsv``)
-------------------------------------------------------------------------
UTF-8 TSV, header ``Source<TAB>Target``, then one ``source<TAB>target`` line per example.
The official files were written by ``csv.writer`` and so end lines with ``\\r\\n``; the reader
accepts ``\\n`` and ``\\r\\n``, the writer emits ``\\n``. ``attnbench-data fetch listops`` puts
them in ``<data root>/lra_release/listops-1000/``, where ``official_dir`` finds them when
``config.data.dir`` is empty.

Tokens
------
``VOCAB`` has 16 entries; id 0 is padding. ``(`` and ``)`` are dropped, so the token count of a
source equals the generator's ``length``.

Reproducibility
---------------
The official script sets no seed and splits a Python ``set`` in hash order, so the released
samples cannot be regenerated; ``generate`` reproduces the distribution, deterministically for a
given ``seed`` (a ``numpy.random.default_rng(seed)`` feeding four block-drawn streams: the
operator coin, the arity, the operator and the digit). A tree is abandoned as soon as its length
reaches ``max_length``: that changes which random numbers later trees get, compared with an
implementation that finishes every tree, but not the distribution of accepted trees.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
import warnings
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np

from attnbench.data import cache, catalog

__all__ = [
    "VOCAB",
    "PAD_ID",
    "NUM_CLASSES",
    "OFFICIAL",
    "OFFICIAL_SIZES",
    "SPLIT_FILES",
    "ListOpsDataError",
    "SourceTooLongError",
    "generate",
    "generate_splits",
    "evaluate",
    "write_tsv",
    "read_tsv",
    "tokenize",
    "official_dir",
    "load_split",
    "ensure_generated",
]

# `]` is a token of its own. The tokenizer of the original LRA input pipeline dropped `[` and `]`
# (LRA issue #14: "The brackets are required"), which loses where each argument list ends and
# makes the task ambiguous. Only the parentheses of the file format are dropped.
VOCAB: tuple[str, ...] = (
    "<pad>", "[MIN", "[MAX", "[MED", "[SM", "]",
    "0", "1", "2", "3", "4", "5", "6", "7", "8", "9",
)  # fmt: skip
PAD_ID = 0
NUM_CLASSES = 10

OFFICIAL: dict[str, int | float] = dict(
    max_depth=10, max_args=10, min_length=500, max_length=2000, value_p=0.25
)
OFFICIAL_SIZES: dict[str, int] = dict(train=96000, val=2000, test=2000)
SPLIT_FILES: dict[str, str] = {
    "train": "basic_train.tsv",
    "val": "basic_val.tsv",
    "test": "basic_test.tsv",
}

_OPS = ("[MIN", "[MAX", "[MED", "[SM")  # index = operator id drawn by the generator
_DIGITS = tuple(str(d) for d in range(10))
_END = "]"
_HEADER = "Source\tTarget"
_TOKEN_ID = {tok: i for i, tok in enumerate(VOCAB) if i != PAD_ID}

# Bump when the generator's output for a given (seed, params) changes, so that
# ensure_generated() does not reuse directories written by an older version.
_GENERATOR_VERSION = 1
_CACHE_VERSION = 1
_RNG_CHUNK = 1 << 14
# Give up when this many consecutive trees bring no new example (unsatisfiable parameters, or
# fewer distinct trees in the length window than requested); official params accept about 8%.
_MAX_STALL = 1_000_000
# Sources per vectorised block: ~1.7 MB of official text, so the temporary byte arrays stay in
# cache (2x faster than 2048-source blocks) while the per-block Python overhead stays small.
_TOKENIZE_CHUNK = 256


class ListOpsDataError(cache.DataError):
    """A ListOps file or source string is missing or malformed (message names path/line)."""


class SourceTooLongError(ListOpsDataError):
    """A source with more tokens than the requested row length (`max_length`)."""


# --------------------------------------------------------------------------------------------
# Generation
# --------------------------------------------------------------------------------------------


def _resolve_params(params: Mapping[str, object]) -> dict[str, int | float]:
    unknown = sorted(set(params) - set(OFFICIAL))
    if unknown:
        raise TypeError(
            f"unknown ListOps generator parameter(s) {unknown}; known: {sorted(OFFICIAL)}"
        )
    out = dict(OFFICIAL)
    out.update(params)  # type: ignore[arg-type]
    for name in ("max_depth", "max_args", "min_length", "max_length"):
        if isinstance(out[name], bool) or not isinstance(out[name], (int, np.integer)):
            raise TypeError(f"{name} must be an int, got {out[name]!r}")
        out[name] = int(out[name])
    out["value_p"] = float(out["value_p"])
    if out["max_depth"] < 1:
        raise ValueError(f"max_depth must be >= 1, got {out['max_depth']}")
    if out["max_args"] < 2:
        raise ValueError(f"max_args must be >= 2, got {out['max_args']}")
    if not 0.0 <= out["value_p"] <= 1.0:
        raise ValueError(f"value_p must be in [0, 1], got {out['value_p']}")
    if out["min_length"] < 0 or out["max_length"] < out["min_length"] + 2:
        raise ValueError(
            "need 0 <= min_length and min_length + 2 <= max_length so that some length lies "
            f"strictly between them; got min_length={out['min_length']}, "
            f"max_length={out['max_length']}"
        )
    # The longest tree possible: every node above max_depth an operator with max_args children.
    longest = 1
    if out["value_p"] > 0:
        for _ in range(out["max_depth"] - 1):
            longest = 2 + out["max_args"] * longest
    if longest <= out["min_length"]:
        raise ValueError(
            f"no tree can be longer than min_length={out['min_length']} with "
            f"max_depth={out['max_depth']}, max_args={out['max_args']}, "
            f"value_p={out['value_p']} (longest possible: {longest})"
        )
    return out


def _stream(draw: Callable[[], np.ndarray]) -> Iterator:
    # Drawing from numpy in blocks and handing out Python scalars is ~10x faster than one
    # Generator call per draw. Blocks are drawn lazily, so the interleaving of the four streams
    # (and hence the output) is a deterministic function of the seed.
    while True:
        yield from draw().tolist()


class _TooLong(Exception):
    pass


def _apply(op: int, args: list[int]) -> int:
    if op == 0:
        return min(args)
    if op == 1:
        return max(args)
    if op == 2:
        # int(np.median(args)): the mean of the two middle values for an even count, truncated;
        # all values are >= 0, so truncation is floor division.
        s = sorted(args)
        mid = len(s) // 2
        return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) // 2
    return sum(args) % 10


def _generate(
    num_examples: int,
    seed: int,
    params: Mapping[str, int | float],
    progress: Callable[[int, int], None] | None = None,
) -> list[tuple[str, int]]:
    if isinstance(num_examples, bool) or not isinstance(num_examples, (int, np.integer)):
        raise TypeError(f"num_examples must be an int, got {num_examples!r}")
    if num_examples < 0:
        raise ValueError(f"num_examples must be >= 0, got {num_examples}")
    max_depth = params["max_depth"]
    max_args = params["max_args"]
    min_length = params["min_length"]
    max_length = params["max_length"]
    value_p = params["value_p"]

    rng = np.random.default_rng(seed)
    # Bound __next__ methods: a plain call is cheaper than the next() builtin in the hot loop.
    coin = _stream(lambda: rng.random(_RNG_CHUNK)).__next__
    # The original draws random.randint(2, max_args), inclusive of max_args, hence the + 1.
    arity = _stream(lambda: rng.integers(2, max_args + 1, _RNG_CHUNK)).__next__
    pick_op = _stream(lambda: rng.integers(0, len(_OPS), _RNG_CHUNK)).__next__
    leaf = _stream(lambda: rng.integers(0, 10, _RNG_CHUNK)).__next__
    opening = [["("] * (k + 1) for k in range(max_args + 1)]
    tokens: list[str | None] = []
    length = 0

    def node(depth: int) -> int:
        # Appends the node's official-format tokens to `tokens` and returns its value, so an
        # accepted tree needs no second pass. Draw order as in the original: r (only above
        # max_depth), then the digit or the arity, the children, and last the operator (hence
        # the placeholder for the operator token).
        nonlocal length
        if depth < max_depth and coin() <= value_p:
            length += 2
            if length >= max_length:
                raise _TooLong
            k = arity()
            tokens.extend(opening[k])
            slot = len(tokens)
            tokens.append(None)
            values = []
            for _ in range(k):
                values.append(node(depth + 1))
                tokens.append(")")
            op = pick_op()
            tokens[slot] = _OPS[op]
            tokens.append(_END)
            tokens.append(")")
            return _apply(op, values)
        length += 1
        if length >= max_length:
            # The length only grows, so this tree would be rejected anyway. Stopping early
            # changes how much of the random stream a rejected tree consumes (outputs differ
            # from a build-everything implementation with the same draws) but not the
            # distribution of accepted trees: attempts stay i.i.d. and acceptance is decided
            # by the same event.
            raise _TooLong
        value = leaf()
        tokens.append(_DIGITS[value])
        return value

    examples: list[tuple[str, int]] = []
    seen: set[str] = set()
    stall = 0
    report_every = max(1, num_examples // 100)
    while len(examples) < num_examples:
        length = 0
        tokens.clear()
        try:
            value = node(1)
        except _TooLong:
            value = None
        stall += 1
        if value is not None and min_length < length < max_length:
            source = " ".join(tokens)
            if source not in seen:
                seen.add(source)
                examples.append((source, value))
                stall = 0
                if progress is not None and len(examples) % report_every == 0:
                    progress(len(examples), num_examples)
        if stall >= _MAX_STALL:
            raise RuntimeError(
                f"ListOps generator found no new example in {_MAX_STALL} consecutive trees "
                f"({len(examples)}/{num_examples} collected); the parameters {dict(params)} "
                "admit too few distinct trees or accept almost none"
            )
    return examples


def generate(
    num_examples: int,
    *,
    seed: int,
    max_depth: int = 10,
    max_args: int = 10,
    min_length: int = 500,
    max_length: int = 2000,
    value_p: float = 0.25,
) -> list[tuple[str, int]]:
    """Generate ``num_examples`` distinct ListOps examples with the official algorithm.

    Args:
      num_examples: how many distinct examples to return.
      seed: seed of the ``numpy.random.Generator``; the output is a deterministic function of
        ``seed`` and the parameters.
      max_depth, max_args, min_length, max_length, value_p: see the module docstring; the
        defaults are ``OFFICIAL``.

    Returns:
      A list of ``num_examples`` ``(source, target)`` pairs in generation order, sources in the
      official parenthesised format, targets ints in [0, 9].
    """
    params = _resolve_params(
        dict(
            max_depth=max_depth,
            max_args=max_args,
            min_length=min_length,
            max_length=max_length,
            value_p=value_p,
        )
    )
    return _generate(num_examples, seed, params)


def _check_sizes(sizes: Mapping[str, int]) -> dict[str, int]:
    out = {}
    for name, n in sizes.items():
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"split size for {name!r} must be an int >= 0, got {n!r}")
        out[str(name)] = int(n)
    return out


def generate_splits(
    *, seed: int, sizes: Mapping[str, int] = OFFICIAL_SIZES, **params
) -> dict[str, list[tuple[str, int]]]:
    """Generate ``sum(sizes.values())`` distinct examples and cut them into splits.

    Splits are consecutive runs of the generation order, in the order of ``sizes`` (train, val,
    test for ``OFFICIAL_SIZES``), so no source appears in two splits. ``params`` override
    ``OFFICIAL``.

    Returns:
      ``{split: [(source, target), ...]}`` with ``len(out[split]) == sizes[split]``.
    """
    return _generate_splits(seed, _check_sizes(sizes), _resolve_params(params))


def _generate_splits(seed, sizes, params, progress=None):
    examples = _generate(sum(sizes.values()), seed, params, progress)
    out, start = {}, 0
    for name, n in sizes.items():
        out[name] = examples[start : start + n]
        start += n
    return out


# --------------------------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------------------------


def evaluate(source: str) -> int:
    """Value of a ListOps source string (parenthesised or not), computed with a stack.

    Raises:
      ListOpsDataError: the string is not exactly one well-formed expression.
    """
    op_index = {op: i for i, op in enumerate(_OPS)}
    stack: list[tuple[int, list[int]]] = []
    result: int | None = None
    for tok in source.split():
        if tok == "(" or tok == ")":
            continue
        if tok in op_index:
            if not stack and result is not None:
                raise ListOpsDataError(f"more than one top-level expression in {source[:80]!r}")
            stack.append((op_index[tok], []))
            continue
        if tok == _END:
            if not stack:
                raise ListOpsDataError(f"unmatched ']' in {source[:80]!r}")
            op, args = stack.pop()
            if not args:
                raise ListOpsDataError(f"operator {_OPS[op]} without arguments in {source[:80]!r}")
            value = _apply(op, args)
        elif len(tok) == 1 and "0" <= tok <= "9":
            value = ord(tok) - 48
        else:
            raise ListOpsDataError(f"unknown token {tok!r} in {source[:80]!r}")
        if stack:
            stack[-1][1].append(value)
        elif result is None:
            result = value
        else:
            raise ListOpsDataError(f"more than one top-level expression in {source[:80]!r}")
    if stack:
        raise ListOpsDataError(f"{len(stack)} operator(s) without ']' in {source[:80]!r}")
    if result is None:
        raise ListOpsDataError("empty ListOps source")
    return result


# --------------------------------------------------------------------------------------------
# Tokenization
# --------------------------------------------------------------------------------------------


# The fast path looks at a whole block of sources at once as one byte array. A token is a
# maximal run of bytes other than space and newline; runs of one byte must be a digit, `]` or a
# parenthesis (found with one bytes.translate), longer runs must start with `[` and spell an
# operator exactly. Everything else (other whitespace, unknown tokens, a line break inside a
# source) goes to the exact per-token path, which also names the offending token.
_PAREN_CODE = 0x40
_NEWLINE_CODE = 0xFE
_ONE_BYTE = bytearray(256)  # 0: not a complete one-byte token
for _tok in (*_DIGITS, _END):
    _ONE_BYTE[ord(_tok)] = _TOKEN_ID[_tok]
_ONE_BYTE[ord("(")] = _ONE_BYTE[ord(")")] = _PAREN_CODE
_ONE_BYTE[ord("\n")] = _NEWLINE_CODE
_ONE_BYTE = bytes(_ONE_BYTE)
del _tok
_BYTES_TOKEN_ID = {tok.encode(): tid for tok, tid in _TOKEN_ID.items()} | {b"(": -1, b")": -1}


class _BadSource(Exception):
    def __init__(self, index: int, message: str):
        super().__init__(message)
        self.index = index
        self.message = message


def _encode_block_exact(sources: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    ids: list[int] = []
    counts = np.zeros(len(sources), dtype=np.int64)
    for i, source in enumerate(sources):
        before = len(ids)
        # bytes.split() splits on ASCII whitespace only (str.split() would also split on
        # Unicode spaces).
        for tok in source.encode("utf-8", errors="replace").split():
            tid = _BYTES_TOKEN_ID.get(tok)
            if tid is None:
                raise _BadSource(
                    i,
                    f"unknown token {tok.decode('utf-8', errors='replace')!r} "
                    f"(known: {' '.join(VOCAB[1:])}, and '(' ')' which are dropped)",
                )
            if tid > 0:
                ids.append(tid)
        counts[i] = len(ids) - before
        if counts[i] == 0:
            raise _BadSource(i, "source has no tokens")
    return np.array(ids, dtype=np.uint8), counts


def _encode_block(sources: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Vocabulary ids of a block of sources (tokens separated by ASCII whitespace).

    Returns:
      ids: uint8 [total_tokens], the kept tokens (parentheses dropped) of all sources, in order.
      counts: int64 [len(sources)], kept tokens per source.

    Raises:
      _BadSource: an unknown token or a source without tokens (index within the block).
    """
    n = len(sources)
    try:
        text = "\n".join(sources).encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates
        return _encode_block_exact(sources)
    if n == 0 or not text:
        return _encode_block_exact(sources)
    buf = np.frombuffer(text, dtype=np.uint8)
    one_byte = np.frombuffer(text.translate(_ONE_BYTE), dtype=np.uint8)
    sep = np.ones(len(buf) + 4, dtype=bool)  # padded so that the end of text is a separator
    np.logical_or(buf == 32, buf == 10, out=sep[: len(buf)])
    prev_sep = np.concatenate(([True], sep[: len(buf) - 1]))
    start = ~sep[: len(buf)] & prev_sep
    single = start & sep[1 : len(buf) + 1]
    if (single & (one_byte == 0)).any():
        return _encode_block_exact(sources)
    # Multi-byte tokens: must be exactly [MIN, [MAX, [MED or [SM followed by a separator.
    pos = np.flatnonzero(start & ~single)
    padded = np.concatenate((buf, np.zeros(4, dtype=np.uint8)))
    b0, b1, b2, b3 = (padded[pos + j] for j in range(4))
    m = b1 == ord("M")
    is_min = m & (b2 == ord("I")) & (b3 == ord("N"))
    is_max = m & (b2 == ord("A")) & (b3 == ord("X"))
    is_med = m & (b2 == ord("E")) & (b3 == ord("D"))
    is_sm = (b1 == ord("S")) & (b2 == ord("M"))
    ok = (b0 == ord("[")) & (((is_min | is_max | is_med) & sep[pos + 4]) | (is_sm & sep[pos + 3]))
    if not ok.all():
        return _encode_block_exact(sources)
    codes = one_byte.copy()
    codes[pos] = np.select(
        [is_min, is_max, is_med],
        [_TOKEN_ID["[MIN"], _TOKEN_ID["[MAX"], _TOKEN_ID["[MED"]],
        _TOKEN_ID["[SM"],
    )
    keep = single & (one_byte != _PAREN_CODE)
    keep[pos] = True
    keep |= buf == 10  # newlines stay in as source separators
    flat = codes[keep]
    breaks = np.flatnonzero(flat == _NEWLINE_CODE)
    if len(breaks) != n - 1:  # a source contains a line break
        return _encode_block_exact(sources)
    counts = np.diff(np.concatenate(([-1], breaks, [len(flat)]))) - 1
    if counts.min() == 0:
        raise _BadSource(int(np.argmin(counts)), "source has no tokens")
    return np.delete(flat, breaks), counts


def _place(ids, counts, out: np.ndarray, max_length: int, truncate: bool) -> int | None:
    """Write a block's ids into padded rows ``out`` [len(counts), max_length] int32.

    Returns the index (within the block) of the first over-long source when ``truncate`` is
    False (writing nothing), else None.
    """
    if not truncate and counts.max() > max_length:
        return int(np.flatnonzero(counts > max_length)[0])
    starts = (np.cumsum(counts) - counts).tolist()
    # A slice copy per row beats building a [rows, max_length] boolean mask or index arrays.
    for row, (start, count) in enumerate(
        zip(starts, np.minimum(counts, max_length).tolist(), strict=True)
    ):
        out[row, :count] = ids[start : start + count]
    return None


def tokenize(
    sources: Sequence[str], max_length: int = 2000, *, truncate: bool = False
) -> np.ndarray:
    """Token ids of ListOps sources, parentheses dropped, right-padded with ``PAD_ID``.

    Args:
      sources: n source strings (with or without parentheses).
      max_length: row length of the output.
      truncate: cut longer sources to ``max_length`` tokens instead of raising.

    Returns:
      int32 array [n, max_length]; ``VOCAB[id]`` is the token.

    Raises:
      ListOpsDataError: an unknown token, an empty source, or (unless ``truncate``) a source of
        more than ``max_length`` tokens; the message names the source index.
    """
    if max_length < 1:
        raise ValueError(f"max_length must be >= 1, got {max_length}")
    sources = list(sources)
    out = np.zeros((len(sources), max_length), dtype=np.int32)
    for lo in range(0, len(sources), _TOKENIZE_CHUNK):
        block = sources[lo : lo + _TOKENIZE_CHUNK]
        try:
            ids, counts = _encode_block(block)
        except _BadSource as e:
            raise ListOpsDataError(f"source {lo + e.index}: {e.message}") from None
        over = _place(ids, counts, out[lo : lo + len(block)], max_length, truncate)
        if over is not None:
            raise ListOpsDataError(
                f"source {lo + over} has {int(counts[over])} tokens, more than "
                f"max_length={max_length} (pass truncate=True to cut it)"
            )
    return out


# --------------------------------------------------------------------------------------------
# TSV files
# --------------------------------------------------------------------------------------------


def _atomic_write(path: Path, write: Callable, binary: bool = False) -> None:
    # A reader (or a crash) never sees a half-written file: write beside it, then rename.
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o644)  # mkstemp's 0600 would hide a shared data directory from others
        mode = "wb" if binary else "w"
        kwargs = {} if binary else {"encoding": "utf-8", "newline": "\n"}
        with os.fdopen(fd, mode, **kwargs) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_tsv(path: str | os.PathLike, examples: Iterable[tuple[str, int]]) -> None:
    """Write ``(source, target)`` pairs as an official-format TSV, atomically.

    Raises:
      ListOpsDataError: a target outside 0-9 or a source containing a tab or line break.
    """
    path = Path(path)

    def write(f):
        # Validated while streaming: a failure leaves no file behind (the temp file is removed).
        f.write(_HEADER + "\n")
        for i, (source, target) in enumerate(examples):
            if "\t" in source or "\n" in source or "\r" in source:
                raise ListOpsDataError(f"{path}: example {i}: source contains a tab or line break")
            if isinstance(target, bool) or not isinstance(target, (int, np.integer)):
                raise ListOpsDataError(f"{path}: example {i}: target {target!r} is not an int")
            if not 0 <= target < NUM_CLASSES:
                raise ListOpsDataError(f"{path}: example {i}: target {target} is not in 0-9")
            f.write(f"{source}\t{int(target)}\n")

    _atomic_write(path, write)


_FETCH_HINT = (
    "`attnbench-data fetch listops` puts the LRA release's listops-1000/ where "
    "config.data.dir='' finds it"
)


def _missing_file_message(path: Path) -> str:
    return (
        f"{path}: ListOps file not found (the official LRA release names the splits "
        f"{', '.join(SPLIT_FILES.values())}, in lra_release/listops-1000/; {_FETCH_HINT})"
    )


def _parse_tsv(
    path: Path, max_length: int | None = None
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Read and validate a ListOps TSV.

    Args:
      path: the TSV file.
      max_length: if given, a source with more tokens is an error.

    Returns:
      sources: n strings.
      targets: int32 [n].
      ids: uint8 [sum(counts)], the vocabulary ids of all sources' tokens, concatenated.
      counts: int64 [n], tokens per source.
    """
    if not path.is_file():
        raise ListOpsDataError(_missing_file_message(path))
    sources: list[str] = []
    targets: list[int] = []
    line_numbers: list[int] = []
    id_blocks: list[np.ndarray] = []
    count_blocks: list[np.ndarray] = []
    first_blank = None

    def flush():
        # Tokenize block by block while reading, so that errors name the line and no
        # per-token Python work is needed (tens of seconds on the official train file).
        lo = len(count_blocks) * _TOKENIZE_CHUNK
        try:
            ids, counts = _encode_block(sources[lo:])
        except _BadSource as e:
            raise ListOpsDataError(f"{path}:{line_numbers[lo + e.index]}: {e.message}") from None
        if max_length is not None and counts.max() > max_length:
            over = int(np.flatnonzero(counts > max_length)[0])
            raise SourceTooLongError(
                f"{path}:{line_numbers[lo + over]}: source has {int(counts[over])} tokens, more "
                f"than max_length={max_length}"
            )
        id_blocks.append(ids)
        count_blocks.append(counts)

    try:
        with path.open(encoding="utf-8", newline="") as f:
            header = f.readline()
            if not header:
                raise ListOpsDataError(f"{path}:1: empty file; expected header 'Source\\tTarget'")
            if header.rstrip("\r\n").lstrip("\ufeff") != _HEADER:
                raise ListOpsDataError(
                    f"{path}:1: missing or wrong header: expected 'Source\\tTarget', "
                    f"got {header.rstrip(chr(13) + chr(10))[:60]!r}"
                )
            for lineno, line in enumerate(f, start=2):
                line = line.rstrip("\r\n")
                if not line.strip():
                    # Trailing blank lines are harmless; a blank line between examples is not.
                    first_blank = first_blank or lineno
                    continue
                if first_blank is not None:
                    raise ListOpsDataError(f"{path}:{first_blank}: blank line between examples")
                fields = line.split("\t")
                if len(fields) != 2:
                    raise ListOpsDataError(
                        f"{path}:{lineno}: expected 2 tab-separated fields (Source, Target), "
                        f"found {len(fields)}"
                    )
                try:
                    target = int(fields[1])
                except ValueError:
                    raise ListOpsDataError(
                        f"{path}:{lineno}: target {fields[1][:40]!r} is not an integer"
                    ) from None
                if not 0 <= target < NUM_CLASSES:
                    raise ListOpsDataError(f"{path}:{lineno}: target {target} is not in 0-9")
                sources.append(fields[0])
                targets.append(target)
                line_numbers.append(lineno)
                if len(sources) % _TOKENIZE_CHUNK == 0:
                    flush()
    except UnicodeDecodeError as e:
        raise ListOpsDataError(f"{path}: not valid UTF-8 text ({e})") from None
    if not sources:
        raise ListOpsDataError(f"{path}: no examples (empty split: only a header)")
    if len(sources) % _TOKENIZE_CHUNK:
        flush()
    targets_arr = np.asarray(targets, dtype=np.int32)
    return sources, targets_arr, np.concatenate(id_blocks), np.concatenate(count_blocks)


def read_tsv(path: str | os.PathLike) -> list[tuple[str, int]]:
    """Read an official-format ListOps TSV (e.g. ``basic_train.tsv``).

    Returns:
      ``[(source, target), ...]`` in file order.

    Raises:
      ListOpsDataError: missing file, missing/wrong header, a line without exactly 2
        tab-separated fields, a non-integer or out-of-range target, an unknown token, or no
        examples; messages are ``path:line: what``.
    """
    sources, targets, _, _ = _parse_tsv(Path(path))
    return list(zip(sources, targets.tolist(), strict=True))


# --------------------------------------------------------------------------------------------
# Loading with a cache
# --------------------------------------------------------------------------------------------


def _cache_path(tsv: Path, max_length: int) -> Path:
    return tsv.with_name(f"{tsv.stem}.maxlen{max_length}.npz")


def _load_cache(cache: Path, stat: os.stat_result, max_length: int):
    if not cache.is_file():
        return None
    try:
        with np.load(cache, allow_pickle=False) as z:
            meta = z["meta"].tolist()
            if meta != [_CACHE_VERSION, stat.st_size, stat.st_mtime_ns, max_length]:
                return None  # the TSV changed (or another version wrote it): rebuild
            flat, lengths, labels = z["flat"], z["lengths"], z["labels"]
        n = len(labels)
        if lengths.shape != (n,) or flat.shape != (int(lengths.sum()),) or flat.dtype != np.uint8:
            raise ValueError("inconsistent arrays")
        if n and (int(lengths.max()) > max_length or int(lengths.min()) < 1):
            raise ValueError("row lengths out of range")
        tokens = np.zeros((n, max_length), dtype=np.int32)
        _place(flat, lengths, tokens, max_length, truncate=False)
        return tokens, labels.astype(np.int32)
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as e:
        warnings.warn(f"ignoring unreadable ListOps cache {cache} ({e}); rebuilding", stacklevel=3)
        return None


def official_dir(config_dir: str = "") -> Path:
    """The folder of the official files a config with `source="official"` reads: `config_dir`
    (`config.data.dir`) when set, else where `attnbench-data fetch listops` puts the release's
    listops-1000/ (`attnbench.data.catalog.official_dir`).

    Raises:
      ListOpsDataError: `config_dir` is empty and nothing was fetched; the message names the
        fetch command.
    """
    offline = "config.data.source='generated' for generated expressions"
    try:
        folder = catalog.official_dir(
            "listops", config_dir, offline=offline, holding=", ".join(SPLIT_FILES.values())
        )
        return Path(folder).expanduser()
    except cache.DataError as e:  # the ListOps reader's own error type
        raise ListOpsDataError(str(e)) from None


def load_split(
    data_dir: str | os.PathLike, split: str, *, max_length: int = 2000
) -> tuple[np.ndarray, np.ndarray]:
    """Tokens and labels of one split of a ListOps data directory.

    Reads ``data_dir / SPLIT_FILES[split]`` and caches the result beside it in
    ``<stem>.maxlen<max_length>.npz`` (rebuilt when the TSV's size or mtime changes, or when the
    cache is unreadable; skipped with a warning if the directory is read-only).

    Returns:
      tokens: int32 [n, max_length], padded with ``PAD_ID``.
      labels: int32 [n], in [0, 9].

    Raises:
      ListOpsDataError: missing directory or file, malformed file, or a source longer than
        ``max_length`` tokens.
    """
    if split not in SPLIT_FILES:
        raise ValueError(f"unknown split {split!r}; expected one of {sorted(SPLIT_FILES)}")
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise ListOpsDataError(
            f"{data_dir}: ListOps data directory not found (expected it to hold "
            f"{', '.join(SPLIT_FILES.values())}; {_FETCH_HINT})"
        )
    tsv = data_dir / SPLIT_FILES[split]
    try:
        stat = tsv.stat()
    except FileNotFoundError:
        raise ListOpsDataError(_missing_file_message(tsv)) from None
    cache = _cache_path(tsv, max_length)
    cached = _load_cache(cache, stat, max_length)
    if cached is not None:
        return cached
    _, labels, flat, lengths = _parse_tsv(tsv, max_length)
    tokens = np.zeros((len(labels), max_length), dtype=np.int32)
    _place(flat, lengths, tokens, max_length, truncate=False)
    # The cache keeps the concatenated ids (uint8) and row lengths rather than the padded int32
    # array: exact, and ~8x smaller (the padded official train split is 768 MB).
    payload = dict(
        meta=np.array([_CACHE_VERSION, stat.st_size, stat.st_mtime_ns, max_length], np.int64),
        flat=flat,
        lengths=lengths.astype(np.int64),
        labels=labels,
    )
    try:
        _atomic_write(cache, lambda f: np.savez(f, **payload), binary=True)
    except OSError as e:
        warnings.warn(f"could not write ListOps cache {cache} ({e})", stacklevel=2)
    return tokens, labels


# --------------------------------------------------------------------------------------------
# Generated data directories
# --------------------------------------------------------------------------------------------


def _is_complete(directory: Path) -> bool:
    names = ["generator.json", *SPLIT_FILES.values()]
    return all((directory / name).is_file() for name in names)


def ensure_generated(
    cache_root: str | os.PathLike, *, seed: int, sizes: Mapping[str, int] = OFFICIAL_SIZES, **params
) -> Path:
    """Directory of generated ListOps splits, built on the first call and reused afterwards.

    The directory is ``cache_root / f"listops-{hash}"`` where ``hash`` covers the seed, sizes,
    generator parameters (``OFFICIAL`` overridden by ``params``) and generator version. It holds
    ``basic_{train,val,test}.tsv`` (the official layout, so ``load_split`` reads it) and
    ``generator.json`` with the seed, sizes and parameters. It is built in a temporary sibling
    and renamed into place, so a directory that exists is complete.

    Returns:
      The directory path.
    """
    sizes = _check_sizes(sizes)
    if set(sizes) != set(SPLIT_FILES):
        raise ValueError(
            f"sizes must name exactly the splits {sorted(SPLIT_FILES)}, got {sorted(sizes)}"
        )
    resolved = _resolve_params(params)
    spec = dict(
        generator_version=_GENERATOR_VERSION,
        seed=int(seed),
        sizes={k: sizes[k] for k in SPLIT_FILES if k in sizes},
        params=resolved,
    )
    digest = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]
    root = Path(cache_root)
    final = root / f"listops-{digest}"
    if final.exists():
        if _is_complete(final):
            return final
        raise ListOpsDataError(
            f"{final}: incomplete ListOps directory (missing generator.json or a split file); "
            "delete it to regenerate"
        )
    root.mkdir(parents=True, exist_ok=True)

    total = sum(sizes.values())
    tty = sys.stdout.isatty()
    t0 = time.perf_counter()

    def progress(n, n_total):
        if tty:
            print(f"\rgenerating ListOps {final.name}: {n}/{n_total}", end="", flush=True)

    if not tty:
        print(f"generating ListOps {final.name}: {total} examples ...", flush=True)
    tmp = Path(tempfile.mkdtemp(dir=root, prefix=f".{final.name}.tmp-"))
    try:
        tmp.chmod(0o755)  # mkdtemp's 0700 would survive the rename
        splits = _generate_splits(spec["seed"], spec["sizes"], resolved, progress)
        for name, examples in splits.items():
            write_tsv(tmp / SPLIT_FILES[name], examples)
        (tmp / "generator.json").write_text(json.dumps(dict(spec, hash=digest), indent=2) + "\n")
        try:
            os.rename(tmp, final)
        except OSError:
            if not _is_complete(final):  # not a concurrent builder that finished first
                raise
    finally:
        if tmp.exists():
            for child in tmp.iterdir():
                child.unlink()
            tmp.rmdir()
    end = "\n" if tty else ""
    print(
        f"{end}generated ListOps {final.name}: {total}/{total} in {time.perf_counter() - t0:.1f} s"
    )
    return final
