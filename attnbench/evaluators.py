"""Evaluators found by name (big_vision style): `config.evals` names them, the trainer feeds them.

    config.evals.cls = ml_collections.ConfigDict({"type": "classification", "top_k": (5,)})
    config.evals.size = ml_collections.ConfigDict({"type": "regression", "std": 2.0, ...})

Each entry is `{"type": <registered name>, "splits": ("val", "test"), "suffix": "", **options}`
(`suffix` renames every metric it reports, e.g. "_ensemble" for a second language-model
evaluator reading SSA's self-ensemble outputs). Evaluation has one path: the jitted eval step
computes the task's `eval_outputs(model, batch)` (`attnbench.tasks.Task`), the trainer builds
fresh evaluators per evaluation (`of(config, task)`: `config.evals`, or the task's
`default_evals` when it is empty: `task_metrics`, which adds up the task's own `(sum, count)`
metrics), calls `update(outputs, batch)` on the host for every batch (weight-0 padding examples
are skipped by the evaluator) and merges their `result()` dicts into the split's metrics, and
their `reference()` (facts about the data, not the model: the majority-class rate) into the
summary's `reference`. The metric names are the ones `configs/tables/` reads
(`METRICS`). `names_reported(evals, split)` lists what a config's evaluators report (the
config check validates `best_metric` with it). Everything is accumulated in float64.

Registered here:
  task_metrics    the task's own `(sum, count)` metrics (`outputs["metrics"]`, from its `loss`)
  classification  accuracy, top-k accuracy, mean per-class accuracy, cross-entropy loss, and
                  with `f1=True` the F1 score of class 1 (binary tasks: code clone detection),
                  with `mcc=True` Matthews' correlation over all classes (GLUE CoLA); its
                  reference is the majority-class rate of the evaluated labels
  rocauc          ROC-AUC per task, averaged over tasks with both labels (NaN ignored), as OGB
                  computes it for ogbg-molhiv
  regression      MAE of de-normalised predictions (`prediction * std + mean` vs the same of the
                  target), as ZINC / PCQM4Mv2 report it; with `spearman=True` also Spearman's
                  rank correlation (GLUE STS-B)
  multilabel_ap   average precision per task, averaged over tasks that have a positive and a
                  negative label (NaN labels ignored), as OGB / LRGB Peptides-func compute it
  segmentation    part IoU per shape over the parts of its category (prediction restricted to
                  them; a part absent from both prediction and truth counts IoU 1, as PointNet's
                  evaluation); `instance_miou` the mean over shapes, `class_miou` the mean over
                  categories of their shapes' mean
  language_model  per-token loss, perplexity exp(loss), and bits per byte / dimension
                  (loss / ln 2) when the tokens are bytes / sub-pixels
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from attnbench import errors, registry

__all__ = [
    "Evaluator",
    "register",
    "get",
    "names",
    "of",
    "build",
    "names_reported",
    "TASK_METRICS",
    "average_precision",
    "roc_auc",
    "METRICS",
]

_EVALUATORS: registry.Registry[Callable[..., Evaluator]] = registry.Registry("evaluator")
SPLITS = ("val", "test")
# Every metric name an evaluator here, a domain's evaluator (language/glue_task.py's `glue`:
# mcc, f1, accuracy, spearman, pearson) or a task's own (sum, count) metrics can report: the
# names `configs/tables/` reads (`attnbench.papers.tables.METRICS`).
METRICS = (
    "accuracy",
    "loss",
    "f1",
    "mcc",
    "rocauc",
    "spearman",
    "pearson",  # GLUE STS-B's other correlation (language/glue_task.py's `glue` evaluator)
    "top5_accuracy",
    "mean_class_accuracy",
    "mae",
    "ap",
    "class_miou",
    "instance_miou",
    "perplexity",
    "bpb",
    "bpd",
    "perplexity_ensemble",  # SSA's self-ensembles at inference (suffix "_ensemble")
    "bpb_ensemble",
    "mae_ensemble",
)
# Metrics only a task's own (sum, count) pairs report (no evaluator): pointcloud.dynamics's
# one-step position MSE and its autoregressive rollouts, per step and averaged.
TASK_METRICS = ("mse", "rollout_mse", *(f"rollout_mse_{t}" for t in range(1, 9)))
METRICS += TASK_METRICS


class Evaluator:
    """Accumulates over a split's batches on the host; `result()` gives `{metric: float}`;
    `reports` names the metrics `result()` will hold; `reference()` gives facts about the
    evaluated data rather than the model (default none)."""

    reports: tuple[str, ...] = ()

    def update(self, outputs: Mapping[str, np.ndarray], batch: Mapping[str, np.ndarray]) -> None:
        raise NotImplementedError

    def result(self) -> dict[str, float]:
        raise NotImplementedError

    def reference(self) -> dict[str, float]:
        return {}


def register(name: str):
    """Class decorator registering an evaluator under `name`."""
    return _EVALUATORS.register(name)


def names() -> list[str]:
    return _EVALUATORS.names()


def get(name: str, **options) -> Evaluator:
    """A fresh evaluator `name` with `options`; an unknown name or option is a user error."""
    cls = _EVALUATORS.get(name)
    try:
        return cls(**options)
    except TypeError as e:
        raise errors.ConfigError(f"evaluator {name!r}: {e}") from None


def of(config, task) -> Mapping[str, Mapping[str, Any]]:
    """The evaluators a run of `config` uses: `config.evals`, or the task's `default_evals`
    (its own metrics) when the config names none."""
    return config.get("evals") or task.default_evals(config)


def build(evals: Mapping[str, Mapping[str, Any]], split: str) -> list[Evaluator]:
    """The evaluators of `config.evals` that run on `split`."""
    out = []
    for key, spec in evals.items():
        spec = dict(spec)
        if "type" not in spec:
            raise errors.ConfigError(f"config.evals.{key} has no 'type'; known: {names()}")
        splits = tuple(spec.pop("splits", SPLITS))
        suffix = str(spec.pop("suffix", ""))
        if split in splits:
            ev = get(spec.pop("type"), **spec)
            out.append(_Suffixed(ev, suffix) if suffix else ev)
    return out


def names_reported(evals: Mapping[str, Mapping[str, Any]], split: str) -> list[str]:
    """The metric names the evaluators of `config.evals` report on `split`."""
    return sorted({name for ev in build(evals, split) for name in ev.reports})


class _Suffixed(Evaluator):
    def __init__(self, inner: Evaluator, suffix: str):
        self.inner, self.suffix = inner, suffix
        self.reports = tuple(name + suffix for name in inner.reports)

    def update(self, outputs, batch) -> None:
        self.inner.update(outputs, batch)

    def result(self) -> dict[str, float]:
        return {name + self.suffix: value for name, value in self.inner.result().items()}

    def reference(self) -> dict[str, float]:
        return self.inner.reference()


def _valid(batch) -> np.ndarray:
    return np.asarray(batch["weight"]) > 0


@register("task_metrics")
class TaskMetrics(Evaluator):
    """The task's own metrics: `outputs["metrics"]` is `{name: (sum, count)}` over one batch
    (`Task.eval_outputs`' default: the metrics of `Task.loss`, padding already weighted out),
    added up over the split in float64; `names` are those the task declares
    (`Task.metric_names`; a task may report more, e.g. `mae_ensemble`)."""

    def __init__(self, *, names: Sequence[str] = ("loss",), outputs: str = "metrics"):
        self.reports = tuple(names)
        self.key = outputs
        self.sums: dict[str, list[float]] = {}

    def update(self, outputs, batch) -> None:
        for name, (total, count) in outputs[self.key].items():
            acc = self.sums.setdefault(name, [0.0, 0.0])
            acc[0] += float(total)
            acc[1] += float(count)

    def result(self) -> dict[str, float]:
        return {name: total / max(count, 1.0) for name, (total, count) in self.sums.items()}


@register("classification")
class Classification(Evaluator):
    """`outputs[logits]` [B, C] against `batch[labels]` [B]."""

    def __init__(
        self,
        *,
        logits: str = "logits",
        labels: str = "label",
        top_k: Sequence = (),
        f1: bool = False,
        mcc: bool = False,
    ):
        self.logits_key, self.labels_key = logits, labels
        self.top_k = tuple(int(k) for k in top_k if int(k) > 1)
        self.f1 = bool(f1)
        self.reports = ("accuracy", "loss", "mean_class_accuracy") + tuple(
            f"top{k}_accuracy" for k in self.top_k
        )
        self.reports += ("f1",) if self.f1 else ()
        self.mcc = bool(mcc)
        self.reports += ("mcc",) if self.mcc else ()
        self.confusion: dict[tuple[int, int], int] = {}  # (true, predicted) -> count
        self.tp = self.fp = self.fn = 0
        self.n = 0
        self.correct = 0
        self.correct_k = dict.fromkeys(self.top_k, 0)
        self.nll = 0.0
        self.per_class: dict[int, list[int]] = {}  # true label -> [hits, examples]

    def update(self, outputs, batch) -> None:
        keep = _valid(batch)
        logits = np.asarray(outputs[self.logits_key], np.float64)[keep]
        labels = np.asarray(batch[self.labels_key]).astype(np.int64)[keep]
        if not len(labels):
            return
        shifted = logits - logits.max(-1, keepdims=True)
        log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
        self.nll += float(-log_probs[np.arange(len(labels)), labels].sum())
        pred = logits.argmax(-1)
        hit = pred == labels
        self.correct += int(hit.sum())
        # rank of the true class: how many classes score strictly higher
        true = logits[np.arange(len(labels)), labels]
        rank = (logits > true[:, None]).sum(-1)
        for k in self.top_k:
            self.correct_k[k] += int((rank < k).sum())
        self.tp += int(((pred == 1) & (labels == 1)).sum())
        self.fp += int(((pred == 1) & (labels != 1)).sum())
        self.fn += int(((pred != 1) & (labels == 1)).sum())
        if self.mcc:
            for y, q in zip(labels.tolist(), pred.tolist(), strict=True):
                self.confusion[(y, q)] = self.confusion.get((y, q), 0) + 1
        for y, h in zip(labels.tolist(), hit.tolist(), strict=True):
            c = self.per_class.setdefault(y, [0, 0])
            c[0] += h
            c[1] += 1
        self.n += len(labels)

    def result(self) -> dict[str, float]:
        n = max(self.n, 1)
        out = {"accuracy": self.correct / n, "loss": self.nll / n}
        out.update({f"top{k}_accuracy": self.correct_k[k] / n for k in self.top_k})
        if self.per_class:
            out["mean_class_accuracy"] = float(np.mean([h / t for h, t in self.per_class.values()]))
        if self.f1:  # 2TP / (2TP + FP + FN); 0 when class 1 is neither predicted nor present
            denom = 2 * self.tp + self.fp + self.fn
            out["f1"] = 2 * self.tp / denom if denom else 0.0
        if self.mcc:
            out["mcc"] = _matthews(self.confusion)
        return out

    def reference(self) -> dict[str, float]:
        """The majority-class rate: the share of the most frequent true label among the
        evaluated examples (what predicting one class everywhere scores)."""
        if not self.n:
            return {}
        return {"majority_class_rate": max(t for _, t in self.per_class.values()) / self.n}


def _matthews(confusion: Mapping[tuple[int, int], int]) -> float:
    """Matthews' correlation of a confusion matrix (Gorodkin's K-class form; binary MCC for
    two classes); 0 when every prediction or every label is one class."""
    classes = sorted({k for pair in confusion for k in pair})
    index = {c: i for i, c in enumerate(classes)}
    m = np.zeros((len(classes), len(classes)), np.float64)
    for (y, q), n in confusion.items():
        m[index[y], index[q]] += n
    s = m.sum()
    correct = np.trace(m)
    true, pred = m.sum(1), m.sum(0)
    cov = correct * s - true @ pred
    denom = math.sqrt((s * s - pred @ pred) * (s * s - true @ true))
    return float(cov / denom) if denom else 0.0


@register("regression")
class Regression(Evaluator):
    """MAE of `outputs[predictions]` against `batch[targets]`, both de-normalised with the
    training targets' `mean` and `std` (targets are stored normalised)."""

    def __init__(
        self,
        *,
        predictions: str = "prediction",
        targets: str = "target",
        mean: float = 0.0,
        std: float = 1.0,
        spearman: bool = False,
    ):
        if not std > 0:
            raise errors.ConfigError(f"regression evaluator: std={std!r} must be positive")
        self.pred_key, self.target_key, self.mean, self.std = predictions, targets, mean, std
        self.spearman = bool(spearman)
        self.reports = ("mae", "spearman") if self.spearman else ("mae",)
        self.pairs: list[tuple[np.ndarray, np.ndarray]] = []
        self.abs_err, self.n = 0.0, 0

    def update(self, outputs, batch) -> None:
        keep = _valid(batch)
        pred = np.asarray(outputs[self.pred_key], np.float64)[keep] * self.std + self.mean
        target = np.asarray(batch[self.target_key], np.float64)[keep] * self.std + self.mean
        err = np.abs(pred - target).reshape(len(pred), -1).mean(-1)
        self.abs_err += float(err.sum())
        self.n += len(err)
        if self.spearman:
            self.pairs.append((pred.reshape(-1), target.reshape(-1)))

    def result(self) -> dict[str, float]:
        out = {"mae": self.abs_err / max(self.n, 1)}
        if self.spearman:
            pred = np.concatenate([p for p, _ in self.pairs])
            target = np.concatenate([t for _, t in self.pairs])
            r = np.corrcoef(_midranks(pred), _midranks(target))[0, 1] if len(pred) > 1 else 0
            out["spearman"] = float(r) if np.isfinite(r) else 0.0
        return out


