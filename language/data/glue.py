"""GLUE (Wang et al. 2019): the nine tasks, readers of both public releases, and sentence-pair
encoding for BERT-style (WordPiece) and RoBERTa-style (byte-level BPE) tokenisers.

GFSA (arXiv 2312.04234, Sec. 5.1 / App. K) fine-tunes BERT-base, RoBERTa-base and ALBERT-base on
GLUE with HF ``run_glue_no_trainer`` at max sequence length 128 and reports the validation split
(MNLI-m = ``validation_matched``, MNLI-mm = ``validation_mismatched``); the metrics are in
`language.glue_metrics`.

    split = glue.load("rte", "validation", "/data/glue_data")     # either release under root
    tok = glue.wordpiece_tokenizer("/models/bert-base-uncased/vocab.txt")
    batch = glue.encode(split, tok, max_length=128)                # int32 [N, 128] arrays

Tasks (`TASKS`): text fields, label names and splits follow the Hugging Face ``nyu-mll/glue``
dataset (the ``datasets`` GLUE builder script ``glue.py``: ``text_features``, ``label_classes``,
split generators). Labels are integers in that order (``stsb``: one float32 score in [0, 5]).

Original release (`read_tsv`): the folder layout ``download_glue_data.py`` (nyu-mll
GLUE-baselines) writes: ``CoLA/ SST-2/ MRPC/ QQP/ STS-B/ MNLI/ QNLI/ RTE/ WNLI/``, each with
``train.tsv``, ``dev.tsv``, ``test.tsv`` (MNLI: ``dev_matched.tsv``, ``dev_mismatched.tsv``,
``test_matched.tsv``, ``test_mismatched.tsv``). Headers (HF transformers
``data/processors/glue.py`` column indices, the ``datasets`` GLUE script's column names, and the
download script for MRPC):

- CoLA train/dev: NO header, columns source, label, original mark, sentence; test: index, sentence.
- SST-2: sentence, label (test: index, sentence).
- MRPC train/dev: ``Quality  #1 ID  #2 ID  #1 String  #2 String`` -- the download script splits
  ``msr_paraphrase_train.txt`` by ``dev_ids.tsv`` and copies its header, which starts with a UTF-8
  byte-order mark (the ``datasets`` script skips those 3 bytes), so files are read as
  ``utf-8-sig``; test: ``index  #1 ID  #2 ID  #1 String  #2 String``.
- QQP: id, qid1, qid2, question1, question2, is_duplicate (test: id, question1, question2).
- STS-B: index, genre, filename, year, old_index, source1, source2, sentence1, sentence2, score
  (test: without score).
- MNLI: index, promptID, pairID, genre, four parse columns, sentence1, sentence2, then label1
  (train) or label1..label5 (dev), gold_label; test without labels.
- QNLI: index, question, sentence, label. RTE, WNLI: index, sentence1, sentence2, label.

TSV label values: ``0``/``1`` for CoLA, SST-2, MRPC, QQP, WNLI (HF order: the integer itself;
WNLI ``1`` = entailment, HF ``label_classes`` ["not_entailment", "entailment"]); words for MNLI
(``gold_label``), QNLI and RTE; a float for STS-B. Columns are found by NAME in the header (so
MNLI's train and dev files, which differ in width, read alike); CoLA train/dev by position.
Rows are split on tabs with no quote handling, as the reference readers do (``csv`` with
``QUOTE_NONE``): a ``"`` is an ordinary character. Line ends: ``\\n``, ``\\r\\n`` or ``\\r``.
Empty lines at the end of a file are ignored; anywhere else they are malformed rows.

Malformed rows (a field count other than the header's): an error by default, naming file and
line. Some old copies of QQP's ``train.tsv`` (before GLUE's ``QQP-clean.zip``) hold rows broken
by newlines inside a question; ``skip_malformed=True`` skips such rows instead, and
`GlueSplit.skipped_lines` lists every skipped line (its length is the count), so nothing is
dropped silently. An unknown label is always an error.

Hugging Face release (`read_parquet`): the Hub dataset ``nyu-mll/glue`` (parquet since 2024,
README ``configs``): ``<config>/<split>-NNNNN-of-NNNNN.parquet`` (all shards, in name order),
e.g. ``mnli/validation_matched-00000-of-00001.parquet``; columns ``sentence``,
``sentence1``/``sentence2``, ``question1``/``question2``, ``question``/``sentence``,
``premise``/``hypothesis`` as in `TASKS`, ``label`` (int64 class index; float32 for stsb; -1 on
test splits) and ``idx``.

`load` accepts both layouts under one root; where both hold the split, the original TSV is read
unless ``source="parquet"``. Test splits have no labels in either release: ``labels`` is None.

Encoding (`encode`): HF ``glue_convert_examples_to_features`` / ``run_glue_no_trainer`` call the
fast tokenizer with ``padding="max_length", truncation=True, max_length=128``; truncation=True is
the ``longest_first`` strategy, which the ``tokenizers`` package implements itself (its
``enable_truncation`` default), counting the special tokens the post-processor adds. The
tokenisers mirror HF ``convert_slow_tokenizer``: ``BertConverter`` (WordPiece, ``BertNormalizer``
with clean_text, Chinese-character splitting, accents stripped iff lowercasing,
``BertPreTokenizer``, ``[CLS] A [SEP] B [SEP]`` with token types 0 | 1) and ``RobertaConverter``
(byte-level BPE without prefix space, ``<s> A </s></s> B </s>``, token types all 0).
ALBERT's SentencePiece tokeniser is `language.hf_albert.albert_tokenizer`.

Bad input raises `attnbench.errors.DataError` naming the file, the line and what to do.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from attnbench import errors, extras

__all__ = [
    "GlueTask",
    "TASKS",
    "GlueSplit",
    "tsv_path",
    "parquet_paths",
    "read_tsv",
    "read_parquet",
    "load",
    "wordpiece_tokenizer",
    "byte_level_bpe_tokenizer",
    "encode",
]


@dataclasses.dataclass(frozen=True)
class GlueTask:
    """One GLUE task.

    name: the HF config name; fields: the HF text columns (one or two); label_names: HF
    ``label_classes`` order (empty for the regression task stsb); num_labels: classifier outputs
    (1 for stsb); splits: HF split names; tsv_dir: the folder of the original release;
    tsv_files: split -> TSV file name; tsv_text: the TSV text columns by header name (CoLA's
    headerless train/dev files get the names source, label, original_mark, sentence); tsv_label:
    the TSV label column; tsv_labels: TSV label value -> HF index (empty for stsb).
    """

    name: str
    fields: tuple[str, ...]
    label_names: tuple[str, ...]
    num_labels: int
    splits: tuple[str, ...]
    tsv_dir: str
    tsv_files: Mapping[str, str]
    tsv_text: tuple[str, ...]
    tsv_label: str
    tsv_labels: Mapping[str, int]

    @property
    def is_regression(self) -> bool:
        """True for stsb (one float output)."""
        return not self.label_names

    @property
    def is_pair(self) -> bool:
        """True when an example has two texts."""
        return len(self.fields) == 2


_STD_SPLITS = ("train", "validation", "test")
_STD_FILES = {"train": "train.tsv", "validation": "dev.tsv", "test": "test.tsv"}
_BINARY = {"0": 0, "1": 1}


def _task(name, fields, label_names, tsv_dir, tsv_text, tsv_label, tsv_labels, splits=None):
    splits = splits or _STD_SPLITS
    files = _STD_FILES if splits is _STD_SPLITS else {s: s + ".tsv" for s in splits}
    if name == "mnli":
        files = {s: s.replace("validation", "dev") + ".tsv" for s in splits}
    return GlueTask(
        name=name,
        fields=tuple(fields),
        label_names=tuple(label_names),
        num_labels=len(label_names) or 1,
        splits=tuple(splits),
        tsv_dir=tsv_dir,
        tsv_files=dict(files),
        tsv_text=tuple(tsv_text),
        tsv_label=tsv_label,
        tsv_labels=dict(tsv_labels),
    )


_NLI3 = ("entailment", "neutral", "contradiction")
_NLI2 = ("entailment", "not_entailment")

# HF `datasets` GLUE script (text_features, label_classes, label_column) and HF transformers
# glue processors (CoLA column 3 / label column 1 in the headerless train and dev files).
# fmt: off
TASKS: dict[str, GlueTask] = {
    t.name: t
    for t in (
        _task("cola", ["sentence"], ["unacceptable", "acceptable"], "CoLA",
              ["sentence"], "label", _BINARY),
        _task("sst2", ["sentence"], ["negative", "positive"], "SST-2",
              ["sentence"], "label", _BINARY),
        _task("mrpc", ["sentence1", "sentence2"], ["not_equivalent", "equivalent"], "MRPC",
              ["#1 String", "#2 String"], "Quality", _BINARY),
        _task("qqp", ["question1", "question2"], ["not_duplicate", "duplicate"], "QQP",
              ["question1", "question2"], "is_duplicate", _BINARY),
        _task("stsb", ["sentence1", "sentence2"], [], "STS-B",
              ["sentence1", "sentence2"], "score", {}),
        _task("mnli", ["premise", "hypothesis"], _NLI3, "MNLI",
              ["sentence1", "sentence2"], "gold_label", {n: i for i, n in enumerate(_NLI3)},
              splits=("train", "validation_matched", "validation_mismatched",
                      "test_matched", "test_mismatched")),
        _task("qnli", ["question", "sentence"], _NLI2, "QNLI",
              ["question", "sentence"], "label", {n: i for i, n in enumerate(_NLI2)}),
        _task("rte", ["sentence1", "sentence2"], _NLI2, "RTE",
              ["sentence1", "sentence2"], "label", {n: i for i, n in enumerate(_NLI2)}),
        _task("wnli", ["sentence1", "sentence2"], ["not_entailment", "entailment"], "WNLI",
              ["sentence1", "sentence2"], "label", _BINARY),
    )
}
# fmt: on

# CoLA's train.tsv / dev.tsv have no header: source, label, original mark, sentence.
_COLA_HEADERLESS = ("source", "label", "original_mark", "sentence")
_STSB_RANGE = (0.0, 5.0)  # STS-B similarity scores (Cer et al. 2017): 0 to 5


@dataclasses.dataclass
class GlueSplit:
    """One split of one task: texts, labels (None on test splits), and where they came from.

    labels: int64 class indices in `GlueTask.label_names` order, or float32 scores for stsb.
    skipped_lines: 1-based line numbers of malformed TSV rows skipped under
    ``skip_malformed=True`` (empty otherwise); ``len(skipped_lines)`` is the count.
    """

    task: str
    split: str
    text_a: list[str]
    text_b: list[str] | None
    labels: np.ndarray | None
    source: str
    path: str
    skipped_lines: tuple[int, ...] = ()

    def __len__(self) -> int:
        return len(self.text_a)


def _get_task(task: str) -> GlueTask:
    if task not in TASKS:
        raise errors.UnknownNameError(
            f"unknown GLUE task {task!r}; known tasks: {', '.join(TASKS)}"
        )
    return TASKS[task]


def _check_split(t: GlueTask, split: str) -> None:
    if split not in t.splits:
        raise errors.UnknownNameError(
            f"GLUE task {t.name!r} has no split {split!r}; its splits: {', '.join(t.splits)}"
        )


def tsv_path(task: str, split: str, root: str | os.PathLike) -> pathlib.Path:
    """The original-release file of ``task``/``split`` under the GLUE data folder ``root``."""
    t = _get_task(task)
    _check_split(t, split)
    return pathlib.Path(root) / t.tsv_dir / t.tsv_files[split]


def parquet_paths(task: str, split: str, root: str | os.PathLike) -> list[pathlib.Path]:
    """The ``nyu-mll/glue`` parquet shards of ``task``/``split`` under ``root``, in name order
    (empty when there are none)."""
    t = _get_task(task)
    _check_split(t, split)
    folder = pathlib.Path(root) / t.name
    return sorted(folder.glob(f"{split}-*-of-*.parquet")) if folder.is_dir() else []


def _lines(path: pathlib.Path) -> Iterator[tuple[int, str]]:
    """(1-based line number, line without its end) of a UTF-8 text file, a leading byte-order
    mark dropped; lines end at ``\\n``, ``\\r\\n`` or ``\\r`` (Python's universal newlines, as the
    reference readers open the files). DataError if the file is missing or a line is not UTF-8."""
    if not path.is_file():
        raise errors.DataError(f"{path}: GLUE file not found{_missing_hint(path)}")
    number = 0
    with open(path, "rb") as f:
        for raw in f:  # decoded line by line, so that an error can name its line
            if number == 0 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise errors.DataError(
                    f"{path}: line {number + 1} is not valid UTF-8 ({e.reason} at byte {e.start} "
                    "of the line); re-download the GLUE file"
                ) from None
            line = line.removesuffix("\n").removesuffix("\r")
            for part in line.split("\r") if "\r" in line else (line,):
                number += 1
                yield number, part


def _missing_hint(path: pathlib.Path) -> str:
    """What to do about a missing TSV file: the catalog's `attnbench-data fetch glue` (the
    original TSV release, MRPC's split files included), or the nyu-mll/glue parquet files."""
    fetch = "`attnbench-data fetch glue` (the original TSV release, into <data root>/glue)"
    if path.parent.name == "MRPC" and path.name in ("train.tsv", "dev.tsv"):
        return (
            "; MRPC's train.tsv and dev.tsv are not in a GLUE zip: they are made from "
            "msr_paraphrase_train.txt and GLUE's mrpc_dev_ids.tsv as download_glue_data.py "
            f"makes them, which {fetch} does"
        )
    return (
        f"; fetch GLUE with {fetch}, or put the nyu-mll/glue parquet files "
        "(<task>/<split>-*.parquet) in this folder"
    )


