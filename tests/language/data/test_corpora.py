"""Tests of language/data/corpora.py: each official format written tiny and read back exactly
(WikiText, PTB, enwik8 file and zip, CIFAR-10 pickles, GPT-2 BPE-encoded PTB and WikiText), the
Fashion-MNIST stand-in, the dispatcher, and the errors for missing or corrupt files. The
tokenisers: test_tokenizers.py; the byte-level stand-in: test_standin.py."""

from __future__ import annotations

import pathlib
import zipfile

import numpy as np
import pytest

from attnbench import errors
from attnbench.data import cache
from attnbench.data.formats import cifar, fashion_mnist, idx
from language.data import corpora, tokenizers
from tests.language.data.test_tokenizers import _write_tokenizer

# --------------------------------------------------------------------------------------------
# WikiText / PTB: word level, fairseq's dictionary
# --------------------------------------------------------------------------------------------

# Hand-worked: lines -> words + </s>. Train counts: </s> 5, "=" 2, "a" 3, "A" 1, "b" 1, "é" 1,
# <unk> 1. Order: specials <s> <pad> </s> <unk> (0-3), then by count, ties in code-point
# order: a (3) = 4, "=" (2) = 5, then "A" (0x41) = 6, "b" (0x62) = 7, "é" (0xe9) = 8; 9
# symbols padded to 16 with madeupword0000..0006.
TRAIN = " \n = A = \n \n b a <unk> a\n a\u3000é \n"
VALID = "a zzz\r\nb\n"  # zzz is not in train -> <unk>; \r\n ends a line
TEST = "\u00a0b\ta"  # NBSP and tab separate words; no final newline: still one </s>
SYMBOLS = ["<s>", "<pad>", "</s>", "<unk>", "a", "=", "A", "b", "é"]
SYMBOLS += [f"madeupword{i:04d}" for i in range(7)]
TRAIN_IDS = [2, 5, 6, 5, 2, 2, 7, 4, 3, 4, 2, 4, 8, 2]
VALID_IDS = [4, 3, 2, 7, 2]
TEST_IDS = [7, 4, 2]


def _write_wikitext(folder: pathlib.Path, ext: str = "tokens") -> pathlib.Path:
    folder.mkdir(parents=True, exist_ok=True)
    for split, text in (("train", TRAIN), ("valid", VALID), ("test", TEST)):
        (folder / f"wiki.{split}.{ext}").write_bytes(text.encode())
    return folder


def test_wikitext_word_level_exact(tmp_path):
    _write_wikitext(tmp_path / "data" / "wikitext-103")
    corpus = corpora.wikitext(tmp_path / "data", cache_root=tmp_path / "cache")
    assert corpus.symbols == tuple(SYMBOLS) and corpus.vocab_size == 16
    np.testing.assert_array_equal(corpus.splits["train"], TRAIN_IDS)
    np.testing.assert_array_equal(corpus.splits["val"], VALID_IDS)
    np.testing.assert_array_equal(corpus.splits["test"], TEST_IDS)
    assert corpus.splits["train"].dtype == np.uint16
    assert corpus.unit == "token" and corpus.source == "official"
    assert corpus.description["unk_tokens"] == {"train": 1, "val": 1, "test": 0}
    assert corpus.description["types_in_train"] == 6  # a = A b é + <unk>
    built = list((tmp_path / "cache" / "language").iterdir())
    assert len(built) == 1
    # fairseq's dict.txt: symbol count per line, specials left out.
    assert (built[0] / "dict.txt").read_text(encoding="utf-8").splitlines()[:5] == [
        "a 3", "= 2", "A 1", "b 1", "é 1",
    ]  # fmt: skip
    # The cache is reused (no rebuild: an unreadable source would fail a rebuild).
    again = corpora.wikitext(tmp_path / "data", cache_root=tmp_path / "cache")
    np.testing.assert_array_equal(again.splits["train"], TRAIN_IDS)
    assert list((tmp_path / "cache" / "language").iterdir()) == built


