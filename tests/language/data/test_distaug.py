"""Distribution Augmentation (`language.data.distaug`): each function against explicit index
formulas, the start symbol naming the draw, uniform draws, the eight distinct symmetries of
the square, the errors, and the task wiring on tiny CIFAR-10 pickles (evaluation unaugmented,
the decoder embedding one start symbol per condition)."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from attnbench import config as config_lib
from attnbench import errors
from attnbench.data.formats import cifar
from language import tasks
from language.data import distaug


def _image(n=4, channels=3):
    return np.arange(n * n * channels, dtype=np.int32).reshape(n, n, channels)


def _rotate_ref(x, k):
    """k clockwise quarter turns, by index: out[i, j] = in[n - 1 - j, i] per turn."""
    n = x.shape[0]
    for _ in range(k):
        out = np.empty_like(x)
        for i in range(n):
            for j in range(n):
                out[i, j] = x[n - 1 - j, i]
        x = out
    return x


def test_each_function_matches_its_index_formula():
    x = _image()
    for k in range(4):
        np.testing.assert_array_equal(distaug.apply(x, ("rotation",), (k,)), _rotate_ref(x, k))
    # one clockwise turn of [[a, b], [c, d]] is [[c, a], [d, b]]
    two = np.array([[1, 2], [3, 4]])[..., None]
    np.testing.assert_array_equal(distaug.apply(two, ("rotation",), (1,))[..., 0], [[3, 1], [4, 2]])
    t = distaug.apply(x, ("transposition",), (1,))
    for i in range(4):
        for j in range(4):
            np.testing.assert_array_equal(t[i, j], x[j, i])
    np.testing.assert_array_equal(distaug.apply(x, ("transposition",), (0,)), x)
    perms = [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)]  # release order
    for k, perm in enumerate(perms):
        c = distaug.apply(x, ("color",), (k,))
        for ch in range(3):
            np.testing.assert_array_equal(c[..., ch], x[..., perm[ch]])
    # order of application: rotation, then colour, then transposition
    both = distaug.apply(x, distaug.parse("transposition,rotation"), (1, 1))
    np.testing.assert_array_equal(both, _rotate_ref(x, 1).transpose(1, 0, 2))


def test_rotation_and_transposition_give_the_eight_symmetries():
    aug = distaug.DistAug((4, 4, 3), "rotation,transposition")
    assert aug.types == ("rotation", "transposition") and aug.num_conditions == 8
    x = _image()
    images = {distaug.apply(x, aug.types, (r, t)).tobytes() for r in range(4) for t in range(2)}
    assert len(images) == 8  # the dihedral group of the square: 8 distinct images
    combos = {aug.combination((r, t)) for r in range(4) for t in range(2)}
    assert combos == set(range(8)) and aug.combination((0, 0)) == 0


def test_transform_sets_the_start_symbol_and_shifts_the_image():
    aug = distaug.DistAug((4, 4, 3), ("rotation", "transposition"), start_token=256)
    x = _image().reshape(-1)
    example = {
        "tokens": np.concatenate([[256], x[:-1]]).astype(np.int32),
        "targets": x.copy(),
        "mask": np.ones(x.shape, np.float32),
    }
    seen = collections.Counter()
    for seed in range(4_000):
        draws = aug.draw(np.random.default_rng(seed))
        out = aug(example, np.random.default_rng(seed))
        expected = distaug.apply(x.reshape(4, 4, 3), aug.types, draws).reshape(-1)
        np.testing.assert_array_equal(out["targets"], expected)
        assert out["tokens"][0] == 256 + aug.combination(draws)
        np.testing.assert_array_equal(out["tokens"][1:], expected[:-1])
        np.testing.assert_array_equal(out["mask"], example["mask"])
        if draws == (0, 0):
            np.testing.assert_array_equal(out["tokens"], example["tokens"])
        seen[aug.combination(draws)] += 1
    # uniform over the 8 conditions: 500 expected each, sd ~21; 6 sd either side
    assert set(seen) == set(range(8)) and all(370 < n < 630 for n in seen.values()), seen
    np.testing.assert_array_equal(example["targets"], x)  # the input is not modified


def test_bad_settings_are_config_errors():
    with pytest.raises(errors.ConfigError, match="unknown augmentation 'jigsaw'"):
        distaug.parse("rotation,jigsaw")
    with pytest.raises(errors.ConfigError, match="3 channels.*1"):
        distaug.DistAug((28, 28, 1), "color")
    with pytest.raises(errors.ConfigError, match="square images.*4 x 6"):
        distaug.DistAug((4, 6, 3), "transposition")
    assert distaug.parse("") == () and distaug.parse("none") == ()
    assert distaug.conditions(()) == 1


def test_task_augments_training_images_only(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBENCH_DATA", str(tmp_path / "data"))
    folder = tmp_path / "c10" / cifar.CIFAR10_SUBDIR
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for name in cifar.CIFAR10_FILES:
        cifar.write_batch(folder / name, rng.integers(0, 256, (2, 3072), dtype=np.uint8), [1, 2])
    c = config_lib.load("language/cifar10.py:preset=smoke,source=official")
    with c.unlocked():
        c.data.dir = str(tmp_path / "c10")
    assert c.data.distaug == "rotation,transposition"
    task = tasks.LanguageModelling()
    data = task.load_data(c)
    assert isinstance(data.transform, distaug.DistAug) and data.transform.num_conditions == 8
    assert "rotation + transposition" in data.description["distaug"]
    assert tasks._input_vocab(c) == 256 + 8
    for split in (data.val, data.test):  # evaluation: the identity's start symbol
        assert split[0]["tokens"][0] == tasks.IMAGE_START
    with c.unlocked():
        c.data.distaug = ""
    assert task.load_data(c).transform is None and tasks._input_vocab(c) == 257


def test_distaug_on_a_text_corpus_is_refused():
    c = config_lib.load("language/enwik8.py:preset=smoke")
    with c.unlocked():
        c.data.distaug = "rotation"
    with pytest.raises(errors.ConfigError, match="distaug='rotation'.*image sequences.*enwik8"):
        tasks.LanguageModelling().load_data(c)