def read_tsv(
    task: str, split: str, root: str | os.PathLike, *, skip_malformed: bool = False
) -> GlueSplit:
    """Read ``task``/``split`` from the original GLUE TSV release under ``root`` (the folder
    holding ``CoLA/``, ``MNLI/``, ...). See the module docstring for the layouts.

    Raises DataError for a missing file, a missing column, a row with the wrong number of
    fields (unless ``skip_malformed``, which skips and records it), or an unknown label.
    """
    t = _get_task(task)
    path = tsv_path(task, split, root)
    is_test = split.startswith("test")
    lines = _lines(path)
    headerless = t.name == "cola" and not is_test
    if headerless:
        header = _COLA_HEADERLESS
    else:
        first = next(lines, None)
        if first is None:
            raise errors.DataError(f"{path}: empty file, expected a header line; re-download it")
        header = tuple(first[1].split("\t"))
    wanted = t.tsv_text + (() if is_test else (t.tsv_label,))
    missing = [c for c in wanted if c not in header]
    if missing:
        raise errors.DataError(
            f"{path}: header has no column {', '.join(map(repr, missing))} (header: "
            f"{list(header)}); is this the {t.tsv_dir} {split} file of the GLUE release?"
        )
    cols = [header.index(c) for c in t.tsv_text]
    label_col = None if is_test else header.index(t.tsv_label)
    texts: list[list[str]] = [[] for _ in cols]
    raw_labels: list[tuple[int, str]] = []
    skipped: list[int] = []
    blank: list[int] = []  # blank lines, errors unless only trailing
    for number, line in lines:
        if not line:
            blank.append(number)
            continue
        if blank:
            raise errors.DataError(
                f"{path}: line {blank[0]} is empty inside the file; remove it or re-download"
            )
        fields = line.split("\t")
        if len(fields) != len(header):
            if skip_malformed:
                skipped.append(number)
                continue
            raise errors.DataError(
                f"{path}: line {number} has {len(fields)} tab-separated fields, expected "
                f"{len(header)} ({'no header: ' if headerless else 'header: '}{list(header)}); "
                "fix or re-download the file (or pass skip_malformed=True to skip and count "
                "such rows)"
            )
        for out, c in zip(texts, cols, strict=True):
            out.append(fields[c])
        if label_col is not None:
            raw_labels.append((number, fields[label_col]))
    labels = None if is_test else _tsv_labels(t, path, raw_labels)
    return GlueSplit(
        task=t.name,
        split=split,
        text_a=texts[0],
        text_b=texts[1] if t.is_pair else None,
        labels=labels,
        source="tsv",
        path=str(path),
        skipped_lines=tuple(skipped),
    )


