"""attnbench.data.formats.torch_pickle on files written here, without torch, by a small writer
built from the format spec (`torch_writer_*` below; also used by tests/graphs/data/test_zinc.py
and tests/graphs/data/test_pcqm.py).

The writer follows the layouts of torch 2.x `torch/serialization.py` (`_legacy_save`, `_save`),
which are also those of torch 1.x for what is written here: tensors reduce to
`torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad,
OrderedDict())`; in a plain pickle a storage reduces to `torch.storage._load_from_bytes(b)` with
`b` the storage in the legacy `torch.save` format (magic number, protocol 1001, sys info, the
pickled object with persistent ids `("storage", torch.<Type>Storage, key, "cpu", numel, None)`,
the sorted storage keys, then per key an int64 element count and the raw bytes); the zip format
holds `<prefix>/data.pkl` (ids `("storage", type, key, "cpu", numel)`), `<prefix>/byteorder`,
`<prefix>/data/<key>` and `<prefix>/version`. Globals are written as GLOBAL opcodes by a
subclass of the pure-Python pickler, so nothing named `torch` is imported.
"""

import collections
import io
import itertools
import pickle
import struct
import zipfile

import numpy as np
import pytest

from attnbench import errors
from attnbench.data.formats import torch_pickle

STORAGE_NAMES = {
    "float64": "DoubleStorage",
    "float32": "FloatStorage",
    "float16": "HalfStorage",
    "int64": "LongStorage",
    "int32": "IntStorage",
    "int16": "ShortStorage",
    "int8": "CharStorage",
    "uint8": "ByteStorage",
    "bool": "BoolStorage",
}


class Global:
    """A module-level name, written as a GLOBAL opcode (the name need not be importable)."""

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name

    def __call__(self, *args):  # pickle's save_reduce insists on a callable
        raise TypeError("a marker, not a function")


REBUILD_V2 = Global("torch._utils", "_rebuild_tensor_v2")
REBUILD_V3 = Global("torch._utils", "_rebuild_tensor_v3")
LOAD_FROM_BYTES = Global("torch.storage", "_load_from_bytes")


class Pickler(pickle._Pickler):
    dispatch = pickle._Pickler.dispatch.copy()

    def __init__(self, file, protocol, persistent=None):
        super().__init__(file, protocol)
        self._persistent = persistent

    def persistent_id(self, obj):
        return self._persistent(obj) if self._persistent else None

    def _save_marker(self, obj):
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode("ascii"))
        self.memoize(obj)

    dispatch[Global] = _save_marker


class FakeStorage:
    """A torch storage: a flat numpy array; `untyped=True` saves it as torch.UntypedStorage
    (bytes, numel counted in bytes)."""

    def __init__(self, data: np.ndarray, *, untyped: bool = False):
        self.data = np.ascontiguousarray(data).ravel()
        self.untyped = untyped

    @property
    def type_global(self) -> Global:
        name = "UntypedStorage" if self.untyped else STORAGE_NAMES[self.data.dtype.name]
        return Global("torch", name)

    @property
    def numel(self) -> int:
        return self.data.nbytes if self.untyped else self.data.size

    def __reduce_ex__(self, protocol):  # a plain pickle (torch/storage.py __reduce__)
        return (LOAD_FROM_BYTES, (torch_writer_legacy(self),))


class FakeView:
    """A storage view of the legacy format: `size` elements of `root` from `offset`."""

    def __init__(self, root: FakeStorage, offset: int, size: int):
        self.root, self.offset, self.size = root, offset, size


class FakeTensor:
    def __init__(self, storage, offset, size, stride, *, dtype_global=None):
        self.storage, self.offset = storage, offset
        self.size, self.stride, self.dtype_global = tuple(size), tuple(stride), dtype_global

    def __reduce_ex__(self, protocol):  # torch/_tensor.py _reduce_ex_internal
        hooks = collections.OrderedDict()
        if self.dtype_global is not None:
            args = (self.storage, self.offset, self.size, self.stride, False, hooks)
            return (REBUILD_V3, (*args, self.dtype_global))
        return (REBUILD_V2, (self.storage, self.offset, self.size, self.stride, False, hooks))


