"""LRA Text: byte-level binary classification of long documents (IMDB reviews, or a stand-in).

The task (Tay et al. 2021, "Long Range Arena", Text)
----------------------------------------------------
A movie review of the IMDB Large Movie Review Dataset (Maas et al. 2011) is read as a sequence
of bytes; the label is its sentiment (pos = 1, neg = 0). Token ids are ``byte + 1`` (the pad id
is 0, so ``VOCAB_SIZE = 257``), truncated to ``max_length`` and right-padded with 0. The
released LRA config (google-research/long-range-arena
``lra_benchmarks/text_classification/configs/base_tc_config.py``) sets ``max_length = 1000``, the
default here; the LRA paper (arXiv 2011.04006) says 4K and later papers (S4 etc.) use 4096.

Official data (``source="official"``)
-------------------------------------
``config.data.dir`` is the ``aclImdb`` folder of the release or its parent; when it is empty,
``<data root>/aclImdb``, where ``attnbench-data fetch imdb`` puts it. Read:
``aclImdb/{train,test}/{pos,neg}/<id>_<rating>.txt`` (12,500 files per folder; ``unsup/`` and the
other files of the release are ignored). Each file's bytes are used as they are (no decoding,
no stripping: a file that is not valid UTF-8 is still a valid byte sequence). Order within a
split: the ``pos`` files by numeric id, then the ``neg`` files by numeric id. A file's rating
must agree with its folder (pos 7-10, neg 1-4, as the dataset's README defines the classes).

Validation split (``val_split``): the LRA input pipeline used the IMDB *test* split as both
validation and test set. ``val_split="test"`` reproduces that; the default ``"train"`` instead
holds out ``val_fraction`` of the train reviews (stratified by label, seeded by ``seed``), so
that nothing is selected on the test set. The description records which was used.
``val_split`` applies to the official data only; the stand-in always has its own val documents.

Offline stand-in (``source="standin"``)
---------------------------------------
No copy of IMDB can be installed offline, so ``standin`` builds a binary byte-level document
classification of the same shape from the reST sources of the Python 3.11 documentation
(Debian ``python3.11-doc``: ``/usr/share/doc/python3.11/html/_sources/**/*.rst.txt``, 497
files, 11 MB). It is a stand-in for IMDB, not IMDB: the labels are a *topic/genre* distinction,
not sentiment.

* Label 1: a document under ``library/`` (the standard-library reference, 317 files, 6.3 MB).
  Label 0: every other document (tutorial, howto, whatsnew, faq, c-api, reference, extending,
  using, distutils, install..., glossary, license; 180 files, 4.7 MB). Both classes have API
  directives (``.. function::`` vs ``.. c:function::``), prose and code, so the label has to be
  read from the content.
* The preamble of each document is removed first: the leading paragraphs of page-opening
  markup (labels ``.. _x:``, comments, page-level directives such as ``.. module::``,
  ``.. sectionauthor::``, ``.. versionadded::`` with their indented bodies, field lists
  ``:Author:``, titles and transitions, ``**Source code:**``), up to the first paragraph of
  text or of a content directive (``.. function::``, ``.. glossary::``, ...). Library pages start
  with ``:mod:`name` --- ...`` and ``.. module::`` and would otherwise be recognisable from their
  first bytes (on the real corpus 133 KB of 11 MB are removed; a chunk may still start with
  "This module provides ...", as the first text of a library page often does).
* Documents are long (median 10 KB) while IMDB reviews are about 1 KB, so each document is cut
  into chunks at paragraph boundaries (blank lines): per chunk a target length is drawn from a
  log-normal with median ``standin_median_bytes`` (sigma ``_TARGET_SIGMA``), clipped to
  ``[standin_min_bytes, standin_max_bytes]``, and paragraphs are added while that brings the
  length closer to the target. A paragraph longer than the maximum is cut at line breaks (a
  longer line at the maximum). A chunk is never shorter than the minimum or longer than the
  maximum: a short remainder is appended to the document's previous chunk when that fits, and
  dropped otherwise. Chunks are the exact bytes of the source between their cut points.
* Splits are made BY DOCUMENT, so that no document has chunks in two splits: per class the
  documents are shuffled (seeded) and filled into val, then test, then train until each holds
  ``val_fraction`` / ``standin_test_fraction`` / the rest of that class's chunks. Then each split
  is balanced by subsampling the larger class (seeded; the description reports the counts and
  the majority-class rate) and shuffled. The test share (0.2) is smaller than IMDB's 50%, so
  that training keeps most of the small corpus.
* On the full package with the defaults (seed 0): 8,694 chunks before balancing; train / val /
  test = 5,138 / 744 / 1,536 balanced chunks from 448 documents; median 1.0 KB; at
  max_length 1000 about half the chunks are truncated. A byte-bigram naive Bayes reaches ~72%
  test accuracy on whole chunks (~71% on their first 8 bytes: directive names and indentation
  carry the genre), so the task is neither trivial nor noise.
* Everything is seeded by ``seed`` (per document ``seed`` and the crc32 of its relative path, so
  one file's chunks do not depend on the others) and deterministic.

Cache
-----
Both sources cache the parsed bytes (concatenated uint8 bytes, row offsets and labels per split)
under ``cache_root/text-{imdb,standin}-<hash>`` with ``cache.build_once``; padding to
``max_length`` happens at load time, so one cache serves every ``max_length``. The official
cache key holds the folder path, the number of ``.txt`` files and the modification time of each
of the four folders (adding, removing or renaming files rebuilds; editing a file in place does
not: delete the cache directory then).
"""