def _tsv_labels(t: GlueTask, path: pathlib.Path, raw: Sequence[tuple[int, str]]) -> np.ndarray:
    if t.is_regression:
        out = np.empty(len(raw), np.float32)
        lo, hi = _STSB_RANGE
        for i, (number, value) in enumerate(raw):
            try:
                x = float(value)
            except ValueError:
                x = float("nan")
            if not lo <= x <= hi:  # also catches nan
                raise errors.DataError(
                    f"{path}: line {number}: score {value!r} in column {t.tsv_label!r} is not "
                    f"a number in [{lo:g}, {hi:g}]; fix or re-download the file"
                )
            out[i] = x
        return out
    out = np.empty(len(raw), np.int64)
    for i, (number, value) in enumerate(raw):
        if value not in t.tsv_labels:
            raise errors.DataError(
                f"{path}: line {number}: unknown {t.name} label {value!r} in column "
                f"{t.tsv_label!r}; expected one of {sorted(t.tsv_labels)}"
            )
        out[i] = t.tsv_labels[value]
    return out


def read_parquet(task: str, split: str, root: str | os.PathLike) -> GlueSplit:
    """Read ``task``/``split`` from the ``nyu-mll/glue`` parquet release under ``root`` (the
    folder holding ``cola/``, ``mnli/``, ...): all ``<split>-*-of-*.parquet`` shards in order.

    Raises DataError for missing files, missing columns, null texts or out-of-range labels.
    """
    pa = extras.require("pyarrow", "reading GLUE's parquet release")
    pq = extras.require("pyarrow.parquet", "reading GLUE's parquet release")

    t = _get_task(task)
    paths = parquet_paths(task, split, root)
    where = pathlib.Path(root) / t.name / f"{split}-00000-of-00001.parquet"
    if not paths:
        raise errors.DataError(
            f"{where}: GLUE parquet file not found; download the nyu-mll/glue dataset files "
            f"({t.name}/{split}-*.parquet) into {root}"
        )
    is_test = split.startswith("test")
    columns = list(t.fields) + ["label"]
    texts: list[list[str]] = [[] for _ in t.fields]
    label_parts = []
    for path in paths:
        try:
            schema = pq.read_schema(path)
            missing = [c for c in columns if c not in schema.names]
            if missing:
                raise errors.DataError(
                    f"{path}: no column {', '.join(map(repr, missing))} (columns: "
                    f"{schema.names}); expected the nyu-mll/glue {t.name} config's columns "
                    f"{columns}"
                )
            table = pq.read_table(path, columns=columns)
        except (pa.ArrowException, OSError) as e:
            raise errors.DataError(
                f"{path}: not a readable parquet file ({e}); re-download it"
            ) from None
        for out, name in zip(texts, t.fields, strict=True):
            col = table.column(name)
            if col.null_count:
                raise errors.DataError(
                    f"{path}: column {name!r} has {col.null_count} null value(s); re-download it"
                )
            out.extend(col.to_pylist())
        label = table.column("label")
        if label.null_count:
            raise errors.DataError(
                f"{path}: column 'label' has {label.null_count} null value(s); re-download it"
            )
        label_parts.append((path, label.to_numpy()))
    labels = None
    if not is_test:
        labels = np.concatenate([_parquet_labels(t, p, v) for p, v in label_parts])
    return GlueSplit(
        task=t.name,
        split=split,
        text_a=texts[0],
        text_b=texts[1] if t.is_pair else None,
        labels=labels,
        source="parquet",
        path=str(paths[0] if len(paths) == 1 else paths[0].parent),
    )


