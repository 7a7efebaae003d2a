"""GLUE metrics and GFSA's Table 1 average, in numpy (float64), without scikit-learn or scipy.

Which metric each task reports (the GLUE paper, Wang et al. 2019, Table 1; the HF ``evaluate``
``glue`` metric, whose key names are used here): CoLA ``matthews_correlation``; MRPC and QQP
``f1`` (positive class 1: equivalent / duplicate) and ``accuracy``; STS-B ``pearson`` and
``spearmanr``; SST-2, MNLI (matched and mismatched), QNLI, RTE, WNLI ``accuracy``.
GFSA (arXiv 2312.04234, Table 1 and its code) prints one number per task (`primary`): CoLA MCC,
MRPC / QQP F1, STS-B Spearman, accuracy elsewhere, as percentages, and "Avg" is the mean of the
nine columns CoLA, SST-2, MRPC, QQP, STS-B, MNLI-m, MNLI-mm, QNLI, RTE (`GFSA_COLUMNS`; WNLI is
not in the table), all on the GLUE validation split.

Formulas (with the degenerate cases defined as scikit-learn / scipy define them where they give
a number, and an error where they give NaN):

- accuracy: the fraction of equal entries.
- f1: 2 TP / (2 TP + FP + FN) for class 1; 0.0 when there is no positive in either vector
  (scikit-learn's ``zero_division`` result, without its warning).
- matthews_corrcoef: the multiclass form (Gorodkin 2004, as scikit-learn computes it from the
  confusion matrix C: (c s - t.p) / sqrt((s^2 - p.p)(s^2 - t.t)) with c = trace, s = samples,
  t / p = true / predicted class counts); 0.0 when either vector is constant (a zero
  denominator), as scikit-learn returns.
- pearson: the sample correlation coefficient; a constant vector raises ValueError naming it.
- spearman: the Pearson correlation of the ranks, ties given their average rank
  (``scipy.stats.rankdata(method="average")``, ``scipy.stats.spearmanr``); a constant vector
  raises ValueError naming it.

Every function takes 1-D arrays of equal, non-zero length and raises ValueError otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

__all__ = [
    "accuracy",
    "f1",
    "matthews_corrcoef",
    "pearson",
    "spearman",
    "rank_average",
    "TASK_METRICS",
    "task_metrics",
    "primary",
    "GFSA_COLUMNS",
    "gfsa_average",
]


def _pair(a, b, name_a: str, name_b: str) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"{name_a} and {name_b} must be 1-D, got shapes {a.shape} and {b.shape}")
    if a.shape != b.shape:
        raise ValueError(f"{name_a} has {a.size} entries but {name_b} has {b.size}")
    if a.size == 0:
        raise ValueError(f"{name_a} and {name_b} are empty")
    return a, b


def accuracy(predictions, labels) -> float:
    """The fraction of ``predictions`` equal to ``labels``."""
    p, y = _pair(predictions, labels, "predictions", "labels")
    return float(np.mean(p == y, dtype=np.float64))


def _binary(x: np.ndarray, name: str) -> np.ndarray:
    bad = ~np.isin(x, (0, 1))
    if bad.any():
        raise ValueError(f"{name} must be 0/1 for binary F1, got {x[bad][0]!r}")
    return x.astype(bool)


def f1(predictions, labels) -> float:
    """Binary F1 of the positive class 1 (MRPC equivalent, QQP duplicate); values must be 0/1."""
    p, y = _pair(predictions, labels, "predictions", "labels")
    p, y = _binary(p, "predictions"), _binary(y, "labels")
    tp = np.float64(np.sum(p & y))
    fp = np.float64(np.sum(p & ~y))
    fn = np.float64(np.sum(~p & y))
    denom = 2 * tp + fp + fn
    return float(2 * tp / denom) if denom else 0.0


def matthews_corrcoef(predictions, labels) -> float:
    """Matthews correlation coefficient (multiclass form); 0.0 when either vector is constant."""
    p, y = _pair(predictions, labels, "predictions", "labels")
    classes, inverse = np.unique(np.concatenate([y, p]), return_inverse=True)
    k = classes.size
    yi, pi = inverse[: y.size], inverse[y.size :]
    t_sum = np.bincount(yi, minlength=k).astype(np.float64)
    p_sum = np.bincount(pi, minlength=k).astype(np.float64)
    s = np.float64(y.size)
    correct = np.float64(np.sum(yi == pi))
    cov_yp = correct * s - t_sum @ p_sum
    cov_pp = s * s - p_sum @ p_sum
    cov_yy = s * s - t_sum @ t_sum
    if cov_pp == 0 or cov_yy == 0:
        return 0.0
    return float(cov_yp / np.sqrt(cov_yy * cov_pp))


def _finite(x: np.ndarray, name: str) -> np.ndarray:
    x = x.astype(np.float64)
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} holds a non-finite value")
    return x


def _corr(a: np.ndarray, b: np.ndarray, name_a: str, name_b: str, what: str) -> float:
    da, db = a - a.mean(), b - b.mean()
    for d, name in ((da, name_a), (db, name_b)):
        if not np.any(d):
            raise ValueError(f"{what} is undefined: {name} is constant")
    r = (da @ db) / np.sqrt((da @ da) * (db @ db))
    return float(np.clip(r, -1.0, 1.0))


def pearson(predictions, labels) -> float:
    """Pearson correlation; ValueError naming the argument that is constant."""
    p, y = _pair(predictions, labels, "predictions", "labels")
    p, y = _finite(p, "predictions"), _finite(y, "labels")
    return _corr(p, y, "predictions", "labels", "Pearson correlation")


def rank_average(x) -> np.ndarray:
    """Ranks 1..n of a 1-D array, tied entries given the mean of their ranks (float64)."""
    x = np.asarray(x)
    order = np.argsort(x, kind="stable")
    sorted_x = x[order]
    # starts of runs of equal values in sorted order
    new = np.concatenate([[True], sorted_x[1:] != sorted_x[:-1]])
    run = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    ends = np.concatenate([starts[1:], [x.size]])
    mean_rank = (starts + ends + 1) / 2.0  # mean of ranks starts+1 .. ends
    ranks = np.empty(x.size, np.float64)
    ranks[order] = mean_rank[run]
    return ranks


def spearman(predictions, labels) -> float:
    """Spearman rank correlation (ties by average rank); ValueError naming a constant argument."""
    p, y = _pair(predictions, labels, "predictions", "labels")
    p, y = _finite(p, "predictions"), _finite(y, "labels")
    return _corr(rank_average(p), rank_average(y), "predictions", "labels", "Spearman correlation")


_CLS = ("accuracy",)
_F1 = ("f1", "accuracy")
# task -> the metrics it reports (HF evaluate `glue` metric); the first is GFSA's Table 1 number.
TASK_METRICS: dict[str, tuple[str, ...]] = {
    "cola": ("matthews_correlation",),
    "sst2": _CLS,
    "mrpc": _F1,
    "qqp": _F1,
    "stsb": ("spearmanr", "pearson"),
    "mnli": _CLS,
    "qnli": _CLS,
    "rte": _CLS,
    "wnli": _CLS,
}
_FUNCS = {
    "matthews_correlation": matthews_corrcoef,
    "accuracy": accuracy,
    "f1": f1,
    "pearson": pearson,
    "spearmanr": spearman,
}


def _check_task(task: str) -> None:
    if task not in TASK_METRICS:
        raise ValueError(f"unknown GLUE task {task!r}; known tasks: {', '.join(TASK_METRICS)}")


def task_metrics(task: str, predictions, labels) -> dict[str, float]:
    """All metrics ``task`` reports, as fractions (not percentages). ``predictions``: class
    indices, or the predicted scores for stsb; ``labels``: as `language.data.glue.load` gives."""
    _check_task(task)
    return {name: _FUNCS[name](predictions, labels) for name in TASK_METRICS[task]}


def primary(task: str) -> str:
    """The metric GFSA's Table 1 prints for ``task`` (a key of `task_metrics`' result)."""
    _check_task(task)
    return TASK_METRICS[task][0]


# GFSA Table 1's averaged columns -> (task, GLUE validation split).
GFSA_COLUMNS: dict[str, tuple[str, str]] = {
    "CoLA": ("cola", "validation"),
    "SST-2": ("sst2", "validation"),
    "MRPC": ("mrpc", "validation"),
    "QQP": ("qqp", "validation"),
    "STS-B": ("stsb", "validation"),
    "MNLI-m": ("mnli", "validation_matched"),
    "MNLI-mm": ("mnli", "validation_mismatched"),
    "QNLI": ("qnli", "validation"),
    "RTE": ("rte", "validation"),
}


def gfsa_average(scores: Mapping[str, float]) -> float:
    """GFSA Table 1's "Avg": the mean of the nine `GFSA_COLUMNS` scores, given as percentages
    keyed by the table's column names (other keys, such as "WNLI" or "Avg", are ignored).

    Raises ValueError naming the missing columns, a non-finite score, or scores that all lie in
    [-1, 1] (fractions: multiply `task_metrics`' values by 100 first).
    """
    missing = [c for c in GFSA_COLUMNS if c not in scores]
    if missing:
        raise ValueError(
            f"GFSA average needs all nine columns {list(GFSA_COLUMNS)}; missing: {missing}"
        )
    values = np.array([float(scores[c]) for c in GFSA_COLUMNS], np.float64)
    if not np.all(np.isfinite(values)):
        bad = [c for c, v in zip(GFSA_COLUMNS, values, strict=True) if not np.isfinite(v)]
        raise ValueError(f"GFSA average: non-finite score in {bad}")
    if np.all(np.abs(values) <= 1.0):
        raise ValueError(
            "GFSA average takes percentages (as Table 1 prints them), but every score is in "
            "[-1, 1]; multiply fractions by 100"
        )
    return float(values.mean())
