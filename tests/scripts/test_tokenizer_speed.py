"""`scripts.tokenizer_speed` on a tiny written corpus: the files it builds are WikiText-sized
in proportion, the record counts what was tokenised, and a bad size is refused."""

import json

import pytest

from scripts import tokenizer_speed


def _docs(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.rst.txt").write_text("alpha beta gamma\nbeta  gamma\tdelta\n\nepsilon\n")
    (root / "b.rst.txt").write_text("zeta eta\ntheta alpha\n")
    return root


def test_record_counts_the_tokenised_text(tmp_path):
    root = _docs(tmp_path)
    out = tmp_path / "out"
    assert (
        tokenizer_speed.main(["--megabytes", "0.01", "--source-dir", str(root), "--out", str(out)])
        == 0
    )
    rec = json.loads((out / "tokenizer_speed.json").read_text())
    sizes = rec["data"]["bytes"]
    assert 9_900 <= sizes["train"] <= 10_000  # cut at a line end below the requested size
    assert sizes["valid"] > 0 and sizes["test"] > 0
    assert rec["build"]["bytes"] == sum(sizes.values())
    # The word list is the two documents' 9 words; the dictionary adds 4 specials and pads to 8.
    assert rec["data"]["vocab_size"] == 16
    # Every line of the repeated text is 2-3 words + </s>: tokens between bytes/8 and bytes/3.
    assert sizes["train"] / 8 < rec["data"]["tokens"]["train"] < sizes["train"] / 3
    for part in ("build", "encode_train"):
        assert rec[part]["mb_per_cpu_s"] == pytest.approx(
            rec[part]["bytes"] / 1e6 / rec[part]["cpu_s"]
        )
    assert "| encode train with the dictionary |" in (out / "tokenizer_speed.md").read_text()


def test_non_positive_size_is_refused(tmp_path, capsys):
    from attnbench import cli

    code = cli.run(tokenizer_speed.main, ["--megabytes", "0", "--source-dir", str(_docs(tmp_path))])
    assert code == 2
    assert "--megabytes 0.0: must be positive" in capsys.readouterr().err


def test_missing_sources_name_the_folder(tmp_path, capsys):
    from attnbench import cli

    code = cli.run(
        tokenizer_speed.main, ["--source-dir", str(tmp_path / "nope"), "--out", str(tmp_path)]
    )
    assert code == 2
    assert str(tmp_path / "nope") in capsys.readouterr().err
