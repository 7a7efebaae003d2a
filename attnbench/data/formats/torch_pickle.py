"""Reading files that torch wrote (tensors inside pickles), into numpy, without torch.

The official graph datasets ship pickles with torch tensors in them (benchmarking-gnns' ZINC
`molecules/{train,val,test}.pickle`) and `torch.save` files (OGB-LSC's `split_dict.pt`). torch
is not a dependency here, so this module reads those layouts itself, with a restricted
`pickle.Unpickler` that resolves only the few names the layouts use (below); any other global
in a file is an error naming it, so reading a file never runs code from it.

    obj = torch_pickle.load("split_dict.pt")           # torch.save file: zip or legacy
    obj = torch_pickle.loads_pickle(open("train.pickle", "rb"))  # plain pickle.dump

Tensors come back as numpy arrays (C-contiguous copies with the tensor's shape and dtype);
dicts, lists, tuples and `OrderedDict`s are kept. The layouts, as torch's own code writes and
reads them (pytorch/pytorch `torch/serialization.py` `_legacy_save`/`_legacy_load`, `_save`/
`_load`; `torch/_utils.py` `_rebuild_tensor*`; `torch/storage.py` `_load_from_bytes`,
`_dtype_to_storage_type_map`; `torch/_tensor.py` `__reduce_ex__`), restated:

* A tensor pickles as `torch._utils._rebuild_tensor_v2(storage, storage_offset, size, stride,
  requires_grad, backward_hooks[, metadata])` (torch >= 0.4; `backward_hooks` an empty
  `collections.OrderedDict`), `_rebuild_tensor(storage, offset, size, stride)` (older), or
  `_rebuild_tensor_v3(..., backward_hooks, dtype[, metadata])` (torch 2.x, dtypes without a
  legacy storage class: uint16/32/64, float8, with `dtype` a global `torch.<name>`). Offset and
  strides count elements. `nn.Parameter` adds `_rebuild_parameter(data, requires_grad, hooks)`.
* Plain `pickle.dump` (how benchmarking-gnns wrote ZINC): a storage pickles as
  `torch.storage._load_from_bytes(b)`, where `b` is the storage saved in the legacy format
  below (`torch.save(storage, _use_new_zipfile_serialization=False)`, in every torch version).
  Under pickle protocol 2, `bytes` themselves pickle as `_codecs.encode(text, "latin1")`.
* Legacy `torch.save` format (the default before torch 1.6): five pickles in a row, then raw
  data: the magic number 0x1950a86a20f9469cfc6c, the protocol version 1001, a sys-info dict
  (`little_endian`, `type_sizes`), the object (storages replaced by persistent ids `("storage",
  storage_type, key, location, numel, view_metadata)`), the sorted list of storage keys; then
  for each key an int64 element count followed by the storage's bytes. `view_metadata` is None
  or `(view_key, offset, size)` (storage views of torch < 0.4).
* Zip `torch.save` format (torch >= 1.6): a zip archive with `<prefix>/data.pkl` (the object,
  persistent ids `("storage", storage_type, key, location, numel)`), `<prefix>/data/<key>` (each
  storage's raw bytes), `<prefix>/byteorder` ("little" or "big"; absent means little) and
  `<prefix>/version`. The prefix is "archive" in recent torch, the file's stem before.
* `storage_type` is a global naming a storage class: `torch.LongStorage` and its siblings
  (`STORAGE_DTYPES`; `torch.cuda.*Storage` for tensors saved from a GPU) or
  `torch.UntypedStorage` (bytes; its `numel` counts bytes). torch's own loader maps every name
  containing "Storage" to a dtype the same way; newer torch still writes these legacy class
  names (TypedStorage pickles through `_pickle_storage_type()`), never `TypedStorage` itself.

Also allowed, for pickles that hold numpy arrays next to (or instead of) tensors, as LRGB's
split pickles and OGB's split files may: numpy's `_reconstruct`, `ndarray`, `dtype`, `scalar`
(numpy 1 and 2 module paths), `collections.OrderedDict`/`defaultdict`, and basic builtins.

Not supported (a `DataError` says so): torch's pre-0.1.10 tar format, TorchScript archives,
quantized, sparse and nested tensors. Errors: a missing, truncated or corrupt file, or one that
is not in these layouts, raises `attnbench.errors.DataError` naming the path.
"""

