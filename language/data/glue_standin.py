"""A mini-GLUE stand-in built offline from the Python documentation: NOT GLUE.

    standin = glue_standin.build("cola", seed=0, sizes=dict(train=4000, val=500, test=500))
    standin.splits["train"]                  # language.data.glue.GlueSplit, source "standin"
    tok = standin.tokenizer("bert")          # WordPiece from the stand-in's training text
    batch = glue.encode(standin.splits["val"], tok, max_length=64)

Used by the ``language.glue`` task at ``source=standin`` (the ``cpu`` and ``smoke`` presets of
``configs/language/glue.py``) so that the GLUE pipeline (pairs, token types, padding, heads,
metrics) trains end to end without a download. The numbers it gives say whether the pipeline
learns; they say nothing about GLUE.

Text: the reST sources of the Python 3 documentation (Debian ``python3.11-doc``,
``/usr/share/doc/python3.11/html/_sources/**/*.rst.txt``, the folder the byte-level stand-in of
`language.data.standin` reads; `standin.find_standin_dir`). Each document is cut into sections
(at reST headings: a title line underlined, and optionally overlined, by one repeated
punctuation character) and paragraphs (blocks between blank lines); prose paragraphs are kept,
indented ones included (the bodies of ``.. function::`` and similar directives), while literal
blocks (after a paragraph ending in ``::``, and under ``code-block``, ``doctest``, ...),
directive lines, comments, tables, lists, field lists and ``>>>`` lines are dropped. Inline
markup is reduced to the text Sphinx shows (``:func:`~os.path.join``` -> ``join``,
````x```` -> ``x``, ```text <url>`_`` -> ``text``, emphasis marks dropped). Paragraphs are
split into sentences after ``.``, ``!`` or ``?`` followed by a space and a capital letter, an
opening quote or bracket; a sentence is kept when it has 4 to 40 words, ends with ``.``,
``!`` or ``?``, has at least 3 words of letters and no markup left. A paragraph's kept
sentences that were consecutive in the text stay neighbours (a dropped sentence breaks the
adjacency). The parse is cached (`attnbench.data.cache.build_once`) under
``<data root>/language/glue-standin-docs-<hash>``, keyed by the folder and its files' names
and sizes, and so is the tokeniser's vocabulary (``glue-standin-vocab-<hash>``, keyed by the
same and the seed and size).

Splits: BY DOCUMENT, so that no document gives text to two splits. Per class of document
(under ``library/`` or not) the documents in a seeded order fill val, then test, each until it
holds ``VAL_FRACTION`` / ``TEST_FRACTION`` (10% each) of that class's sentences; the rest is
train. Examples are then drawn from each split's own documents, with replacement, by a numpy
PCG64 generator seeded by (seed, task kind, GLUE task, split): the same seed gives the same
examples.

How the labels are made (the honest part: they are properties of where a text comes from, or of
a corruption applied to it, never human judgements), one kind per GLUE task, with the GLUE
task's number of labels and text fields:

- ``acceptability`` (for CoLA): one sentence; label "acceptable" for a sentence as written,
  "unacceptable" for one whose words were put in another random order, its final punctuation
  mark kept last (redrawn until the text changes). Half and half.
- ``genre`` (for SST-2): one sentence; label "positive" for a sentence from the standard-library
  reference (``library/``), "negative" from any other document (tutorial, howtos, FAQ, C API,
  what's new, ...). Half and half (the class is drawn first).
- ``adjacent`` (for MRPC, QQP, RTE, WNLI): two sentences; the positive label of the task
  ("equivalent", "duplicate", "entailment") when the second is the sentence that follows the
  first in the same paragraph, the negative one when the second comes from another document.
  Half and half.
- ``section`` (for QNLI): a section heading and a sentence; "entailment" when the sentence is
  from that section, "not_entailment" when it is from another document. Half and half.
- ``nli3`` (for MNLI, matched and mismatched): two sentences; "entailment" when the second
  follows the first in its paragraph, "neutral" when it is from the same document but another
  paragraph, "contradiction" when it is from another document. A third each. ``mnli-mm`` reads
  a second, independent draw from the same test documents: there is no genre shift here.
- ``overlap`` (for STS-B): two sentences; the second is the first with m of its n words (n >= 6,
  m uniform in 0..n) replaced by words of a sentence from another document; the score is
  5 (1 - m / n) in [0, 5], float32.

Every kind can be learnt from the text (word order, vocabulary of a document genre, topic
overlap of neighbouring sentences, word overlap), none is trivial for a small encoder.

Tokeniser (`StandIn.tokenizer`): a WordPiece vocabulary built from the stand-in's own training
text (every sentence and heading of the train documents), with the `tokenizers` package's
`BertNormalizer` (lowercasing, accents stripped) and `BertPreTokenizer` and its WordPiece model;
the vocabulary is chosen here, not by ``tokenizers.trainers.WordPieceTrainer``, whose result
changes between runs (its continuing-subword ids follow hash-map order, which breaks ties
between merges differently: huggingface/tokenizers issue #1794). Deliberate difference from a
trained WordPiece, for determinism: the vocabulary is the special tokens ``[PAD] [UNK] [CLS]
[SEP] [MASK]`` (ids 0..4), every character seen at least twice and its ``##`` continuation form,
then the most frequent whole words (ties by the word) up to ``vocab_size``; a word outside it
is split greedily into the longest vocabulary prefix and ``##`` pieces, as WordPiece does.
Layouts: "bert" (``[CLS] A [SEP] B [SEP]``, token types 0 | 1) and "roberta" (``[CLS] A [SEP]
[SEP] B [SEP]``, token types all 0), padding with ``[PAD]``.

A missing documentation folder is a `attnbench.errors.DataError` saying how to install it; bad
sizes or an unknown task a `ConfigError` / `UnknownNameError` naming them.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import pathlib
import re

import numpy as np

from attnbench import errors
from attnbench.data import cache
from language.data import glue, standin

__all__ = [
    "KINDS",
    "KIND_OF_TASK",
    "VAL_FRACTION",
    "TEST_FRACTION",
    "SPECIAL_TOKENS",
    "parse_document",
    "clean_inline",
    "split_sentences",
    "StandIn",
    "build",
    "build_vocab",
    "wordpiece",
]

# GLUE task -> the stand-in kind that takes its place (module docstring)
KIND_OF_TASK = {
    "cola": "acceptability",
    "sst2": "genre",
    "mrpc": "adjacent",
    "qqp": "adjacent",
    "stsb": "overlap",
    "mnli": "nli3",
    "qnli": "section",
    "rte": "adjacent",
    "wnli": "adjacent",
}
KINDS = ("acceptability", "genre", "adjacent", "section", "nli3", "overlap")
VAL_FRACTION = TEST_FRACTION = 0.1
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
_POSITIVE = ("acceptable", "positive", "equivalent", "duplicate", "entailment")
_VERSION = 1  # of the parse (bump when parse_document changes: the cache key holds it)
_SPLIT_IDS = {"train": 0, "val": 1, "test": 2, "test_mismatched": 3}

_CODE_DIRECTIVES = frozenset(
    {
        "code-block",
        "code",
        "sourcecode",
        "doctest",
        "testcode",
        "testoutput",
        "testsetup",
        "testcleanup",
        "productionlist",
        "literalinclude",
        "parsed-literal",
        "highlight",
        "raw",
        "csv-table",
        "list-table",
        "table",
        "math",
        "grammar-snippet",
        "toctree",
        "only",
        "include",
        "image",
        "figure",
    }
)
_UNDERLINE = re.compile(r"^([=\-~^\"'`*+#<>:._])\1{2,}$")
_DIRECTIVE = re.compile(r"^\.\.\s+([\w:.+-]+)::")
_ROLE = re.compile(r":[\w:.+-]+:`([^`]*)`")
_LITERAL = re.compile(r"``([^`]*)``")
_LINK = re.compile(r"`([^`<]*?)\s*(?:<[^>`]*>)?`__?")
_INTERPRETED = re.compile(r"`([^`]*)`")
_EMPHASIS = re.compile(r"(\*\*|\*)(\S(?:.*?\S)?)\1")
_FOOTNOTE = re.compile(r"\s*\[#?[\w-]*\]_")
_SUBSTITUTION = re.compile(r"\|([^|\s][^|]*)\|_?")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(\[])")
_LIST_ITEM = re.compile(r"^([*+\-\u2022]|#\.|\d+\.|[a-z]\.|\(\d+\))\s")


# --------------------------------------------------------------------------------- parsing


def clean_inline(text: str) -> str:
    """reST inline markup reduced to its text (module docstring), whitespace collapsed."""
    text = text.replace("\\ ", "")

    def role(m):  # Sphinx shows "title" of "title <target>", and "c" of "~a.b.c"
        inner = m.group(1)
        target = re.match(r"^(.*?)\s*<[^>]*>$", inner)
        inner = target.group(1) if target else inner
        if inner.startswith("~"):
            inner = inner[1:].rsplit(".", 1)[-1]
        return inner.lstrip("!")

    text = _ROLE.sub(role, text)
    text = _LITERAL.sub(r"\1", text)
    text = _FOOTNOTE.sub("", text)
    text = _LINK.sub(r"\1", text)
    text = _INTERPRETED.sub(r"\1", text)
    text = _EMPHASIS.sub(r"\2", text)
    text = _SUBSTITUTION.sub(r"\1", text)
    text = text.replace("\\", "").replace(" --- ", " - ").replace("---", "-")
    return " ".join(text.split())


def split_sentences(paragraph: str) -> list[str]:
    """The kept sentences of a cleaned paragraph (module docstring), as runs of neighbours:
    a list of runs, each a list of consecutive kept sentences."""
    runs: list[list[str]] = [[]]
    for sentence in _SENTENCE_END.split(paragraph):
        sentence = sentence.strip()
        words = sentence.split()
        letters = sum(1 for w in words if re.fullmatch(r"[A-Za-z][A-Za-z'-]*[,;:.!?)]*", w))
        good = (
            4 <= len(words) <= 40
            and sentence[-1] in ".!?"
            and letters >= 3
            and not any(c in sentence for c in "`|*_")
            and not sentence.startswith((">>>", "..."))
        )
        if good:
            runs[-1].append(sentence)
        elif runs[-1]:
            runs.append([])
    return [r for r in runs if r]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _heading(lines: list[str]) -> str | None:
    """The title of a heading block (title + underline, or overline + title + underline)."""
    s = [ln.strip() for ln in lines]
    if len(s) == 2 and _UNDERLINE.match(s[1]) and s[0] and len(s[1]) >= len(s[0]):
        return s[0]
    if len(s) == 3 and _UNDERLINE.match(s[0]) and _UNDERLINE.match(s[2]) and s[0][0] == s[2][0]:
        return s[1]
    return None


def parse_document(text: str) -> list[dict]:
    """A reST document as sections `[{"heading": str, "paragraphs": [[sentence, ...], ...]}]`
    (module docstring): the text before the first heading is a section with heading ""."""
    sections = [{"heading": "", "paragraphs": []}]
    blocks: list[list[str]] = [[]]
    for line in text.replace("\t", "    ").splitlines():
        if line.strip():
            blocks[-1].append(line.rstrip())
        elif blocks[-1]:
            blocks.append([])
    code_indent = None  # inside a literal block introduced at this indentation
    for block in (b for b in blocks if b):
        indent = _indent(block[0])
        if code_indent is not None:
            if indent > code_indent:
                continue
            code_indent = None
        first = block[0].strip()
        title = _heading(block)
        if title is not None:
            heading = clean_inline(title)
            if len(heading.split()) > 12 or any(c in heading for c in "`|"):
                heading = ""  # not a usable title
            sections.append({"heading": heading, "paragraphs": []})
            continue
        if first.startswith(".."):
            directive = _DIRECTIVE.match(first)
            if directive and directive.group(1) in _CODE_DIRECTIVES:
                code_indent = indent
            elif first.rstrip().endswith("::") and not directive:
                code_indent = indent
            continue
        if first.startswith((">>>", "...", "|", "+-", "+=", ":", "=")) or _LIST_ITEM.match(first):
            if block[-1].rstrip().endswith("::"):
                code_indent = indent
            continue
        if any(_indent(ln) < indent for ln in block[1:]):
            continue  # a definition list or similar: not one paragraph
        joined = " ".join(ln.strip() for ln in block)
        if joined.endswith("::"):
            code_indent = indent
            joined = joined[:-2].rstrip() + (":" if not joined[:-2].endswith(" ") else "")
        runs = split_sentences(clean_inline(joined))
        sections[-1]["paragraphs"].extend(runs)
    return [s for s in sections if s["paragraphs"]]


def _cache_base(cache_root) -> pathlib.Path:
    return (cache.data_root() if cache_root is None else pathlib.Path(cache_root)) / "language"


def _read_cache(path: pathlib.Path):
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise errors.DataError(f"{path}: unreadable stand-in cache ({e}); delete it") from None


def _parsed_corpus(source_dir, cache_root) -> tuple[pathlib.Path, list[dict], dict]:
    """Every document of the documentation folder parsed (cached), in path order, and the
    cache's spec (what the parse depends on)."""
    root = standin.find_standin_dir(source_dir).resolve()
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.rst.txt") if p.is_file())
    if len(files) < 10:
        raise errors.DataError(f"{root}: {len(files)} *.rst.txt documents; need at least 10")
    sizes = [(f, (root / f).stat().st_size) for f in files]
    spec = dict(version=_VERSION, source_dir=str(root), corpus=cache.spec_hash({"files": sizes}))

    def make(tmp: pathlib.Path) -> None:
        docs = []
        for name in files:
            try:
                text = (root / name).read_text(encoding="utf-8", errors="replace")
            except OSError as e:
                raise errors.DataError(f"{root / name}: cannot read ({e})") from None
            sections = parse_document(text)
            if sections:
                docs.append({"path": name, "sections": sections})
        (tmp / "docs.json").write_text(json.dumps(docs))

    directory = cache.build_once(_cache_base(cache_root), "glue-standin-docs", spec, make)
    return root, _read_cache(directory / "docs.json"), spec