from __future__ import annotations

import os
import pathlib
import re
import zlib
from collections.abc import Sequence

import ml_collections
import numpy as np

from attnbench.data import cache, catalog

__all__ = [
    "NUM_CLASSES",
    "VOCAB_SIZE",
    "STANDIN_DIR",
    "STANDIN_PACKAGE",
    "STANDIN_POSITIVE",
    "data_config",
    "load",
    "encode_bytes",
    "read_imdb",
    "chunk_document",
    "strip_preamble",
]

NUM_CLASSES = 2
VOCAB_SIZE = 257  # byte + 1 for the 256 byte values, 0 = padding

STANDIN_PACKAGE = "python3.11-doc"
STANDIN_DIR = "/usr/share/doc/python3.11/html/_sources"
# Top-level folders of the documentation sources that make label 1; all others are label 0.
STANDIN_POSITIVE = ("library",)

_SPLITS = ("train", "val", "test")
_IMDB_SPLITS = ("train", "test")
_IMDB_LABELS = (("pos", 1), ("neg", 0))  # folder order = order of the examples in a split
# IMDB README: "a negative review has a score <= 4 out of 10, and a positive review has a
# score >= 7 out of 10"; neutral ratings are not in the labelled sets.
_IMDB_RATINGS = {"pos": range(7, 11), "neg": range(1, 5)}
_IMDB_NAME = re.compile(r"(\d+)_(\d+)\.txt")
_IMDB_LAYOUT = "aclImdb/{train,test}/{pos,neg}/<id>_<rating>.txt"

# Bump when the parsed bytes for a given config change, so old cache directories are not reused.
_IMDB_VERSION = 1
_STANDIN_VERSION = 1
# Spread of the chunk target length (log-normal sigma). Reviews of IMDB are (from memory, not
# checked here) roughly log-normal around 1 KB with a quarter above ~1.6 KB; sigma 0.65 gives
# quartiles ~0.65 KB / 1.55 KB around a 1 KB median.
_TARGET_SIGMA = 0.65

# A blank line (possibly holding spaces or tabs) separates reST paragraphs.
_BLANK = re.compile(rb"\r?\n(?:[ \t]*\r?\n)+")
_LINE = re.compile(rb"\r?\n")
# A title underline/overline or transition: one punctuation character repeated (reST allows any
# of these; the Python docs use = - * ^ ~ " #).
_ADORNMENT = re.compile(rb"^([!-/:-@\[-`{-~])\1{2,}[ \t]*$", re.M)
# A field list line (":Author: x", ":synopsis: y"), not a role such as ":mod:`json`".
_FIELD = re.compile(rb"^:[\w .-]+:(?:[ \t]|$)")
# Markup that opens a page rather than carrying its content: a label (".. _x:"), a comment
# (".." not followed by "name::"), or a page-level directive.
_HEADER_DIRECTIVE = re.compile(
    rb"^\.\.(?: +_[^\n]*:[ \t]*(?:\n|$)|[ \t]*(?:\n|$)| +(?![\w:-]+::)"
    rb"| +(?:module|moduleauthor|sectionauthor|highlight|currentmodule|index|program|include"
    rb"|testsetup|versionadded|versionchanged|deprecated|deprecated-removed)::)"
)


