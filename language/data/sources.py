"""The official data the language readers read, for `attnbench-data` (`attnbench.data.catalog`):
the corpora of `language.data.corpora` (WikiText-103, WikiText-2, PTB and enwik8), each fetched
by the command into the folder `corpora.load` reads with `source='official'` and an empty
`config.data.dir` (`<data root>/<config.data.dataset>`), and GLUE, the original TSV release
that `language.data.glue` reads from `<data root>/glue` (configs/language/glue.py). CIFAR-10 (the
image-generation task) is vision's entry.

No checksum is published for the corpora's files: `fetch` records each one's size and sha256 in
MANIFEST.json. Split sizes: enwik8's are the reader's byte split (`corpora.ENWIK8_SPLIT`);
WikiText's and PTB's are token counts under the reader's word-level rule (each line's words,
then ``</s>``; `language.data.tokenizers.count_tokens`), which is the rule the published counts
follow: WikiText's are those of Merity et al. 2016 (arXiv 1609.07843, Table 1), which the
PyTorch word-language-model example and fairseq's binariser (both add an end-of-line token per
line) also report; PTB's are Mikolov's files with one end-of-sentence per line, the "929k /
73k / 82k words" of Zaremba et al. 2014 (arXiv 1409.2329, Sec. 4.1). [These exact figures are
recorded from those sources, not counted on this machine: the full files are not here.]

GLUE's eleven release files have published sha256 checksums and sizes (the Hugging Face
`datasets` GLUE builder's record, GitHub huggingface/datasets datasets/glue/dataset_infos.json;
TensorFlow Datasets lists the same for the same files, tensorflow/datasets
tensorflow_datasets/url_checksums/glue.txt), and its split sizes are that record's
num_examples (not counted on this machine either).
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


# ---- GLUE (the original TSV release, as download_glue_data.py lays it out) ----------------------

# Where the checksums, sizes and split counts come from: the Hugging Face `datasets` GLUE builder's
# recorded download checksums and split sizes (GitHub huggingface/datasets,
# datasets/glue/dataset_infos.json: "download_checksums" {url: num_bytes, sha256} and "splits"
# num_examples per configuration). TensorFlow Datasets publishes the same sha256 and sizes for the
# same files under their older firebasestorage URLs (GitHub tensorflow/datasets,
# tensorflow_datasets/url_checksums/glue.txt), except QQP, where it lists the older QQP.zip.
_GLUE_SUMS = "huggingface/datasets datasets/glue/dataset_infos.json, download_checksums"
_GLUE_HOST = "https://dl.fbaipublicfiles.com/glue/data"
_SENTEVAL = "https://dl.fbaipublicfiles.com/senteval/senteval_data"

# release file -> (URL, bytes, sha256, the task folder inside the zip; "" for MRPC's files)
_GLUE_FILES = {
    "CoLA.zip": (
        f"{_GLUE_HOST}/CoLA.zip",
        376_971,
        "f212fcd832b8f7b435fb991f101abf89f96b933ab400603bf198960dfc32cbff",
        "CoLA",
    ),
    "SST-2.zip": (
        f"{_GLUE_HOST}/SST-2.zip",
        7_439_277,
        "d67e16fb55739c1b32cdce9877596db1c127dc322d93c082281f64057c16deaa",
        "SST-2",
    ),
    "QQP-clean.zip": (
        f"{_GLUE_HOST}/QQP-clean.zip",
        41_696_084,
        "40e7c862c04eb26ee04b67fd900e76c45c6ba8e6d8fab4f8f1f8072a1a3fbae0",
        "QQP",
    ),
    "STS-B.zip": (
        f"{_GLUE_HOST}/STS-B.zip",
        802_872,
        "e60a6393de5a8b5b9bac5020a1554b54e3691f9d600b775bd131e613ac179c85",
        "STS-B",
    ),
    "MNLI.zip": (
        f"{_GLUE_HOST}/MNLI.zip",
        312_783_507,
        "e7c1d896d26ed6caf700110645df426cc2d8ebf02a5ab743d5a5c68ac1c83633",
        "MNLI",
    ),
    "QNLIv2.zip": (
        f"{_GLUE_HOST}/QNLIv2.zip",
        10_627_589,
        "e634e78627a29adaecd4f955359b22bf5e70f2cbd93b493f2d624138a0c0e5f5",
        "QNLI",
    ),
    "RTE.zip": (
        f"{_GLUE_HOST}/RTE.zip",
        697_150,
        "6bf86de103ecd335f3441bd43574d23fef87ecc695977a63b82d5efb206556ee",
        "RTE",
    ),
    "WNLI.zip": (
        f"{_GLUE_HOST}/WNLI.zip",
        28_999,
        "ae0e8e4d16f4d46d4a0a566ec7ecceccfd3fbfaa4a7a4b4e02848c0f2561ac46",
        "WNLI",
    ),
    # MRPC is not in a GLUE zip (its licence): SentEval's extraction of the Microsoft corpus and
    # GLUE's list of the train pairs that form the dev split
    "msr_paraphrase_train.txt": (
        f"{_SENTEVAL}/msr_paraphrase_train.txt",
        1_047_044,
        "60a9b09084528f0673eedee2b69cb941920f0b8cd0eeccefc464a98768457f89",
        "",
    ),
    "msr_paraphrase_test.txt": (
        f"{_SENTEVAL}/msr_paraphrase_test.txt",
        441_275,
        "a04e271090879aaba6423d65b94950c089298587d9c084bf9cd7439bd785f784",
        "",
    ),
    "mrpc_dev_ids.tsv": (
        f"{_GLUE_HOST}/mrpc_dev_ids.tsv",
        6_222,
        "971d7767d81b997fd9060ade0ec23c4fc31cbb226a55d1bd4a1bac474eb81dc7",
        "",
    ),
}

# The splits the GLUE configs read (train and the dev sets; the unlabelled test splits are
# neither read nor counted), HF split names (language.data.glue.TASKS).
GLUE_SPLITS = {
    **{t: ("train", "validation") for t in ("cola", "sst2", "mrpc", "qqp", "stsb")},
    "mnli": ("train", "validation_matched", "validation_mismatched"),
    **{t: ("train", "validation") for t in ("qnli", "rte", "wnli")},
}
# num_examples of those splits (huggingface/datasets datasets/glue/dataset_infos.json; the same
# counts as the nyu-mll/glue dataset card). Keys "task/split".
_GLUE_SIZES = {
    "cola/train": 8_551,
    "cola/validation": 1_043,
    "sst2/train": 67_349,
    "sst2/validation": 872,
    "mrpc/train": 3_668,
    "mrpc/validation": 408,
    "qqp/train": 363_846,
    "qqp/validation": 40_430,
    "stsb/train": 5_749,
    "stsb/validation": 1_500,
    "mnli/train": 392_702,
    "mnli/validation_matched": 9_815,
    "mnli/validation_mismatched": 9_832,
    "qnli/train": 104_743,
    "qnli/validation": 5_463,
    "rte/train": 2_490,
    "rte/validation": 277,
    "wnli/train": 635,
    "wnli/validation": 71,
}

_MRPC_FIELDS = 5  # Quality, #1 ID, #2 ID, #1 String, #2 String
_MRPC_TEST_HEADER = "index\t#1 ID\t#2 ID\t#1 String\t#2 String\n"


def _glue_zip_members(folder: str) -> set[str]:
    """The members of a task's zip the reader reads: every split file of the tasks in `folder`
    (test files included: the reader's layout), not the zips' original/ sources."""
    from language.data import glue

    return {
        f"{folder}/{name}"
        for t in glue.TASKS.values()
        if t.tsv_dir == folder
        for name in t.tsv_files.values()
    }


def _mrpc_rows(path: pathlib.Path) -> tuple[str, list[tuple[str, ...]]]:
    """(header line, rows of 5 fields) of an msr_paraphrase_*.txt file, read as
    download_glue_data.py reads it: UTF-8 text lines (\\n, \\r\\n or \\r), the header kept as is
    (its byte-order mark included), each row stripped of surrounding white space and split on
    tabs. A row without 5 fields is a DataError naming the line."""
    with open(path, encoding="utf-8", newline=None) as f:
        header = f.readline()
        rows = []
        for number, line in enumerate(f, start=2):
            fields = tuple(line.strip().split("\t"))
            if len(fields) != _MRPC_FIELDS:
                raise errors.DataError(
                    f"{path}: line {number} has {len(fields)} tab-separated fields, expected "
                    f"{_MRPC_FIELDS} (Quality, #1 ID, #2 ID, #1 String, #2 String); re-download it"
                )
            rows.append(fields)
    if not header.strip():
        raise errors.DataError(f"{path}: empty file, expected the MRPC header; re-download it")
    return header if header.endswith("\n") else header + "\n", rows


def _arrange_mrpc(downloads: Mapping[str, pathlib.Path], target: pathlib.Path) -> None:
    """MRPC/train.tsv, dev.tsv, test.tsv from the three MRPC files, as download_glue_data.py's
    format_mrpc makes them (GitHub huggingface/transformers utils/download_glue_data.py): the
    train file's pairs listed in mrpc_dev_ids.tsv form dev.tsv, the others train.tsv, both under
    the train file's header; test.tsv numbers the test file's rows from 0 and drops their label."""
    ids = downloads["mrpc_dev_ids.tsv"].read_text(encoding="utf-8").splitlines()
    dev_ids = {tuple(line.strip().split("\t")) for line in ids if line.strip()}
    header, rows = _mrpc_rows(downloads["msr_paraphrase_train.txt"])
    _, test_rows = _mrpc_rows(downloads["msr_paraphrase_test.txt"])
    found = {(r[1], r[2]) for r in rows} & dev_ids
    if len(found) != len(dev_ids):
        raise errors.DataError(
            f"{downloads['mrpc_dev_ids.tsv']}: {len(dev_ids) - len(found)} of its {len(dev_ids)} "
            f"dev pairs are not in {downloads['msr_paraphrase_train.txt']}; re-download both"
        )
    folder = target / "MRPC"
    folder.mkdir()
    with (
        open(folder / "train.tsv", "w", encoding="utf-8", newline="\n") as train,
        open(folder / "dev.tsv", "w", encoding="utf-8", newline="\n") as dev,
    ):
        train.write(header)
        dev.write(header)
        for r in rows:
            (dev if (r[1], r[2]) in dev_ids else train).write("\t".join(r) + "\n")
    with open(folder / "test.tsv", "w", encoding="utf-8", newline="\n") as test:
        test.write(_MRPC_TEST_HEADER)
        for i, r in enumerate(test_rows):
            test.write("\t".join((str(i), *r[1:])) + "\n")


def _arrange_glue(downloads: Mapping[str, pathlib.Path], target: pathlib.Path) -> None:
    """Each task zip's split files under `target/<Task>/` (download_glue_data.py's glue_data/
    layout, which `language.data.glue.read_tsv` reads), then MRPC's made from its three files."""
    for filename, (*_, folder) in _GLUE_FILES.items():
        if not folder:
            continue
        wanted = _glue_zip_members(folder)
        fetch.extract(downloads[filename], target, members=lambda m, w=wanted: m in w)
        missing = sorted(m for m in wanted if not (target / m).is_file())
        if missing:
            raise errors.DataError(
                f"{downloads[filename]}: no {', '.join(missing)} in the archive (not GLUE's "
                f"{filename}?)"
            )
    _arrange_mrpc(downloads, target)


