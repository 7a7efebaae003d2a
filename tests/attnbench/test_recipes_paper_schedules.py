"""The `paper` presets of recipes against the numbers of their papers or cited code: the lr
schedules of DeiT-S / CaiT-S24 / Swin (timm's warmup_lr and min_lr), SSA's Enwik8 (linear decay
to 5e-4) and EGT-small (the TF code's quarter-period cosine, no degree scaler), SAMSA's 50
epochs of LRA Text's training split, and SAMSA's ListOps length 2,048 read from the release's
format."""

import math

import numpy as np
import pytest

from attnbench import config as config_lib
from attnbench import optim, tasks
from attnbench.train import with_epochs
from configs.lra import text as text_recipe
from lra.data import listops
from lra.data import text as text_data


def _schedule(c):
    return optim.make_schedule(c.schedule, c.optimizer.lr, c.total_steps)


# ------------------------------------------------------------------------------- ImageNet


PER_EPOCH = 1_281_167 // 1024  # ImageNet-1k train at 1,024 images per step: 1,251


@pytest.mark.parametrize(
    "model, epochs, warmup_epochs, peak",
    [
        # DeiT main.py (and GFSA's Image/main.py): lr 5e-4 x 1024 / 512, 5 warm-up epochs from
        # --warmup-lr 1e-6, cosine to --min-lr 1e-5, 300 epochs (DeiT Table 9)
        ("deit_s", 300, 5, 1e-3),
        ("deit_s24", 300, 5, 1e-3),
        # GFSA's CaiT-S24 run: batch 512, lr 5e-4, the same main.py warm-up and floor, 500 epochs
        ("cait_s24", 500, 5, 5e-4),
        # Swin's main.py: BASE_LR 5e-4, WARMUP_LR 5e-7, MIN_LR 5e-6, each x 1024 / 512
        ("swin_t", 300, 20, 1e-3),
        ("swin_s", 300, 20, 1e-3),
    ],
)
def test_imagenet_schedules_start_at_warmup_lr_and_floor_at_min_lr(
    model, epochs, warmup_epochs, peak
):
    c = config_lib.load(f"vision/imagenet.py:model={model}")
    per_epoch = 1_281_167 // c.batch_size
    assert c.total_steps == epochs * per_epoch
    warmup = c.schedule.warmup_steps
    assert warmup == warmup_epochs * per_epoch
    f = _schedule(c)
    np.testing.assert_allclose(float(f(0)), 1e-6, rtol=1e-5)  # warmup_lr
    half = warmup // 2
    np.testing.assert_allclose(float(f(half)), 1e-6 + (peak - 1e-6) * half / warmup, rtol=1e-5)
    np.testing.assert_allclose(float(f(warmup)), peak, rtol=1e-6)
    np.testing.assert_allclose(float(f(c.total_steps - 1)), 1e-5, rtol=1e-4)  # min_lr
    mid = warmup + (c.total_steps - warmup) // 2  # halfway down the cosine
    np.testing.assert_allclose(float(f(mid)), (peak + 1e-5) / 2, rtol=1e-4)


def test_deit_recipe_keeps_deits_300_epochs():
    """GFSA states no epochs; the recipe keeps DeiT's 300 (the authors' runs: 500)."""
    c = config_lib.load("vision/imagenet.py:model=deit_s,attn=gfsa")
    assert c.total_steps == 300 * PER_EPOCH and c.attention.order == 3


# -------------------------------------------------------------------------------- Enwik8


@pytest.mark.parametrize(
    "step, lr",
    [(0, 0.0), (2_000, 5e-4), (4_000, 1e-3), (7_000, 7.5e-4), (9_999, 5.0008e-4), (10_000, 5e-4)],
)
def test_enwik8_warms_up_then_decays_linearly_to_5e4(step, lr):
    """SSA App. B.1: 10,000 steps, 4,000 warm-up steps "followed by linear decay", max lr
    1e-3, min lr 5e-4."""
    c = config_lib.load("language/enwik8.py")
    assert (c.total_steps, c.schedule.warmup_steps, c.optimizer.lr) == (10_000, 4_000, 1e-3)
    assert c.schedule.name == "warmup_linear"
    np.testing.assert_allclose(float(_schedule(c)(step)), lr, rtol=1e-5, atol=1e-12)


# ------------------------------------------------------------------------------- PCQM EGT