# --------------------------------------------------------------------------------------------
# Config
# --------------------------------------------------------------------------------------------


def data_config() -> ml_collections.ConfigDict:
    """`config.data` of LRA Text with the released LRA values as defaults."""
    d = ml_collections.ConfigDict()
    d.source = "official"  # official (aclImdb folder in `dir`) | standin (Python docs, offline)
    d.dir = ""  # official: aclImdb or its parent; standin: the cache root ("" = default)
    d.max_length = 1000  # bytes per review: LRA base_tc_config 1000 (paper table 4K; S4 4096)
    d.seed = 0  # held-out validation (val_split="train") and the stand-in's chunks and splits
    d.val_split = "train"  # official: train = hold out val_fraction | test = val is test (LRA)
    d.val_fraction = 0.1  # share of the train set (official) / of the chunks (standin) for val
    d.standin_dir = STANDIN_DIR  # the reST sources of Debian python3.11-doc
    d.standin_test_fraction = 0.2  # stand-in: share of each class's chunks in the test split
    d.standin_min_bytes = 500  # stand-in: shortest chunk
    d.standin_median_bytes = 1000  # stand-in: median of the chunk target length (IMDB ~1 KB)
    d.standin_max_bytes = 4000  # stand-in: longest chunk
    d.standin_max_files = 0  # stand-in: use at most this many documents per class (0 = all)
    return d


# --------------------------------------------------------------------------------------------
# Encoding
# --------------------------------------------------------------------------------------------


def encode_bytes(texts: Sequence[bytes], max_length: int) -> np.ndarray:
    """Byte-level token ids, ``byte + 1``, truncated to ``max_length`` and right-padded with 0.

    Args:
      texts: n bytes-like objects (bytes, bytearray, memoryview of uint8).
      max_length: row length of the output.

    Returns:
      uint16 [n, max_length].
    """
    if max_length < 1:
        raise ValueError(f"max_length must be >= 1, got {max_length}")
    out = np.zeros((len(texts), max_length), dtype=np.uint16)
    lengths = np.empty(len(texts), dtype=np.int64)
    for i, text in enumerate(texts):
        if isinstance(text, str):
            raise TypeError(f"text {i} is a str; encode it to bytes first (e.g. .encode())")
        row = np.frombuffer(text, dtype=np.uint8)[:max_length]
        out[i, : len(row)] = row
        lengths[i] = len(row)
    # One vectorised pass for the +1 (rather than a second slice operation per row).
    out += np.arange(max_length) < lengths[:, None]
    return out