from __future__ import annotations

import codecs
import collections
import functools
import io
import math
import os
import pathlib
import pickle
import struct
import zipfile
from typing import Any, BinaryIO

import numpy as np

from attnbench import errors

__all__ = [
    "MAGIC_NUMBER",
    "PROTOCOL_VERSION",
    "STORAGE_DTYPES",
    "TORCH_DTYPES",
    "load",
    "loads",
    "loads_pickle",
]

MAGIC_NUMBER = 0x1950A86A20F9469CFC6C  # torch/serialization.py
PROTOCOL_VERSION = 1001

# Legacy storage class -> numpy dtype (torch/storage.py `_dtype_to_storage_type_map`).
STORAGE_DTYPES: dict[str, str] = {
    "DoubleStorage": "float64",
    "FloatStorage": "float32",
    "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16",
    "LongStorage": "int64",
    "IntStorage": "int32",
    "ShortStorage": "int16",
    "CharStorage": "int8",
    "ByteStorage": "uint8",
    "BoolStorage": "bool",
    "ComplexDoubleStorage": "complex128",
    "ComplexFloatStorage": "complex64",
    "UntypedStorage": "uint8",
}

# `torch.<name>` dtype globals (for `_rebuild_tensor_v3`) -> numpy dtype.
TORCH_DTYPES: dict[str, str] = {
    "float64": "float64",
    "double": "float64",
    "float32": "float32",
    "float": "float32",
    "float16": "float16",
    "half": "float16",
    "bfloat16": "bfloat16",
    "int64": "int64",
    "long": "int64",
    "int32": "int32",
    "int": "int32",
    "int16": "int16",
    "short": "int16",
    "int8": "int8",
    "uint8": "uint8",
    "uint16": "uint16",
    "uint32": "uint32",
    "uint64": "uint64",
    "bool": "bool",
    "complex64": "complex64",
    "cfloat": "complex64",
    "complex128": "complex128",
    "cdouble": "complex128",
    "float8_e4m3fn": "float8_e4m3fn",
    "float8_e5m2": "float8_e5m2",
    "float8_e4m3fnuz": "float8_e4m3fnuz",
    "float8_e5m2fnuz": "float8_e5m2fnuz",
}

_ML_DTYPES = {"bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"}
_BUILTINS = {
    "set": set,
    "frozenset": frozenset,
    "list": list,
    "dict": dict,
    "tuple": tuple,
    "int": int,
    "float": float,
    "complex": complex,
    "bool": bool,
    "str": str,
    "bytes": bytes,
    "bytearray": bytearray,
    "slice": slice,
    "range": range,
}
_READ_ERRORS = (
    pickle.UnpicklingError,
    EOFError,
    ValueError,
    TypeError,
    KeyError,
    IndexError,
    AttributeError,
    struct.error,
    OverflowError,
    UnicodeDecodeError,
    zipfile.BadZipFile,
)


def _numpy_dtype(name: str) -> np.dtype:
    if name in _ML_DTYPES:
        try:
            import ml_dtypes  # installed with jax
        except ImportError:  # pragma: no cover - jax brings it
            raise errors.DataError(f"{name} tensors need the ml_dtypes package") from None
        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


class _StorageType:
    """What a `torch.<Name>Storage` global resolves to: the element dtype."""

    def __init__(self, name: str):
        self.name, self.dtype = name, _numpy_dtype(STORAGE_DTYPES[name])


class _TorchDtype:
    """What a `torch.<dtype>` global resolves to (the dtype argument of _rebuild_tensor_v3)."""

    def __init__(self, name: str):
        self.name, self.dtype = name, _numpy_dtype(TORCH_DTYPES[name])