def _midranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks of `x`, ties given the mean of the ranks they span."""
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x), np.float64)
    start = 0
    for end in np.r_[np.flatnonzero(np.diff(x[order])) + 1, len(x)]:
        ranks[order[start:end]] = (start + end + 1) / 2.0
        start = end
    return ranks


def average_precision(labels: np.ndarray, scores: np.ndarray) -> float:
    """Average precision of binary `labels` ranked by `scores`: sum over the distinct score
    thresholds of (recall step) x precision (ties form one threshold), as
    scikit-learn's `average_precision_score`. NaN when there is no positive."""
    labels = np.asarray(labels, bool)
    scores = np.asarray(scores, np.float64)
    if not labels.any():
        return float("nan")
    order = np.argsort(-scores, kind="stable")
    scores, labels = scores[order], labels[order]
    last_of_tie = np.r_[np.flatnonzero(np.diff(scores)), len(scores) - 1]
    tp = np.cumsum(labels)[last_of_tie]
    predicted = last_of_tie + 1
    precision = tp / predicted
    recall = tp / labels.sum()
    return float(np.sum(np.diff(np.r_[0.0, recall]) * precision))


class _PerTaskBinary(Evaluator):
    """`outputs[logits]` [B, T] (or [B]) against `batch[labels]` [B, T] in {0, 1, NaN}: a
    binary score per task, averaged over the tasks with both labels (NaN labels ignored), as
    OGB computes AP and ROC-AUC."""

    metric = ""  # subclasses set it and `score(labels, scores) -> float`

    def __init__(self, *, logits: str = "logits", labels: str = "label"):
        self.logits_key, self.labels_key = logits, labels
        self.reports = (self.metric,)
        self.scores: list[np.ndarray] = []
        self.labels: list[np.ndarray] = []

    def update(self, outputs, batch) -> None:
        keep = _valid(batch)
        scores = np.asarray(outputs[self.logits_key], np.float64)[keep]
        labels = np.asarray(batch[self.labels_key], np.float64)[keep]
        self.scores.append(scores.reshape(len(scores), -1))
        self.labels.append(labels.reshape(len(labels), -1))

    def result(self) -> dict[str, float]:
        scores, labels = np.concatenate(self.scores), np.concatenate(self.labels)
        values = []
        for t in range(labels.shape[1]):
            known = ~np.isnan(labels[:, t])
            y = labels[known, t] > 0.5
            if y.any() and (~y).any():  # OGB: tasks with both classes only
                values.append(self.score(y, scores[known, t]))
        return {self.metric: float(np.mean(values)) if values else float("nan")}


