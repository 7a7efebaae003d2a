"""Language-modelling corpora: the papers' official files and offline stand-ins, as token streams.

    corpus = corpora.load(corpora.data_config())            # the offline byte stand-in
    corpus.splits["train"]                                   # uint8 [n] byte stream
    corpus = corpora.wikitext("/data/wikitext-103")          # word level, fairseq's dictionary
    corpus = corpora.cifar10_pixels("/data/cifar-10-batches-py")   # uint8 [n, 3072] images

This module holds `config.data` (`data_config`), the dispatcher `load` and the readers of the
official files; the `Corpus` type is `language.data.corpus`'s, the tokenisers are in
`language.data.tokenizers`, the byte-level stand-in (the Python documentation sources) in
`language.data.standin`.

A `Corpus` holds, per split ("train", "val", "test"), either a 1-D token stream (text: word ids or
bytes, every document of the split concatenated in file order) or a 2-D array of images flattened to
sub-pixel sequences ([n, D], one sequence per image); `language.data.windows` cuts either into
model inputs. Tokenised text is built once and cached with `attnbench.data.cache.build_once` under
`<data root>/language/` (the key holds the source files' paths, sizes and modification times); raw
bytes and pixels are read directly.

Official data
-------------
* WikiText-103 / WikiText-2 (Merity et al. 2016): ``wiki.{train,valid,test}.tokens`` in
  ``config.data.dir`` (or its ``wikitext-103/`` / ``wikitext-2/`` subfolder, as the release
  zips unpack). Word level with the files' own tokenisation, as ``fairseq-preprocess
  --only-source`` binarises them for SSA's recipe: every line, an empty one included, gives its
  words and then the end-of-line symbol ``</s>``; the dictionary is fairseq's, from the TRAIN
  split (the rule and its speed: `language.data.tokenizers`). A word of valid/test not in train
  maps to ``<unk>`` (WikiText has none: its files already carry ``<unk>``). The published
  WikiText-103 vocabulary is 267,735 types including ``<unk>``, so this rule gives 4 + 267,734 =
  267,738 symbols, padded to 267,744 [derived; the full files are not on this machine, so it is
  checked on fixtures only]. The dictionary is saved as fairseq's ``dict.txt`` (``symbol count``
  per line, specials excluded).
* PTB (Mikolov's ``ptb.{train,valid,test}.txt``): the same word-level rule.
* GPT-2 BPE (GFSA's GPT-2 fine-tuning on PTB / WikiText-2 / WikiText-103): with ``bpe_dir`` (a
  directory holding Hugging Face ``vocab.json`` and ``merges.txt``, as a GPT-2 checkpoint
  directory does) the same files are read as text and encoded with
  `language.data.tokenizers.GPT2BPE`, line by line as HF's ``run_clm.py`` tokenises the HF
  datasets GFSA loads: PTB (``ptb_text_only``) lines are stripped of surrounding whitespace,
  newline included; WikiText lines keep their newline, and blank lines are empty texts (HF's
  loaders as remembered, not re-checked here). WikiText's ``wiki.*.raw`` files (GFSA used the
  ``-raw-v1`` configs) are read when present, else the ``.tokens`` files. The encoded ids are
  concatenated with nothing added (``run_clm`` adds no end-of-text token).
* enwik8 (Hutter prize, http://mattmahoney.net/dc/enwik8.zip): the ``enwik8`` file, or the
  ``enwik8`` member of ``enwik8.zip``; 100,000,000 raw bytes split 90M / 5M / 5M (first 90M
  train, next 5M valid, last 5M test: the standard split of Transformer-XL's
  ``prep_enwik8.py``; SSA, arXiv:2306.01705, Sec. 4.1 and App. B.1, does not state it). Tokens
  are the byte values 0..255 themselves (vocabulary 256; no specials).
* CIFAR-10 (``cifar-10-batches-py/``, read by `attnbench.data.formats.cifar`) as sub-pixel
  sequences of 3,072 tokens: raster order over pixels, row by row and left to right, with each
  pixel's R, G, B values consecutive (sequence index ``(row * 32 + col) * 3 + channel``). SSA
  flattens each image "into a sequence of length 3072" for "unconditional sub-pixel level image
  generation" (arXiv:2306.01705, Sec. 4.2) without naming the order; raster order with the
  channels interleaved per pixel is the Image Transformer's and the Sparse Transformer's order,
  which SSA follows [inferred]. The pickles are channel-major (1024 R, 1024 G, 1024 B), so they
  are transposed. Vocabulary 256 (the sub-pixel value). Splits: train = the 50,000 training
  images; test = the 10,000 of ``test_batch``; val = test (image-generation papers report their
  "validation" bits per dim on the test images [inferred]) unless ``val_images > 0`` holds out
  the last that many training images. ([inferred] marks our inference; the paper does not say.)

Offline stand-ins (``source="standin"``, labelled as such in every description)
-------------------------------------------------------------------------------
* Bytes: the reST sources of the Python 3.11 documentation (`language.data.standin`).
* Pixels: Fashion-MNIST (Debian ``dataset-fashion-mnist``,
  `attnbench.data.formats.fashion_mnist`), 28 x 28 grayscale = 784 tokens per image in raster
  order, vocabulary 256; train 60,000, test 10,000, val as for CIFAR-10.

Missing or malformed files raise `attnbench.errors.DataError` naming the path and where to get the
data; so does a split file without text (empty, or only blank lines: WikiText, PTB, their BPE
reading), which would otherwise train or evaluate on nothing but end-of-line symbols. A bad config
field raises `attnbench.errors.ConfigError`.
"""