@pytest.mark.parametrize("arg", ["model=egt", "model=egt,ssa=U20,ft=1"])
def test_egt_small_schedule_is_the_tf_codes_warmup_and_quarter_cosine(arg):
    """EGT's WarmUpAndCosine (shamim-hussain/egt, the small config's scheme): linear to 2e-4 in
    60k steps, then 2e-4 * cos(pi/2 * progress) to 0 at step 1M; no degree scaler."""
    c = config_lib.load(f"graphs/pcqm.py:{arg}")
    assert c.schedule.name == "constant*linear_warmup*quarter_cosine_decay"
    assert (c.schedule.warmup_steps, c.total_steps, c.optimizer.lr) == (60_000, 1_000_000, 2e-4)
    assert c.model.scale_degree is False
    f = _schedule(c)
    np.testing.assert_allclose(float(f(0)), 0.0, atol=1e-12)
    np.testing.assert_allclose(float(f(30_000)), 1e-4, rtol=1e-6)
    np.testing.assert_allclose(float(f(60_000)), 2e-4, rtol=1e-6)
    halfway = 60_000 + 940_000 // 2
    np.testing.assert_allclose(float(f(halfway)), 2e-4 * math.cos(math.pi / 4), rtol=1e-5)
    assert float(f(1_000_000)) == pytest.approx(0.0, abs=1e-9)


# ---------------------------------------------------------------------------- SAMSA LRA


def test_samsa_text_runs_50_epochs_of_its_training_split():
    """SAMSA Table 7: 50 epochs at batch 32. The run trains on IMDB's 25,000 train reviews less
    the 10% held out for validation (per class, as lra.data.text holds them out): 22,500, so
    50 x ceil(22,500 / 32) = 35,200 steps, and the trainer resolves the same from the data."""
    c = config_lib.load("lra/text.py:model=samsa")
    assert (c.data.val_split, c.data.val_fraction) == ("train", 0.1)
    labels = np.repeat([1, 0], 12_500)
    train_idx, val_idx = text_data._holdout(labels, c.data.val_fraction, c.data.seed)
    assert len(train_idx) == text_recipe.train_split(c.data) == 22_500
    assert c.epochs == 50 and c.batch_size == 32
    assert c.eval_every == 704 and c.total_steps == 50 * 704 == 35_200
    assert with_epochs(c, len(train_idx)).total_steps == c.total_steps
    # LRA's pipeline (validation on the test split) trains on all 25,000 reviews.
    assert with_epochs(c, 25_000).total_steps == 50 * 782 == 39_100
    c.data.val_split = "test"
    assert text_recipe.train_split(c.data) == 25_000
    cpu = config_lib.load("lra/text.py:model=samsa,preset=cpu")
    assert cpu.epochs == 0  # a scaled preset counts its own steps


def test_samsa_listops_is_2048_tokens_and_lras_recipe_2000():
    """SAMSA Table 1 / App. A: ListOps at 2,048 tokens; LRA's own recipe keeps 2,000."""
    samsa = config_lib.load("lra/listops.py:model=samsa")
    assert samsa.data.max_length == 2048 and samsa.data.source == "official"
    assert samsa.total_steps == 50 * 96_000 // 32
    for model in ("transformer", "sliceformer", "gfsa"):
        assert config_lib.load(f"lra/listops.py:model={model}").data.max_length == 2000


def _expression(tokens: int) -> str:
    """`[SM d d ... ]` with `tokens` tokens (operator, digits, closing bracket)."""
    return "[SM " + " ".join(str(i % 10) for i in range(tokens - 2)) + " ]"


def test_official_listops_files_load_at_samsas_2048(tmp_path):
    """The release's format read at max_length 2,048: rows padded past the longest source
    (1,999 tokens, the release's strict bound of 2,000), the same tokens as at 2,000; the
    recipe's task loads them so."""
    sources = [_expression(1999), _expression(600), "( ( [MAX 2 ) 9 ) ] )"]
    for name in listops.SPLIT_FILES.values():
        listops.write_tsv(tmp_path / name, [(s, 1) for s in sources])
    at_2048, labels = listops.load_split(tmp_path, "train", max_length=2048)
    at_2000, _ = listops.load_split(tmp_path, "train", max_length=2000)
    assert at_2048.shape == (3, 2048) and labels.tolist() == [1, 1, 1]
    np.testing.assert_array_equal(at_2048[:, :2000], at_2000)
    assert (at_2048[:, 1999:] == listops.PAD_ID).all()
    assert (at_2048[0, :1999] != listops.PAD_ID).all()
    assert (at_2048[2, :4] == [listops.VOCAB.index(t) for t in ("[MAX", "2", "9", "]")]).all()
    c = config_lib.load("lra/listops.py:model=samsa")
    c.data.dir = str(tmp_path)
    data = tasks.get(c.task).load_data(c)
    assert data.train.arrays["tokens"].shape == (3, 2048)