def test_ptb_word_level_and_missing_files(tmp_path):
    folder = tmp_path / "simple-examples" / "data"
    folder.mkdir(parents=True)
    (folder / "ptb.train.txt").write_text(" the cat <unk> \n the N \n")
    (folder / "ptb.valid.txt").write_text(" cat the \n")
    (folder / "ptb.test.txt").write_text(" dog \n")
    corpus = corpora.ptb(tmp_path / "simple-examples", cache_root=tmp_path / "c")
    # </s> 2, the 2, cat 1, N 1 -> the = 4, N (0x4e) = 5, cat = 6.
    assert corpus.symbols[:7] == ("<s>", "<pad>", "</s>", "<unk>", "the", "N", "cat")
    np.testing.assert_array_equal(corpus.splits["train"], [4, 6, 3, 2, 4, 5, 2])
    np.testing.assert_array_equal(corpus.splits["val"], [6, 4, 2])
    np.testing.assert_array_equal(corpus.splits["test"], [3, 2])
    (folder / "ptb.test.txt").unlink()
    with pytest.raises(errors.DataError, match=r"missing ptb.test.txt.*simple-examples.tgz"):
        corpora.ptb(folder, cache_root=tmp_path / "c")
    with pytest.raises(errors.DataError, match="folder not found"):
        corpora.wikitext(tmp_path / "nowhere", cache_root=tmp_path / "c")


def test_word_level_rejects_invalid_utf8(tmp_path):
    folder = _write_wikitext(tmp_path / "w")
    (folder / "wiki.valid.tokens").write_bytes(b"ok\nbad \xff byte\n")
    with pytest.raises(errors.DataError, match=r"wiki.valid.tokens: not UTF-8 at byte 7"):
        corpora.wikitext(folder, cache_root=tmp_path / "c")


@pytest.mark.parametrize("text", ["", "\n\n \n"], ids=["empty", "blank-lines"])
@pytest.mark.parametrize("split", ["train", "valid", "test"])
def test_a_split_file_without_text_is_an_error_naming_it(tmp_path, split, text):
    """Empty: refused before tokenising; blank lines only: a split of </s> alone, refused
    after (and from the cache as well)."""
    folder = _write_wikitext(tmp_path / "w")
    (folder / f"wiki.{split}.tokens").write_text(text)
    name = "val" if split == "valid" else split
    pattern = rf"wiki\.{split}\.tokens: the {name} split's file holds no text"
    for _ in range(2):
        with pytest.raises(errors.DataError, match=pattern):
            corpora.wikitext(folder, cache_root=tmp_path / "c")
    ptb = tmp_path / "ptb"
    ptb.mkdir()
    for s, content in (("train", " hello world \n"), ("valid", " world\n"), ("test", " hell\n")):
        (ptb / f"ptb.{s}.txt").write_text(text if s == split else content)
    with pytest.raises(errors.DataError, match=rf"ptb\.{split}\.txt: the {name} split's file"):
        corpora.ptb(ptb, cache_root=tmp_path / "c")
    bpe = tokenizers.GPT2BPE(_write_tokenizer(tmp_path / "gpt2"))
    with pytest.raises(errors.DataError, match=rf"ptb\.{split}\.txt: the {name} split's file"):
        corpora.ptb(ptb, cache_root=tmp_path / "c", bpe=bpe)


# --------------------------------------------------------------------------------------------
# GPT-2 BPE
# --------------------------------------------------------------------------------------------


def test_ptb_with_gpt2_bpe(tmp_path):
    folder = tmp_path / "ptb"
    folder.mkdir()
    (folder / "ptb.train.txt").write_text(" hello world \n hello \n")
    (folder / "ptb.valid.txt").write_text(" world\n")
    (folder / "ptb.test.txt").write_text(" hell\n")
    bpe = tokenizers.GPT2BPE(_write_tokenizer(tmp_path / "gpt2"))
    corpus = corpora.ptb(folder, cache_root=tmp_path / "c", bpe=bpe)
    # Lines stripped (HF ptb_text_only), concatenated with nothing between them.
    np.testing.assert_array_equal(corpus.splits["train"], [11, 12, 13, 2, 7, 11])
    np.testing.assert_array_equal(corpus.splits["val"], [5, 13, 2, 7])
    np.testing.assert_array_equal(corpus.splits["test"], [10])
    assert corpus.vocab_size == 21