def _cached_vocab(texts, vocab_size: int, spec: dict, cache_root) -> dict[str, int]:
    """`build_vocab` of the train documents' text, cached beside the parse (it is the slow
    part of a build: ~2 s for the whole documentation)."""

    def make(tmp: pathlib.Path) -> None:
        (tmp / "vocab.json").write_text(json.dumps(list(build_vocab(texts(), vocab_size))))

    directory = cache.build_once(_cache_base(cache_root), "glue-standin-vocab", spec, make)
    tokens = _read_cache(directory / "vocab.json")
    return {t: i for i, t in enumerate(tokens)}


# ------------------------------------------------------------------------------- the splits


@dataclasses.dataclass
class _Pool:
    """One split's sentences with their document, section and paragraph, for drawing."""

    text: list[str]
    doc: np.ndarray  # [S] document index (into the corpus)
    paragraph: np.ndarray  # [S] paragraph id, unique over the split
    library: np.ndarray  # [S] bool: the document is under library/
    successors: np.ndarray  # sentence indices i whose i + 1 is its neighbour in a paragraph
    sections: list[tuple[str, np.ndarray]]  # (heading, sentence indices), headed sections only
    by_doc: dict[int, np.ndarray]  # document -> its sentence indices
    multi: np.ndarray  # the successors whose document has more than one paragraph

    @classmethod
    def of(cls, docs: list[dict], indices: list[int]) -> _Pool:
        text, doc, par, lib, sections = [], [], [], [], []
        pid = 0
        for d in indices:
            is_lib = docs[d]["path"].startswith("library/")
            for sec in docs[d]["sections"]:
                start = len(text)
                for sentences in sec["paragraphs"]:
                    text.extend(sentences)
                    doc.extend([d] * len(sentences))
                    par.extend([pid] * len(sentences))
                    lib.extend([is_lib] * len(sentences))
                    pid += 1
                if sec["heading"] and len(text) > start:
                    sections.append((sec["heading"], np.arange(start, len(text))))
        doc_a, par_a = np.asarray(doc, np.int64), np.asarray(par, np.int64)
        successors = np.flatnonzero(par_a[:-1] == par_a[1:])
        by_doc = {int(d): np.flatnonzero(doc_a == d) for d in np.unique(doc_a)}
        several = {d for d, idx in by_doc.items() if par_a[idx[0]] != par_a[idx[-1]]}
        multi = np.asarray([i for i in successors.tolist() if int(doc_a[i]) in several], np.int64)
        lib_a = np.asarray(lib, bool)
        return cls(text, doc_a, par_a, lib_a, successors, sections, by_doc, multi)