def _count_glue(folder: pathlib.Path) -> dict[str, int]:
    """{"task/split": examples} of the splits the configs read, by `language.data.glue.load`
    (the TSV release, or the nyu-mll/glue parquet files put in `folder` by hand); a split whose
    files are absent is left out (verify names it), a malformed one raises its DataError."""
    from language.data import glue

    out = {}
    for task, splits in GLUE_SPLITS.items():
        for split in splits:
            if glue.tsv_path(task, split, folder).is_file() or glue.parquet_paths(
                task, split, folder
            ):
                out[f"{task}/{split}"] = len(glue.load(task, split, folder))
    return out


catalog.register(
    catalog.Dataset(
        name="glue",
        title="GLUE (General Language Understanding Evaluation), the original TSV release",
        size="376 MB in 11 release files (MNLI.zip 313 MB)",
        licence="each task under its source corpus's terms (GLUE redistributes existing "
        "datasets: CoLA, SST-2, QQP, STS-B, MNLI, SQuAD-derived QNLI, RTE, WNLI); MRPC is the "
        "Microsoft Research Paraphrase Corpus, not redistributed by GLUE (SentEval's copy)",
        homepage="https://gluebenchmark.com/",
        remotes=tuple(
            fetch.Remote(
                url=url, filename=name, size=size, sha256=sha256, checksum_source=_GLUE_SUMS
            )
            for name, (url, size, sha256, _) in _GLUE_FILES.items()
        ),
        folder="glue",
        configs=("language/glue.py:preset=paper,source=official",),
        splits=_GLUE_SIZES,
        layout="CoLA/, SST-2/, MRPC/, QQP/, STS-B/, MNLI/, QNLI/, RTE/, WNLI/, each with "
        "train.tsv, dev.tsv, test.tsv (MNLI: dev_matched.tsv, dev_mismatched.tsv, "
        "test_matched.tsv, test_mismatched.tsv): download_glue_data.py's glue_data/ layout, "
        "tab-separated with each task's header (language/data/glue.py)",
        arrange=_arrange_glue,
        count=_count_glue,
        notes="Only each zip's split files are kept (not their original/ sources). MRPC's "
        "train.tsv / dev.tsv / test.tsv are made from SentEval's msr_paraphrase_train.txt and "
        "msr_paraphrase_test.txt and GLUE's mrpc_dev_ids.tsv as download_glue_data.py makes them. "
        "QQP is GLUE's corrected QQP-clean.zip (older QQP.zip copies hold rows broken by "
        "newlines). verify counts the train and dev splits the configs read (the test splits "
        "have no labels). The same data as the nyu-mll/glue parquet files, which the reader also "
        "reads when put in this folder by hand (<task>/<split>-*.parquet; `fetch --from hf` "
        "takes one Hub configuration, and GLUE is nine).",
    )
)
