"""Tests of lra/data/listops.py: generator semantics, file format, tokenizer, caches."""

from __future__ import annotations

import json
import os
import re
import warnings

import numpy as np
import pytest

from lra.data import listops

OPS = ("[MIN", "[MAX", "[MED", "[SM")
SMALL = dict(min_length=5, max_length=60)  # shallow, varied trees; fast to generate


# ----------------------------------------------------------------------------------------------
# An evaluator independent of lra.data.listops: a strict recursive-descent parser of the official
# pair format "( left right )", which also rebuilds the string, then a tree walk.
# ----------------------------------------------------------------------------------------------


def _parse_pairs(tokens: list[str], i: int = 0):
    if tokens[i] == "(":
        left, i = _parse_pairs(tokens, i + 1)
        right, i = _parse_pairs(tokens, i)
        assert tokens[i] == ")", f"expected ')' at token {i}, got {tokens[i]!r}"
        return (left, right), i + 1
    assert tokens[i] != ")", f"unexpected ')' at token {i}"
    return tokens[i], i + 1


def _pairs_to_string(t) -> str:
    if isinstance(t, str):
        return t
    return "( " + _pairs_to_string(t[0]) + " " + _pairs_to_string(t[1]) + " )"


def _to_tree(t):
    """Pair tree -> ('op', [children]) or int."""
    if isinstance(t, str):
        assert t.isdigit() and len(t) == 1, t
        return int(t)
    left, right = t
    assert right == "]", f"operator node must end with ']', got {right!r}"
    args = []
    while isinstance(left, tuple):
        left, arg = left
        args.append(_to_tree(arg))
    assert left in OPS, left
    return (left, args[::-1])


def _value(tree) -> int:
    if isinstance(tree, int):
        return tree
    op, args = tree
    vals = [_value(a) for a in args]
    if op == "[MIN":
        return min(vals)
    if op == "[MAX":
        return max(vals)
    if op == "[MED":
        return int(np.median(vals))
    return int(np.sum(vals)) % 10


def _parse(source: str):
    tokens = source.split(" ")
    pairs, end = _parse_pairs(tokens)
    assert end == len(tokens), "trailing tokens"
    assert _pairs_to_string(pairs) == source, "not in the exact official to_string format"
    return _to_tree(pairs)


def _stats(tree, depth=1, out=None):
    """Collects depth, arities, operators and length (leaves + 2 per operator)."""
    out = out if out is not None else dict(depth=0, arities=[], ops=set(), length=0)
    out["depth"] = max(out["depth"], depth)
    if isinstance(tree, int):
        out["length"] += 1
    else:
        op, args = tree
        out["length"] += 2
        out["ops"].add(op)
        out["arities"].append(len(args))
        for a in args:
            _stats(a, depth + 1, out)
    return out


def _naive_ids(source: str) -> list[int]:
    return [listops.VOCAB.index(t) for t in source.split() if t not in ("(", ")")]


@pytest.fixture(scope="module")
def official_200():
    return listops.generate(200, seed=0)


@pytest.fixture(scope="module")
def small_3000():
    return listops.generate(3000, seed=1, **SMALL)


# ----------------------------------------------------------------------------------------------
# Generator
# ----------------------------------------------------------------------------------------------


def test_constants():
    assert len(listops.VOCAB) == 16 and listops.VOCAB[listops.PAD_ID] == "<pad>"
    assert listops.PAD_ID == 0 and listops.NUM_CLASSES == 10
    assert "]" in listops.VOCAB and "(" not in listops.VOCAB and ")" not in listops.VOCAB
    assert listops.OFFICIAL == dict(
        max_depth=10, max_args=10, min_length=500, max_length=2000, value_p=0.25
    )
    assert listops.OFFICIAL_SIZES == dict(train=96000, val=2000, test=2000)
    assert set(listops.__all__) >= {"generate", "tokenize", "load_split", "ensure_generated"}


def test_official_lengths_labels_and_token_counts(official_200):
    assert len(official_200) == 200
    tokens = listops.tokenize([s for s, _ in official_200])
    n_tokens = (tokens != listops.PAD_ID).sum(axis=1)
    for (source, target), count in zip(official_200, n_tokens, strict=True):
        tree = _parse(source)
        st = _stats(tree)
        assert 500 < st["length"] < 2000
        assert count == st["length"]  # tokens without parentheses == generator length
        assert st["depth"] <= 10 and min(st["arities"]) >= 2 and max(st["arities"]) <= 10
        assert target == _value(tree)
    # Padding only after the last token.
    for row, count in zip(tokens, n_tokens, strict=True):
        assert (row[:count] != 0).all() and (row[count:] == 0).all()