class _Storage:
    """A flat buffer of `numel` elements of `dtype`. Its bytes (`raw`, in `byteorder`) are
    set by `fill`, or taken from a part of another storage (`base`: legacy storage views); a
    legacy file stores them after the object, so tensors are built once they are there."""

    def __init__(self, dtype: np.dtype, numel: int, base: tuple | None = None):
        self.dtype, self.numel, self.base = dtype, int(numel), base
        self.raw: memoryview | None = None
        self.byteorder = "<"

    def fill(self, raw, byteorder: str = "<") -> None:
        self.raw, self.byteorder = memoryview(raw).cast("B"), byteorder

    @property
    def ready(self) -> bool:
        return self.raw is not None or (self.base is not None and self.base[0].ready)

    def bytes(self) -> memoryview:
        if self.raw is None and self.base is not None:
            root, start = self.base
            data = root.bytes()
            nbytes = self.numel * self.dtype.itemsize
            if start < 0 or start + nbytes > len(data):
                raise ValueError("a storage view reaches past its storage")
            self.fill(data[start : start + nbytes], root.byteorder)
        if self.raw is None:
            raise ValueError("a storage's data is missing from the file")
        return self.raw

    def array(self, dtype: np.dtype | None = None) -> np.ndarray:
        """The storage's elements as `dtype` (default its own), read-only, file byte order."""
        dtype = self.dtype if dtype is None else dtype
        raw = self.bytes()
        stored = dtype.newbyteorder(self.byteorder) if dtype.itemsize > 1 else dtype
        return np.frombuffer(raw, dtype=stored, count=len(raw) // dtype.itemsize)


class _Tensor:
    """A tensor whose storage is not read yet (legacy files); `materialize` makes the array."""

    def __init__(self, storage: _Storage, offset: int, size, stride, dtype: np.dtype):
        self.storage, self.offset = storage, int(offset)
        self.size = tuple(int(s) for s in size)
        self.stride = tuple(int(s) for s in stride)
        self.dtype = dtype

    def materialize(self) -> np.ndarray:
        data = self.storage.array(self.dtype)
        if len(self.size) != len(self.stride):
            raise ValueError(f"tensor with size {self.size} but stride {self.stride}")
        native = self.dtype.newbyteorder("=") if self.dtype.itemsize > 1 else self.dtype
        if 0 in self.size:
            return np.empty(self.size, native)
        if self.offset < 0 or min(self.stride, default=0) < 0 or min(self.size, default=1) < 0:
            raise ValueError("negative tensor size, offset or stride")
        last = self.offset + sum((n - 1) * s for n, s in zip(self.size, self.stride, strict=True))
        if last >= len(data):
            raise ValueError(
                f"tensor of size {self.size}, stride {self.stride}, offset {self.offset} "
                f"reaches element {last} of a storage of {len(data)}"
            )
        count = math.prod(self.size)
        if self.stride == _contiguous(self.size) and self.offset + count <= len(data):
            return data[self.offset : self.offset + count].astype(native).reshape(self.size)
        item = data.dtype.itemsize
        view = np.lib.stride_tricks.as_strided(
            data[self.offset :], self.size, tuple(s * item for s in self.stride), writeable=False
        )
        return np.array(view, dtype=native, order="C")


def _contiguous(size: tuple) -> tuple:
    out, step = [], 1
    for n in reversed(size):
        out.append(step)
        step *= max(n, 1)
    return tuple(reversed(out))


def _rebuild_tensor(storage, storage_offset, size, stride, *_):
    return _tensor(storage, storage_offset, size, stride, None)


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, hooks, dtype, *_):
    if not isinstance(dtype, _TorchDtype):
        raise pickle.UnpicklingError(f"_rebuild_tensor_v3 with dtype {dtype!r}")
    return _tensor(storage, storage_offset, size, stride, dtype.dtype)


def _tensor(storage, offset, size, stride, dtype):
    if not isinstance(storage, _Storage):
        raise pickle.UnpicklingError(f"a tensor rebuilt from a {type(storage).__name__}")
    tensor = _Tensor(storage, offset, size, stride, storage.dtype if dtype is None else dtype)
    return tensor.materialize() if storage.ready else tensor


def _rebuild_parameter(data, *_):
    return data


def _codecs_encode(text, encoding="utf-8", *_):
    # Protocol-2 pickles write bytes as _codecs.encode(str, "latin1") (pickle.py save_bytes).
    if encoding.replace("-", "").replace("_", "").lower() not in ("latin1", "iso88591"):
        raise pickle.UnpicklingError(f"_codecs.encode with encoding {encoding!r}")
    return codecs.encode(text, "latin1")


@functools.cache
def _numpy_globals() -> dict[tuple[str, str], Any]:
    try:
        from numpy._core import multiarray
    except ImportError:  # pragma: no cover - numpy 1
        from numpy.core import multiarray
    out = {("numpy", "ndarray"): np.ndarray, ("numpy", "dtype"): np.dtype}
    for module in ("numpy.core.multiarray", "numpy._core.multiarray"):
        out[(module, "_reconstruct")] = multiarray._reconstruct
        out[(module, "scalar")] = multiarray.scalar
    return out