def _parquet_labels(t: GlueTask, path: pathlib.Path, values: np.ndarray) -> np.ndarray:
    if t.is_regression:
        x = values.astype(np.float32)
        lo, hi = _STSB_RANGE
        bad = np.flatnonzero(~((x >= lo) & (x <= hi)))
        if bad.size:
            raise errors.DataError(
                f"{path}: row {bad[0]}: label {values[bad[0]]!r} is not a score in "
                f"[{lo:g}, {hi:g}] ({bad.size} such rows); is this a train/validation file?"
            )
        return x
    if not np.issubdtype(values.dtype, np.integer):
        raise errors.DataError(
            f"{path}: column 'label' has dtype {values.dtype}, expected integer class indices"
        )
    bad = np.flatnonzero((values < 0) | (values >= t.num_labels))
    if bad.size:
        raise errors.DataError(
            f"{path}: row {bad[0]}: unknown {t.name} label {int(values[bad[0]])} ({bad.size} "
            f"such rows); expected 0..{t.num_labels - 1} ({', '.join(t.label_names)})"
        )
    return values.astype(np.int64)


def load(
    task: str,
    split: str,
    root: str | os.PathLike,
    *,
    source: str | None = None,
    skip_malformed: bool = False,
) -> GlueSplit:
    """Read ``task``/``split`` from whichever GLUE release lies under ``root``.

    source: None (the TSV release where its file exists, else parquet), "tsv" or "parquet".
    skip_malformed: TSV only, see `read_tsv`. Split names are HF's (train, validation, test;
    mnli: validation_matched, validation_mismatched, test_matched, test_mismatched).
    """
    t = _get_task(task)
    _check_split(t, split)
    if source not in (None, "tsv", "parquet"):
        raise ValueError(f"source must be None, 'tsv' or 'parquet', got {source!r}")
    tsv = tsv_path(task, split, root)
    if source == "tsv" or (source is None and tsv.is_file()):
        return read_tsv(task, split, root, skip_malformed=skip_malformed)
    if source == "parquet" or parquet_paths(task, split, root):
        return read_parquet(task, split, root)
    raise errors.DataError(
        f"{root}: GLUE {task} {split} not found: neither {tsv} (original TSV release) nor "
        f"{pathlib.Path(root) / t.name / (split + '-00000-of-00001.parquet')} (nyu-mll/glue "
        "parquet release); put one of them in this folder (`attnbench-data fetch glue` fetches "
        "the TSV release into <data root>/glue)"
    )


