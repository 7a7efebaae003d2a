"""GLUE readers (original TSV release, nyu-mll/glue parquet) and sentence-pair encoding.

Every file is written here in its official layout (headers from download_glue_data.py, the HF
`datasets` GLUE script and HF transformers' GLUE processors)."""

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from attnbench.errors import DataError, UnknownNameError
from language.data import glue

MNLI_COLS = (
    "index promptID pairID genre sentence1_binary_parse sentence2_binary_parse sentence1_parse "
    "sentence2_parse sentence1 sentence2"
).split()


def _write(path, rows, bom=False):
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join("\t".join(r) + "\n" for r in rows)
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))


def _mnli_row(i, s1, s2, labels):
    return [str(i), "31193", f"{i}n", "government", "( x )", "( y )", "(ROOT x)", "(ROOT y)",
            s1, s2, *labels]  # fmt: skip


@pytest.fixture
def glue_tsv(tmp_path):
    """A miniature glue_data/ folder in the download script's layout, every task."""
    r = tmp_path / "glue_data"
    # CoLA train/dev: no header; source, label, original mark, sentence. A lone quote character.
    _write(
        r / "CoLA/train.tsv",
        [
            ["gj04", "1", "", "Our friends won't buy this analysis."],
            ["gj04", "0", "*", 'He said "hi.'],
            ["clc95", "1", "", "One more pseudo generalization."],
        ],
    )
    _write(r / "CoLA/dev.tsv", [["gj04", "0", "*", "They drank the pub."]])
    _write(r / "CoLA/test.tsv", [["index", "sentence"], ["0", 'Bill "whistled" past.']])
    _write(
        r / "SST-2/train.tsv",
        [["sentence", "label"], ["hide new secretions ", "0"], ['a "great" film ', "1"]],
    )
    _write(r / "SST-2/dev.tsv", [["sentence", "label"], ["it 's charming .", "1"]])
    _write(r / "SST-2/test.tsv", [["index", "sentence"], ["0", "uneasy mishmash ."]])
    mrpc = ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"]
    _write(
        r / "MRPC/train.tsv",
        [
            mrpc,
            ["1", "702876", "702977", "Amrozi accused.", "He said."],
            ["0", "2108705", "2108831", "Yucaipa owned.", "Not so."],
        ],
        bom=True,
    )  # the header of msr_paraphrase_train.txt starts with a UTF-8 BOM
    _write(r / "MRPC/dev.tsv", [mrpc, ["1", "1355540", "1355592", "He is.", "He was."]], bom=True)
    _write(r / "MRPC/test.tsv", [["index", *mrpc[1:]], ["0", "1089874", "1089925", "A.", "B."]])
    qqp = ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"]
    _write(
        r / "QQP/train.tsv",
        [
            qqp,
            ["133273", "213221", "213222", "How is it?", "Why?", "0"],
            ["402555", "536040", "536041", 'What is "x"?', "Is x?", "1"],
        ],
    )
    _write(r / "QQP/dev.tsv", [qqp, ["201359", "303345", "303346", "Why a?", "Why b?", "1"]])
    _write(r / "QQP/test.tsv", [["id", "question1", "question2"], ["0", "Q one?", "Q two?"]])
    sts = "index genre filename year old_index source1 source2 sentence1 sentence2".split()
    _write(
        r / "STS-B/train.tsv",
        [
            [*sts, "score"],
            [
                "0",
                "main-captions",
                "MSRvid",
                "2012test",
                "0001",
                "none",
                "none",
                "A plane is taking off.",
                "An air plane is.",
                "5.000",
            ],
            ["1", "main-news", "a", "b", "c", "d", "e", "x", "y", "0.5"],
        ],
    )
    _write(
        r / "STS-B/dev.tsv",
        [[*sts, "score"], ["0", "g", "f", "y", "o", "s", "t", "A man.", "A man!", "3.8"]],
    )
    _write(r / "STS-B/test.tsv", [sts, ["0", "g", "f", "y", "o", "s", "t", "A girl.", "Girl."]])
    _write(
        r / "MNLI/train.tsv",
        [
            [*MNLI_COLS, "label1", "gold_label"],
            _mnli_row(0, "Conceptually cream.", "Product.", ["neutral"] * 2),
            _mnli_row(1, "you know", "You lose.", ["entailment"] * 2),
            _mnli_row(2, "One of", "A member.", ["contradiction"] * 2),
        ],
    )
    dev = [*MNLI_COLS, "label1", "label2", "label3", "label4", "label5", "gold_label"]
    _write(
        r / "MNLI/dev_matched.tsv",
        [dev, _mnli_row(0, "The new rights.", "Everyone.", ["neutral"] * 5 + ["neutral"])],
    )
    _write(
        r / "MNLI/dev_mismatched.tsv",
        [
            dev,
            _mnli_row(0, "Your gift.", "Hundreds.", ["contradiction"] * 6),
            _mnli_row(1, "yes now", "Now.", ["entailment"] * 6),
        ],
    )
    _write(r / "MNLI/test_matched.tsv", [MNLI_COLS, _mnli_row(0, "Hierbas.", "Hierbas is.", [])])
    _write(r / "MNLI/test_mismatched.tsv", [MNLI_COLS, _mnli_row(0, "What?", "The?", [])])
    _write(
        r / "QNLI/train.tsv",
        [
            ["index", "question", "sentence", "label"],
            ["0", "When?", "In 1996.", "entailment"],
            ["1", "Who?", "Nobody knows.", "not_entailment"],
        ],
    )
    _write(
        r / "QNLI/dev.tsv",
        [["index", "question", "sentence", "label"], ["0", "What?", "That.", "not_entailment"]],
    )
    _write(r / "QNLI/test.tsv", [["index", "question", "sentence"], ["0", "How?", "So."]])
    for task in ("RTE", "WNLI"):
        lab = ("not_entailment", "entailment") if task == "RTE" else ("0", "1")
        _write(
            r / f"{task}/train.tsv",
            [
                ["index", "sentence1", "sentence2", "label"],
                ["0", "No weapons.", "Weapons.", lab[0]],
                ["1", "I stuck a pin.", "I stuck it.", lab[1]],
            ],
        )
        _write(
            r / f"{task}/dev.tsv",
            [["index", "sentence1", "sentence2", "label"], ["0", "Dana.", "Dana!", lab[1]]],
        )
        _write(r / f"{task}/test.tsv", [["index", "sentence1", "sentence2"], ["0", "M.", "N."]])
    return r


