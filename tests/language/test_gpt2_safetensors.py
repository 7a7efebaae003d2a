"""`language.gpt2.read_safetensors` on files the `safetensors` package writes
(`safetensors.numpy.save_file`): every dtype a GPT-2 checkpoint may hold, odd shapes (scalars,
empty axes, 3-D and 4-D, lengths that are not multiples of anything), a `__metadata__` header,
a BF16 checkpoint written by the package loaded into GPT-2 against the float64 numpy reference,
and damaged files (truncated, cut inside the header, emptied, not safetensors) as one DataError
naming the file."""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest
import safetensors
import safetensors.numpy

from attnbench import errors
from language import gpt2
from tests import tolerances
from tests.language.test_gpt2 import TOKENS, forward, hf_config, random_weights, ref_gpt2_logits

RNG = np.random.default_rng(7)
# name -> the array the package writes (its dtype is the file's)
TENSORS = {
    "f64": RNG.normal(size=(3, 5)),
    "f32": RNG.normal(size=(7,)).astype(np.float32),
    "f16": RNG.normal(size=(2, 3, 5)).astype(np.float16),
    "bf16": RNG.normal(size=(5, 3)).astype(ml_dtypes.bfloat16),
    "i64": np.arange(-6, 6, dtype=np.int64).reshape(3, 4),
    "i32": np.array([-(2**31), 2**31 - 1], np.int32),
    "i16": np.arange(11, dtype=np.int16),
    "i8": np.array([-128, 0, 127], np.int8),
    "u8": np.arange(256, dtype=np.uint8).reshape(16, 16),
    "bool": np.array([[True, False, True]]),
    "scalar": np.array(2.5, np.float32),  # shape ()
    "empty": np.zeros((0, 3), np.float32),
    "odd": RNG.normal(size=(1, 13, 1, 7)).astype(np.float32),
}
METADATA = {"format": "pt", "note": "written by safetensors.numpy.save_file"}


def _save(path, tensors=TENSORS, metadata=METADATA):
    safetensors.numpy.save_file(tensors, str(path), metadata=metadata)
    return path


def test_every_dtype_and_shape_comes_back_identical(tmp_path):
    got = gpt2.read_safetensors(_save(tmp_path / "t.safetensors"))
    assert set(got) == set(TENSORS)  # the metadata is not a tensor
    for name, want in TENSORS.items():
        if want.dtype == ml_dtypes.bfloat16:  # widened to float32, exactly
            want = want.astype(np.float32)
        assert got[name].dtype == want.dtype and got[name].shape == want.shape, name
        np.testing.assert_array_equal(got[name], want, err_msg=name)
    with safetensors.safe_open(str(tmp_path / "t.safetensors"), framework="numpy") as f:
        assert f.metadata() == METADATA  # the file does hold the metadata the reader skips


def test_the_same_arrays_where_the_packages_numpy_reader_has_no_bfloat16(tmp_path, monkeypatch):
    """Package releases whose numpy reader has no bfloat16 fail on the file: it is read again
    through `safetensors.deserialize`, and every array is the same, dtype included."""
    path = _save(tmp_path / "t.safetensors")
    want = gpt2.read_safetensors(path)

    def no_bfloat16(_path):
        raise TypeError("data type 'bfloat16' not understood")

    monkeypatch.setattr(safetensors.numpy, "load_file", no_bfloat16)
    got = gpt2.read_safetensors(path)
    assert set(got) == set(want)
    for name in want:
        assert got[name].dtype == want[name].dtype, name
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_a_bfloat16_checkpoint_written_by_the_package_matches_the_float64_reference(tmp_path):
    """GPT2LMHeadModel's names (`transformer.` prefix), every tensor BF16 as a bf16 release
    holds them: the loaded model's logits are the float64 reference's on the bf16 values."""
    w = {k: v.astype(ml_dtypes.bfloat16) for k, v in random_weights().items()}
    d = tmp_path / "gpt2"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(hf_config()))
    _save(d / "model.safetensors", {"transformer." + k: v for k, v in w.items()}, {"format": "pt"})
    model, _ = gpt2.load_hf_gpt2(d)
    ref = ref_gpt2_logits({k: v.astype(np.float64) for k, v in w.items()}, TOKENS)
    tolerances.assert_close(forward(model)[0], ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda b: b[:-5], "incomplete metadata, file not fully covered"),  # data cut short
        (lambda b: b[:20], "invalid header length"),  # cut inside the header
        (lambda b: b"", "header too small"),  # emptied
        (lambda b: b"PK\x03\x04" + b[4:], "invalid header length"),  # another format's magic
    ],
    ids=["truncated-data", "truncated-header", "empty", "not-safetensors"],
)
def test_damaged_files_are_one_data_error_naming_the_file(tmp_path, damage, reason):
    path = _save(tmp_path / "model.safetensors")
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(errors.DataError) as e:
        gpt2.read_safetensors(path)
    message = str(e.value)
    assert message.startswith(f"{path}: not a readable safetensors file (") and reason in message
    assert "download it again" in message and "\n" not in message


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(errors.DataError, match=r"model\.safetensors: no such file"):
        gpt2.read_safetensors(tmp_path / "model.safetensors")