# ------------------------------------------------------------------------------- tokenisers


def _read_text(path: str | os.PathLike, what: str) -> str:
    p = pathlib.Path(path)
    if not p.is_file():
        raise errors.DataError(f"{p}: {what} not found; pass the checkpoint folder's {p.name}")
    try:
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise errors.DataError(f"{p}: {what} is not UTF-8 ({e.reason} at byte {e.start})") from None


def _need(vocab: Mapping[str, int], tokens: Sequence[str], path, what: str) -> None:
    missing = [tok for tok in tokens if tok not in vocab]
    if missing:
        raise errors.DataError(
            f"{path}: {what} lacks the special token(s) {missing}; is it the right vocabulary?"
        )


def wordpiece_tokenizer(vocab_txt: str | os.PathLike, lowercase: bool = True):
    """A BERT WordPiece tokeniser (``tokenizers.Tokenizer``) from a ``vocab.txt`` (one token a
    line, id = line index, as HF ``BertTokenizer``'s ``load_vocab``).

    Mirrors HF ``convert_slow_tokenizer.BertConverter``: WordPiece with ``[UNK]``, prefix ``##``,
    100 characters per word at most; ``BertNormalizer(clean_text, handle_chinese_chars,
    strip_accents=None (= lowercase), lowercase)``; ``BertPreTokenizer``; pairs
    ``[CLS] A [SEP] B [SEP]`` with token types 0 for ``[CLS] A [SEP]`` and 1 for ``B [SEP]``;
    padding with ``[PAD]``. ``lowercase=True`` for the uncased checkpoints (bert-base-uncased).
    """
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    text = _read_text(vocab_txt, "WordPiece vocabulary")
    vocab: dict[str, int] = {}
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for i, token in enumerate(lines):
        token = token.rstrip("\r")
        if token in vocab:
            raise errors.DataError(
                f"{vocab_txt}: line {i + 1}: token {token!r} repeats line {vocab[token] + 1}; "
                "a vocab.txt lists each token once"
            )
        vocab[token] = i
    _need(vocab, ["[UNK]", "[CLS]", "[SEP]", "[PAD]"], vocab_txt, "vocab.txt")
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=lowercase
    )
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0",
        pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tok.enable_padding(pad_id=vocab["[PAD]"], pad_token="[PAD]")
    return tok