def test_tsv_every_task(glue_tsv):
    cola = glue.load("cola", "train", glue_tsv)
    assert cola.source == "tsv" and cola.text_b is None
    assert cola.text_a == ["Our friends won't buy this analysis.", 'He said "hi.',
                           "One more pseudo generalization."]  # fmt: skip
    assert cola.labels.dtype == np.int64 and cola.labels.tolist() == [1, 0, 1]
    assert glue.load("cola", "validation", glue_tsv).labels.tolist() == [0]
    test = glue.load("cola", "test", glue_tsv)
    assert test.text_a == ['Bill "whistled" past.'] and test.labels is None
    sst = glue.load("sst2", "train", glue_tsv)
    assert sst.text_a == ["hide new secretions ", 'a "great" film '] and sst.labels.tolist() == [
        0,
        1,
    ]
    assert glue.load("sst2", "test", glue_tsv).text_a == ["uneasy mishmash ."]
    mrpc = glue.load("mrpc", "train", glue_tsv)
    assert mrpc.text_a == ["Amrozi accused.", "Yucaipa owned."]
    assert mrpc.text_b == ["He said.", "Not so."] and mrpc.labels.tolist() == [1, 0]
    assert glue.load("mrpc", "validation", glue_tsv).labels.tolist() == [1]
    assert glue.load("mrpc", "test", glue_tsv).text_b == ["B."]
    qqp = glue.load("qqp", "train", glue_tsv)
    assert qqp.text_a == ["How is it?", 'What is "x"?'] and qqp.labels.tolist() == [0, 1]
    assert glue.load("qqp", "test", glue_tsv).text_a == ["Q one?"]
    sts = glue.load("stsb", "train", glue_tsv)
    assert sts.text_a == ["A plane is taking off.", "x"] and sts.text_b[0] == "An air plane is."
    assert sts.labels.dtype == np.float32 and sts.labels.tolist() == [5.0, 0.5]
    assert glue.load("stsb", "test", glue_tsv).labels is None
    mnli = glue.load("mnli", "train", glue_tsv)
    assert mnli.text_a[0] == "Conceptually cream." and mnli.text_b[2] == "A member."
    assert mnli.labels.tolist() == [1, 0, 2]  # HF: entailment 0, neutral 1, contradiction 2
    assert glue.load("mnli", "validation_matched", glue_tsv).labels.tolist() == [1]
    mm = glue.load("mnli", "validation_mismatched", glue_tsv)
    assert mm.text_a == ["Your gift.", "yes now"] and mm.labels.tolist() == [2, 0]
    assert mm.path.endswith("dev_mismatched.tsv")
    assert glue.load("mnli", "test_mismatched", glue_tsv).text_b == ["The?"]
    qnli = glue.load("qnli", "train", glue_tsv)
    assert qnli.text_a == ["When?", "Who?"] and qnli.labels.tolist() == [0, 1]
    rte = glue.load("rte", "train", glue_tsv)
    assert rte.text_b == ["Weapons.", "I stuck it."] and rte.labels.tolist() == [1, 0]
    wnli = glue.load("wnli", "train", glue_tsv)  # 1 = entailment = HF index 1
    assert wnli.labels.tolist() == [0, 1] and glue.TASKS["wnli"].label_names[1] == "entailment"
    assert glue.load("rte", "test", glue_tsv).labels is None