def _assign(docs: list[dict], seed: int) -> dict[str, list[int]]:
    """Documents of train, val and test (module docstring: by class, seeded, by sentences)."""
    rng = np.random.default_rng([seed, 7])
    out: dict[str, list[int]] = {"train": [], "val": [], "test": []}
    for is_lib in (True, False):
        members = [i for i, d in enumerate(docs) if d["path"].startswith("library/") == is_lib]
        counts = {
            i: sum(len(p) for s in docs[i]["sections"] for p in s["paragraphs"]) for i in members
        }
        total = sum(counts.values())
        quota = {"val": VAL_FRACTION * total, "test": TEST_FRACTION * total}
        held = {"val": 0, "test": 0}
        for j in rng.permutation(len(members)).tolist():
            i = members[j]
            split = next((s for s in ("val", "test") if held[s] < quota[s]), "train")
            if split != "train":
                held[split] += counts[i]
            out[split].append(i)
    return {k: sorted(v) for k, v in out.items()}


def _label_index(task: glue.GlueTask, positive: bool) -> int:
    """The task's index of the positive relation ("equivalent", "entailment", ...) or of the
    other label of a binary task."""
    pos = next(i for i, n in enumerate(task.label_names) if n in _POSITIVE)
    return pos if positive else 1 - pos