def tensor(array) -> FakeTensor:
    """A contiguous tensor with its own storage holding `array`."""
    array = np.asarray(array)
    strides = [int(np.prod(array.shape[i + 1 :])) for i in range(array.ndim)]
    return FakeTensor(FakeStorage(array), 0, array.shape, strides)


def torch_writer_legacy(obj, protocol: int = 2, *, byteorder: str = "little") -> bytes:
    """`torch.save(obj, f, _use_new_zipfile_serialization=False)` of `obj` (FakeTensors,
    FakeStorages and containers)."""
    buf = io.BytesIO()
    for header in (
        torch_pickle.MAGIC_NUMBER,
        torch_pickle.PROTOCOL_VERSION,
        {"protocol_version": 1001, "little_endian": byteorder == "little",
         "type_sizes": {"short": 2, "int": 4, "long": 8}},
    ):  # fmt: skip
        pickle.dump(header, buf, protocol=protocol)
    storages = {}

    def key_of(o):
        key = str(140000000 + 16 * len(storages))  # torch: str(storage._cdata)
        key = next((k for k, s in storages.items() if s is o), key)
        storages[key] = o
        return key

    def persistent(o):
        if isinstance(o, FakeStorage):
            return ("storage", o.type_global, key_of(o), "cpu", o.numel, None)
        if isinstance(o, FakeView):  # torch < 0.4: a storage view, (view key, offset, size)
            view = (f"view-{id(o)}", o.offset, o.size)
            return ("storage", o.root.type_global, key_of(o.root), "cpu", o.root.numel, view)
        return None

    Pickler(buf, protocol, persistent).dump(obj)
    keys = sorted(storages)
    pickle.dump(keys, buf, protocol=protocol)
    end = "<" if byteorder == "little" else ">"
    for key in keys:
        data = storages[key].data
        buf.write(struct.pack(end + "q", storages[key].numel))
        buf.write(data.astype(data.dtype.newbyteorder(end)).tobytes())
    return buf.getvalue()


def torch_writer_zip(obj, protocol: int = 2, *, prefix="archive", byteorder="little") -> bytes:
    """`torch.save(obj, f)` (zip format) of `obj`."""
    buf, storages = io.BytesIO(), {}

    def persistent(o):
        if isinstance(o, FakeStorage):
            key = next((k for k, s in storages.items() if s is o), str(len(storages)))
            storages[key] = o
            return ("storage", o.type_global, key, "cpu", o.numel)
        return None

    Pickler(buf, protocol, persistent).dump(obj)
    out = io.BytesIO()
    end = "<" if byteorder == "little" else ">"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        z.writestr(f"{prefix}/data.pkl", buf.getvalue())
        z.writestr(f"{prefix}/byteorder", byteorder)
        for key in sorted(storages):
            data = storages[key].data
            z.writestr(f"{prefix}/data/{key}", data.astype(data.dtype.newbyteorder(end)).tobytes())
        z.writestr(f"{prefix}/version", "3\n")
    return out.getvalue()


def torch_writer_pickle(obj, protocol: int = 4) -> bytes:
    """`pickle.dump(obj)` of an object holding tensors (benchmarking-gnns' ZINC pickles)."""
    buf = io.BytesIO()
    Pickler(buf, protocol).dump(obj)
    return buf.getvalue()


def reference(data, offset, size, stride) -> np.ndarray:
    """A strided tensor's elements, by an explicit loop over its indices."""
    out = np.empty(size, data.dtype)
    for index in itertools.product(*(range(n) for n in size)):
        out[index] = data[offset + sum(i * s for i, s in zip(index, stride, strict=True))]
    return out