def test_task_table():
    assert list(glue.TASKS) == ["cola", "sst2", "mrpc", "qqp", "stsb", "mnli", "qnli", "rte",
                                "wnli"]  # fmt: skip
    assert glue.TASKS["mnli"].label_names == ("entailment", "neutral", "contradiction")
    assert glue.TASKS["qnli"].label_names == ("entailment", "not_entailment")
    assert glue.TASKS["stsb"].num_labels == 1 and glue.TASKS["stsb"].is_regression
    assert glue.TASKS["mnli"].splits == ("train", "validation_matched", "validation_mismatched",
                                         "test_matched", "test_mismatched")  # fmt: skip
    assert glue.TASKS["cola"].fields == ("sentence",) and glue.TASKS["qqp"].is_pair


def test_tsv_errors(glue_tsv):
    with open(glue_tsv / "RTE/train.tsv", "a") as f:
        f.write("2\tonly two fields\n")
    with pytest.raises(DataError, match=r"RTE/train\.tsv: line 4 has 2 tab-separated fields, "
                                        r"expected 4") as e:  # fmt: skip
        glue.load("rte", "train", glue_tsv)
    assert str(e.value).count("\n") == 0
    skipped = glue.load("rte", "train", glue_tsv, skip_malformed=True)
    assert skipped.skipped_lines == (4,) and len(skipped) == 2
    # an unknown label
    _write(
        glue_tsv / "QNLI/dev.tsv",
        [
            ["index", "question", "sentence", "label"],
            ["0", "a", "b", "entailment"],
            ["1", "a", "b", "neutral"],
        ],
    )
    with pytest.raises(DataError, match=r"QNLI/dev\.tsv: line 3: unknown qnli label 'neutral'"):
        glue.load("qnli", "validation", glue_tsv)
    _write(glue_tsv / "CoLA/dev.tsv", [["gj04", "2", "", "x"]])
    with pytest.raises(DataError, match=r"CoLA/dev\.tsv: line 1: unknown cola label '2'"):
        glue.load("cola", "validation", glue_tsv)
    _write(
        glue_tsv / "MNLI/dev_matched.tsv",
        [[*MNLI_COLS, "label1", "gold_label"], _mnli_row(0, "a", "b", ["-", "-"])],
    )
    with pytest.raises(DataError, match="line 2: unknown mnli label '-'"):
        glue.load("mnli", "validation_matched", glue_tsv)
    _write(
        glue_tsv / "STS-B/dev.tsv",
        [["index", "sentence1", "sentence2", "score"], ["0", "a", "b", "5.5"]],
    )
    with pytest.raises(DataError, match=r"line 2: score '5\.5'"):
        glue.load("stsb", "validation", glue_tsv)
    # a header without the label column
    _write(glue_tsv / "SST-2/dev.tsv", [["sentence", "polarity"], ["x", "1"]])
    with pytest.raises(DataError, match=r"SST-2/dev\.tsv: header has no column 'label'"):
        glue.load("sst2", "validation", glue_tsv)
    # a blank line inside a file is malformed; trailing blank lines are not
    (glue_tsv / "WNLI/dev.tsv").write_text("index\tsentence1\tsentence2\tlabel\n\n0\ta\tb\t1\n")
    with pytest.raises(DataError, match="line 2 is empty"):
        glue.load("wnli", "validation", glue_tsv)
    (glue_tsv / "WNLI/dev.tsv").write_text("index\tsentence1\tsentence2\tlabel\r\n0\ta\tb\t1\r\n\n")
    assert glue.load("wnli", "validation", glue_tsv).labels.tolist() == [1]
    (glue_tsv / "WNLI/test.tsv").write_bytes(b"index\tsentence1\tsentence2\n0\t\xff\tb\n")
    with pytest.raises(DataError, match=r"WNLI/test\.tsv: line 2 is not valid UTF-8"):
        glue.load("wnli", "test", glue_tsv)