def test_wikitext_with_gpt2_bpe_keeps_newlines(tmp_path):
    folder = tmp_path / "wt2"
    folder.mkdir()
    for split in ("train", "valid", "test"):
        (folder / f"wiki.{split}.raw").write_text(" \n hello\n")
    bpe = tokenizers.GPT2BPE(_write_tokenizer(tmp_path / "gpt2"))
    corpus = corpora.wikitext(folder, cache_root=tmp_path / "c", name="wikitext-2", bpe=bpe)
    # " \n" is blank -> ""; " hello\n" -> Ġ h? no merge "Ġ h": [Ġ, hello, Ċ].
    np.testing.assert_array_equal(corpus.splits["train"], [4, 11, 19])


# --------------------------------------------------------------------------------------------
# enwik8
# --------------------------------------------------------------------------------------------

BYTES = bytes(range(256)) * 2 + b"<page>\xc3\xa9</page>"  # 527 bytes
SPLIT = (500, 15, 12)


def test_enwik8_file_and_zip(tmp_path):
    (tmp_path / "enwik8").write_bytes(BYTES)
    with zipfile.ZipFile(tmp_path / "enwik8.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("enwik8", BYTES)
    for path in (tmp_path / "enwik8", tmp_path / "enwik8.zip", tmp_path):
        corpus = corpora.enwik8(path, split=SPLIT)
        assert corpus.vocab_size == 256 and corpus.unit == "byte"
        assert corpus.splits["train"].tobytes() == BYTES[:500]
        assert corpus.splits["val"].tobytes() == BYTES[500:515]
        assert corpus.splits["test"].tobytes() == BYTES[515:]
        assert corpus.splits["train"].dtype == np.uint8
    assert corpora.ENWIK8_SPLIT == (90_000_000, 5_000_000, 5_000_000)


def test_enwik8_errors(tmp_path):
    with pytest.raises(errors.DataError, match=r"enwik8 not found.*mattmahoney.net/dc/enwik8.zip"):
        corpora.enwik8(tmp_path / "enwik8")
    with pytest.raises(errors.DataError, match="no enwik8 or enwik8.zip"):
        corpora.enwik8(tmp_path)
    (tmp_path / "enwik8").write_bytes(BYTES)
    with pytest.raises(errors.DataError, match=r"527 bytes, expected 100,000,000"):
        corpora.enwik8(tmp_path / "enwik8")
    (tmp_path / "enwik8.zip").write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(errors.DataError, match=r"enwik8.zip: not a zip file"):
        corpora.enwik8(tmp_path / "enwik8.zip", split=SPLIT)
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as z:
        z.writestr("readme.txt", b"x")
    with pytest.raises(errors.DataError, match="no member `enwik8`"):
        corpora.enwik8(tmp_path / "other.zip", split=SPLIT)


# --------------------------------------------------------------------------------------------
# Images
# --------------------------------------------------------------------------------------------


def test_cifar10_sub_pixel_order(tmp_path):
    folder = tmp_path / cifar.CIFAR10_SUBDIR
    folder.mkdir()
    rng = np.random.default_rng(0)
    planar = {}
    for name in cifar.CIFAR10_FILES:
        planar[name] = rng.integers(0, 256, (2, 3072), dtype=np.uint8)
        cifar.write_batch(folder / name, planar[name], [1, 2])
    corpus = corpora.cifar10_pixels(tmp_path)
    assert corpus.image_shape == (32, 32, 3) and corpus.vocab_size == 256
    train = np.concatenate([planar[n] for n in cifar.CIFAR10_TRAIN_FILES])
    for split, source in (("train", train), ("test", planar["test_batch"])):
        seq = corpus.splits[split]
        assert seq.shape == (len(source), 3072) and seq.dtype == np.uint8
        for i in range(len(source)):
            for r, c, ch in ((0, 0, 0), (0, 0, 2), (0, 1, 0), (1, 0, 1), (31, 31, 2), (5, 7, 1)):
                assert seq[i, (r * 32 + c) * 3 + ch] == source[i, ch * 1024 + r * 32 + c]
    np.testing.assert_array_equal(corpus.splits["val"], corpus.splits["test"])
    held = corpora.cifar10_pixels(tmp_path, val_images=3)
    np.testing.assert_array_equal(held.splits["val"], corpus.splits["train"][-3:])
    assert len(held.splits["train"]) == 7
    (folder / "test_batch").unlink()
    with pytest.raises(errors.DataError, match="missing test_batch"):
        corpora.cifar10_pixels(tmp_path)


def test_fashion_mnist_pixels(tmp_path):
    rng = np.random.default_rng(1)
    images = {s: rng.integers(0, 256, (n, 28, 28), dtype=np.uint8) for s, n in
              (("train", 5), ("test", 2))}  # fmt: skip
    for split, (image_file, label_file) in fashion_mnist.FILES.items():
        idx.write(tmp_path / image_file, images[split])
        idx.write(tmp_path / label_file, np.zeros(len(images[split]), np.uint8))
    corpus = corpora.fashion_mnist_pixels(tmp_path, val_images=1)
    assert corpus.source == "standin" and corpus.image_shape == (28, 28, 1)
    np.testing.assert_array_equal(corpus.splits["train"], images["train"][:4].reshape(4, 784))
    np.testing.assert_array_equal(corpus.splits["val"], images["train"][4:].reshape(1, 784))
    np.testing.assert_array_equal(corpus.splits["test"][1, 28 * 3 + 5], images["test"][1, 3, 5])
    with pytest.raises(errors.ConfigError, match="val_images=5"):
        corpora.fashion_mnist_pixels(tmp_path, val_images=5)


# --------------------------------------------------------------------------------------------
# Dispatch and the cache
def test_an_empty_raw_file_is_an_error_not_a_reason_to_read_tokens(tmp_path):
    folder = _write_wikitext(tmp_path / "wt2")  # the .tokens files
    for split in ("train", "valid", "test"):
        (folder / f"wiki.{split}.raw").write_text(" \n hello\n")
    (folder / "wiki.test.raw").write_text("")
    bpe = tokenizers.GPT2BPE(_write_tokenizer(tmp_path / "gpt2"))
    with pytest.raises(errors.DataError, match=r"wiki\.test\.raw: the test split's file"):
        corpora.wikitext(folder, cache_root=tmp_path / "c", name="wikitext-2", bpe=bpe)


# --------------------------------------------------------------------------------------------


def test_load_dispatch_and_config_errors(tmp_path):
    d = corpora.data_config()
    d.dataset, d.source, d.dir = "enwik8", "official", str(tmp_path)
    with pytest.raises(errors.DataError, match="no enwik8 or enwik8.zip"):
        corpora.load(d)
    d.dataset = "imagenet"
    with pytest.raises(errors.ConfigError, match="config.data.dataset='imagenet'"):
        corpora.load(d)
    d.dataset, d.source = "ptb", "web"
    with pytest.raises(errors.ConfigError, match="config.data.source='web'"):
        corpora.load(d)


def test_corrupt_cache_is_reported(tmp_path):
    _write_wikitext(tmp_path / "w")
    corpora.wikitext(tmp_path / "w", cache_root=tmp_path / "c")
    built = next((tmp_path / "c" / "language").iterdir())
    (built / "tokens.npz").write_bytes(b"garbage")
    with pytest.raises(cache.DataError, match="corrupt array file"):
        corpora.wikitext(tmp_path / "w", cache_root=tmp_path / "c")