def _other_doc(pool: _Pool, rng, doc: int) -> int:
    """A sentence of another document than `doc`."""
    while True:
        j = int(rng.integers(len(pool.text)))
        if pool.doc[j] != doc:
            return j


def _shuffle_words(sentence: str, rng) -> str | None:
    """The sentence's words in another random order, its final punctuation mark kept last (so
    that it does not give the corruption away); None when no other order differs."""
    words = sentence[:-1].split()
    for _ in range(10):
        order = [words[i] for i in rng.permutation(len(words))]
        if order != words:
            return " ".join(order) + sentence[-1]
    return None


def _draw(kind: str, task: glue.GlueTask, pool: _Pool, n: int, rng):
    """`n` examples of `kind` from `pool`: (text_a, text_b or None, labels)."""
    a: list[str] = []
    b: list[str] = []
    labels: list[float] = []
    long = [i for i, t in enumerate(pool.text) if len(t.split()) >= 6]
    lib = np.flatnonzero(pool.library)
    other = np.flatnonzero(~pool.library)
    while len(a) < n:
        if kind == "acceptability":
            s = pool.text[long[int(rng.integers(len(long)))]]
            keep = bool(rng.random() < 0.5)
            text = s if keep else _shuffle_words(s, rng)
            if text is None:
                continue
            a.append(text)
            labels.append(_label_index(task, keep))
        elif kind == "genre":
            positive = bool(rng.random() < 0.5)
            among = lib if positive else other
            a.append(pool.text[int(among[int(rng.integers(len(among)))])])
            labels.append(_label_index(task, positive))
        elif kind in ("adjacent", "nli3"):
            anchors = pool.successors if kind == "adjacent" else pool.multi
            i = int(anchors[int(rng.integers(len(anchors)))])
            doc = int(pool.doc[i])
            if kind == "adjacent":
                relation = "next" if rng.random() < 0.5 else "other"
            else:
                relation = ("next", "same_doc", "other")[int(rng.integers(3))]
            if relation == "next":
                j = i + 1
            elif relation == "other":
                j = _other_doc(pool, rng, doc)
            else:
                same = pool.by_doc[doc]
                same = same[pool.paragraph[same] != pool.paragraph[i]]
                j = int(same[int(rng.integers(len(same)))])
            a.append(pool.text[i])
            b.append(pool.text[j])
            if kind == "adjacent":
                labels.append(_label_index(task, relation == "next"))
            else:
                name = {"next": "entailment", "same_doc": "neutral", "other": "contradiction"}
                labels.append(task.label_names.index(name[relation]))
        elif kind == "section":
            heading, members = pool.sections[int(rng.integers(len(pool.sections)))]
            positive = bool(rng.random() < 0.5)
            if positive:
                j = int(members[int(rng.integers(len(members)))])
            else:
                j = _other_doc(pool, rng, int(pool.doc[int(members[0])]))
            a.append(heading)
            b.append(pool.text[j])
            labels.append(_label_index(task, positive))
        elif kind == "overlap":
            i = long[int(rng.integers(len(long)))]
            words = pool.text[i].split()
            donor = pool.text[_other_doc(pool, rng, int(pool.doc[i]))].split()
            m = int(rng.integers(0, len(words) + 1))
            changed = list(words)
            for pos in rng.choice(len(words), m, replace=False).tolist():
                changed[pos] = donor[int(rng.integers(len(donor)))]
            a.append(pool.text[i])
            b.append(" ".join(changed))
            labels.append(5.0 * (1.0 - m / len(words)))
        else:  # pragma: no cover (KINDS is checked by build)
            raise AssertionError(kind)
    dtype = np.float32 if kind == "overlap" else np.int64
    return a, (b if task.is_pair else None), np.asarray(labels, dtype)