def byte_level_bpe_tokenizer(vocab_json: str | os.PathLike, merges_txt: str | os.PathLike):
    """A RoBERTa byte-level BPE tokeniser (``tokenizers.Tokenizer``) from ``vocab.json`` (token
    -> id) and ``merges.txt`` (an optional ``#version`` line, then one ``left right`` merge a
    line, by priority).

    Mirrors HF ``convert_slow_tokenizer.RobertaConverter``: BPE without continuing-subword
    prefix or end-of-word suffix; ``ByteLevel`` pre-tokeniser with ``add_prefix_space=False``
    (RobertaTokenizer's default); ``RobertaProcessing``: ``<s> A </s>`` and
    ``<s> A </s></s> B </s>``, token types all 0; padding with ``<pad>`` (id 1 in roberta-base).
    """
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    text = _read_text(vocab_json, "BPE vocabulary")
    try:
        vocab = json.loads(text)
    except json.JSONDecodeError as e:
        raise errors.DataError(
            f"{vocab_json}: not valid JSON ({e.msg}, line {e.lineno} column {e.colno})"
        ) from None
    if not isinstance(vocab, dict) or not all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
        for k, v in vocab.items()
    ):
        raise errors.DataError(f"{vocab_json}: expected a JSON object of token -> integer id")
    _need(vocab, ["<s>", "</s>", "<pad>"], vocab_json, "vocab.json")
    merges: list[tuple[str, str]] = []
    for number, line in enumerate(_read_text(merges_txt, "BPE merges").split("\n"), start=1):
        line = line.rstrip("\r")
        if (number == 1 and line.startswith("#version")) or not line:
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not all(parts):
            raise errors.DataError(
                f"{merges_txt}: line {number}: {line!r} is not a merge 'left right'"
            )
        for part in (parts[0], parts[1], parts[0] + parts[1]):
            if part not in vocab:
                raise errors.DataError(
                    f"{merges_txt}: line {number}: merge {line!r} uses {part!r}, which is not "
                    f"in {vocab_json}; are the two files from the same checkpoint?"
                )
        merges.append((parts[0], parts[1]))
    try:
        model = models.BPE(
            vocab,
            merges,
            dropout=None,
            continuing_subword_prefix="",
            end_of_word_suffix="",
            fuse_unk=False,
        )
    except Exception as e:  # the Rust builder's error types are not exported
        raise errors.DataError(f"{vocab_json}, {merges_txt}: not a valid BPE model ({e})") from None
    tok = Tokenizer(model)
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.post_processor = processors.RobertaProcessing(
        ("</s>", vocab["</s>"]), ("<s>", vocab["<s>"]), trim_offsets=True, add_prefix_space=False
    )
    tok.enable_padding(pad_id=vocab["<pad>"], pad_token="<pad>")
    return tok


