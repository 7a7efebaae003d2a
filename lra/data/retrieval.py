"""LRA Retrieval (AAN): does document 1 cite document 2? Byte-level, two documents per example.

Arrays (every split)
--------------------
``tokens1`` and ``tokens2``: uint16 [n, max_length], token id = byte + 1 (``VOCAB_SIZE`` 257),
right-padded with 0. ``label``: int32 [n], 1 = linked (document 1 cites document 2), 0 = not.

Official data (``source="official"``)
-------------------------------------
The LRA release holds ``new_aan_pairs.{train,eval,test}.tsv`` (train / val / test; downstream
loaders find them in ``lra_release/tsv_data/``, LRA issue #1); ``attnbench-data fetch aan`` puts
them in ``<data root>/lra_release/tsv_data/``, read when ``config.data.dir`` is empty. Facts from
LRA's ``lra_benchmarks/matching/input_pipeline.py``:

* Headerless TSV, 5 tab-separated fields ``label, id1, id2, text1, text2``, read by TF's CSV
  reader with ``use_quote_delim=False``: quotes are ordinary characters, a field cannot contain
  a tab or a line break. ``label`` is parsed as a float (``"1"`` or ``"1.0"`` both read as 1) and
  cast to int; here it must be exactly 0 or 1, anything else is an error.
* Each text is cut to its first 10,000 *bytes* (``s.numpy()[:10000]``: ``s.numpy()`` is a
  ``bytes`` object, so the "10,000 characters" of the code are bytes), encoded by tfds'
  ``ByteTextEncoder`` (id = byte + 1, pad 0), then cut to ``max_length`` (4000 per document in
  ``base_match_config.py``). With the defaults the 10,000-byte cap never binds; it is kept
  (``text_cap``) so that ``max_length > 10000`` behaves as LRA did.
* LRA drops the last partial batch of val and test (``drop_remainder=True``); this module
  returns every example and leaves batching to the trainer.

Lines end in ``\\n`` or ``\\r\\n``; texts are taken as raw bytes (never decoded), as TF did.
Size: about 147k / 18k / 17k pairs (the figures usually quoted for LRA's AAN pairs, not checked
here against the LRA paper, arXiv 2011.04006, or the release files), so the train split alone is
147k x 2 x 4000 x 2 bytes = 2.35 GB of uint16 in memory and on disk (val and test about 0.3 GB
each). Measured on a synthetic 240 MB file (20k pairs of 2-10 KB texts): about 9,000 pairs/s to
parse and encode, about 20,000 pairs/s from the cache (disk-bound), so the full set takes
roughly 20 s to build and 10 s to reload.
The reader counts the lines first and fills preallocated arrays in blocks of ``_CHUNK`` lines,
so the peak is the final arrays plus one block. The arrays are cached uncompressed as
``<split>.npz`` under ``cache_root/retrieval-official-<hash>`` (the hash covers the files'
sizes and mtimes, ``max_length`` and ``text_cap``); a second load reads the cache.

Offline stand-in (``source="standin"``): Python documentation cross-references
-----------------------------------------------------------------------------
A stand-in for AAN, not AAN: documents are the reST sources of the Python 3.11 documentation
(Debian ``python3.11-doc``: ``/usr/share/doc/python3.11/html/_sources/**/*.rst.txt``, 497
pages, 11 MB) and a "citation" is a Sphinx cross-reference from one page to another:

* ``:doc:`target``` (relative to the citing page, or to the root with a leading ``/``);
* ``:mod:`name``` -> the page with ``.. module:: name``, else ``library/<name>``;
* ``:ref:`label``` -> the page that defines ``.. _label:`` (labels are case-insensitive).

``title <target>`` forms, ``~``/``!`` prefixes and roles split over lines are handled. A
reference to its own page or to nothing known is dropped. On the 3.11.2 package this gives
3,840 cross-page references (2,285 ordered page pairs).

Examples. A positive is one reference A -> B: document 1 is a window of
``width = min(max_length, text_cap)`` bytes of A that contains the place of the reference (its
offset inside the window is uniform), document 2 is the first ``width`` bytes of B. At most
``max_windows_per_pair`` references per ordered pair (A, B) are used, so a few heavily linked
pairs (41 references from ``library/typing`` to ``library/stdtypes``) do not dominate. Each
positive anchor (page A, reference place) is used once more for a negative, with a fresh window
offset, and the split's positive pages B are dealt out to these negatives as a random
permutation, so that document 1 and document 2 each have the same distribution in negatives as
in positives and only the pairing tells the label (pages linked to many others, such as
``library/os``, would otherwise mark positives). A dealt page linked to A is swapped with
another negative's page where both then fit; only when no swap is found is B' drawn from all
allowed pages (3 of 3,743 negatives on the 3.11.2 package, reported as ``negatives_off_pool``).
B' must not be linked to A in either direction by any role seen here: the three roles above,
Python object roles (``:func:``, ``:class:``, ``:meth:``, ``:exc:``, ``:attr:``, ``:data:``,
``:const:``, ``:obj:``, resolved generously to every page that defines the name or, failing
that, documents its longest module prefix) and ``:term:`` (-> pages with a ``.. glossary::``).
Object roles only exclude negatives and never make positives, because their resolution is
approximate.

Leakage. The markup of the three roles would name the target page (``:mod:`os```), so every
``:ref:``, ``:mod:`` and ``:doc:`` role (title and target) is deleted from both texts, and so
are ``.. _label:`` lines (the targets of ``:ref:``). What remains is content: ``.. module::``
lines, object roles such as ``:func:`os.getcwd```, prose. Texts are otherwise the raw bytes
(newlines kept; AAN's texts are single lines).

Splits. The unordered page pairs {A, B} that are linked are shuffled (``seed``) and split
``test_fraction`` / ``val_fraction`` / rest; all windows of a pair go to its split, and a
negative pair is never used in two splits. Each split is exactly half positive. On the 3.11.2
package with the defaults: train 6,000, val 734, test 752 examples (see the description's
``sizes``); pages are shared across splits (there are only 497), page pairs are not. Building
takes about 1.5 s (5,000 examples/s, max_length 4000); the cached load about 0.3 s.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import json
import os
import pathlib
import posixpath
import re
from collections.abc import Iterable, Iterator, Sequence

import ml_collections
import numpy as np

from attnbench.data import cache, catalog
from lra.data import text as lra_text

__all__ = [
    "NUM_CLASSES",
    "VOCAB_SIZE",
    "SPLIT_FILES",
    "LRA_TEXT_CAP",
    "DEFAULT_STANDIN_DIR",
    "data_config",
    "load",
    "write_tsv",
    "read_tsv",
    "tokenize_tsv",
    "Corpus",
    "read_corpus",
    "standin_examples",
]

NUM_CLASSES = 2
VOCAB_SIZE = 257  # byte + 1, and 0 = padding (tfds ByteTextEncoder without extra tokens)
SPLIT_FILES = {
    "train": "new_aan_pairs.train.tsv",
    "val": "new_aan_pairs.eval.tsv",
    "test": "new_aan_pairs.test.tsv",
}
LRA_TEXT_CAP = 10_000  # bytes of each text kept before encoding (LRA matching input pipeline)
DEFAULT_STANDIN_DIR = "/usr/share/doc/python3.11/html/_sources"
STANDIN_PACKAGE = "python3.11-doc"

_KEYS = ("tokens1", "tokens2", "label")
_INFO = "info.json"
# Where the TSVs may sit below config.data.dir: the release tarball nests them (LRA issue #63).
_SUBDIRS = ("", "tsv_data", "lra_release/tsv_data", "lra_release/lra_release/tsv_data")
# Lines per encoding block: 2 x 2048 x 4000 uint16 = 33 MB of temporaries.
_CHUNK = 2048
_VERSION = 1  # bump when the arrays built for a given spec change


def data_config() -> ml_collections.ConfigDict:
    """`config.data` for LRA Retrieval; defaults are the official LRA values."""
    d = ml_collections.ConfigDict()
    d.source = "official"  # "official" (AAN TSVs in `dir`) | "standin" (Python-doc links)
    d.dir = ""  # official: folder of new_aan_pairs.*.tsv; standin: cache root ("" = default)
    d.max_length = 4000  # bytes (tokens) per document (LRA base_match_config)
    d.text_cap = LRA_TEXT_CAP  # bytes of each text kept before max_length (LRA: 10,000)
    d.seed = 0  # stand-in: windows, negatives and the pair split
    d.standin_dir = DEFAULT_STANDIN_DIR  # stand-in: folder of Sphinx reST sources (*.rst.txt)
    d.val_fraction = 0.1  # stand-in: share of linked page pairs in val (AAN: 18k of 182k)
    d.test_fraction = 0.1  # stand-in: share of linked page pairs in test (AAN: 17k of 182k)
    d.max_windows_per_pair = 8  # stand-in: positives kept per ordered page pair (A, B)
    return d


def load(d, cache_root: pathlib.Path) -> tuple[dict[str, dict[str, np.ndarray]], dict]:
    """Splits {"train", "val", "test"} -> {"tokens1": uint16 [n, max_length],
    "tokens2": uint16 [n, max_length], "label": int32 [n]}, and a JSON-able description.

    Built arrays are cached in `cache_root/retrieval-{official,standin}-<hash>/<split>.npz`.
    """
    max_length, text_cap = int(d.max_length), int(d.text_cap)
    if max_length < 1 or text_cap < 1:
        raise ValueError(f"max_length and text_cap must be >= 1, got {max_length}, {text_cap}")
    if d.source == "official":
        return _load_official(d, pathlib.Path(cache_root), max_length, text_cap)
    if d.source == "standin":
        return _load_standin(d, pathlib.Path(cache_root), max_length, text_cap)
    raise ValueError(f"config.data.source={d.source!r}; retrieval knows 'official' and 'standin'")


def _load_cached(
    cache_root: pathlib.Path, name: str, spec: dict, build
) -> tuple[dict[str, dict[str, np.ndarray]], dict, pathlib.Path]:
    """(splits, info, directory): `build()` -> (splits, JSON-able info), run once per spec;
    the splits go to `<split>.npz`, the info to `info.json`."""
    built: dict = {}

    def build_and_keep(tmp: pathlib.Path) -> None:
        built["splits"], built["info"] = build()
        for split, arrays in built["splits"].items():
            cache.save_arrays(tmp / f"{split}.npz", arrays)
        (tmp / _INFO).write_text(json.dumps(built["info"], indent=2, sort_keys=True) + "\n")

    directory = cache.build_once(cache_root, name, spec, build_and_keep)
    if built:  # just built: skip re-reading gigabytes from disk
        return built["splits"], built["info"], directory
    splits = {s: cache.load_arrays(directory / f"{s}.npz", _KEYS) for s in SPLIT_FILES}
    try:
        info = json.loads((directory / _INFO).read_text())
    except (OSError, ValueError) as e:
        raise cache.DataError(f"{directory / _INFO}: unreadable ({e}); delete {directory}") from e
    return splits, info, directory


def _summary(splits: dict[str, dict[str, np.ndarray]]) -> dict:
    return {
        "sizes": {s: int(len(a["label"])) for s, a in splits.items()},
        "positive_fraction": {
            s: round(float(a["label"].mean()), 4) if len(a["label"]) else None
            for s, a in splits.items()
        },
    }


# --------------------------------------------------------------------------------------------
# Byte encoding
# --------------------------------------------------------------------------------------------


def _encode_into(out: np.ndarray, texts: Sequence[bytes]) -> None:
    """Writes byte + 1 of texts[i][: out.shape[1]] into out[i] (uint16 [n, L], zeroed)."""
    width = out.shape[1]
    texts = [t[:width] for t in texts]
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    flat = np.frombuffer(b"".join(texts), dtype=np.uint8)
    # The row-major order of the mask's True entries is the order of the concatenated bytes.
    mask = np.arange(width) < lengths[:, None]
    out[mask] = flat.astype(np.uint16) + 1


# --------------------------------------------------------------------------------------------
# Official TSV files
# --------------------------------------------------------------------------------------------


def write_tsv(path: str | os.PathLike, rows: Iterable[tuple[int, str, str, str, str]]) -> None:
    """Writes rows ``(label, id1, id2, text1, text2)`` in the official format (UTF-8, no header,
    ``\\n`` line ends). Raises DataError for a label outside {0, 1} or a field with a tab or line
    break (the format cannot hold them)."""
    path = pathlib.Path(path)
    lines = []
    for i, row in enumerate(rows):
        if len(row) != 5:
            raise cache.DataError(f"{path}: row {i}: expected 5 fields, got {len(row)}")
        label, *fields = row
        if isinstance(label, bool) or label not in (0, 1):
            raise cache.DataError(f"{path}: row {i}: label {label!r} is not 0 or 1")
        for name, value in zip(("id1", "id2", "text1", "text2"), fields, strict=True):
            if not isinstance(value, str) or any(c in value for c in "\t\n\r"):
                raise cache.DataError(
                    f"{path}: row {i}: {name} must be a str without tabs or line breaks"
                )
        lines.append("\t".join([str(int(label)), *fields]) + "\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines), encoding="utf-8", newline="")


_LABELS = {b"0": 0, b"1": 1, b"0.0": 0, b"1.0": 1}


def _parse_label(field: bytes, path: pathlib.Path, lineno: int) -> int:
    label = _LABELS.get(field)
    if label is not None:
        return label
    try:
        value = float(field)  # TF parsed the column as float32 ("1", "1.0", "1e0", ...)
    except ValueError:
        value = None
    if value not in (0.0, 1.0):
        raise cache.DataError(f"{path}:{lineno}: label {field[:40]!r} is not 0 or 1")
    return int(value)


def _records(path: pathlib.Path) -> Iterator[tuple[int, int, bytes, bytes, bytes, bytes]]:
    """Yields (line number, label, id1, id2, text1, text2) of a retrieval TSV, as bytes."""
    if not path.is_file():
        raise cache.DataError(f"{path}: file not found")
    blank = None
    with path.open("rb") as f:
        for lineno, line in enumerate(f, start=1):
            line = line.rstrip(b"\n").removesuffix(b"\r")
            if not line.strip():
                # Trailing blank lines are harmless; a blank line between records is not.
                blank = blank or lineno
                continue
            if blank is not None:
                raise cache.DataError(f"{path}:{blank}: blank line between records")
            fields = line.split(b"\t")
            if len(fields) != 5:
                raise cache.DataError(
                    f"{path}:{lineno}: expected 5 tab-separated fields (label, id1, id2, text1, "
                    f"text2), found {len(fields)}"
                )
            label = _parse_label(fields[0], path, lineno)
            yield lineno, label, fields[1], fields[2], fields[3], fields[4]


def read_tsv(path: str | os.PathLike) -> list[tuple[int, str, str, str, str]]:
    """Rows ``(label, id1, id2, text1, text2)`` of an official-format file, in file order
    (texts decoded as UTF-8, invalid bytes replaced). Errors name ``path:line``."""
    path = pathlib.Path(path)
    out = []
    for _, label, *fields in _records(path):
        out.append((label, *(x.decode("utf-8", errors="replace") for x in fields)))
    return out


def _count_lines(path: pathlib.Path) -> int:
    n, last = 0, b"\n"
    with path.open("rb") as f:
        while block := f.read(1 << 24):
            n += block.count(b"\n")
            last = block[-1:]
    return n + (last != b"\n")


def tokenize_tsv(
    path: str | os.PathLike, max_length: int = 4000, text_cap: int = LRA_TEXT_CAP
) -> dict[str, np.ndarray]:
    """Reads an official-format file into {"tokens1", "tokens2": uint16 [n, max_length],
    "label": int32 [n]}: each text cut to `text_cap` bytes, then to `max_length`, as LRA did.

    Raises DataError (``path:line``) for a malformed line, a bad label or an empty file.
    """
    path = pathlib.Path(path)
    if not path.is_file():
        raise cache.DataError(f"{path}: file not found")
    width = min(max_length, text_cap)
    capacity = _count_lines(path)  # >= the number of records: preallocate, fill in blocks
    tokens1 = np.zeros((capacity, max_length), dtype=np.uint16)
    tokens2 = np.zeros((capacity, max_length), dtype=np.uint16)
    labels = np.zeros(capacity, dtype=np.int32)
    texts1: list[bytes] = []
    texts2: list[bytes] = []
    n = 0

    def flush() -> None:
        lo = n - len(texts1)
        _encode_into(tokens1[lo:n, :width], texts1)
        _encode_into(tokens2[lo:n, :width], texts2)
        texts1.clear()
        texts2.clear()

    for _, label, _, _, text1, text2 in _records(path):
        labels[n] = label
        texts1.append(text1[:width])
        texts2.append(text2[:width])
        n += 1
        if len(texts1) == _CHUNK:
            flush()
    if texts1:
        flush()
    if n == 0:
        raise cache.DataError(f"{path}: no records (empty file)")
    # Only trailing blank lines make capacity > n; the copies are then small.
    if n < capacity:
        tokens1, tokens2, labels = tokens1[:n].copy(), tokens2[:n].copy(), labels[:n].copy()
    return {"tokens1": tokens1, "tokens2": tokens2, "label": labels}


_FETCH_HINT = (
    "`attnbench-data fetch aan` puts the LRA release's tsv_data/ where config.data.dir='' finds it"
)


def _find_official_files(directory: pathlib.Path) -> dict[str, pathlib.Path]:
    expected = ", ".join(SPLIT_FILES.values())
    if not directory.is_dir():
        raise cache.DataError(
            f"{directory}: LRA Retrieval directory not found (config.data.dir must hold "
            f"{expected}, from lra_release/tsv_data/ of the LRA release; {_FETCH_HINT})"
        )
    for sub in _SUBDIRS:
        folder = directory / sub
        if all((folder / name).is_file() for name in SPLIT_FILES.values()):
            return {split: folder / name for split, name in SPLIT_FILES.items()}
    missing = [name for name in SPLIT_FILES.values() if not (directory / name).is_file()]
    raise cache.DataError(
        f"{directory}: missing {', '.join(missing)}; LRA Retrieval (AAN) expects the 3 files "
        f"{expected} (train, val, test) in config.data.dir or its tsv_data/ subfolder "
        f"({_FETCH_HINT}); set config.data.source='standin' for the offline stand-in"
    )


def _load_official(d, cache_root: pathlib.Path, max_length: int, text_cap: int):
    # config.data.dir, else where `attnbench-data fetch aan` puts the release's tsv_data/
    directory = pathlib.Path(catalog.official_dir("aan", d.dir)).expanduser()
    files = _find_official_files(directory)
    stats = {s: p.stat() for s, p in files.items()}
    spec = {
        "task": "retrieval",
        "source": "official",
        "version": _VERSION,
        "files": {
            s: [str(p.resolve()), stats[s].st_size, stats[s].st_mtime_ns] for s, p in files.items()
        },
        "max_length": max_length,
        "text_cap": text_cap,
    }

    def build():
        return {s: tokenize_tsv(p, max_length, text_cap) for s, p in files.items()}, {}

    splits, _, cache_dir = _load_cached(cache_root, "retrieval-official", spec, build)
    description = {
        "dataset": "ACL Anthology Network citation pairs (LRA Retrieval)",
        "source": "official",
        "dir": str(directory),
        "files": {s: p.name for s, p in files.items()},
        "cache": f"lra/{cache_dir.name}",
        "max_length": max_length,
        "text_cap": text_cap,
        **_summary(splits),
    }
    return splits, description


# --------------------------------------------------------------------------------------------
# Stand-in: cross-references of the Python documentation
# --------------------------------------------------------------------------------------------

_SUFFIXES = (".rst.txt", ".rst")
# The three page-level roles (and Sphinx's explicit `:py:mod:`). The lookbehind, placed after
# the leading colon so that the pattern starts with a literal (20x faster scans), keeps
# `:c:func:`-like compound roles and words ending in a colon from matching.
_LINK_ROLE = re.compile(rb":(?<![\w:]:)(?:py:)?(ref|mod|doc):`([^`]+)`")
# `.. _label:` alone on its line (a URL after the colon makes it an external hyperlink target).
_LABEL_LINE = re.compile(rb"^[ \t]*\.\. _([^:`\n_][^:`\n]*):[ \t]*(?:\n|\Z)", re.M)
_OBJECT_ROLE = re.compile(
    rb":(?<![\w:]:)(?:py:)?(func|class|meth|exc|attr|data|const|obj|term):`([^`]+)`"
)
_DIRECTIVE = re.compile(
    rb"^[ \t]*\.\. (?:py:)?(module|currentmodule|function|class|method|classmethod|staticmethod"
    rb"|exception|data|attribute|decorator|decoratormethod|coroutinefunction|coroutinemethod"
    rb"|abstractmethod|property|glossary)::[ \t]*([\w.]*)",
    re.M,
)
_EXPLICIT_TARGET = re.compile(r"<([^<>]+)>\s*$")


def _role_target(body: bytes) -> str:
    """`title <target>` -> target; `~a.b` / `!a` -> a.b / a; whitespace collapsed."""
    text = body.decode("utf-8", errors="replace")
    m = _EXPLICIT_TARGET.search(text)
    target = m.group(1) if m else text
    return " ".join(target.split()).lstrip("~!")


@dataclasses.dataclass
class Corpus:
    """A folder of Sphinx reST pages with their cross-references resolved.

    texts: page id (path without suffix, e.g. "library/os") -> the page's bytes with every
      `:ref:`/`:mod:`/`:doc:` role and `.. _label:` line deleted.
    references: (source page, target page, byte offset in texts[source] where the role was),
      one per resolved cross-page `:ref:`/`:mod:`/`:doc:` role, in page and text order.
    linked: unordered page pairs linked by any role seen (also object roles and `:term:`).
    counts: statistics of the roles found.
    """

    texts: dict[str, bytes]
    references: list[tuple[str, str, int]]
    linked: set[frozenset[str]]
    counts: dict[str, int]


def _missing_standin(directory: pathlib.Path) -> cache.DataError:
    return cache.DataError(
        f"{directory}: no Sphinx reST sources (*.rst.txt) found. The LRA Retrieval stand-in "
        f"reads the Python documentation sources of the Debian package {STANDIN_PACKAGE}: "
        f"install it with `apt-get install {STANDIN_PACKAGE}` (it provides "
        f"{DEFAULT_STANDIN_DIR}), or point config.data.standin_dir at another folder of "
        "*.rst.txt or *.rst files"
    )


def _page_files(directory: pathlib.Path) -> dict[str, pathlib.Path]:
    if not directory.is_dir():
        raise _missing_standin(directory)
    for suffix in _SUFFIXES:
        files = {
            p.relative_to(directory).as_posix()[: -len(suffix)]: p
            for p in sorted(directory.rglob(f"*{suffix}"))
            if p.is_file()
        }
        if files:
            return files
    raise _missing_standin(directory)


def read_corpus(directory: str | os.PathLike) -> Corpus:
    """Reads the pages under `directory` (recursively) and resolves their cross-references."""
    files = _page_files(pathlib.Path(directory))
    texts: dict[str, bytes] = {}
    roles: list[tuple[str, str, str, int]] = []  # (page, role, target, offset in stripped)
    labels: dict[str, str] = {}
    modules: dict[str, str] = {}
    objects: dict[str, set[str]] = collections.defaultdict(set)
    object_refs: list[tuple[str, str, str]] = []  # (page, role, target)
    glossaries: set[str] = set()
    for page, path in files.items():
        raw = path.read_bytes()
        for m in _LABEL_LINE.finditer(raw):  # the first definition wins, as in Sphinx
            labels.setdefault(" ".join(m.group(1).decode(errors="replace").lower().split()), page)
        # Offsets of the deleted roles are taken in the final text, so labels go first.
        text = _LABEL_LINE.sub(b"", raw)
        parts, pos, length = [], 0, 0
        for m in _LINK_ROLE.finditer(text):
            parts.append(text[pos : m.start()])
            length += m.start() - pos
            pos = m.end()
            roles.append((page, m.group(1).decode(), _role_target(m.group(2)), length))
        parts.append(text[pos:])
        texts[page] = b"".join(parts)
        module = ""
        for m in _DIRECTIVE.finditer(raw):
            kind, name = m.group(1).decode(), m.group(2).decode()
            if kind == "glossary":
                glossaries.add(page)
            elif kind in ("module", "currentmodule"):
                module = "" if name == "None" else name
                if kind == "module" and name:
                    modules.setdefault(name, page)
            elif name:
                objects[name].add(page)
                if module and not name.startswith(module + "."):
                    objects[f"{module}.{name}"].add(page)
        for m in _OBJECT_ROLE.finditer(raw):
            object_refs.append((page, m.group(1).decode(), _role_target(m.group(2))))

    def resolve(page: str, role: str, target: str) -> str | None:
        if role == "doc":
            if target.startswith("/"):
                name = posixpath.normpath(target[1:])
            else:
                name = posixpath.normpath(posixpath.join(posixpath.dirname(page), target))
            return name if name in texts else None
        if role == "mod":
            name = modules.get(target)
            return name or (f"library/{target}" if f"library/{target}" in texts else None)
        return labels.get(target.lower())

    counts = collections.Counter()
    references = []
    linked: set[frozenset[str]] = set()
    for page, role, target, offset in roles:
        found = resolve(page, role, target)
        if found is None:
            counts[f"{role}_unresolved"] += 1
        elif found == page:
            counts[f"{role}_self"] += 1
        else:
            counts[f"{role}_resolved"] += 1
            references.append((page, found, offset))
            linked.add(frozenset((page, found)))

    # Object roles only exclude negatives, so they resolve generously: every page defining the
    # name, else the page of its longest module prefix.
    for page, role, target in object_refs:
        counts[f"{role}_roles"] += 1
        if role == "term":
            targets = glossaries
        else:
            name = target.lstrip(".").removesuffix("()")
            targets = objects.get(name, set())
            while not targets and name:
                if name in modules:
                    targets = {modules[name]}
                name = name.rpartition(".")[0]
        linked.update(frozenset((page, t)) for t in targets if t != page)
    counts["pages"] = len(texts)
    counts["references"] = len(references)
    counts["linked_pairs"] = len(linked)
    return Corpus(texts, references, linked, dict(sorted(counts.items())))


def _window(rng: np.random.Generator, size: int, offset: int, width: int) -> tuple[int, int]:
    """A [start, end) of at most `width` bytes of a `size`-byte text containing `offset`."""
    if size <= width:
        return 0, size
    hi = min(offset, size - width)
    lo = min(max(0, offset - width + 1), hi)
    start = int(rng.integers(lo, hi + 1))
    return start, start + width


def standin_examples(
    corpus: Corpus,
    *,
    width: int,
    seed: int,
    val_fraction: float = 0.1,
    test_fraction: float = 0.1,
    max_windows_per_pair: int = 8,
) -> dict[str, list[tuple[int, str, str, bytes, bytes]]]:
    """The stand-in's examples: split -> [(label, page1, page2, text1, text2)], shuffled.

    text1 is a `width`-byte window of page1 around a reference place, text2 the first `width`
    bytes of page2 (both from `corpus.texts`). Half of each split is positive (page1 references
    page2); negatives are pairs not in `corpus.linked`. See the module docstring.
    """
    if not (0 <= val_fraction and 0 <= test_fraction and val_fraction + test_fraction < 1):
        raise ValueError(f"bad split fractions: val {val_fraction}, test {test_fraction}")
    if max_windows_per_pair < 1:
        raise ValueError(f"max_windows_per_pair must be >= 1, got {max_windows_per_pair}")
    rng = np.random.default_rng(seed)
    by_pair: dict[tuple[str, str], list[int]] = collections.defaultdict(list)
    for source, target, offset in corpus.references:
        by_pair[(source, target)].append(offset)
    pairs = sorted({tuple(sorted(p)) for p in by_pair})
    if len(pairs) < 3:
        raise cache.DataError(
            f"only {len(pairs)} linked page pairs found; the stand-in needs at least 3 (one per "
            "split)"
        )
    order = rng.permutation(len(pairs))
    n_test = max(1, round(test_fraction * len(pairs))) if test_fraction > 0 else 0
    n_val = max(1, round(val_fraction * len(pairs))) if val_fraction > 0 else 0
    if n_test + n_val >= len(pairs):
        raise cache.DataError(f"{len(pairs)} linked page pairs are too few to split")
    split_of: dict[frozenset[str], str] = {}
    for rank, i in enumerate(order):
        split = "test" if rank < n_test else "val" if rank < n_test + n_val else "train"
        split_of[frozenset(pairs[i])] = split

    # Positive anchors: (page1, page2, reference offset), at most max_windows_per_pair per pair.
    anchors: dict[str, list[tuple[str, str, int]]] = {s: [] for s in SPLIT_FILES}
    for (source, target), offsets in sorted(by_pair.items()):
        if len(offsets) > max_windows_per_pair:
            keep = np.sort(rng.choice(len(offsets), max_windows_per_pair, replace=False))
            offsets = [offsets[k] for k in keep]
        anchors[split_of[frozenset((source, target))]] += [(source, target, o) for o in offsets]

    texts = corpus.texts
    pages = sorted(texts)
    out: dict[str, list[tuple[int, str, str, bytes, bytes]]] = {}
    for split in SPLIT_FILES:
        rows = []
        for source, target, offset in anchors[split]:
            start, end = _window(rng, len(texts[source]), offset, width)
            rows.append((1, source, target, texts[source][start:end], texts[target][:width]))
        # Negatives: each anchor again (fresh window offset) with a page of this split's
        # positive targets, dealt out as a random permutation, so that page 1 and page 2 have
        # the same distribution in negatives as in positives. A dealt page linked to page 1
        # (or forming a pair of another split) is swapped with another anchor's page where
        # both then fit; only if no swap works is a page drawn from all allowed pages.
        negatives = [(source, offset) for source, _, offset in anchors[split]]
        dealt = [anchors[split][k][1] for k in rng.permutation(len(negatives))]

        def allowed(source: str, other: str, split: str = split) -> bool:
            pair = frozenset((source, other))
            return (
                other != source and pair not in corpus.linked and split_of.get(pair, split) == split
            )

        for i, (source, _) in enumerate(negatives):
            if allowed(source, dealt[i]):
                continue
            for j in rng.integers(len(negatives), size=200).tolist():
                if allowed(source, dealt[j]) and allowed(negatives[j][0], dealt[i]):
                    dealt[i], dealt[j] = dealt[j], dealt[i]
                    break
            else:
                free = [p for p in pages if allowed(source, p)]
                if not free:
                    raise cache.DataError(f"page {source!r} is linked to every other page")
                dealt[i] = free[int(rng.integers(len(free)))]
        for (source, offset), other in zip(negatives, dealt, strict=True):
            split_of[frozenset((source, other))] = split  # never a negative of another split
            start, end = _window(rng, len(texts[source]), offset, width)
            rows.append((0, source, other, texts[source][start:end], texts[other][:width]))
        out[split] = [rows[k] for k in rng.permutation(len(rows))]
    return out


def _off_pool(rows: Sequence[tuple[int, str, str, bytes, bytes]]) -> int:
    pos = collections.Counter(r[2] for r in rows if r[0] == 1)
    neg = collections.Counter(r[2] for r in rows if r[0] == 0)
    return sum(((pos - neg) + (neg - pos)).values()) // 2


def _corpus_fingerprint(directory: pathlib.Path) -> str:
    """Hash of the page names, sizes and mtimes: a changed corpus gets a new cache."""
    h = hashlib.sha256()
    for page, path in _page_files(directory).items():
        st = path.stat()
        h.update(f"{page}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def _load_standin(d, cache_root: pathlib.Path, max_length: int, text_cap: int):
    directory = pathlib.Path(d.standin_dir).expanduser()
    width = min(max_length, text_cap)
    params = dict(
        seed=int(d.seed),
        val_fraction=float(d.val_fraction),
        test_fraction=float(d.test_fraction),
        max_windows_per_pair=int(d.max_windows_per_pair),
    )
    spec = {
        "task": "retrieval",
        "source": "standin",
        "version": _VERSION,
        "standin_dir": str(directory.resolve()),
        "corpus": _corpus_fingerprint(directory),
        "max_length": max_length,
        "text_cap": text_cap,
        **params,
    }

    def build():
        corpus = read_corpus(directory)
        examples = standin_examples(corpus, width=width, **params)
        info = {
            "corpus": corpus.counts,
            "page_pairs": {
                s: len({frozenset(r[1:3]) for r in rows}) for s, rows in examples.items()
            },
            # Negatives whose page 2 could not be dealt from the positives' page-2 multiset:
            # half the L1 distance between the two page-2 histograms.
            "negatives_off_pool": {s: _off_pool(rows) for s, rows in examples.items()},
        }
        return {
            s: {
                "tokens1": lra_text.encode_bytes([r[3] for r in rows], max_length),
                "tokens2": lra_text.encode_bytes([r[4] for r in rows], max_length),
                "label": np.array([r[0] for r in rows], dtype=np.int32),
            }
            for s, rows in examples.items()
        }, info

    splits, info, cache_dir = _load_cached(cache_root, "retrieval-standin", spec, build)
    description = {
        "dataset": "Python 3.11 documentation cross-reference pairs (reST sources)",
        "standin_for": "ACL Anthology Network citation pairs (LRA Retrieval)",
        "source": "standin",
        "standin_dir": str(d.standin_dir),
        "cache": f"lra/{cache_dir.name}",
        "max_length": max_length,
        "text_cap": text_cap,
        **params,
        **_summary(splits),
        **info,  # corpus statistics and distinct page pairs per split
        "notes": (
            "positive: page 1 has a :ref:/:mod:/:doc: cross-reference to page 2; negative: same "
            "page-1 window, page 2 drawn like the positives' and linked in neither direction; "
            "document 1 is a window around the reference, document 2 the start of the page; "
            "cross-reference roles and label lines are deleted from both texts"
        ),
    }
    return splits, description