def example():
    """Tensors of several dtypes and layouts, with the arrays they must read back as."""
    rng = np.random.default_rng(0)
    base = rng.normal(size=12).astype(np.float32)
    shared = FakeStorage(np.arange(10, dtype=np.int64))
    obj = {
        "int64": tensor(np.array([[3, -1, 2**40], [0, 7, 9]], np.int64)),
        "float32": tensor(base[:6].reshape(2, 3)),
        "bool": tensor(np.array([True, False, True])),
        "uint8": tensor(np.array([0, 255, 17], np.uint8)),
        "float64": tensor(np.array([np.pi])),
        "int32": tensor(np.array([[-5], [6]], np.int32)),
        "scalar": FakeTensor(FakeStorage(np.array([2.5], np.float32)), 0, (), ()),
        # a transposed (non-contiguous) view with a storage offset
        "transposed": FakeTensor(FakeStorage(base), 2, (3, 2), (1, 3)),
        # two tensors on one storage
        "shared": [FakeTensor(shared, 0, (4,), (1,)), FakeTensor(shared, 3, (2, 3), (3, 1))],
        "empty": FakeTensor(FakeStorage(np.zeros(0, np.int64)), 0, (0, 3), (3, 1)),
        "meta": (collections.OrderedDict(a=1), "text", 2.0, None, np.arange(3, dtype=np.int16)),
    }
    expected = {
        "int64": np.array([[3, -1, 2**40], [0, 7, 9]], np.int64),
        "float32": base[:6].reshape(2, 3),
        "bool": np.array([True, False, True]),
        "uint8": np.array([0, 255, 17], np.uint8),
        "float64": np.array([np.pi]),
        "int32": np.array([[-5], [6]], np.int32),
        "scalar": np.array(2.5, np.float32),
        "transposed": reference(base, 2, (3, 2), (1, 3)),
        "shared": [
            reference(shared.data, 0, (4,), (1,)),
            reference(shared.data, 3, (2, 3), (3, 1)),
        ],
        "empty": np.zeros((0, 3), np.int64),
    }
    return obj, expected


def check(got, expected):
    assert set(got) == set(expected) | {"meta"}
    for key, want in expected.items():
        for g, w in zip(
            got[key] if isinstance(want, list) else [got[key]],
            want if isinstance(want, list) else [want],
            strict=True,
        ):
            assert isinstance(g, np.ndarray), key
            assert g.dtype == w.dtype and g.shape == w.shape, (key, g.dtype, g.shape)
            np.testing.assert_array_equal(g, w)
    assert got["transposed"][0, 1] == got["float32"].ravel()[5]  # element 2 + 3 of the base
    meta = got["meta"]
    assert meta[0] == collections.OrderedDict(a=1) and meta[1:4] == ("text", 2.0, None)
    np.testing.assert_array_equal(meta[4], np.arange(3, dtype=np.int16))
    # Tensors sharing a storage come back as independent, writeable arrays.
    first, second = got["shared"]
    first[3] = -100
    assert second[0, 0] == 3


@pytest.mark.parametrize("protocol", [2, 4])
def test_plain_pickle_of_tensors(tmp_path, protocol):
    obj, expected = example()
    path = tmp_path / "train.pickle"
    path.write_bytes(torch_writer_pickle(obj, protocol))
    with open(path, "rb") as f:
        check(torch_pickle.loads_pickle(f), expected)
    check(torch_pickle.loads_pickle(path), expected)


@pytest.mark.parametrize("byteorder", ["little", "big"])
def test_legacy_torch_save(tmp_path, byteorder):
    obj, expected = example()
    path = tmp_path / "legacy.pt"
    path.write_bytes(torch_writer_legacy(obj, byteorder=byteorder))
    check(torch_pickle.load(path), expected)
    with open(path, "rb") as f:
        check(torch_pickle.load(f), expected)


@pytest.mark.parametrize(("prefix", "byteorder"), [("archive", "little"), ("split_dict", "big")])
def test_zip_torch_save(tmp_path, prefix, byteorder):
    obj, expected = example()
    path = tmp_path / "split_dict.pt"
    path.write_bytes(torch_writer_zip(obj, prefix=prefix, byteorder=byteorder))
    check(torch_pickle.load(path), expected)