from __future__ import annotations

import json
import os
import pathlib
import sys
import time
import zipfile
from collections.abc import Iterable, Mapping, Sequence

import ml_collections
import numpy as np

from attnbench import errors
from attnbench.data import cache, catalog
from attnbench.data.formats import cifar, fashion_mnist
from language.data import standin
from language.data.corpus import SPLITS, Corpus
from language.data.tokenizers import EOS, GPT2BPE, UNK, Dictionary, _progress, build_word_level

__all__ = [
    "SPLITS",
    "ENWIK8_SPLIT",
    "DATASETS",
    "Corpus",
    "data_config",
    "load",
    "wikitext",
    "ptb",
    "word_files",
    "enwik8",
    "cifar10_pixels",
    "fashion_mnist_pixels",
]

ENWIK8_SPLIT = (90_000_000, 5_000_000, 5_000_000)  # train / valid / test bytes

_WORD_VERSION = 1  # bump when the word-level encoding of the same files changes
_BPE_VERSION = 1
_FILE_SPLITS = {"train": "train", "val": "valid", "test": "test"}  # our name -> file name


# --------------------------------------------------------------------------------------------
# Corpus
# --------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# Config and dispatch
# --------------------------------------------------------------------------------------------

DATASETS = ("wikitext-103", "wikitext-2", "ptb", "enwik8", "cifar10")


def data_config() -> ml_collections.ConfigDict:
    """`config.data` of the language tasks; the defaults read the offline byte stand-in."""
    d = ml_collections.ConfigDict()
    d.dataset = "enwik8"  # wikitext-103 | wikitext-2 | ptb | enwik8 | cifar10
    d.source = "standin"  # official (files in `dir`) | standin (offline: docs bytes / F-MNIST)
    d.dir = ""  # official: the dataset's folder; "" = <data root>/<dataset> or where fetched
    d.cache_dir = ""  # data root for caches ("" = $ATTNBENCH_DATA or ~/.cache/attnbench)
    d.bpe_dir = ""  # GPT-2 checkpoint/tokenizer folder (vocab.json, merges.txt): BPE text
    d.standin_dir = ""  # text stand-in: reST sources folder ("" = find python3.X-doc)
    d.standin_fraction = 0.05  # text stand-in: share of bytes in valid and in test each
    d.standin_images = fashion_mnist.DEFAULT_DIR  # image stand-in: Fashion-MNIST IDX folder
    d.val_images = 0  # images: 0 = val is the test set, k = hold out the last k train images
    # images: Distribution Augmentation of the training images (language/data/distaug.py), e.g.
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
        return standin.python_docs_bytes(
            d.standin_dir or None,
            seed=int(d.seed),
            fraction=float(d.standin_fraction),
            cache_root=root,
        )
    directory = _official_folder(d, dataset, root)
    if dataset == "enwik8":
        return enwik8(directory)
    if dataset == "cifar10":
        return cifar10_pixels(directory, val_images=int(d.val_images))
    bpe = GPT2BPE(d.bpe_dir) if d.bpe_dir else None
    if dataset == "ptb":
        return ptb(directory, cache_root=root, bpe=bpe)
    return wikitext(directory, cache_root=root, name=dataset, bpe=bpe)


