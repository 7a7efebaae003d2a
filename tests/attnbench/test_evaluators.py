"""attnbench.evaluators against independent computations: scikit-learn (tests only) for accuracy,
top-k, balanced accuracy, log-loss and average precision; hand-worked IoU examples."""

import math

import numpy as np
import pytest
from sklearn import metrics as skm

from attnbench import errors, evaluators


def _feed(ev, outputs, batch, chunk=7):
    """Feeds in several batches with a weight-0 padding example appended to each."""
    n = len(batch["weight"])
    for lo in range(0, n, chunk):
        sl = slice(lo, lo + chunk)
        out = {k: np.concatenate([v[sl], v[:1]]) for k, v in outputs.items()}
        b = {k: np.concatenate([v[sl], v[:1]]) for k, v in batch.items()}
        b["weight"] = np.r_[batch["weight"][sl], 0.0]
        ev.update(out, b)
    return ev.result()


def test_classification_matches_sklearn():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(50, 6))
    labels = rng.integers(0, 6, 50)
    got = _feed(
        evaluators.get("classification", top_k=(1, 3)),
        {"logits": logits},
        {"label": labels, "weight": np.ones(50)},
    )
    probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    assert got["accuracy"] == pytest.approx(skm.accuracy_score(labels, logits.argmax(-1)))
    assert got["top3_accuracy"] == pytest.approx(
        skm.top_k_accuracy_score(labels, logits, k=3, labels=range(6))
    )
    assert got["mean_class_accuracy"] == pytest.approx(
        skm.balanced_accuracy_score(labels, logits.argmax(-1))
    )
    assert got["loss"] == pytest.approx(skm.log_loss(labels, probs, labels=range(6)), rel=1e-9)


def test_regression_mae_is_de_normalised():
    rng = np.random.default_rng(1)
    y = rng.normal(size=40)
    p = y + rng.normal(scale=0.1, size=40)
    got = _feed(
        evaluators.get("regression", mean=3.0, std=2.0),
        {"prediction": p},
        {"target": y, "weight": np.ones(40)},
    )
    assert got["mae"] == pytest.approx(skm.mean_absolute_error(y * 2 + 3, p * 2 + 3))
    with pytest.raises(errors.ConfigError, match="std=0"):
        evaluators.get("regression", std=0)


def test_average_precision_matches_sklearn_with_ties():
    rng = np.random.default_rng(2)
    for _ in range(20):
        y = rng.integers(0, 2, 30)
        y[0] = 1
        s = rng.integers(0, 5, 30).astype(float)  # many ties
        assert evaluators.average_precision(y, s) == pytest.approx(
            skm.average_precision_score(y, s)
        )


def test_multilabel_ap_skips_unlabelled_and_one_class_tasks_as_ogb():
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, (60, 4)).astype(float)
    labels[rng.random((60, 4)) < 0.2] = np.nan  # missing labels
    labels[:, 3] = 0.0  # no positive: skipped
    scores = rng.normal(size=(60, 4))
    got = _feed(
        evaluators.get("multilabel_ap"),
        {"logits": scores},
        {"label": labels, "weight": np.ones(60)},
    )
    expected = []
    for t in range(3):
        known = ~np.isnan(labels[:, t])
        expected.append(skm.average_precision_score(labels[known, t], scores[known, t]))
    assert got["ap"] == pytest.approx(np.mean(expected))


def test_segmentation_iou_by_hand():
    # two categories: 0 with parts {0, 1}, 1 with parts {2, 3, 4}
    parts = [[0, 1], [2, 3, 4]]
    ev = evaluators.get("segmentation", parts_per_category=parts)
    logits = np.zeros((3, 4, 5))
    # shape 0 (cat 0): truth [0, 0, 1, 1], prediction [0, 1, 1, 1] -> IoU part0 1/2, part1 2/3
    logits[0, [0], 0] = logits[0, [1, 2, 3], 1] = 1
    # shape 1 (cat 1): truth = prediction = [2, 2, 3, 3] -> parts 2 and 3 IoU 1; part 4 is
    # absent from both -> 1
    logits[1, [0, 1], 2] = logits[1, [2, 3], 3] = 1
    # shape 2 (cat 0): part 4 scores highest but is not a part of category 0: restricted
    # to {0, 1}, prediction [1, 1, 1, 1] vs truth [1, 1, 1, 0] -> part0 0/1, part1 3/4
    logits[2, :, 4] = 5
    logits[2, :, 1] = 1
    labels = np.array([[0, 0, 1, 1], [2, 2, 3, 3], [1, 1, 1, 0]])
    ev.update(
        {"logits": logits},
        {"label": labels, "category": np.array([0, 1, 0]), "weight": np.ones(3)},
    )
    got = ev.result()
    s0, s1, s2 = (0.5 + 2 / 3) / 2, 1.0, (0.0 + 0.75) / 2
    assert got["instance_miou"] == pytest.approx((s0 + s1 + s2) / 3)
    assert got["class_miou"] == pytest.approx(((s0 + s2) / 2 + s1) / 2)


