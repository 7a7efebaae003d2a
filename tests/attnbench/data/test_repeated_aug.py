"""Repeated augmentation (DeiT's RASampler): `attnbench.data.pipeline.train_iterator(repeats=)` and
`config.data.repeated_aug`.

The reference for every batch is the stream it is defined by (RASampler's index list): slot s
holds example `shuffled[s // repeats]` of grain's shuffled, repeated range, batch b is slots
b * batch_size .. (b + 1) * batch_size - 1, and the example in slot s is transformed with
`example_rng(seed, s)`. With repeats=1 that is the iterator as it was before repeats existed.
"""

import grain
import ml_collections
import numpy as np
import pytest

from attnbench import config as config_lib
from attnbench import errors, tasks, train, validate
from attnbench.data import pipeline
from configs import common

N, SEED = 40, 3


def _draw(example, rng):
    """A transform that records its random draw, so each slot's draw can be checked."""
    return {**example, "draw": rng.integers(2**62, size=())}


def _iter(batch_size, repeats=1, **kw):
    source = tasks.Split({"i": np.arange(N)})
    return pipeline.train_iterator(
        source, batch_size=batch_size, seed=SEED, transform=_draw, repeats=repeats, **kw
    )


def _expected(batch_size, repeats, num_batches):
    """The first `num_batches` global batches as the definition above gives them."""
    stream = grain.MapDataset.range(N).shuffle(seed=SEED).repeat()
    out = []
    for b in range(num_batches):
        positions = b * batch_size + np.arange(batch_size)
        idx = np.array([stream[int(s) // repeats] for s in positions])
        draws = [pipeline.example_rng(SEED, p).integers(2**62, size=()) for p in positions]
        out.append({"i": idx, "draw": np.array(draws)})
    return out


@pytest.mark.parametrize("batch_size,repeats", [(8, 1), (12, 3), (12, 12), (16, 3)])
def test_batches_are_the_shuffled_stream_with_consecutive_copies_and_their_own_draws(
    batch_size, repeats
):
    """(16, 3): the repeats do not divide the batch (DeiT's 1,024 with 3), so copies straddle
    batches, as RASampler's do."""
    num_batches = 3 * N * repeats // batch_size + 1  # over three passes of the shuffle
    it = _iter(batch_size, repeats)
    got = [next(it) for _ in range(num_batches)]
    for g, want in zip(got, _expected(batch_size, repeats, num_batches), strict=True):
        np.testing.assert_array_equal(g["i"], want["i"])
        np.testing.assert_array_equal(g["draw"], want["draw"])
    slots = np.concatenate([g["i"] for g in got])
    draws = np.concatenate([g["draw"] for g in got])
    usable = len(slots) // repeats * repeats
    copies = slots[:usable].reshape(-1, repeats)
    assert (copies == copies[:, :1]).all()  # each example in `repeats` consecutive slots
    assert len(set(draws.tolist())) == len(draws)  # every copy its own draw
    # the distinct examples are the repeats=1 stream, in its order: every example once a pass
    plain = _iter(8)
    first = np.concatenate([next(plain)["i"] for _ in range(len(copies) // 8 + 1)])
    np.testing.assert_array_equal(copies[:, 0], first[: len(copies)])
    assert sorted(copies[:N, 0]) == list(range(N))


def test_resume_from_a_saved_state_replays_the_same_batches():
    it = _iter(12, 3)
    for _ in range(7):  # past the first epoch of 40 distinct examples (4 per batch)
        next(it)
    state = it.get_state()
    want = [next(it) for _ in range(5)]
    resumed = _iter(12, 3)
    resumed.set_state(state)
    for w in want:
        r = next(resumed)
        for k in w:
            np.testing.assert_array_equal(r[k], w[k])


def test_processes_take_their_slice_even_where_copies_straddle_them():
    # 12 slots, copies of 4, 2 processes of 6 slots: the second example's copies are split
    parts = [_iter(12, 4, process_index=i, process_count=2) for i in range(2)]
    whole = _iter(12, 4)
    for _ in range(4):
        a, b, w = next(parts[0]), next(parts[1]), next(whole)
        for k in w:
            np.testing.assert_array_equal(np.concatenate([a[k], b[k]]), w[k])


def test_bad_repeats_and_too_small_splits_are_errors():
    with pytest.raises(ValueError, match="repeats must be an int >= 1, got 0"):
        _iter(12, 0)
    with pytest.raises(ValueError, match="repeats must be an int >= 1, got True"):
        _iter(12, True)
    with pytest.raises(ValueError, match=r"40 examples, fewer than one batch \(82\) holds with 2"):
        _iter(82, 2)
    assert next(_iter(80, 2))["i"].shape == (80,)


SMOKE = "lra/listops.py:preset=smoke"  # batch 16


def _smoke(repeated_aug=None):
    c = config_lib.load(SMOKE)
    if repeated_aug is not None:
        with c.unlocked():
            c.data = common.data_fields(c.data)
            c.data.repeated_aug = repeated_aug
    return c


@pytest.mark.parametrize(
    "value,expected",
    [
        (0, "config.data.repeated_aug=0: must be an integer >= 1"),
        (True, "config.data.repeated_aug=True: must be an integer >= 1"),
    ],
)
def test_a_bad_repeated_aug_is_a_config_error_naming_it(value, expected):
    c = _smoke(value)
    with pytest.raises(errors.ConfigError, match="config.data.repeated_aug") as err:
        validate.check(c, tasks.get(c.task))
    assert expected in str(err.value) and "\n" not in str(err.value)
    assert validate.problems(_smoke(3), tasks.get(c.task)) == []  # 3 need not divide 16


def test_data_fields_default_to_off():
    d = common.data_fields(ml_collections.ConfigDict({"seed": 0}))
    assert d.to_dict() == {"seed": 0, "repeated_aug": 1}


class _Built(Exception):
    pass


@pytest.mark.parametrize("repeated_aug,repeats", [(None, 1), (4, 4)])
def test_the_trainer_passes_repeated_aug_to_the_train_iterator(
    tmp_path, monkeypatch, repeated_aug, repeats
):
    """`config.data.repeated_aug` reaches `train_iterator`; a data section without the field
    (a test's, or a domain's that does not add `common.data_fields`) trains without repeats."""
    seen = {}

    def recording(source, **kw):
        seen.update(kw)
        raise _Built

    monkeypatch.setattr(pipeline, "train_iterator", recording)
    with pytest.raises(_Built):
        train.train_and_evaluate(_smoke(repeated_aug), tmp_path)
    assert seen["repeats"] == repeats and seen["batch_size"] == 16