class _Unpickler(pickle.Unpickler):
    """The restricted unpickler: globals from the allow-list only, storages through
    `persistent_load` (set per format) or `_load_from_bytes` (legacy bytes, read here)."""

    def __init__(self, file: BinaryIO, name: str, persistent=None):
        super().__init__(file, encoding="utf-8")
        self._name, self._persistent = name, persistent

    def find_class(self, module: str, name: str):
        if module in ("torch._utils", "torch._tensor"):
            if name in ("_rebuild_tensor", "_rebuild_tensor_v2"):
                return _rebuild_tensor
            if name == "_rebuild_tensor_v3":
                return _rebuild_tensor_v3
            if name in ("_rebuild_parameter", "_rebuild_parameter_with_state"):
                return _rebuild_parameter
        if module == "torch.storage" and name == "_load_from_bytes":
            return self._load_from_bytes
        if module in ("torch", "torch.cuda", "torch.storage") and name in STORAGE_DTYPES:
            return _StorageType(name)
        if module == "torch" and name in TORCH_DTYPES:
            return _TorchDtype(name)
        if module == "torch" and name == "Size":
            return tuple
        if module == "collections" and name in ("OrderedDict", "defaultdict"):
            return getattr(collections, name)
        if module in ("builtins", "__builtin__") and name in _BUILTINS:
            return _BUILTINS[name]
        if module == "_codecs" and name == "encode":
            return _codecs_encode
        found = _numpy_globals().get((module, name))
        if found is not None:
            return found
        raise pickle.UnpicklingError(
            f"the pickle names {module}.{name}, which is not allowed here (only torch tensors, "
            "numpy arrays and plain Python containers are read)"
        )

    def persistent_load(self, pid):
        if self._persistent is None:
            raise pickle.UnpicklingError(f"unexpected persistent id {pid!r} in a plain pickle")
        return self._persistent(pid)

    def _load_from_bytes(self, raw) -> Any:
        if not isinstance(raw, (bytes, bytearray)):
            raise pickle.UnpicklingError("_load_from_bytes without bytes")
        name = f"{self._name} (an embedded torch storage)"
        return _load_legacy(bytes(raw), name, materialize=False)


def _storage_id(pid, name: str, legacy: bool) -> tuple[_StorageType, str, int, tuple | None]:
    if not isinstance(pid, tuple) or not pid:
        raise pickle.UnpicklingError(f"persistent id {pid!r} is not a torch storage id")
    kind = pid[0].decode("ascii") if isinstance(pid[0], bytes) else pid[0]
    if kind != "storage":
        raise pickle.UnpicklingError(f"persistent id of type {kind!r} (only 'storage' is read)")
    want = 6 if legacy else 5
    if len(pid) != want:
        raise pickle.UnpicklingError(f"storage id with {len(pid)} fields, expected {want}")
    storage_type, key, numel = pid[1], pid[2], pid[4]
    if not isinstance(storage_type, _StorageType):
        raise pickle.UnpicklingError(f"storage of unknown type {storage_type!r}")
    key = key.decode("ascii") if isinstance(key, bytes) else str(key)
    return storage_type, key, int(numel), (pid[5] if legacy else None)


# Header bytes (magic number, protocol version, sys info pickles) already checked -> their byte
# order: a plain pickle of many tensors repeats the same header once per storage.
_LEGACY_HEADERS: dict[bytes, str] = {}
_COUNT = {"<": struct.Struct("<q"), ">": struct.Struct(">q")}  # a storage's element count


def _legacy_header(stream: io.BytesIO, name: str) -> str:
    """Reads and checks the legacy header pickles; the storages' byte order ("<" or ">")."""

    def plain():
        return _Unpickler(stream, name).load()

    try:
        magic = plain()
    except _READ_ERRORS as e:
        raise errors.DataError(f"{name}: not a torch file (no torch magic number: {e})") from None
    if magic != MAGIC_NUMBER:
        raise errors.DataError(
            f"{name}: not a torch file (it starts with a pickle of {type(magic).__name__}, not "
            "torch's magic number); a plain pickle is read with loads_pickle"
        )
    try:
        protocol = plain()
        sys_info = plain()
    except EOFError as e:
        raise errors.DataError(f"{name}: truncated torch file ({e or 'ends early'})") from None
    except _READ_ERRORS as e:
        raise errors.DataError(f"{name}: corrupt torch file header ({e})") from None
    if protocol != PROTOCOL_VERSION:
        raise errors.DataError(f"{name}: torch protocol version {protocol!r}, expected 1001")
    little = not isinstance(sys_info, dict) or sys_info.get("little_endian", True)
    return "<" if little else ">"