def _pack(texts: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """Concatenated bytes uint8 [sum of lengths] and offsets int64 [n + 1]."""
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum([len(t) for t in texts], out=offsets[1:])
    return np.frombuffer(b"".join(texts), dtype=np.uint8), offsets


def _unpack(flat: np.ndarray, offsets: np.ndarray, max_length: int) -> np.ndarray:
    """Token ids uint16 [n, max_length] of the packed texts."""
    view = memoryview(flat)
    ends = np.minimum(offsets[1:], offsets[:-1] + max_length).tolist()
    return encode_bytes(
        [view[s:e] for s, e in zip(offsets[:-1].tolist(), ends, strict=True)], max_length
    )


# --------------------------------------------------------------------------------------------
# Official IMDB
# --------------------------------------------------------------------------------------------


def _imdb_root(directory: pathlib.Path) -> pathlib.Path:
    """The aclImdb folder: `directory` itself or `directory/aclImdb`."""
    expected = (
        f"expected the IMDB Large Movie Review Dataset (aclImdb_v1.tar.gz, "
        f"https://ai.stanford.edu/~amaas/data/sentiment/) laid out as {_IMDB_LAYOUT}; "
        "config.data.dir may name aclImdb or its parent, or `attnbench-data fetch imdb` puts it "
        "where config.data.dir='' finds it"
    )
    if not directory.is_dir():
        raise cache.DataError(f"{directory}: IMDB folder not found; {expected}")
    if (directory / "aclImdb").is_dir():
        directory = directory / "aclImdb"
    missing = [
        f"{split}/{folder}"
        for split in _IMDB_SPLITS
        for folder, _ in _IMDB_LABELS
        if not (directory / split / folder).is_dir()
    ]
    if missing:
        raise cache.DataError(f"{directory}: missing folder(s) {', '.join(missing)}; {expected}")
    return directory


def _imdb_files(folder: pathlib.Path) -> list[tuple[int, pathlib.Path]]:
    """(id, path) of the reviews in a pos/neg folder, sorted by id; names checked."""
    names = [n for n in os.listdir(folder) if n.endswith(".txt")]
    if not names:
        raise cache.DataError(f"{folder}: no review files (*.txt) in the folder")
    ratings = _IMDB_RATINGS[folder.name]
    files: dict[int, pathlib.Path] = {}
    for name in names:
        match = _IMDB_NAME.fullmatch(name)
        if match is None:
            raise cache.DataError(
                f"{folder / name}: unexpected file name; IMDB reviews are named <id>_<rating>.txt"
            )
        review_id, rating = int(match[1]), int(match[2])
        if rating not in ratings:
            raise cache.DataError(
                f"{folder / name}: rating {rating} does not belong in '{folder.name}' "
                f"(expected {ratings.start}-{ratings.stop - 1})"
            )
        if review_id in files:
            raise cache.DataError(
                f"{folder / name}: review id {review_id} appears twice (also {files[review_id]})"
            )
        files[review_id] = folder / name
    return sorted(files.items())


def read_imdb(directory: str | os.PathLike, split: str) -> tuple[list[bytes], np.ndarray]:
    """The reviews of one IMDB split, as raw bytes.

    Args:
      directory: the aclImdb folder or its parent.
      split: "train" or "test".

    Returns:
      texts: n bytes objects: the pos reviews by numeric id, then the neg reviews by id.
      labels: int32 [n], 1 = pos, 0 = neg.

    Raises:
      cache.DataError: a missing folder, a folder without reviews, a file name that is not
        <id>_<rating>.txt, a rating that contradicts the folder, a repeated id, an unreadable or
        empty file; the message names the path.
    """
    if split not in _IMDB_SPLITS:
        raise ValueError(f"unknown IMDB split {split!r}; expected one of {_IMDB_SPLITS}")
    root = _imdb_root(pathlib.Path(directory).expanduser())
    texts: list[bytes] = []
    labels: list[int] = []
    for folder, label in _IMDB_LABELS:
        for _, path in _imdb_files(root / split / folder):
            try:
                data = path.read_bytes()
            except OSError as e:
                raise cache.DataError(f"{path}: cannot read review ({e})") from e
            if not data.strip():
                raise cache.DataError(f"{path}: empty review file")
            texts.append(data)
            labels.append(label)
    return texts, np.asarray(labels, dtype=np.int32)


def _imdb_fingerprint(root: pathlib.Path) -> dict[str, list[int]]:
    # Cheap (one listdir and stat per folder), and catches added, removed or renamed files.
    out = {}
    for split in _IMDB_SPLITS:
        for folder, _ in _IMDB_LABELS:
            path = root / split / folder
            count = sum(n.endswith(".txt") for n in os.listdir(path))
            out[f"{split}/{folder}"] = [count, path.stat().st_mtime_ns]
    return out


def _holdout(labels: np.ndarray, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices (train, val), each sorted: `fraction` of each class to val, chosen by `seed`."""
    rng = np.random.default_rng(seed)
    val = []
    for label in range(NUM_CLASSES):
        idx = np.flatnonzero(labels == label)
        if len(idx) == 0:
            continue
        n_val = max(1, round(fraction * len(idx)))
        if n_val >= len(idx):
            raise cache.DataError(
                f"cannot hold out val_fraction={fraction} of the {len(idx)} train examples of "
                f"class {label} and keep some for training"
            )
        val.append(rng.choice(idx, n_val, replace=False))
    val_idx = np.sort(np.concatenate(val))
    return np.setdiff1d(np.arange(len(labels)), val_idx), val_idx


def _load_official(d, cache_root: pathlib.Path):
    # config.data.dir, else where `attnbench-data fetch imdb` puts aclImdb/
    root = _imdb_root(pathlib.Path(catalog.official_dir("imdb", d.dir)).expanduser()).resolve()
    spec = dict(version=_IMDB_VERSION, root=str(root), files=_imdb_fingerprint(root))

    def build(tmp: pathlib.Path) -> None:
        arrays = {}
        for split in _IMDB_SPLITS:
            texts, labels = read_imdb(root, split)
            arrays[f"{split}_bytes"], arrays[f"{split}_offsets"] = _pack(texts)
            arrays[f"{split}_label"] = labels
        cache.save_arrays(tmp / "imdb.npz", arrays)

    directory = cache.build_once(cache_root, "text-imdb", spec, build)
    path = directory / "imdb.npz"
    raw = _read_cache(path, cache.load_arrays(path), _IMDB_SPLITS, d.max_length)
    if d.val_split == "test":
        # The LRA quirk: the test reviews serve as validation set too (same arrays).
        train, val, test = raw["train"], raw["test"], raw["test"]
    else:
        train_idx, val_idx = _holdout(raw["train"]["label"], d.val_fraction, d.seed)
        train = {k: v[train_idx] for k, v in raw["train"].items()}
        val = {k: v[val_idx] for k, v in raw["train"].items()}
        test = raw["test"]
    splits = dict(train=train, val=val, test=test)
    description = dict(
        dataset="IMDB Large Movie Review Dataset (Maas et al. 2011), byte-level (LRA Text)",
        source="official",
        dir=str(root),
        cache=f"lra/{directory.name}",
        labels={"1": "positive review (rating 7-10)", "0": "negative review (rating 1-4)"},
        val_split=(
            "test: the IMDB test split is also the validation set (as in LRA)"
            if d.val_split == "test"
            else f"train: {d.val_fraction} of the train reviews held out (seed {d.seed})"
        ),
        **_summary(splits, d.max_length),
    )
    return _public(splits), description


# --------------------------------------------------------------------------------------------
# Stand-in: chunks of the Python documentation
# --------------------------------------------------------------------------------------------


def _paragraphs(text: bytes) -> list[tuple[int, int]]:
    """(start, end) byte spans of the non-blank paragraphs of `text`."""
    spans = []
    start = 0
    for m in _BLANK.finditer(text):
        if m.start() > start:
            spans.append((start, m.start()))
        start = m.end()
    if len(text) > start:
        spans.append((start, len(text)))
    # A leading blank line or trailing whitespace makes paragraphs of spaces only: drop them.
    return [(s, e) for s, e in spans if text[s:e].strip()]


def _preamble_kind(paragraph: bytes) -> str:
    """ "header" for a paragraph of the markup that opens a page (a label, comment or page-level
    directive, a field list, a title or transition, the source-code link), "body" for an
    indented paragraph (which continues the directive before it), else "content"."""
    if paragraph[:1] in (b" ", b"\t"):
        return "body"
    if (
        _HEADER_DIRECTIVE.match(paragraph)
        or _FIELD.match(paragraph)
        or paragraph.startswith(b"**Source code:**")
        or _ADORNMENT.search(paragraph)
    ):
        return "header"
    return "content"


def strip_preamble(text: bytes) -> int:
    """Offset where the content of a reST page starts: the leading header paragraphs (labels,
    comments, page-level directives such as ``.. module::`` with their indented bodies, field
    lists, titles, transitions, the source-code link) are skipped. Content directives such as
    ``.. function::`` or ``.. glossary::`` end the preamble. len(text) if nothing is left."""
    for s, e in _paragraphs(text):
        if _preamble_kind(text[s:e]) == "content":
            return s
    return len(text)


def _units(text: bytes, start: int, max_bytes: int) -> list[tuple[int, int]]:
    """Spans of paragraphs from `start`; one longer than `max_bytes` is cut into its lines, and
    a line longer than that into `max_bytes` pieces."""
    units = []
    for s, e in _paragraphs(text[start:]):
        s, e = s + start, e + start
        if e - s <= max_bytes:
            units.append((s, e))
            continue
        line_start = s
        for m in [*_LINE.finditer(text, s, e), None]:
            line_end = e if m is None else m.start()
            for piece in range(line_start, line_end, max_bytes):
                units.append((piece, min(piece + max_bytes, line_end)))
            if m is not None:
                line_start = m.end()
    return units


def chunk_document(
    text: bytes,
    rng: np.random.Generator,
    *,
    min_bytes: int,
    median_bytes: int,
    max_bytes: int,
) -> list[tuple[int, int]]:
    """Cuts a reST document (without its preamble) into chunks at paragraph boundaries.

    Per chunk a target length is drawn, `median_bytes * exp(0.65 * N(0, 1))` clipped to
    [min_bytes, max_bytes]; paragraphs are added while that brings the length closer to the
    target and keeps it <= max_bytes. A short last piece joins the previous chunk if it fits.

    Returns:
      (start, end) byte spans into `text`, in order; every length is in [min_bytes, max_bytes].
    """
    if not 0 < min_bytes <= median_bytes <= max_bytes:
        raise ValueError(
            "need 0 < standin_min_bytes <= standin_median_bytes <= standin_max_bytes, got "
            f"{min_bytes}, {median_bytes}, {max_bytes}"
        )

    def draw() -> float:
        return float(
            np.clip(median_bytes * np.exp(_TARGET_SIGMA * rng.normal()), min_bytes, max_bytes)
        )

    chunks: list[tuple[int, int]] = []
    start = end = None
    target = draw()
    for s, e in _units(text, strip_preamble(text), max_bytes):
        if start is None:
            start, end = s, e
            continue
        now, grown = end - start, e - start
        # Stop before this paragraph if it does not fit, or if stopping is closer to the target.
        if grown > max_bytes or (now >= min_bytes and abs(now - target) <= abs(grown - target)):
            if now >= min_bytes:
                chunks.append((start, end))
            # else: a piece too short to stand alone that cannot grow within max_bytes: dropped.
            start, end = s, e
            target = draw()
        else:
            end = e
    if start is not None:
        if end - start >= min_bytes:
            chunks.append((start, end))
        elif chunks and end - chunks[-1][0] <= max_bytes:
            chunks[-1] = (chunks[-1][0], end)
    return chunks


def _standin_files(d) -> tuple[pathlib.Path, list[tuple[str, int]]]:
    """The stand-in's root folder and its (relative path, label) pairs, sorted by path."""
    root = pathlib.Path(d.standin_dir).expanduser()
    if not root.is_dir():
        raise cache.DataError(
            f"{root}: stand-in source folder not found. The LRA Text stand-in reads the reST "
            f"sources of the Python 3.11 documentation: install them with "
            f"`apt-get install {STANDIN_PACKAGE}`, or point config.data.standin_dir at a folder "
            "holding <section>/**/*.rst.txt files"
        )
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.rst.txt") if p.is_file())
    if not files:
        raise cache.DataError(
            f"{root}: no *.rst.txt files (expected the `_sources` folder of the Python docs, "
            f"package {STANDIN_PACKAGE}: <section>/**/*.rst.txt)"
        )
    labelled = [(f, int(f.split("/", 1)[0] in STANDIN_POSITIVE)) for f in files]
    counts = [sum(label == c for _, label in labelled) for c in range(NUM_CLASSES)]
    if min(counts) == 0:
        missing = "library/" if counts[1] == 0 else "folders other than library/"
        raise cache.DataError(
            f"{root}: found {len(files)} *.rst.txt files but none in {missing}; the stand-in "
            f"needs documents of both classes (label 1: {', '.join(STANDIN_POSITIVE)}/, "
            "label 0: the other sections)"
        )
    return root, labelled


def _assign_documents(
    doc_chunks: np.ndarray, fractions: dict[str, float], rng: np.random.Generator
) -> list[str]:
    """Split of each document (same order as `doc_chunks`, its chunk counts): documents in a
    random order fill val, then test, then train, to the given shares of all chunks."""
    total = int(doc_chunks.sum())
    quota = {"val": fractions["val"] * total, "test": fractions["test"] * total}
    filled = dict(val=0, test=0)
    out = [""] * len(doc_chunks)
    for i in rng.permutation(len(doc_chunks)).tolist():
        if doc_chunks[i] == 0:
            out[i] = "train"
            continue
        # A split still below its quota takes the whole document (so every split that can get
        # a document gets one; a large last document may overshoot the quota).
        split = next((s for s in ("val", "test") if filled[s] < quota[s]), "train")
        if split != "train":
            filled[split] += int(doc_chunks[i])
        out[i] = split
    return out


def _build_standin(d, root: pathlib.Path, labelled: list[tuple[str, int]], tmp: pathlib.Path):
    seed = int(d.seed)
    rng = np.random.default_rng(seed)
    if d.standin_max_files:
        # A seeded sample of each class (small builds for tests and smoke runs).
        picked = []
        for c in range(NUM_CLASSES):
            of_class = [x for x in labelled if x[1] == c]
            keep = rng.choice(len(of_class), min(len(of_class), d.standin_max_files), False)
            picked += [of_class[i] for i in sorted(keep.tolist())]
        labelled = sorted(picked)
    texts: list[bytes] = []
    chunk_doc: list[int] = []  # document index of each chunk
    for doc, (rel, _) in enumerate(labelled):
        path = root / rel
        try:
            data = path.read_bytes()
        except OSError as e:
            raise cache.DataError(f"{path}: cannot read stand-in document ({e})") from e
        doc_rng = np.random.default_rng([seed, zlib.crc32(rel.encode())])
        spans = chunk_document(
            data,
            doc_rng,
            min_bytes=d.standin_min_bytes,
            median_bytes=d.standin_median_bytes,
            max_bytes=d.standin_max_bytes,
        )
        texts += [data[s:e] for s, e in spans]
        chunk_doc += [doc] * len(spans)
    chunk_doc_arr = np.asarray(chunk_doc, dtype=np.int64)
    doc_label = np.asarray([label for _, label in labelled], dtype=np.int32)
    chunk_label = doc_label[chunk_doc_arr]
    doc_chunks = np.bincount(chunk_doc_arr, minlength=len(labelled))
    fractions = dict(val=d.val_fraction, test=d.standin_test_fraction)
    doc_split = np.empty(len(labelled), dtype=object)
    for c in range(NUM_CLASSES):
        docs = np.flatnonzero(doc_label == c)
        doc_split[docs] = _assign_documents(doc_chunks[docs], fractions, rng)
    chunk_split = doc_split[chunk_doc_arr]

    arrays = {}
    for split in _SPLITS:
        idx = np.flatnonzero(chunk_split == split)
        per_class = [idx[chunk_label[idx] == c] for c in range(NUM_CLASSES)]
        if min(len(p) for p in per_class) == 0:
            raise cache.DataError(
                f"{root}: the stand-in's {split} split has no chunk of class "
                f"{[len(p) for p in per_class].index(0)} ({len(labelled)} documents, "
                f"{len(texts)} chunks): too few documents; use more files or a larger "
                "standin_max_files"
            )
        # Balance: subsample the larger class to the size of the smaller one.
        n = min(len(p) for p in per_class)
        kept = np.concatenate([rng.choice(p, n, replace=False) for p in per_class])
        kept = kept[rng.permutation(len(kept))]
        arrays[f"{split}_bytes"], arrays[f"{split}_offsets"] = _pack([texts[i] for i in kept])
        arrays[f"{split}_label"] = chunk_label[kept]
        arrays[f"{split}_doc"] = chunk_doc_arr[kept]
        arrays[f"{split}_unbalanced"] = np.asarray([len(p) for p in per_class], np.int64)
    # The documents (relative paths) in index order, so a chunk can be traced to its file.
    arrays["documents"] = np.asarray([rel for rel, _ in labelled])
    cache.save_arrays(tmp / "standin.npz", arrays)


def _load_standin(d, cache_root: pathlib.Path):
    root, labelled = _standin_files(d)
    root = root.resolve()
    # The file list and sizes identify the corpus (a package upgrade changes them).
    sizes = [(rel, (root / rel).stat().st_size) for rel, _ in labelled]
    spec = dict(
        version=_STANDIN_VERSION,
        standin_dir=str(root),
        corpus=cache.spec_hash({"files": sizes}),
        positive=list(STANDIN_POSITIVE),
        seed=int(d.seed),
        val_fraction=float(d.val_fraction),
        test_fraction=float(d.standin_test_fraction),
        chunk_bytes=[int(d.standin_min_bytes), int(d.standin_median_bytes)],
        max_bytes=int(d.standin_max_bytes),
        max_files=int(d.standin_max_files),
    )
    directory = cache.build_once(
        cache_root, "text-standin", spec, lambda tmp: _build_standin(d, root, labelled, tmp)
    )
    path = directory / "standin.npz"
    z = cache.load_arrays(path, ("documents", *(f"{s}_unbalanced" for s in _SPLITS)))
    raw = _read_cache(path, z, _SPLITS, d.max_length, extra=("doc",))
    documents = z["documents"]
    docs = {s: len(np.unique(raw[s]["doc"])) for s in _SPLITS}
    description = dict(
        dataset=(
            "Python 3.11 documentation reST sources cut into chunks of "
            f"{d.standin_min_bytes}-{d.standin_max_bytes} bytes (stand-in for IMDB)"
        ),
        standin_for="IMDB reviews (LRA Text)",
        source="standin",
        package=STANDIN_PACKAGE,
        standin_dir=str(root),
        cache=f"lra/{directory.name}",
        labels={
            "1": f"chunk of a document in {', '.join(p + '/' for p in STANDIN_POSITIVE)} "
            "(standard-library reference)",
            "0": "chunk of any other document (tutorial, howto, whatsnew, faq, c-api, "
            "reference, ...)",
        },
        split="by document: no document has chunks in two splits; classes balanced by "
        "subsampling the larger one",
        documents=dict(total=len(documents), **docs),
        chunks_before_balancing={
            s: {str(c): int(n) for c, n in enumerate(z[f"{s}_unbalanced"])} for s in _SPLITS
        },
        **_summary(raw, d.max_length),
    )
    return _public(raw), description


# --------------------------------------------------------------------------------------------
# Shared
# --------------------------------------------------------------------------------------------


def _read_cache(path: pathlib.Path, z: dict, names, max_length: int, extra=()):
    """Splits of the arrays `z` of the cache file `path`: {split: {"tokens", "label", "length"
    (bytes before truncation), *extra}}."""
    keys = tuple(f"{s}_{k}" for s in names for k in ("bytes", "offsets", "label", *extra))
    missing = [k for k in keys if k not in z]
    if missing:
        raise cache.DataError(f"{path}: missing arrays {missing}; delete it to rebuild")
    out = {}
    for s in names:
        flat, offsets, label = z[f"{s}_bytes"], z[f"{s}_offsets"], z[f"{s}_label"]
        if (
            flat.dtype != np.uint8
            or offsets.shape != (len(label) + 1,)
            or offsets[0] != 0
            or offsets[-1] != len(flat)
            or np.any(np.diff(offsets) < 0)
        ):
            raise cache.DataError(f"{path}: inconsistent arrays of split {s}; delete it to rebuild")
        out[s] = {
            "tokens": _unpack(flat, offsets, max_length),
            "label": label.astype(np.int32),
            "length": np.diff(offsets),
        }
        out[s].update({k: z[f"{s}_{k}"] for k in extra})
    return out


def _summary(splits, max_length: int) -> dict:
    """Sizes, majority-class rate, median byte length and truncated share of each split (the
    splits carry "length" arrays, bytes before truncation)."""
    out: dict = {"max_length": int(max_length)}
    for key in ("sizes", "majority_class_rate", "bytes_median", "truncated_fraction"):
        out[key] = {}
    for s, arrays in splits.items():
        labels, lengths = arrays["label"], arrays["length"]
        out["sizes"][s] = int(len(labels))
        counts = np.bincount(labels, minlength=NUM_CLASSES)
        out["majority_class_rate"][s] = round(float(counts.max() / max(len(labels), 1)), 4)
        out["bytes_median"][s] = float(np.median(lengths)) if len(lengths) else 0.0
        out["truncated_fraction"][s] = round(float(np.mean(lengths > max_length)), 4)
    return out


def _public(splits) -> dict[str, dict[str, np.ndarray]]:
    return {s: {"tokens": a["tokens"], "label": a["label"]} for s, a in splits.items()}


def load(d, cache_root: pathlib.Path):
    """LRA Text splits.

    Args:
      d: `config.data` (see `data_config`).
      cache_root: where parsed data is cached (`<data root>/lra`).

    Returns:
      (splits, description): splits[name] = {"tokens": uint16 [n, max_length] (byte + 1,
      0 = padding), "label": int32 [n]} for name in train/val/test; description is JSON-able.

    Raises:
      cache.DataError: missing or malformed data (the message names the path).
      ValueError: an unknown source or val_split, or a fraction outside (0, 1).
    """
    if d.val_split not in ("train", "test"):
        raise ValueError(f"config.data.val_split={d.val_split!r}; expected 'train' or 'test'")
    if not 0 < d.val_fraction < 1:
        raise ValueError(f"config.data.val_fraction must be in (0, 1), got {d.val_fraction}")
    cache_root = pathlib.Path(cache_root)
    if d.source == "official":
        return _load_official(d, cache_root)
    if d.source == "standin":
        if not 0 < d.standin_test_fraction < 1 - d.val_fraction:
            raise ValueError(
                "config.data.standin_test_fraction must be in (0, 1 - val_fraction), got "
                f"{d.standin_test_fraction}"
            )
        return _load_standin(d, cache_root)
    raise ValueError(f"config.data.source={d.source!r}; LRA Text knows 'official' and 'standin'")