def encode(split: GlueSplit, tokenizer, max_length: int = 128) -> dict[str, np.ndarray]:
    """Tokenise a split as HF ``run_glue`` does (``padding="max_length", truncation=True``):
    pairs truncated longest-first (the longer text loses tokens first; when both must be cut
    they share ``max_length`` minus the special tokens evenly, the longer one keeping the odd
    token, per ``tokenizers``' LongestFirst strategy), then padded to ``max_length``.

    tokenizer: a ``tokenizers.Tokenizer`` with padding configured (`wordpiece_tokenizer`,
    `byte_level_bpe_tokenizer`); it is copied, not changed. Returns int32 arrays ``input_ids``,
    ``attention_mask``, ``token_type_ids``, each ``[len(split), max_length]``.
    """
    from tokenizers import Tokenizer

    if tokenizer.padding is None:
        raise ValueError("tokenizer has no padding token configured; call enable_padding first")
    if max_length < 4:
        raise ValueError(f"max_length must leave room for the special tokens, got {max_length}")
    tok = Tokenizer.from_str(tokenizer.to_str())
    pad = tokenizer.padding
    tok.enable_truncation(max_length, strategy="longest_first")
    tok.enable_padding(
        pad_id=pad["pad_id"],
        pad_token=pad["pad_token"],
        pad_type_id=pad["pad_type_id"],
        length=max_length,
    )
    if split.text_b is None:
        inputs = split.text_a
    else:
        inputs = list(zip(split.text_a, split.text_b, strict=True))
    encodings = tok.encode_batch(inputs) if inputs else []
    n = len(encodings)
    out = {
        "input_ids": np.zeros((n, max_length), np.int32),
        "attention_mask": np.zeros((n, max_length), np.int32),
        "token_type_ids": np.zeros((n, max_length), np.int32),
    }
    for i, e in enumerate(encodings):
        out["input_ids"][i] = e.ids
        out["attention_mask"][i] = e.attention_mask
        out["token_type_ids"][i] = e.type_ids
    return out