def test_qqp_broken_rows_error_or_counted_skip(glue_tsv):
    """Old QQP copies: a newline inside a question splits one row over two lines."""
    with open(glue_tsv / "QQP/train.tsv", "a", encoding="utf-8") as f:
        f.write("5\t7\t8\tHow do I\n")  # line 4: 4 fields
        f.write('learn "x"?\tWhat?\t0\n')  # line 5: 3 fields
        f.write("9\t10\t11\tOk?\tOk.\t1\n")
    with pytest.raises(DataError, match=r"QQP/train\.tsv: line 4 has 4 tab-separated fields"):
        glue.load("qqp", "train", glue_tsv)
    s = glue.load("qqp", "train", glue_tsv, skip_malformed=True)
    assert s.skipped_lines == (4, 5)
    assert s.text_a[-1] == "Ok?" and s.labels.tolist() == [0, 1, 1]


def test_missing_files_and_names(glue_tsv, tmp_path):
    (glue_tsv / "MRPC/train.tsv").unlink()
    with pytest.raises(DataError, match=r"MRPC/train\.tsv.*msr_paraphrase_train\.txt") as e:
        glue.read_tsv("mrpc", "train", glue_tsv)
    assert "`attnbench-data fetch glue`" in str(e.value)
    with pytest.raises(DataError, match=r"RTE/dev\.tsv: GLUE file not found") as e:
        glue.read_tsv("rte", "validation", tmp_path)
    assert "`attnbench-data fetch glue`" in str(e.value) and "nyu-mll/glue parquet" in str(e.value)
    with pytest.raises(DataError, match=r"MRPC/train\.tsv .*mrpc/train-00000-of-00001\.parquet"):
        glue.load("mrpc", "train", glue_tsv)
    with pytest.raises(DataError, match=r"rte/train-00000-of-00001\.parquet: GLUE parquet file "):
        glue.load("rte", "train", glue_tsv, source="parquet")
    with pytest.raises(UnknownNameError, match="no split 'validation'"):
        glue.load("mnli", "validation", glue_tsv)
    with pytest.raises(UnknownNameError, match="unknown GLUE task 'sts-b'"):
        glue.load("sts-b", "train", glue_tsv)