# config.data.dataset -> the `attnbench-data` name that fetches it (language/data/sources.py;
# cifar10: vision/data/sources.py)
FETCH_NAMES = {
    "wikitext-103": "wikitext103",
    "wikitext-2": "wikitext2",
    "ptb": "ptb",
    "enwik8": "enwik8",
    "cifar10": "cifar10",
}


def _official_folder(d, dataset: str, root: pathlib.Path) -> pathlib.Path:
    """`config.data.dir`; when it is empty, `<data root>/<dataset>` where that exists, else the
    folder `attnbench-data fetch` puts the dataset in; a DataError naming the fetch command
    when neither is there."""
    if d.dir:
        return pathlib.Path(d.dir).expanduser()
    if (root / dataset).exists():
        return root / dataset
    name = FETCH_NAMES[dataset]
    fetched = catalog.where(name, d.get("cache_dir", ""))
    if fetched.is_dir():
        return fetched
    return pathlib.Path(catalog.official_dir(name))  # raises: names `attnbench-data fetch`


# --------------------------------------------------------------------------------------------
# Word-level corpora: WikiText-103 / WikiText-2, PTB
# --------------------------------------------------------------------------------------------


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
    for split in SPLITS:  # every line gives </s>: a split of nothing else has no text
        if not np.any(arrays[split] != EOS):
            raise _no_text(files[split], split)
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


class _MissingFiles(cache.DataError):
    """`word_files` found no folder or not every file of the pattern."""


def word_files(
    directory: str | os.PathLike, pattern: str, subdirs: Sequence[str], what: str, url: str
) -> dict[str, pathlib.Path]:
    """{split: path} of `pattern.format(split=file split)` in `directory` or a subfolder; an
    empty file is an error naming it."""
    directory = pathlib.Path(directory).expanduser()
    names = {s: pattern.format(split=f) for s, f in _FILE_SPLITS.items()}
    expected = f"expected {', '.join(names.values())} ({what}, {url}) in config.data.dir"
    if not directory.is_dir():
        raise _MissingFiles(f"{directory}: {what} folder not found; {expected}")
    for sub in subdirs:
        if not (directory / names["train"]).is_file() and (directory / sub).is_dir():
            directory = directory / sub
    missing = [n for n in names.values() if not (directory / n).is_file()]
    if missing:
        raise _MissingFiles(f"{directory}: missing {', '.join(missing)}; {expected}")
    files = {s: directory / n for s, n in names.items()}
    for split, path in files.items():  # before tokenising the others (WikiText-103: minutes)
        if path.stat().st_size == 0:
            raise _no_text(path, split, f"; {expected}")
    return files


def _no_text(path: pathlib.Path, split: str, fix: str = "") -> cache.DataError:
    """A split file that holds no text: it would give a split of end-of-line symbols only."""
    return cache.DataError(
        f"{path}: the {split} split's file holds no text (empty or blank lines only); replace it "
        f"with the release's file{fix}"
    )


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
        except _MissingFiles:  # an empty .raw file is an error, not a reason to read .tokens
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
# GPT-2 BPE corpora
# --------------------------------------------------------------------------------------------


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
            if not text.strip():
                raise _no_text(path, split)
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
    for split in SPLITS:
        if not len(arrays[split]):
            raise _no_text(files[split], split)
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