# ---------------------------------------------------------------------------- the tokeniser


def _normalizer():
    from tokenizers import normalizers

    return normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True
    )


def build_vocab(texts, vocab_size: int) -> dict[str, int]:
    """The stand-in's WordPiece vocabulary (module docstring) of the texts, at most
    `vocab_size` tokens: specials, characters seen twice and their ``##`` forms, then whole
    words by frequency (ties by the word)."""
    from tokenizers import pre_tokenizers

    words = collections.Counter()
    pre = pre_tokenizers.BertPreTokenizer()
    normalizer = _normalizer()
    for start in range(0, len(texts), 2000):
        chunk = normalizer.normalize_str("\n".join(texts[start : start + 2000]))
        words.update(w for w, _ in pre.pre_tokenize_str(chunk))
    chars = collections.Counter()
    for w, c in words.items():
        for ch in w:
            chars[ch] += c
    alphabet = sorted((ch for ch, c in chars.items() if c >= 2), key=lambda ch: (-chars[ch], ch))
    room = vocab_size - len(SPECIAL_TOKENS)
    alphabet = alphabet[: max(room // 2, 0)]
    tokens = list(SPECIAL_TOKENS) + alphabet + ["##" + ch for ch in alphabet]
    known = set(tokens)
    for w, _ in sorted(words.items(), key=lambda kv: (-kv[1], kv[0])):
        if len(tokens) >= vocab_size:
            break
        if len(w) > 1 and w not in known:
            tokens.append(w)
            known.add(w)
    return {t: i for i, t in enumerate(tokens)}


def wordpiece(vocab: dict[str, int], layout: str = "bert"):
    """A ``tokenizers.Tokenizer`` over `vocab` (module docstring: BERT normaliser and
    pre-tokeniser, WordPiece, the "bert" or "roberta" pair layout, padding with [PAD])."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    if layout not in ("bert", "roberta"):
        raise ValueError(f"layout must be 'bert' or 'roberta', got {layout!r}")
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = _normalizer()
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    pair = (
        "[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1"
        if layout == "bert"
        else "[CLS]:0 $A:0 [SEP]:0 [SEP]:0 $B:0 [SEP]:0"
    )
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0",
        pair=pair,
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tok.enable_padding(pad_id=vocab["[PAD]"], pad_token="[PAD]")
    return tok


# -------------------------------------------------------------------------------- the API


@dataclasses.dataclass
class StandIn:
    """The stand-in of one GLUE task: `splits` ("train", "val", "test", and for mnli also
    "test_mismatched": a second draw from the test documents), each a `glue.GlueSplit` with
    source "standin"; `vocab` the WordPiece vocabulary; `description` for run summaries."""

    task: str
    kind: str
    splits: dict[str, glue.GlueSplit]
    vocab: dict[str, int]
    description: dict

    def tokenizer(self, layout: str = "bert"):
        """The stand-in's WordPiece tokeniser (`wordpiece`) in the "bert" or "roberta" layout."""
        return wordpiece(self.vocab, layout)


def build(
    task: str,
    *,
    seed: int = 0,
    sizes: dict | None = None,
    vocab_size: int = 4000,
    source_dir: str | os.PathLike | None = None,
    cache_root: str | os.PathLike | None = None,
) -> StandIn:
    """The stand-in of GLUE task `task` (a `glue.TASKS` name).

    sizes: examples per split, {"train": ..., "val": ..., "test": ...} (default 4000 / 500 /
      500); seed: the document split and every draw; vocab_size: the WordPiece vocabulary's
      size at most; source_dir: the documentation folder (default: `standin.STANDIN_DIRS`);
      cache_root: where the parse is cached (default: the data root).
    """
    if task not in glue.TASKS:
        raise errors.UnknownNameError(
            f"unknown GLUE task {task!r} for the stand-in; known: {', '.join(glue.TASKS)}"
        )
    sizes = {"train": 4000, "val": 500, "test": 500, **(sizes or {})}
    bad = {k: v for k, v in sizes.items() if k not in ("train", "val", "test") or int(v) < 1}
    if bad:
        raise errors.ConfigError(
            f"stand-in sizes {bad}: need train, val and test, each at least 1 example"
        )
    if vocab_size < len(SPECIAL_TOKENS) + 2:
        raise errors.ConfigError(f"config.data.standin_vocab={vocab_size}: too small")
    t = glue.TASKS[task]
    kind = KIND_OF_TASK[task]
    root, docs, corpus = _parsed_corpus(source_dir, cache_root)
    assignment = _assign(docs, int(seed))
    pools = {name: _Pool.of(docs, idx) for name, idx in assignment.items()}
    for name, pool in pools.items():
        if len(pool.multi) < 2 or not pool.sections or pool.library.all() or not pool.library.any():
            raise errors.DataError(
                f"{root}: the stand-in's {name} documents are too few to draw {kind} examples; "
                "is it the whole Python documentation?"
            )
    kind_id, task_id = KINDS.index(kind), list(glue.TASKS).index(task)
    splits = {}
    draws = [(s, s) for s in ("train", "val", "test")]
    if task == "mnli":
        draws.append(("test_mismatched", "test"))
    for name, pool_name in draws:
        # the task in the seed too: tasks of one kind (MRPC, QQP, RTE) get their own draws
        rng = np.random.default_rng([int(seed), kind_id, task_id, _SPLIT_IDS[name]])
        count = int(sizes[pool_name])
        a, b, labels = _draw(kind, t, pools[pool_name], count, rng)
        splits[name] = glue.GlueSplit(
            task=task,
            split=name,
            text_a=a,
            text_b=b,
            labels=labels,
            source="standin",
            path=str(root),
        )
    vocab = _cached_vocab(
        lambda: pools["train"].text + [h for h, _ in pools["train"].sections],
        int(vocab_size),
        dict(
            corpus, seed=int(seed), vocab_size=int(vocab_size), split=[VAL_FRACTION, TEST_FRACTION]
        ),
        cache_root,
    )
    description = dict(
        dataset=f"GLUE stand-in '{kind}' for {task}: Python documentation sentences",
        standin_for=(
            f"GLUE {task} ({', '.join(t.label_names) or 'similarity score 0-5'}); NOT GLUE: "
            f"labels are made from where the text comes from (language/data/glue_standin.py, "
            f"kind {kind!r})"
        ),
        package=standin.STANDIN_PACKAGE,
        source_dir=str(root),
        split=(
            f"by document, seeded ({seed}): val and test ~{VAL_FRACTION:.0%} / "
            f"{TEST_FRACTION:.0%} of each document class's sentences"
        ),
        documents={k: len(v) for k, v in assignment.items()},
        sentences={k: len(p.text) for k, p in pools.items()},
        examples={k: len(s) for k, s in splits.items()},
        vocabulary=f"WordPiece, {len(vocab)} tokens from the train documents' text",
    )
    return StandIn(task=task, kind=kind, splits=splits, vocab=vocab, description=description)