HF_COLUMNS = {
    "cola": ("sentence",), "sst2": ("sentence",), "mrpc": ("sentence1", "sentence2"),
    "qqp": ("question1", "question2"), "stsb": ("sentence1", "sentence2"),
    "mnli": ("premise", "hypothesis"), "qnli": ("question", "sentence"),
    "rte": ("sentence1", "sentence2"), "wnli": ("sentence1", "sentence2"),
}  # fmt: skip


def _parquet(root, config, split, texts, labels, shard="00000-of-00001"):
    (root / config).mkdir(parents=True, exist_ok=True)
    names = HF_COLUMNS[config]
    cols = {name: pa.array(col, pa.string()) for name, col in zip(names, texts, strict=True)}
    label_type = pa.float32() if config == "stsb" else pa.int64()
    cols["label"] = pa.array(labels, label_type)
    cols["idx"] = pa.array(range(len(labels)), pa.int32())
    pq.write_table(pa.table(cols), root / config / f"{split}-{shard}.parquet")


def test_parquet_every_task(tmp_path):
    root = tmp_path / "glue"
    for task, cols in HF_COLUMNS.items():
        texts = [[f'{task} {c} {i} "q"' for i in range(3)] for c in cols]
        labels = [0.0, 2.5, 5.0] if task == "stsb" else [0, 1, 1]
        splits = glue.TASKS[task].splits
        for split in splits:
            is_test = split.startswith("test")
            _parquet(root, task, split, texts, [-1] * 3 if is_test else labels)
        for split in splits:
            s = glue.load(task, split, root)
            assert s.source == "parquet" and s.task == task and s.split == split
            assert s.text_a == texts[0]
            assert s.text_b == (texts[1] if len(cols) == 2 else None)
            if split.startswith("test"):
                assert s.labels is None
            elif task == "stsb":
                assert s.labels.dtype == np.float32 and s.labels.tolist() == [0.0, 2.5, 5.0]
            else:
                assert s.labels.dtype == np.int64 and s.labels.tolist() == [0, 1, 1]
    assert glue.load("mnli", "validation_mismatched", root).path.endswith(
        "mnli/validation_mismatched-00000-of-00001.parquet"
    )


def test_parquet_shards_and_errors(tmp_path):
    root = tmp_path / "glue"
    _parquet(root, "mnli", "train", [["a", "b"], ["c", "d"]], [0, 2], "00000-of-00002")
    _parquet(root, "mnli", "train", [["e"], ["f"]], [1], "00001-of-00002")
    s = glue.load("mnli", "train", root)
    assert s.text_a == ["a", "b", "e"] and s.labels.tolist() == [0, 2, 1]
    _parquet(root, "mnli", "validation_matched", [["a"], ["b"]], [3])
    with pytest.raises(DataError, match=r"validation_matched-00000-of-00001\.parquet: row 0: "
                                        r"unknown mnli label 3"):  # fmt: skip
        glue.load("mnli", "validation_matched", root)
    _parquet(root, "rte", "validation", [["a"], ["b"]], [-1])  # -1 only on test splits
    with pytest.raises(DataError, match="unknown rte label -1"):
        glue.load("rte", "validation", root)
    (root / "qnli").mkdir()
    pq.write_table(pa.table({"question": ["q"], "text": ["t"], "label": [0]}),
                   root / "qnli/train-00000-of-00001.parquet")  # fmt: skip
    with pytest.raises(DataError, match=r"qnli/train-00000-of-00001\.parquet: no column "
                                        r"'sentence'"):  # fmt: skip
        glue.load("qnli", "train", root)
    (root / "qnli/validation-00000-of-00001.parquet").write_bytes(b"not parquet")
    with pytest.raises(DataError, match="not a readable parquet file"):
        glue.load("qnli", "validation", root)