@register("multilabel_ap")
class MultilabelAP(_PerTaskBinary):
    """Average precision per task (LRGB Peptides-func)."""

    metric = "ap"
    score = staticmethod(average_precision)


def roc_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """Area under the ROC curve of binary `labels` ranked by `scores`: the probability that a
    positive outscores a negative, ties counting one half (the Mann-Whitney statistic, as
    scikit-learn's `roc_auc_score`). NaN without both classes."""
    labels = np.asarray(labels, bool)
    scores = np.asarray(scores, np.float64)
    pos, neg = int(labels.sum()), int((~labels).sum())
    if not pos or not neg:
        return float("nan")
    ranks = _midranks(scores)
    return float((ranks[labels].sum() - pos * (pos + 1) / 2.0) / (pos * neg))


@register("rocauc")
class RocAuc(_PerTaskBinary):
    """ROC-AUC per task (ogbg-molhiv)."""

    metric = "rocauc"
    score = staticmethod(roc_auc)


@register("segmentation")
class Segmentation(Evaluator):
    """Per-point `outputs[logits]` [B, N, P] against `batch[labels]` [B, N] (global part ids),
    with the object `batch[category]` [B] and optional `batch[point_mask]` [B, N];
    `parts_per_category[c]` lists category c's part ids (ShapeNetPart: 16 categories, 50 parts)."""

    def __init__(
        self,
        *,
        parts_per_category: Sequence[Sequence[int]],
        logits: str = "logits",
        labels: str = "label",
        category: str = "category",
        point_mask: str = "point_mask",
    ):
        self.parts = [np.asarray(p, np.int64) for p in parts_per_category]
        self.keys = (logits, labels, category, point_mask)
        self.reports = ("instance_miou", "class_miou")
        self.by_category: dict[int, list[float]] = {}

    def update(self, outputs, batch) -> None:
        logits_key, labels_key, category_key, mask_key = self.keys
        keep = _valid(batch)
        logits = np.asarray(outputs[logits_key])[keep]
        labels = np.asarray(batch[labels_key])[keep]
        cats = np.asarray(batch[category_key]).astype(np.int64)[keep]
        masks = np.asarray(batch[mask_key])[keep] if mask_key in batch else None
        for i, c in enumerate(cats.tolist()):
            parts = self.parts[c]
            valid = slice(None) if masks is None else masks[i].astype(bool)
            pred = parts[np.argmax(logits[i][valid][:, parts], axis=-1)]
            gt = labels[i][valid]
            ious = []
            for p in parts.tolist():
                inter = np.sum((pred == p) & (gt == p))
                union = np.sum((pred == p) | (gt == p))
                ious.append(1.0 if union == 0 else inter / union)
            self.by_category.setdefault(c, []).append(float(np.mean(ious)))

    def result(self) -> dict[str, float]:
        shapes = [v for vs in self.by_category.values() for v in vs]
        if not shapes:
            return {"instance_miou": float("nan"), "class_miou": float("nan")}
        return {
            "instance_miou": float(np.mean(shapes)),
            "class_miou": float(np.mean([np.mean(v) for v in self.by_category.values()])),
        }


