"""GLUE metrics against scikit-learn / scipy, degenerate inputs, and GFSA Table 1's averages."""

import numpy as np
import pytest
import scipy.stats
import sklearn.metrics

from language import glue_metrics as gm


@pytest.mark.parametrize("seed", range(5))
def test_classification_metrics_match_sklearn(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 300))
    y = rng.integers(0, 2, n)
    p = np.where(rng.random(n) < 0.7, y, 1 - y)
    assert gm.accuracy(p, y) == pytest.approx(sklearn.metrics.accuracy_score(y, p), abs=1e-12)
    assert gm.f1(p, y) == pytest.approx(sklearn.metrics.f1_score(y, p), abs=1e-12)
    assert gm.matthews_corrcoef(p, y) == pytest.approx(
        sklearn.metrics.matthews_corrcoef(y, p), abs=1e-12
    )
    # multiclass MCC (MNLI-like, 3 classes)
    y3, p3 = rng.integers(0, 3, n), rng.integers(0, 3, n)
    assert gm.matthews_corrcoef(p3, y3) == pytest.approx(
        sklearn.metrics.matthews_corrcoef(y3, p3), abs=1e-12
    )


@pytest.mark.parametrize("seed", range(5))
def test_correlations_match_scipy_with_ties(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 300))
    y = rng.integers(0, 11, n) / 2.0  # STS-B-like scores 0..5 in halves: many ties
    p = y + rng.normal(0, 1.5, n)
    p[: n // 3] = np.round(p[: n // 3])  # ties in the predictions too
    assert gm.pearson(p, y) == pytest.approx(scipy.stats.pearsonr(p, y)[0], abs=1e-12)
    assert gm.spearman(p, y) == pytest.approx(scipy.stats.spearmanr(p, y)[0], abs=1e-12)
    np.testing.assert_allclose(gm.rank_average(y), scipy.stats.rankdata(y, method="average"))


def test_degenerate_inputs():
    y = np.array([0, 1, 1, 0, 1])
    # constant prediction: MCC 0.0 as scikit-learn returns
    assert gm.matthews_corrcoef(np.ones(5, int), y) == 0.0
    assert sklearn.metrics.matthews_corrcoef(y, np.ones(5, int)) == 0.0
    assert gm.matthews_corrcoef(y, np.zeros(5, int)) == 0.0
    assert gm.matthews_corrcoef(y, y) == 1.0
    assert gm.matthews_corrcoef(1 - y, y) == -1.0
    # no positives anywhere: F1 0.0 (scikit-learn's zero_division result)
    assert gm.f1(np.zeros(4, int), np.zeros(4, int)) == 0.0
    assert gm.f1(np.ones(3, int), np.ones(3, int)) == 1.0
    with pytest.raises(ValueError, match="predictions must be 0/1"):
        gm.f1(np.array([0, 2]), np.array([0, 1]))
    with pytest.raises(ValueError, match="predictions is constant"):
        gm.spearman(np.full(5, 3.0), np.arange(5.0))
    with pytest.raises(ValueError, match="labels is constant"):
        gm.spearman(np.arange(5.0), np.full(5, 3.0))
    with pytest.raises(ValueError, match="labels is constant"):
        gm.pearson(np.arange(5.0), np.ones(5))
    with pytest.raises(ValueError, match="non-finite"):
        gm.pearson(np.array([1.0, np.nan, 2.0]), np.arange(3.0))
    with pytest.raises(ValueError, match="3 entries but labels has 2"):
        gm.accuracy([1, 0, 1], [1, 0])
    with pytest.raises(ValueError, match="empty"):
        gm.accuracy([], [])


def test_task_metrics_and_primary():
    y = np.array([0, 1, 1, 0, 1, 1])
    p = np.array([0, 1, 0, 0, 1, 0])
    out = gm.task_metrics("mrpc", p, y)
    assert set(out) == {"f1", "accuracy"}
    assert out["f1"] == pytest.approx(2 * 2 / (2 * 2 + 0 + 2))
    assert out["accuracy"] == pytest.approx(4 / 6)
    assert set(gm.task_metrics("qqp", p, y)) == {"f1", "accuracy"}
    assert gm.task_metrics("cola", p, y) == {
        "matthews_correlation": pytest.approx(sklearn.metrics.matthews_corrcoef(y, p))
    }
    s = gm.task_metrics("stsb", np.array([0.1, 2.0, 1.0, 4.5]), np.array([0.0, 2.2, 3.0, 5.0]))
    assert set(s) == {"spearmanr", "pearson"} and s["spearmanr"] == pytest.approx(0.8)
    for task in ("sst2", "mnli", "qnli", "rte", "wnli"):
        assert gm.task_metrics(task, p, y) == {"accuracy": pytest.approx(4 / 6)}
    expected = {
        "cola": "matthews_correlation", "sst2": "accuracy", "mrpc": "f1", "qqp": "f1",
        "stsb": "spearmanr", "mnli": "accuracy", "qnli": "accuracy", "rte": "accuracy",
        "wnli": "accuracy",
    }  # fmt: skip
    assert {t: gm.primary(t) for t in expected} == expected
    with pytest.raises(ValueError, match="unknown GLUE task 'mnli-m'"):
        gm.primary("mnli-m")


# GFSA (arXiv 2312.04234) Table 1: CoLA, SST-2, MRPC, QQP, STS-B, MNLI-m, MNLI-mm, QNLI, RTE, Avg
TABLE1 = {
    "BERT-BASE": ([56.79, 93.81, 88.70, 88.32, 88.16, 84.96, 84.15, 91.63, 66.06], 82.51),
    "BERT-BASE + GFSA": ([59.56, 94.15, 90.60, 88.46, 88.33, 85.12, 85.06, 91.95, 68.95], 83.58),
    "RoBERTa-BASE": ([60.34, 94.84, 92.28, 88.86, 89.99, 87.94, 87.30, 92.57, 78.70], 85.87),
}


@pytest.mark.parametrize("row", sorted(TABLE1))
def test_gfsa_average_reproduces_table1(row):
    values, avg = TABLE1[row]
    scores = dict(zip(gm.GFSA_COLUMNS, values, strict=True))
    scores["WNLI"] = 56.34  # not averaged
    assert gm.gfsa_average(scores) == pytest.approx(avg, abs=0.005)


def test_gfsa_average_refuses_missing_columns_and_fractions():
    values, _ = TABLE1["BERT-BASE"]
    scores = dict(zip(gm.GFSA_COLUMNS, values, strict=True))
    del scores["MNLI-mm"], scores["RTE"]
    with pytest.raises(ValueError, match=r"missing: \['MNLI-mm', 'RTE'\]"):
        gm.gfsa_average(scores)
    fractions = {c: v / 100 for c, v in zip(gm.GFSA_COLUMNS, values, strict=True)}
    with pytest.raises(ValueError, match="percentages"):
        gm.gfsa_average(fractions)
    assert set(gm.GFSA_COLUMNS.values()) >= {("mnli", "validation_mismatched")}