def test_language_model_loss_perplexity_and_bits():
    nll = np.array([[1.0, 2.0, 9.0], [0.5, 0.5, 0.5]])
    mask = np.array([[1, 1, 0], [1, 1, 1]])
    got = _feed(
        evaluators.get("language_model", unit="byte"),
        {"nll": nll, "mask": mask},
        {"weight": np.ones(2)},
    )
    loss = (1 + 2 + 1.5) / 5
    assert got["loss"] == pytest.approx(loss)
    assert got["perplexity"] == pytest.approx(math.exp(loss))
    assert got["bpb"] == pytest.approx(loss / math.log(2))


def test_unknown_evaluator_or_option_is_a_user_error():
    with pytest.raises(errors.UnknownNameError, match="known: classification"):
        evaluators.get("clasification")
    with pytest.raises(errors.ConfigError, match="evaluator 'classification'"):
        evaluators.get("classification", topk=(5,))
    assert [
        type(e).__name__
        for e in evaluators.build(
            {"a": {"type": "classification"}, "b": {"type": "regression", "splits": ("test",)}},
            "val",
        )
    ] == ["Classification"]


def test_every_metric_name_is_one_the_tables_can_read():
    from attnbench.papers import tables

    rng = np.random.default_rng(4)
    w = {"weight": np.ones(4)}
    results = [
        _feed(
            evaluators.get("classification", top_k=(5,), f1=True, mcc=True),
            {"logits": rng.normal(size=(4, 6))},
            {"label": np.arange(4), **w},
        ),
        _feed(
            evaluators.get("regression", spearman=True),
            {"prediction": np.arange(4.0)},
            {"target": np.ones(4), **w},
        ),
        _feed(
            evaluators.build({"e": {"type": "regression", "suffix": "_ensemble"}}, "val")[0],
            {"prediction": np.ones(4)},
            {"target": np.ones(4), **w},
        ),
        _feed(
            evaluators.get("rocauc"),
            {"logits": rng.normal(size=(4, 2))},
            {"label": np.array([[0, 1], [1, 0], [1, 1], [0, 0]]), **w},
        ),
        _feed(
            evaluators.get("multilabel_ap"),
            {"logits": rng.normal(size=(4, 2))},
            {"label": np.array([[0, 1], [1, 0], [1, 1], [0, 0]]), **w},
        ),
        _feed(
            evaluators.get("language_model", unit="dim"),
            {"nll": np.ones((4, 3)), "mask": np.ones((4, 3))},
            w,
        ),
        _feed(
            evaluators.get("language_model", unit="byte"),
            {"nll": np.ones((4, 3)), "mask": np.ones((4, 3))},
            w,
        ),
    ]
    seg = evaluators.get("segmentation", parts_per_category=[[0, 1]])
    seg.update(
        {"logits": rng.normal(size=(4, 3, 2))},
        {"label": np.zeros((4, 3), int), "category": np.zeros(4, int), **w},
    )
    results.append(seg.result())
    # SSA's self-ensembles: the language-model evaluator again, its names suffixed.
    for unit in ("token", "byte"):
        spec = {"ens": {"type": "language_model", "unit": unit, "suffix": "_ensemble"}}
        (ev,) = evaluators.build(spec, "test")
        results.append(_feed(ev, {"nll": np.ones((4, 3)), "mask": np.ones((4, 3))}, w))
    # GLUE's evaluator (registered by language/glue_task.py): STS-B's spearman and pearson
    from language import glue_task  # noqa: F401 (registers "glue")

    stsb = _feed(
        evaluators.get("glue", task="stsb"),
        {"logits": np.array([[0.5], [1.0], [4.0], [2.5]])},
        {"label": np.array([0.0, 2.0, 5.0, 3.0]), **w},
    )
    assert set(stsb) == {"spearman", "pearson", "loss"}
    results.append(stsb)
    names = {k for r in results for k in r}
    assert names - {"loss_ensemble"} == set(evaluators.METRICS) - set(evaluators.TASK_METRICS)
    assert tables.METRICS == evaluators.METRICS


def test_reports_names_what_result_holds():
    rng = np.random.default_rng(5)
    w = {"weight": np.ones(6)}
    evals = {
        "cls": {"type": "classification", "top_k": (2,), "f1": True, "splits": ("val",)},
        "lm": {"type": "language_model", "unit": "byte", "suffix": "_x"},
    }
    (cls, lm) = evaluators.build(evals, "val")
    got = _feed(cls, {"logits": rng.normal(size=(6, 3))}, {"label": np.arange(6) % 3, **w})
    assert set(got) == set(cls.reports)
    got = _feed(lm, {"nll": np.ones((6, 2)), "mask": np.ones((6, 2))}, w)
    assert set(got) == set(lm.reports) == {"loss_x", "perplexity_x", "bpb_x"}
    assert evaluators.names_reported(evals, "test") == ["bpb_x", "loss_x", "perplexity_x"]


