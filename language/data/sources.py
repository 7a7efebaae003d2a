"""The official corpora the language readers read (`language.data.corpora`), for `attnbench-data`
(`attnbench.data.catalog`): WikiText-103, WikiText-2, PTB and enwik8, each fetched by the command
into the folder `corpora.load` reads with `source='official'` and an empty `config.data.dir`
(`<data root>/<config.data.dataset>`). CIFAR-10 (the image-generation task) is vision's entry.

No checksum is published for any of these files: `fetch` records each one's size and sha256 in
MANIFEST.json. Split sizes: enwik8's are the reader's byte split (`corpora.ENWIK8_SPLIT`);
WikiText's and PTB's are token counts under the reader's word-level rule (each line's words,
then ``</s>``; `language.data.tokenizers.count_tokens`), which is the rule the published counts
follow: WikiText's are those of Merity et al. 2016 (arXiv 1609.07843, Table 1), which the
PyTorch word-language-model example and fairseq's binariser (both add an end-of-line token per
line) also report; PTB's are Mikolov's files with one end-of-sentence per line, the "929k /
73k / 82k words" of Zaremba et al. 2014 (arXiv 1409.2329, Sec. 4.1). [These exact figures are
recorded from those sources, not counted on this machine: the full files are not here.]
"""

from __future__ import annotations

import pathlib
from collections.abc import Mapping

from attnbench import errors
from attnbench.data import catalog, fetch

_WIKITEXT_HOST = "https://s3.amazonaws.com/research.metamind.io/wikitext"
_WIKITEXT_PAGE = (
    "https://blog.salesforceairesearch.com/the-wikitext-long-term-dependency-language-modeling-"
    "dataset/"
)
_WIKITEXT_LICENCE = "CC BY-SA 3.0 (Wikipedia text)"
_COUNTED = (
    "verify counts tokens as the reader does (each line's words, then </s>; "
    "language.data.tokenizers.count_tokens), without building the dictionary."
)


def _count_words(name: str, pattern: str, subdirs: tuple[str, ...], what: str):
    """`count(folder)`: the token count of each split file the reader would read."""

    def count(folder: pathlib.Path) -> dict[str, int]:
        from language.data import corpora, tokenizers

        fetch_it = f"`attnbench-data fetch {name}`"
        files = corpora.word_files(folder, pattern, subdirs, what, fetch_it)
        return {split: tokenizers.count_tokens(path) for split, path in files.items()}

    return count


# The Hub's copy (Salesforce/wikitext, parquet): one row per line of the release file, the
# line's text with its "\n", a blank line as "" (the Hub's former loading script wrote blank lines
# as empty rows). Written back one row per line, so each line's words, and the token counts, are
# the release's; only the blank lines' lone space is gone, which no reader sees.
_HF_SPLITS = {"train": "train", "valid": "validation", "test": "test"}  # file split -> Hub split


def _arrange_hf_wikitext(splits: Mapping[str, object], target: pathlib.Path) -> None:
    missing = [s for s in _HF_SPLITS.values() if s not in splits]
    if missing:
        raise errors.DataError(
            f"the Hugging Face copy has no {', '.join(missing)} split (it has "
            f"{', '.join(splits) or 'none'}); is it WikiText?"
        )
    for file_split, hub_split in _HF_SPLITS.items():
        rows = splits[hub_split]
        if "text" not in rows.column_names:
            raise errors.DataError(
                f"the Hugging Face copy's {hub_split} split has no 'text' column (it has "
                f"{', '.join(rows.column_names)}); is it WikiText?"
            )
        with open(target / f"wiki.{file_split}.tokens", "w", encoding="utf-8", newline="") as f:
            for batch in rows.iter(batch_size=10_000):
                f.writelines(t if t.endswith("\n") else t + "\n" for t in batch["text"])


def _hf_wikitext(config: str) -> catalog.HFSource:
    return catalog.HFSource(
        repo="Salesforce/wikitext",
        config=config,
        arrange=_arrange_hf_wikitext,
        notes="The Hub's parquet rows are the release file's lines; blank lines come back as "
        "empty lines (the release has a lone space on them), so the reader's tokens and the "
        "counts verify checks are the release's.",
    )