def test_load_prefers_tsv_unless_told(glue_tsv):
    _parquet(glue_tsv, "rte", "train", [["p"], ["h"]], [1])
    assert glue.load("rte", "train", glue_tsv).source == "tsv"
    s = glue.load("rte", "train", glue_tsv, source="parquet")
    assert s.source == "parquet" and s.text_a == ["p"]


# ------------------------------------------------------------------------------- encoding

WORDPIECE = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat",
             "dog", "ran", "##s", '"', "a", "b", "c"]  # fmt: skip
W = {t: i for i, t in enumerate(WORDPIECE)}


@pytest.fixture
def bert(tmp_path):
    (tmp_path / "vocab.txt").write_text("\n".join(WORDPIECE) + "\n", encoding="utf-8")
    return glue.wordpiece_tokenizer(tmp_path / "vocab.txt")


def _split(a, b):
    return glue.GlueSplit("rte", "train", a, b, None, "tsv", "x")


def test_wordpiece_pairs(bert):
    out = glue.encode(
        _split(["The CAT sat", 'the "dogs" zebra', "the cat sat on the mat"],
               ["dogs ran", "a", "dog ran"]),
        bert, max_length=10,
    )  # fmt: skip
    ids, mask, types = out["input_ids"], out["attention_mask"], out["token_type_ids"]
    assert ids.dtype == mask.dtype == types.dtype == np.int32 and ids.shape == (3, 10)
    c, s, p = W["[CLS]"], W["[SEP]"], W["[PAD]"]
    # lowercased; dogs -> dog ##s; padding with [PAD] 0, mask 0, token type 0
    assert ids[0].tolist() == [c, 5, 6, 7, s, 10, 12, 11, s, p]
    assert mask[0].tolist() == [1] * 9 + [0]
    assert types[0].tolist() == [0] * 5 + [1] * 4 + [0]
    # the quote is a punctuation token; an unknown word is [UNK]
    assert ids[1].tolist() == [c, 5, W['"'], 10, 12, W['"'], W["[UNK]"], s, 14, s]
    assert types[1].tolist() == [0] * 8 + [1] * 2
    # 6 + 2 tokens, 7 places: only the longer (first) text loses tokens
    assert ids[2].tolist() == [c, 5, 6, 7, 8, 5, s, 10, 11, s]  # "the cat sat on the"
    assert types[2].tolist() == [0] * 7 + [1] * 3


def test_wordpiece_truncates_longest_first(bert):
    a = "the cat sat on the mat"  # 6 tokens
    b = "a b c a b"  # 5 tokens
    c, s = W["[CLS]"], W["[SEP]"]
    out = glue.encode(_split([a, b], [b, a]), bert, max_length=10)  # room for 7
    # both must be cut: 7 = 4 + 3, the longer text keeps the odd token, whichever comes first
    assert out["input_ids"][0].tolist() == [c, 5, 6, 7, 8, s, 14, 15, 16, s]
    assert out["input_ids"][1].tolist() == [c, 14, 15, 16, s, 5, 6, 7, 8, s]
    assert out["attention_mask"].min() == 1
    single = glue.encode(glue.GlueSplit("cola", "train", [a], None, None, "tsv", "x"), bert, 6)
    assert single["input_ids"][0].tolist() == [c, 5, 6, 7, 8, s]
    assert single["token_type_ids"][0].tolist() == [0] * 6