def _load_legacy(raw: bytes, name: str, *, materialize: bool = True) -> Any:
    """The legacy `torch.save` layout from `raw` (whole file in memory); `materialize=False`
    leaves storages as `_Storage` (what `_load_from_bytes` hands to `_rebuild_tensor`)."""
    stream = io.BytesIO(raw)
    known = next((h for h in _LEGACY_HEADERS if raw.startswith(h)), None)
    if known is not None:  # the same three header pickles as a storage read before
        stream.seek(len(known))
        byteorder = _LEGACY_HEADERS[known]
    else:
        byteorder = _legacy_header(stream, name)
        if len(_LEGACY_HEADERS) < 8:
            _LEGACY_HEADERS[raw[: stream.tell()]] = byteorder

    def plain():
        return _Unpickler(stream, name).load()

    try:
        storages: dict[str, _Storage] = {}

        def persistent(pid):
            storage_type, key, numel, view = _storage_id(pid, name, legacy=True)
            if key not in storages:
                storages[key] = _Storage(storage_type.dtype, numel)
            root = storages[key]
            if view is None:
                return root
            view_key, offset, size = view
            view_key = view_key.decode("ascii") if isinstance(view_key, bytes) else str(view_key)
            if view_key not in storages:
                base = (root, int(offset) * root.dtype.itemsize)
                storages[view_key] = _Storage(root.dtype, int(size), base)
            return storages[view_key]

        obj = _Unpickler(stream, name, persistent).load()
        keys = plain()
        if not isinstance(keys, list):
            raise pickle.UnpicklingError("no list of storage keys after the object")
        pos = stream.tell()
        count, data = _COUNT[byteorder], memoryview(raw)
        for key in keys:
            key = key.decode("ascii") if isinstance(key, bytes) else str(key)
            if key not in storages:
                raise pickle.UnpicklingError(f"storage {key!r} listed but never used")
            storage = storages[key]
            if pos + 8 > len(raw):
                raise EOFError(f"storage {key!r}: missing its element count")
            (numel,) = count.unpack_from(raw, pos)
            nbytes = numel * storage.dtype.itemsize
            if numel != storage.numel:
                raise pickle.UnpicklingError(
                    f"storage {key!r} has {numel} elements in the data, {storage.numel} in the id"
                )
            if pos + 8 + nbytes > len(raw):
                raise EOFError(
                    f"storage {key!r}: {nbytes} bytes announced, {len(raw) - pos - 8} left"
                )
            storage.fill(data[pos + 8 : pos + 8 + nbytes], byteorder)
            pos += 8 + nbytes
        return _materialize(obj) if materialize else obj
    except errors.DataError:
        raise
    except EOFError as e:
        raise errors.DataError(f"{name}: truncated torch file ({e or 'ends early'})") from None
    except _READ_ERRORS as e:
        raise errors.DataError(f"{name}: corrupt or unsupported torch file ({e})") from None