def test_labels_match_independent_evaluator_small(small_3000):
    ops, labels, arities, lengths = set(), set(), [], []
    for source, target in small_3000:
        tree = _parse(source)
        st = _stats(tree)
        assert 5 < st["length"] < 60
        assert target == _value(tree) == listops.evaluate(source)
        # The evaluator also accepts the form without parentheses.
        assert listops.evaluate(" ".join(t for t in source.split() if t not in "()")) == target
        ops |= st["ops"]
        labels.add(target)
        arities += st["arities"]
        lengths.append(st["length"])
    assert ops == set(OPS)
    assert labels == set(range(10))
    # randint(2, max_args) of the original includes max_args.
    assert min(arities) == 2 and max(arities) == 10
    assert min(lengths) <= 8 and max(lengths) >= 55


def test_max_depth_respected_and_reached():
    depths = [
        _stats(_parse(s))["depth"]
        for s, _ in listops.generate(300, seed=2, max_depth=3, max_args=4, min_length=3)
    ]
    assert max(depths) == 3 and min(depths) >= 2


def test_exact_official_string_format():
    # Only single-operator trees with two leaves have length 4.
    examples = listops.generate(20, seed=3, min_length=3, max_length=5)
    pattern = re.compile(r"\( \( \( (\[MIN|\[MAX|\[MED|\[SM) (\d) \) (\d) \) \] \)")
    for source, target in examples:
        m = pattern.fullmatch(source)
        assert m, source
        a, b = int(m.group(2)), int(m.group(3))
        expected = {"[MIN": min(a, b), "[MAX": max(a, b), "[MED": (a + b) // 2}
        assert target == expected.get(m.group(1), (a + b) % 10)


def test_median_of_even_count_truncates():
    assert listops.evaluate("[MED 1 2 ]") == 1
    assert listops.evaluate("[MED 3 9 0 8 ]") == 5
    assert listops.evaluate("( ( ( [SM 9 ) 8 ) ] )") == 7
    for bad in ("[MIN ]", "[MAX 1 2", "1 2", "[MAX 1 ] ]", "[FIRST 1 ]", ""):
        with pytest.raises(listops.ListOpsDataError):
            listops.evaluate(bad)


def test_deterministic_per_seed():
    a = listops.generate(300, seed=7, **SMALL)
    assert a == listops.generate(300, seed=7, **SMALL)
    assert a != listops.generate(300, seed=8, **SMALL)
    assert len({s for s, _ in a}) == 300  # de-duplicated


def test_generate_splits_sizes_order_and_no_overlap():
    sizes = dict(train=200, val=40, test=30)
    splits = listops.generate_splits(seed=5, sizes=sizes, **SMALL)
    assert {k: len(v) for k, v in splits.items()} == sizes
    sets = {k: {s for s, _ in v} for k, v in splits.items()}
    assert not (sets["train"] & sets["val"] or sets["train"] & sets["test"])
    assert not sets["val"] & sets["test"]
    flat = splits["train"] + splits["val"] + splits["test"]
    assert flat == listops.generate(270, seed=5, **SMALL)


def test_parameter_validation(monkeypatch):
    with pytest.raises(TypeError):
        listops.generate_splits(seed=0, sizes=dict(train=1, val=1, test=1), max_dpeth=3)
    with pytest.raises(ValueError):
        listops.generate(1, seed=0, min_length=10, max_length=11)  # no integer in between
    with pytest.raises(ValueError):
        listops.generate(1, seed=0, max_depth=2, max_args=3, min_length=10)  # longest is 5
    # Fewer distinct trees than requested (400 trees have length 4): fails instead of hanging.
    monkeypatch.setattr(listops, "_MAX_STALL", 20_000)
    with pytest.raises(RuntimeError, match="no new example"):
        listops.generate(401, seed=0, min_length=3, max_length=5)


# ----------------------------------------------------------------------------------------------
# Tokenizer
# ----------------------------------------------------------------------------------------------


def test_tokenize_keeps_bracket_drops_parens_and_pads():
    v = {t: i for i, t in enumerate(listops.VOCAB)}
    out = listops.tokenize(["( ( ( [MAX 2 ) 9 ) ] )", "[SM 1 [MED 3 4 ] ]", "7"], max_length=8)
    assert out.dtype == np.int32 and out.shape == (3, 8)
    assert out[0].tolist() == [v["[MAX"], v["2"], v["9"], v["]"], 0, 0, 0, 0]
    assert out[1].tolist() == [v[t] for t in "[SM 1 [MED 3 4 ] ]".split()] + [0]
    assert out[2].tolist() == [v["7"]] + [0] * 7


def test_tokenize_matches_naive_lookup(official_200, small_3000):
    sources = [s for s, _ in official_200[:100] + small_3000[:600]]
    out = listops.tokenize(sources)
    for row, source in zip(out, sources, strict=True):
        ids = _naive_ids(source)
        assert row[: len(ids)].tolist() == ids and not row[len(ids) :].any()


def test_tokenize_irregular_whitespace_same_result():
    canonical = listops.tokenize(["( ( [MIN 3 ) ] )", "[SM 1 2 ]"], max_length=6)
    messy = listops.tokenize(["  (\t( [MIN  3 )\r] ) ", "[SM 1\n2 ]"], max_length=6)
    np.testing.assert_array_equal(canonical, messy)


def test_tokenize_errors_and_truncate():
    with pytest.raises(listops.ListOpsDataError, match=r"source 1 has 5 tokens.*max_length=4"):
        listops.tokenize(["[SM 1 ]", "[SM 1 2 3 ]"], max_length=4)
    out = listops.tokenize(["[SM 1 2 3 ]"], max_length=4, truncate=True)
    assert out.tolist() == [[listops.VOCAB.index(t) for t in ("[SM", "1", "2", "3")]]
    for bad, token in [("[MIN 12 ]", "'12'"), ("[MAXX 1 ]", "'[MAXX'"), ("[MI N 1 ]", "'[MI'"),
                       ("[MIN 1( 2 ]", "'1('"), ("[FIRST 1 ]", "'[FIRST'")]:  # fmt: skip
        with pytest.raises(
            listops.ListOpsDataError, match="source 2: unknown token " + re.escape(token)
        ):
            listops.tokenize(["1", "2", bad, "3"])
    with pytest.raises(listops.ListOpsDataError, match="source 1: source has no tokens"):
        listops.tokenize(["1", "( )"])


# ----------------------------------------------------------------------------------------------
# TSV files
# ----------------------------------------------------------------------------------------------


def test_tsv_round_trip(tmp_path, small_3000):
    path = tmp_path / "basic_train.tsv"
    listops.write_tsv(path, small_3000[:500])
    text = path.read_text()
    assert text.startswith("Source\tTarget\n") and text.count("\n") == 501
    assert listops.read_tsv(path) == small_3000[:500]
    assert [p.name for p in tmp_path.iterdir()] == ["basic_train.tsv"]  # no temp file left


def test_read_tsv_accepts_crlf_and_unparenthesised(tmp_path):
    path = tmp_path / "basic_val.tsv"
    # The official files were written by csv.writer: "\r\n" line ends.
    path.write_bytes(b"Source\tTarget\r\n( ( ( [MAX 2 ) 9 ) ] )\t9\r\n[MIN 4 [SM 5 6 ] ]\t1\r\n")
    assert listops.read_tsv(path) == [("( ( ( [MAX 2 ) 9 ) ] )", 9), ("[MIN 4 [SM 5 6 ] ]", 1)]


@pytest.mark.parametrize(
    ("content", "pattern"),
    [
        ("", r":1: empty file"),
        ("Src\tTgt\n[MAX 1 ]\t1\n", r":1: missing or wrong header"),
        ("[MAX 1 2 ]\t2\n", r":1: missing or wrong header"),
        ("Source\tTarget\n[MAX 1 ]\t1\n[MAX 2 ]\n", r":3: expected 2 tab-separated fields"),
        ("Source\tTarget\n[MAX 1 ]\t1\t0\n", r":2: expected 2 tab-separated fields.*found 3"),
        ("Source\tTarget\n[MAX 1 ]\t1\n[MAX 2 ]\tx\n", r":3: target 'x' is not an integer"),
        ("Source\tTarget\n[MAX 1 ]\t10\n", r":2: target 10 is not in 0-9"),
        ("Source\tTarget\n[MAX 1 ]\t1\n[MAX 2 ]\t2\n[MAX 7 ]\t7\n[MIX 2 ]\t2\n",
         r":5: unknown token '\[MIX'"),
        ("Source\tTarget\n", r"no examples"),
        ("Source\tTarget\n\n[MAX 1 ]\t1\n", r":2: blank line"),
    ],
)  # fmt: skip
def test_read_tsv_malformed(tmp_path, content, pattern):
    path = tmp_path / "basic_test.tsv"
    path.write_text(content)
    with pytest.raises(listops.ListOpsDataError, match=pattern) as info:
        listops.read_tsv(path)
    assert str(path) in str(info.value)


def test_read_tsv_missing_file(tmp_path):
    path = tmp_path / "basic_train.tsv"
    with pytest.raises(listops.ListOpsDataError, match="basic_val.tsv") as info:
        listops.read_tsv(path)
    assert str(path) in str(info.value) and "not found" in str(info.value)


def test_unknown_token_line_number_in_later_block(tmp_path, small_3000):
    # The reader tokenizes in blocks; the line number must still be exact.
    examples = list(small_3000[:700])
    examples[600] = ("[MAX 1 2 ] )(", 2)
    path = tmp_path / "basic_train.tsv"
    path.write_text("Source\tTarget\n" + "".join(f"{s}\t{t}\n" for s, t in examples))
    with pytest.raises(listops.ListOpsDataError, match=rf"{re.escape(str(path))}:602: unknown"):
        listops.read_tsv(path)


def test_write_tsv_rejects_bad_examples(tmp_path):
    with pytest.raises(listops.ListOpsDataError, match="not in 0-9"):
        listops.write_tsv(tmp_path / "x.tsv", [("[MAX 1 ]", 12)])
    with pytest.raises(listops.ListOpsDataError, match="tab"):
        listops.write_tsv(tmp_path / "x.tsv", [("[MAX\t1 ]", 1)])
    assert not list(tmp_path.iterdir())


# ----------------------------------------------------------------------------------------------
# load_split and ensure_generated
# ----------------------------------------------------------------------------------------------


def test_load_split_and_cache(tmp_path, small_3000, monkeypatch):
    listops.write_tsv(tmp_path / "basic_val.tsv", small_3000[:300])
    tokens, labels = listops.load_split(tmp_path, "val", max_length=64)
    assert tokens.shape == (300, 64) and tokens.dtype == np.int32
    assert labels.dtype == np.int32 and labels.tolist() == [t for _, t in small_3000[:300]]
    np.testing.assert_array_equal(tokens, listops.tokenize([s for s, _ in small_3000[:300]], 64))
    cache = tmp_path / "basic_val.maxlen64.npz"
    assert cache.is_file()

    # Second call: served from the cache, the TSV is not parsed.
    def fail(*args, **kwargs):
        raise AssertionError("TSV parsed although the cache is valid")

    with monkeypatch.context() as m:
        m.setattr(listops, "_parse_tsv", fail)
        tokens2, labels2 = listops.load_split(tmp_path, "val", max_length=64)
    np.testing.assert_array_equal(tokens, tokens2)
    np.testing.assert_array_equal(labels, labels2)

    # A changed TSV invalidates the cache.
    listops.write_tsv(tmp_path / "basic_val.tsv", small_3000[300:350])
    tokens3, labels3 = listops.load_split(tmp_path, "val", max_length=64)
    assert labels3.tolist() == [t for _, t in small_3000[300:350]] and tokens3.shape == (50, 64)

    # A corrupt cache is rebuilt, with a warning.
    cache.write_bytes(b"not a zip file")
    with pytest.warns(UserWarning, match="unreadable ListOps cache"):
        tokens4, _ = listops.load_split(tmp_path, "val", max_length=64)
    np.testing.assert_array_equal(tokens3, tokens4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        listops.load_split(tmp_path, "val", max_length=64)  # rebuilt cache is valid again


def test_load_split_errors(tmp_path, small_3000):
    missing = tmp_path / "nope"
    with pytest.raises(listops.ListOpsDataError, match="directory not found") as info:
        listops.load_split(missing, "train")
    assert str(missing) in str(info.value)
    with pytest.raises(listops.ListOpsDataError, match="basic_train.tsv.*not found"):
        listops.load_split(tmp_path, "train")
    listops.write_tsv(tmp_path / "basic_test.tsv", small_3000[:50])
    with pytest.raises(listops.ListOpsDataError, match=r"basic_test.tsv:\d+: .*max_length=5"):
        listops.load_split(tmp_path, "test", max_length=5)
    with pytest.raises(ValueError, match="unknown split"):
        listops.load_split(tmp_path, "dev")


def test_ensure_generated_builds_once(tmp_path, capsys):
    sizes = dict(train=40, val=10, test=10)
    d = listops.ensure_generated(tmp_path, seed=4, sizes=sizes, **SMALL)
    assert "generating ListOps" in capsys.readouterr().out
    assert d.parent == tmp_path and d.name.startswith("listops-")
    meta = json.loads((d / "generator.json").read_text())
    assert meta["seed"] == 4 and meta["sizes"] == sizes
    assert meta["params"] == dict(listops.OFFICIAL, **SMALL)
    expected = listops.generate_splits(seed=4, sizes=sizes, **SMALL)
    for split, name in listops.SPLIT_FILES.items():
        assert listops.read_tsv(d / name) == expected[split]
    mtimes = {p.name: p.stat().st_mtime_ns for p in d.iterdir()}

    again = listops.ensure_generated(tmp_path, seed=4, sizes=sizes, **SMALL)
    assert again == d and capsys.readouterr().out == ""
    assert {p.name: p.stat().st_mtime_ns for p in d.iterdir()} == mtimes
    assert sorted(os.listdir(tmp_path)) == [d.name]  # no temporary directory left behind

    other = listops.ensure_generated(tmp_path, seed=5, sizes=sizes, **SMALL)
    assert other != d
    tokens, labels = listops.load_split(other, "train", max_length=64)
    assert tokens.shape == (40, 64) and len(labels) == 40