def test_wordpiece_vocab_errors(tmp_path):
    with pytest.raises(DataError, match=r"missing/vocab\.txt: WordPiece vocabulary not found"):
        glue.wordpiece_tokenizer(tmp_path / "missing/vocab.txt")
    (tmp_path / "v.txt").write_text("[PAD]\n[UNK]\n[CLS]\nthe\n")
    with pytest.raises(DataError, match=r"v\.txt: vocab\.txt lacks the special token\(s\) "
                                        r"\['\[SEP\]'\]"):  # fmt: skip
        glue.wordpiece_tokenizer(tmp_path / "v.txt")
    (tmp_path / "v.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\nthe\n")
    with pytest.raises(DataError, match="line 6: token 'the' repeats line 5"):
        glue.wordpiece_tokenizer(tmp_path / "v.txt")


BPE_VOCAB = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "a": 4, "b": 5, "c": 6, "Ġ": 7,
             "ab": 8, "Ġab": 9, "Ġc": 10, '"': 11}  # fmt: skip


@pytest.fixture
def roberta(tmp_path):
    (tmp_path / "vocab.json").write_text(json.dumps(BPE_VOCAB), encoding="utf-8")
    (tmp_path / "merges.txt").write_text("#version: 0.2\na b\nĠ ab\nĠ c\n", encoding="utf-8")
    return glue.byte_level_bpe_tokenizer(tmp_path / "vocab.json", tmp_path / "merges.txt")


def test_byte_level_bpe_pairs(roberta):
    out = glue.encode(_split(["ab ab c", "ab ab c ab ab", '"ab"'], ["c ab", "c ab c", "c"]),
                      roberta, max_length=12)  # fmt: skip
    ids = out["input_ids"]
    # <s> A </s></s> B </s>: "ab ab c" -> ab, Ġab, Ġc; "c ab" -> c, Ġab
    assert ids[0].tolist() == [0, 8, 9, 10, 2, 2, 6, 9, 2, 1, 1, 1]
    assert out["attention_mask"][0].tolist() == [1] * 9 + [0] * 3
    assert out["token_type_ids"].max() == 0  # RoBERTa: token types all 0
    assert ids[1].tolist() == [0, 8, 9, 10, 9, 9, 2, 2, 6, 9, 10, 2]  # fits exactly
    assert ids[2].tolist() == [0, 11, 8, 11, 2, 2, 6, 2, 1, 1, 1, 1]
    cut = glue.encode(_split(["ab ab c ab ab"], ["c ab c"]), roberta, max_length=8)
    # 5 + 3 tokens, 4 places: both cut to 2
    assert cut["input_ids"][0].tolist() == [0, 8, 9, 2, 2, 6, 9, 2]


def test_byte_level_bpe_file_errors(tmp_path):
    v, m = tmp_path / "vocab.json", tmp_path / "merges.txt"
    m.write_text("#version: 0.2\na b\n")
    with pytest.raises(DataError, match=r"vocab\.json: BPE vocabulary not found"):
        glue.byte_level_bpe_tokenizer(v, m)
    v.write_text('{"<s>": 0,')
    with pytest.raises(DataError, match=r"vocab\.json: not valid JSON"):
        glue.byte_level_bpe_tokenizer(v, m)
    v.write_text(json.dumps({"<s>": 0, "</s>": 2, "a": 4, "b": 5, "ab": 6}))
    with pytest.raises(DataError, match=r"lacks the special token\(s\) \['<pad>'\]"):
        glue.byte_level_bpe_tokenizer(v, m)
    v.write_text(json.dumps(BPE_VOCAB))
    m.write_text("#version: 0.2\na b\nb c\n")
    with pytest.raises(DataError, match=r"merges\.txt: line 3: merge 'b c' uses 'bc'"):
        glue.byte_level_bpe_tokenizer(v, m)
    m.write_text("#version: 0.2\na b c\n")
    with pytest.raises(DataError, match="line 2: 'a b c' is not a merge"):
        glue.byte_level_bpe_tokenizer(v, m)