def _load_zip(raw: bytes, name: str) -> Any:
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
        names = archive.namelist()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
        raise errors.DataError(f"{name}: corrupt or truncated torch zip file ({e})") from None
    pickles = [
        n for n in names if n == "data.pkl" or (n.endswith("/data.pkl") and n.count("/") == 1)
    ]
    if any(n.endswith("constants.pkl") for n in names):
        raise errors.DataError(f"{name}: a TorchScript archive (torch.jit.save), not torch.save")
    if len(pickles) != 1:
        raise errors.DataError(
            f"{name}: a zip file but not a torch.save archive (expected one '<name>/data.pkl', "
            f"found {pickles or 'none'})"
        )
    prefix = pickles[0][: -len("data.pkl")]
    try:
        order = (
            archive.read(prefix + "byteorder").decode()
            if prefix + "byteorder" in names
            else "little"
        )
        if order not in ("little", "big"):
            raise errors.DataError(f"{name}: unknown byteorder record {order!r}")
        byteorder = "<" if order == "little" else ">"
        storages: dict[str, _Storage] = {}

        def persistent(pid):
            storage_type, key, numel, _ = _storage_id(pid, name, legacy=False)
            if key not in storages:
                record = f"{prefix}data/{key}"
                if record not in names:
                    raise pickle.UnpicklingError(f"the archive has no record {record!r}")
                data = archive.read(record)
                nbytes = numel * storage_type.dtype.itemsize
                if len(data) < nbytes:
                    raise EOFError(f"record {record!r} has {len(data)} bytes, needs {nbytes}")
                storage = _Storage(storage_type.dtype, numel)
                storage.fill(memoryview(data)[:nbytes], byteorder)
                storages[key] = storage
            return storages[key]

        obj = _Unpickler(io.BytesIO(archive.read(pickles[0])), name, persistent).load()
        return _materialize(obj)
    except errors.DataError:
        raise
    except EOFError as e:
        raise errors.DataError(f"{name}: truncated torch file ({e or 'ends early'})") from None
    except (*_READ_ERRORS, OSError) as e:
        raise errors.DataError(f"{name}: corrupt or unsupported torch file ({e})") from None


def _materialize(obj: Any) -> Any:
    """`obj` with every pending tensor replaced by its array (containers rebuilt as needed)."""
    if isinstance(obj, _Tensor):
        return obj.materialize()
    if isinstance(obj, _Storage):
        native = obj.dtype.newbyteorder("=") if obj.dtype.itemsize > 1 else obj.dtype
        return np.array(obj.array(), dtype=native)
    if isinstance(obj, list):
        for i, v in enumerate(obj):
            obj[i] = _materialize(v)
        return obj
    if isinstance(obj, tuple):
        items = [_materialize(v) for v in obj]
        if all(a is b for a, b in zip(items, obj, strict=True)):
            return obj
        return type(obj)(items) if type(obj) is tuple else type(obj)(*items)
    if isinstance(obj, dict):
        for k, v in obj.items():
            obj[k] = _materialize(v)
        return obj
    return obj


def _read(source: str | os.PathLike | BinaryIO) -> tuple[bytes, str]:
    if isinstance(source, (str, os.PathLike)):
        path = pathlib.Path(source)
        if not path.is_file():
            raise errors.DataError(f"{path}: file not found")
        return path.read_bytes(), str(path)
    name = str(getattr(source, "name", "<stream>"))
    try:
        return source.read(), name
    except OSError as e:
        raise errors.DataError(f"{name}: cannot read ({e})") from e


def loads(raw: bytes, name: str = "<bytes>") -> Any:
    """`load` of a torch file's bytes; `name` is what errors call it."""
    if raw[:4] == b"PK\x03\x04":
        return _load_zip(raw, name)
    if len(raw) >= 262 and raw[257:262] == b"ustar":
        raise errors.DataError(f"{name}: torch's tar format (torch < 0.1.10) is not supported")
    return _load_legacy(raw, name)


def load(source: str | os.PathLike | BinaryIO) -> Any:
    """The object in a `torch.save` file (zip format, torch >= 1.6, or the legacy format), with
    numpy arrays in place of tensors. `source` is a path or a binary file object.

    Raises `attnbench.errors.DataError` naming the file when it is missing, truncated, corrupt, not
    a torch file, or names a global outside the allow-list (see the module docstring)."""
    raw, name = _read(source)
    return loads(raw, name)


def loads_pickle(source: str | os.PathLike | BinaryIO) -> Any:
    """The object in a plain pickle (`pickle.dump`) that may hold torch tensors (storages as
    `torch.storage._load_from_bytes`) and numpy arrays, with numpy arrays in place of tensors.
    `source` is a binary file object or a path. Errors as in `load`."""
    raw, name = _read(source)
    if raw[:4] == b"PK\x03\x04":
        raise errors.DataError(f"{name}: a torch.save zip archive, not a plain pickle; use load")
    try:
        return _materialize(_Unpickler(io.BytesIO(raw), name).load())
    except errors.DataError:
        raise
    except EOFError as e:
        raise errors.DataError(f"{name}: truncated pickle ({e or 'ends early'})") from None
    except _READ_ERRORS as e:
        raise errors.DataError(f"{name}: corrupt pickle or unsupported content ({e})") from None