@register("language_model")
class LanguageModel(Evaluator):
    """`outputs[nll]` [B, N] per-token negative log-likelihood (nats) and `outputs[mask]`
    [B, N] (1 for scored tokens); `unit` "token" (loss, perplexity), "byte" (+ bpb) or "dim"
    (+ bpd, sub-pixels)."""

    def __init__(self, *, nll: str = "nll", mask: str = "mask", unit: str = "token"):
        if unit not in ("token", "byte", "dim"):
            raise errors.ConfigError(
                f"language_model evaluator: unit={unit!r}; known: token, byte, dim"
            )
        self.nll_key, self.mask_key, self.unit = nll, mask, unit
        self.reports = ("loss", "perplexity") + {"token": (), "byte": ("bpb",), "dim": ("bpd",)}[
            unit
        ]
        self.total, self.count = 0.0, 0.0

    def update(self, outputs, batch) -> None:
        keep = _valid(batch)
        nll = np.asarray(outputs[self.nll_key], np.float64)[keep]
        mask = np.asarray(outputs[self.mask_key], np.float64)[keep]
        self.total += float((nll * mask).sum())
        self.count += float(mask.sum())

    def result(self) -> dict[str, float]:
        loss = self.total / max(self.count, 1.0)
        out = {"loss": loss, "perplexity": math.exp(min(loss, 700.0))}
        if self.unit == "byte":
            out["bpb"] = loss / math.log(2)
        elif self.unit == "dim":
            out["bpd"] = loss / math.log(2)
        return out
