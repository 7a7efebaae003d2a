"""core.paper_exact: the table cells computed without training."""

import pytest

from core import flops, paper_exact


def test_gfsa_adds_one_coefficient_per_head_per_layer():
    assert paper_exact.gfsa_extra_params(12, 6, 384, 1536) == 72  # DeiT-S, the paper's 72
    assert paper_exact.gfsa_extra_params(2, 12, 96, 192) == 24  # width does not matter
    assert paper_exact.gfsa_extra_params(12, 6, 384, 1536, learn_w0_w1=True) == 216


def test_ssa_exaflop_is_the_flop_counter_and_rejects_unknown_runs():
    assert paper_exact.ssa_exaflop("WikiText-103") == pytest.approx(
        flops.ssa_training_flops("WikiText-103") / 1e18
    )
    with pytest.raises(ValueError, match="unknown SSA run"):
        paper_exact.ssa_exaflop("PTB")


def test_softmax_numerics_statistics_are_in_range():
    std = paper_exact.softmax_numerics(100, "std", trials=5)
    assert 0 < std < 1
    assert 0 <= paper_exact.softmax_numerics(100, "prob", trials=5) <= 1
    assert 0 <= paper_exact.softmax_numerics(100, "mae", trials=5) < 1e-5  # rounding only
    with pytest.raises(ValueError, match="unknown stat"):
        paper_exact.softmax_numerics(10, "median")


def test_sort_attention_is_order_invariant_at_cls_only_without_the_residual():
    kw = dict(num_layers=3, tokens=32, batch=2)
    # one Sliceformer layer, or any depth without the residual around it: exactly invariant
    assert paper_exact.permutation_mae("sliceformer", 1, **kw) == 0.0
    assert paper_exact.permutation_mae("sliceformer", 3, residual=False, **kw) == 0.0
    # with residuals, from layer 2 on: structural, far above rounding (notes Sec. 1.8)
    assert paper_exact.permutation_mae("sliceformer", 2, **kw) > 1e-3
    # softmax without positions is equivariant: rounding-level differences at most
    assert paper_exact.permutation_mae("softmax", 3, **kw) < 1e-4
    with pytest.raises(ValueError, match="outside"):
        paper_exact.permutation_mae("softmax", 4, **kw)