def test_binary_f1_matches_sklearn():
    rng = np.random.default_rng(6)
    logits = rng.normal(size=(40, 2))
    labels = rng.integers(0, 2, 40)
    got = _feed(
        evaluators.get("classification", f1=True),
        {"logits": logits},
        {
            "label": labels,
            "weight": np.ones(40),
        },
    )
    want = skm.f1_score(labels, logits.argmax(-1))
    assert got["f1"] == pytest.approx(want, abs=1e-12) and 0 < want < 1
    none = _feed(
        evaluators.get("classification", f1=True),
        {"logits": np.tile([[1.0, 0.0]], (3, 1))},
        {
            "label": np.zeros(3, int),
            "weight": np.ones(3),
        },
    )
    assert none["f1"] == 0.0  # class 1 neither predicted nor present: sklearn's zero_division


@pytest.mark.parametrize("classes", [2, 4])
def test_mcc_matches_sklearn(classes):
    rng = np.random.default_rng(7 + classes)
    labels = rng.integers(0, classes, 60)
    logits = rng.normal(size=(60, classes)) + np.eye(classes)[labels]  # better than chance
    got = _feed(
        evaluators.get("classification", mcc=True),
        {"logits": logits},
        {
            "label": labels,
            "weight": np.ones(60),
        },
    )
    want = skm.matthews_corrcoef(labels, logits.argmax(-1))
    assert got["mcc"] == pytest.approx(want, abs=1e-12) and want != 0
    constant = _feed(
        evaluators.get("classification", mcc=True),
        {"logits": np.tile([[1.0, 0.0]], (5, 1))},
        {
            "label": np.array([0, 1, 0, 1, 1]),
            "weight": np.ones(5),
        },
    )
    assert constant["mcc"] == 0.0  # one predicted class: sklearn's 0, not NaN


def test_rocauc_matches_sklearn_per_task_with_ties_and_missing_labels():
    rng = np.random.default_rng(9)
    scores = np.round(rng.normal(size=(80, 3)), 1)  # rounding makes ties
    labels = rng.integers(0, 2, (80, 3)).astype(np.float64)
    labels[rng.random((80, 3)) < 0.2] = np.nan
    labels[:, 2] = 0.0  # one class only: skipped, as OGB does
    got = _feed(
        evaluators.get("rocauc"), {"logits": scores}, {"label": labels, "weight": np.ones(80)}
    )
    want = []
    for t in range(2):
        known = ~np.isnan(labels[:, t])
        want.append(skm.roc_auc_score(labels[known, t], scores[known, t]))
    assert got["rocauc"] == pytest.approx(np.mean(want), abs=1e-12)


def test_spearman_matches_a_rank_correlation_by_hand():
    rng = np.random.default_rng(10)
    pred = np.round(rng.normal(size=50), 1)
    target = pred + rng.normal(size=50)
    target[:10] = 0.5  # ties in the targets
    got = _feed(
        evaluators.get("regression", spearman=True, mean=2.0, std=3.0),
        {"prediction": pred},
        {
            "target": target,
            "weight": np.ones(50),
        },
    )

    def ranks(x):  # average rank of each value: an independent, quadratic computation
        return np.array([(x < v).sum() + ((x == v).sum() + 1) / 2 for v in x])

    rp, rt = ranks(pred), ranks(target)
    want = ((rp - rp.mean()) * (rt - rt.mean())).sum() / np.sqrt(
        ((rp - rp.mean()) ** 2).sum() * ((rt - rt.mean()) ** 2).sum()
    )
    assert got["spearman"] == pytest.approx(want, abs=1e-12) and 0.3 < want < 1


def test_stsb_pearson_is_reported_and_a_table_can_read_it():
    """GLUE reports STS-B's Pearson beside its Spearman: the `glue` evaluator's `pearson` is
    the sample correlation, and a table cell may name it (`test_last.pearson`)."""
    from attnbench.papers import tables
    from language import glue_task  # noqa: F401 (registers "glue")

    pred, label = np.array([0.5, 1.0, 4.0, 2.5, 3.5]), np.array([0.0, 2.0, 5.0, 3.0, 3.0])
    got = _feed(
        evaluators.get("glue", task="stsb"),
        {"logits": pred[:, None]},
        {"label": label, "weight": np.ones(5)},
    )
    assert got["pearson"] == pytest.approx(np.corrcoef(pred, label)[0, 1], abs=1e-12)
    cell = tables.Cell(
        "STS-B", "Pearson", 88.0, config="language/glue.py:task=stsb", metric="test_last.pearson"
    )
    table = tables.Table("demo.stsb", "c", "s", ("STS-B",), ("Pearson",), (cell,))
    tables.validate(table)
