"""The byte-level offline stand-in: the Python documentation's reST sources as a byte corpus.

    corpus = standin.python_docs_bytes()       # Corpus: uint8 byte streams, vocabulary 256
    bits = standin.unigram_bits(corpus.splits["train"], corpus.splits["val"])

Stand-in (``source="standin"``, labelled as such in every description) for enwik8 and WikiText
in the language recipes; `language.data.corpora.load` returns it for every text dataset.

* Bytes: the reST sources of the Python 3.11 documentation (Debian ``python3.11-doc``:
  ``/usr/share/doc/python3.11/html/_sources/**/*.rst.txt``, 497 documents, ~11 MB; `STANDIN_DIRS`
  lists the other python3.X-doc folders tried). Split BY DOCUMENT: documents in a seeded random
  order fill valid, then test, each until it holds ``standin_fraction`` (5%) of all bytes, the
  rest is train (90%); each split concatenates its documents in that order. Bytes as tokens,
  vocabulary 256. The split is cached with `attnbench.data.cache.build_once` under
  ``<data root>/language/`` (the key holds the source folder, the documents' names and sizes,
  the seed and the fraction).
* `unigram_bits` gives the train split's unigram entropy and the valid split's cross-entropy
  under it (the baseline the byte-level ``cpu`` recipe must beat).

A missing source folder raises `attnbench.errors.DataError` saying how to install it; a bad
``standin_fraction`` raises `attnbench.errors.ConfigError`.
"""

from __future__ import annotations

import os
import pathlib

import numpy as np

from attnbench import errors
from attnbench.data import cache
from language.data.corpus import SPLITS, Corpus

__all__ = [
    "STANDIN_PACKAGE",
    "STANDIN_DIR",
    "STANDIN_DIRS",
    "find_standin_dir",
    "python_docs_bytes",
    "unigram_bits",
]

STANDIN_PACKAGE = "python3.11-doc"
# Where Debian's python3.X-doc packages put the reST sources: 3.11 first (what
# .ci/run installs, then the others); `find_standin_dir` takes the first that holds *.rst.txt files.
STANDIN_DIR = "/usr/share/doc/python3.11/html/_sources"
STANDIN_DIRS = (
    STANDIN_DIR,
    *(f"/usr/share/doc/python3.{v}/html/_sources" for v in (14, 13, 12, 10)),
)

_STANDIN_VERSION = 1


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