_WIKITEXT_LAYOUT = (
    "wiki.train.tokens, wiki.valid.tokens, wiki.test.tokens: UTF-8 text, one paragraph or "
    "` = heading = ` per line with blank lines between, already tokenised (tokens separated by "
    "spaces, rare words as <unk>)"
)

# Merity et al. 2016 (arXiv 1609.07843), Table 1: tokens per split; WikiText-2 and WikiText-103
# share their validation and test articles.
_WIKITEXT_EVAL = {"val": 217_646, "test": 245_569}


# ---- WikiText-103 / WikiText-2 (word level, the .tokens files) -----------------------------------

catalog.register(
    catalog.Dataset(
        name="wikitext103",
        title="WikiText-103 (word level)",
        size="about 181 MB (not checked here)",
        licence=_WIKITEXT_LICENCE,
        homepage=_WIKITEXT_PAGE,
        remotes=(
            fetch.Remote(
                url=f"{_WIKITEXT_HOST}/wikitext-103-v1.zip",
                filename="wikitext-103-v1.zip",
                checksum_source=catalog.NO_SUM,
            ),
        ),
        folder="wikitext-103",
        configs=("language/wikitext103.py:preset=paper,source=official",),
        splits={"train": 103_227_021, **_WIKITEXT_EVAL},
        layout=_WIKITEXT_LAYOUT,
        arrange=catalog.untar_into("wikitext-103"),  # wikitext-103/wiki.{train,valid,test}.tokens
        unit="tokens",
        count=_count_words("wikitext103", "wiki.{split}.tokens", ("wikitext-103",), "wikitext-103"),
        notes=_COUNTED + " The word-level release (.tokens, 267,735 types); -raw-v1 is another "
        "file set and not what these configs read.",
        hf=_hf_wikitext("wikitext-103-v1"),
    )
)

catalog.register(
    catalog.Dataset(
        name="wikitext2",
        title="WikiText-2 (word level)",
        size="about 4 MB (not checked here)",
        licence=_WIKITEXT_LICENCE,
        homepage=_WIKITEXT_PAGE,
        remotes=(
            fetch.Remote(
                url=f"{_WIKITEXT_HOST}/wikitext-2-v1.zip",
                filename="wikitext-2-v1.zip",
                checksum_source=catalog.NO_SUM,
            ),
        ),
        folder="wikitext-2",
        configs=(
            "language/wikitext103.py:dataset=wikitext-2,source=official",
            "language/gpt2.py:dataset=wikitext-2,source=official",
        ),
        splits={"train": 2_088_628, **_WIKITEXT_EVAL},
        layout=_WIKITEXT_LAYOUT,
        arrange=catalog.untar_into("wikitext-2"),  # wikitext-2/wiki.{train,valid,test}.tokens
        unit="tokens",
        count=_count_words("wikitext2", "wiki.{split}.tokens", ("wikitext-2",), "wikitext-2"),
        notes=_COUNTED
        + " GFSA's GPT-2 runs read the -raw-v1 release (wiki.*.raw), which is not fetched: the "
        "BPE reader falls back to the .tokens files.",
        hf=_hf_wikitext("wikitext-2-v1"),
    )
)


# ---- PTB (Mikolov's simple-examples.tgz, data/ptb.{train,valid,test}.txt) -----------------------

_PTB_FILES = tuple(f"ptb.{split}.txt" for split in ("train", "valid", "test"))