def test_legacy_storage_views():
    """Legacy ids with view metadata (torch < 0.4): a tensor on a view reads from the view's
    offset into its root storage."""
    root = FakeStorage(np.arange(10, dtype=np.float64))
    obj = [FakeTensor(FakeView(root, 4, 5), 1, (2, 2), (2, 1)), FakeTensor(root, 0, (3,), (1,))]
    got = torch_pickle.loads(torch_writer_legacy(obj), "views.pt")
    np.testing.assert_array_equal(got[0], [[5.0, 6.0], [7.0, 8.0]])  # root[4 + 1 + 2i + j]
    np.testing.assert_array_equal(got[1], [0.0, 1.0, 2.0])


def test_untyped_storage_with_dtype_v3(tmp_path):
    """torch 2.x: uint16 tensors are an UntypedStorage (bytes) plus a dtype global."""
    values = np.array([1, 65535, 300, 7], np.uint16)
    storage = FakeStorage(values.view(np.uint8), untyped=True)
    obj = {"u16": FakeTensor(storage, 1, (2,), (2,), dtype_global=Global("torch", "uint16"))}
    got = torch_pickle.loads(torch_writer_zip(obj), "v3.pt")
    assert got["u16"].dtype == np.uint16
    np.testing.assert_array_equal(got["u16"], [65535, 7])


def test_errors_name_the_file(tmp_path):
    with pytest.raises(errors.DataError, match=r"nope.pt: file not found"):
        torch_pickle.load(tmp_path / "nope.pt")
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"\x00 definitely not a pickle")
    with pytest.raises(errors.DataError, match=r"junk.pt: not a torch file"):
        torch_pickle.load(junk)
    plain = tmp_path / "plain.pickle"
    plain.write_bytes(pickle.dumps({"train": [1, 2]}))
    with pytest.raises(errors.DataError, match=r"plain.pickle: not a torch file.*loads_pickle"):
        torch_pickle.load(plain)

    obj, _ = example()
    raw = torch_writer_legacy(obj)
    cut = tmp_path / "cut.pt"
    cut.write_bytes(raw[:-5])  # the last storage loses its last bytes
    with pytest.raises(errors.DataError, match=r"cut.pt: truncated torch file"):
        torch_pickle.load(cut)
    cut.write_bytes(raw[:40])  # inside the pickles
    with pytest.raises(errors.DataError, match=r"cut.pt: (truncated|corrupt)"):
        torch_pickle.load(cut)

    archive = torch_writer_zip(obj)
    half = tmp_path / "half.pt"
    half.write_bytes(archive[: len(archive) // 2])
    with pytest.raises(errors.DataError, match=r"half.pt: corrupt or truncated torch zip"):
        torch_pickle.load(half)
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(archive)) as src, zipfile.ZipFile(out, "w") as z:
        for item in src.namelist():
            if item != "archive/data/0":
                z.writestr(item, src.read(item))
    missing = tmp_path / "missing.pt"
    missing.write_bytes(out.getvalue())
    with pytest.raises(errors.DataError, match=r"missing.pt: .*no record 'archive/data/0'"):
        torch_pickle.load(missing)

    pickled = tmp_path / "truncated.pickle"
    pickled.write_bytes(torch_writer_pickle(obj)[:-30])
    with pytest.raises(errors.DataError, match=r"truncated.pickle: (truncated|corrupt)"):
        torch_pickle.loads_pickle(pickled)


def test_disallowed_globals_are_refused_not_run(tmp_path):
    class Evil:
        def __reduce__(self):
            return (Global("os", "system"), ("echo owned > " + str(tmp_path / "owned"),))

    path = tmp_path / "evil.pickle"
    path.write_bytes(torch_writer_pickle({"x": Evil()}))
    with pytest.raises(errors.DataError, match=r"evil.pickle: .*names os\.system, which is not"):
        torch_pickle.loads_pickle(path)
    assert not (tmp_path / "owned").exists()
    legacy = tmp_path / "evil.pt"
    legacy.write_bytes(torch_writer_legacy({"x": Evil()}))
    with pytest.raises(errors.DataError, match=r"evil.pt: .*names os\.system"):
        torch_pickle.load(legacy)
