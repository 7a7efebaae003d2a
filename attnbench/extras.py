"""Optional dependencies, imported where they are used: `require("rdkit", "graphs.zinc")`.

attnbench installs without its extras; a module that needs one imports it through `require` at
the point of use, so a command that needs no extra never imports one, and one that needs a
missing extra stops with one line naming the `pip install` that provides it (a user error: exit
status 2, no traceback).
"""

from __future__ import annotations

import importlib
import types

from attnbench import errors

__all__ = ["EXTRAS", "MissingExtraError", "require"]

# Top-level module -> (the pyproject extra that installs it, the distribution's name).
EXTRAS = {
    "rdkit": ("molecules", "RDKit"),
    "h5py": ("pointcloud", "h5py"),
    "tensorflow_datasets": ("tfds", "tensorflow-datasets"),
    "tensorflow": ("tfds-prepare", "tensorflow"),
    "datasets": ("hf", "datasets"),
    "pyarrow": ("hf", "pyarrow"),
    "sentencepiece": ("hf", "sentencepiece"),
    "torch": ("torch-baseline", "PyTorch"),
}


class MissingExtraError(errors.UserError, ModuleNotFoundError):
    """An optional dependency that is not installed; the message names the extra."""


def require(module: str, what: str) -> types.ModuleType:
    """Imports `module` (e.g. "rdkit.Chem"); where it is missing, `MissingExtraError`: "`what`
    needs RDKit: pip install 'attnbench[molecules]'"."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        top = module.split(".")[0]
        if e.name is not None and e.name.split(".")[0] != top:
            raise  # the package is there but something it imports is broken: a real bug
        extra, dist = EXTRAS.get(top, (None, top))
        how = f"pip install 'attnbench[{extra}]'" if extra else f"pip install {dist}"
        raise MissingExtraError(
            f"{what} needs {dist}, which is not installed: {how}", name=top
        ) from None