def _arrange_ptb(downloads: Mapping[str, pathlib.Path], target: pathlib.Path) -> None:
    """simple-examples.tgz (members ./simple-examples/data/ptb.*.txt among the RNNLM toolkit's
    files): the three word-level split files, directly in `target`."""

    def wanted(member: str) -> bool:
        parts = [p for p in member.split("/") if p not in ("", ".")]
        return parts[1:2] == ["data"] and len(parts) == 3 and parts[2] in _PTB_FILES

    (archive,) = downloads.values()
    unpacked = target / ".unpacked"
    files = fetch.extract(archive, unpacked, members=wanted)
    found = {p.name: p for p in files}
    missing = [n for n in _PTB_FILES if n not in found]
    if missing:
        raise errors.DataError(
            f"{archive}: no {', '.join(missing)} under simple-examples/data/ (not Mikolov's "
            "simple-examples.tgz?)"
        )
    for name in _PTB_FILES:
        found[name].rename(target / name)
    for path in sorted(unpacked.rglob("*"), reverse=True):
        path.rmdir()
    unpacked.rmdir()


catalog.register(
    catalog.Dataset(
        name="ptb",
        title="Penn Treebank, Mikolov's word-level language-modelling split",
        size="about 34 MB (not checked here)",
        licence="no licence stated; distributed by T. Mikolov with the RNNLM toolkit examples "
        "(the text is from the Penn Treebank, LDC)",
        homepage="http://www.fit.vutbr.cz/~imikolov/rnnlm/",
        remotes=(
            fetch.Remote(
                url="http://www.fit.vutbr.cz/~imikolov/rnnlm/simple-examples.tgz",
                filename="simple-examples.tgz",
                checksum_source=catalog.NO_SUM,
            ),
        ),
        folder="ptb",
        configs=("language/gpt2.py:dataset=ptb,source=official",),
        # Mikolov's ptb.*.txt: 887,521 / 70,390 / 78,669 words (Merity et al. 2016, Table 1)
        # plus one </s> for each of the 42,068 / 3,370 / 3,761 lines
        splits={"train": 929_589, "val": 73_760, "test": 82_430},
        layout="ptb.train.txt, ptb.valid.txt, ptb.test.txt: one sentence per line, lower case, "
        "numbers as N, rare words as <unk> (10,000 word types)",
        arrange=_arrange_ptb,
        unit="tokens",
        count=_count_words("ptb", "ptb.{split}.txt", ("data", "ptb"), "Penn Treebank"),
        notes=_COUNTED + " Only data/ptb.{train,valid,test}.txt are kept from the archive.",
    )
)


# ---- enwik8 (the first 10^8 bytes of a Wikipedia dump) ------------------------------------------


def _arrange_enwik8(downloads: Mapping[str, pathlib.Path], target: pathlib.Path) -> None:
    """enwik8.zip: its one member `enwik8`, in `target`."""
    (archive,) = downloads.values()
    if not fetch.extract(archive, target, members=lambda m: m == "enwik8"):
        raise errors.DataError(f"{archive}: no member `enwik8` (not the Hutter Prize zip?)")


def _count_enwik8(folder: pathlib.Path) -> dict[str, int]:
    from language.data import corpora

    return {split: len(stream) for split, stream in corpora.enwik8(folder).splits.items()}


catalog.register(
    catalog.Dataset(
        name="enwik8",
        title="enwik8 (the first 10^8 bytes of an English Wikipedia dump)",
        size="about 36 MB (not checked here)",
        licence="Wikipedia text (CC BY-SA); the Hutter Prize file",
        homepage="http://mattmahoney.net/dc/textdata.html",
        remotes=(
            fetch.Remote(
                url="http://mattmahoney.net/dc/enwik8.zip",
                filename="enwik8.zip",
                checksum_source=catalog.NO_SUM,
            ),
        ),
        folder="enwik8",
        configs=("language/enwik8.py:preset=paper,source=official",),
        # The reader's split of the 100,000,000 bytes, corpora.ENWIK8_SPLIT (the test checks
        # they agree): the first 90M train, the next 5M val, the last 5M test.
        splits={"train": 90_000_000, "val": 5_000_000, "test": 5_000_000},
        unit="bytes",
        layout="enwik8: the 100,000,000 bytes of the Hutter Prize file (XML of Wikipedia "
        "pages), read as bytes",
        arrange=_arrange_enwik8,
        count=_count_enwik8,
    )
)
