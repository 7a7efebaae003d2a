"""SMILES -> molecular graph with OGB's integer atom and bond features.

The features, their allowable values and the fallback are those of OGB's `smiles2graph`
(snap-stanford/ogb, `ogb/utils/mol.py` and `ogb/utils/features.py`), the featurisation of
PCQM4M(v2) and of the ogbg-mol* datasets, restated here as facts:

* The molecule is RDKit's `MolFromSmiles` (sanitised, implicit hydrogens: OGB's default
  `removeHs=True`); node `i` is RDKit atom `i`.
* Atom features, 9 integers each the index of the RDKit value in a list of allowable values
  (`ATOM_FEATURES`, in this order): atomic number (1..118, so the index is atomic_num - 1),
  chirality tag (CHI_UNSPECIFIED, CHI_TETRAHEDRAL_CW, CHI_TETRAHEDRAL_CCW, CHI_OTHER), total
  degree (0..10, `GetTotalDegree`: heavy neighbours plus hydrogens), formal charge (-5..5),
  total number of hydrogens (0..8, `GetTotalNumHs`), number of radical electrons (0..4),
  hybridization (SP, SP2, SP3, SP3D, SP3D2), is aromatic (False, True), is in a ring (False,
  True).
* Bond features, 3 integers: bond type (SINGLE, DOUBLE, TRIPLE, AROMATIC), bond stereo
  (STEREONONE, STEREOZ, STEREOE, STEREOCIS, STEREOTRANS, STEREOANY), is conjugated (False,
  True).
* "misc": every list except the three booleans and bond stereo ends with a "misc" entry, and a
  value not in the list gets that last index (e.g. atomic number 0 of a `*` dummy atom -> 118,
  RDKit's S hybridization of a lone Na+ -> 5, a dative bond -> 4). Bond stereo has no misc:
  OGB raises on a stereo value outside its list (RDKit's atropisomer values STEREOATROPCW /
  STEREOATROPCCW), and so do we (ValueError naming the molecule and the value).
* Edges: each bond `(i, j)` (RDKit's begin and end atom, in RDKit's bond order) gives two
  directed edges, `(i, j)` then `(j, i)`, both with the bond's features; `edge_index` is
  `[2, 2 * num_bonds]` (row 0 source, row 1 target). A molecule without bonds has
  `edge_index` `[2, 0]` and `edge_feat` `[0, 3]`.

`atom_feature_dims()` / `bond_feature_dims()` are OGB's `get_atom_feature_dims()` /
`get_bond_feature_dims()`: the number of values of each feature, misc included
([119, 5, 12, 12, 10, 6, 6, 2, 2] and [5, 6, 2]), i.e. the embedding table sizes.

Errors: a SMILES RDKit cannot parse or sanitise raises `ValueError` naming the SMILES and
RDKit's reason; an empty SMILES (no atoms) is an error too (OGB would return an empty graph).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from attnbench import extras

if TYPE_CHECKING:
    from rdkit import Chem

__all__ = [
    "Feature",
    "ATOM_FEATURES",
    "BOND_FEATURES",
    "atom_feature_dims",
    "bond_feature_dims",
    "parse_smiles",
    "mol_to_graph",
    "smiles_to_graph",
]


@dataclasses.dataclass(frozen=True)
class Feature:
    """One integer feature: `values` is OGB's allowable-value list without its misc entry;
    `index(x)` is the position of the RDKit value `x`, or `len(values)` (misc) when `has_misc`.

    `read` takes an RDKit atom or bond and returns the value, already converted to what the
    list holds (RDKit enums as their names, as OGB compares `str(enum)`)."""

    name: str
    values: tuple
    has_misc: bool
    read: Callable = dataclasses.field(repr=False, compare=False)
    _table: dict = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "_table", {v: i for i, v in enumerate(self.values)})

    @property
    def dim(self) -> int:
        return len(self.values) + self.has_misc

    def index(self, value) -> int:
        i = self._table.get(value)
        if i is not None:
            return i
        if self.has_misc:
            return len(self.values)
        raise ValueError(
            f"{self.name} {value!r} is not one of OGB's values {list(self.values)} "
            "(this feature has no misc entry; OGB's smiles2graph fails here too)"
        )


def _enum_name(getter: str) -> Callable:
    # str() of an RDKit enum is its name (CHI_TETRAHEDRAL_CW, SP3, AROMATIC, STEREOE), which is
    # what OGB's lists hold.
    return lambda obj: str(getattr(obj, getter)())


ATOM_FEATURES: tuple[Feature, ...] = (
    Feature("atomic_num", tuple(range(1, 119)), True, lambda a: a.GetAtomicNum()),
    Feature(
        "chirality",
        ("CHI_UNSPECIFIED", "CHI_TETRAHEDRAL_CW", "CHI_TETRAHEDRAL_CCW", "CHI_OTHER"),
        True,
        _enum_name("GetChiralTag"),
    ),
    Feature("degree", tuple(range(0, 11)), True, lambda a: a.GetTotalDegree()),
    Feature("formal_charge", tuple(range(-5, 6)), True, lambda a: a.GetFormalCharge()),
    Feature("num_hs", tuple(range(0, 9)), True, lambda a: a.GetTotalNumHs()),
    Feature(
        "num_radical_electrons", tuple(range(0, 5)), True, lambda a: a.GetNumRadicalElectrons()
    ),
    Feature(
        "hybridization", ("SP", "SP2", "SP3", "SP3D", "SP3D2"), True, _enum_name("GetHybridization")
    ),
    Feature("is_aromatic", (False, True), False, lambda a: a.GetIsAromatic()),
    Feature("is_in_ring", (False, True), False, lambda a: a.IsInRing()),
)

BOND_FEATURES: tuple[Feature, ...] = (
    Feature(
        "bond_type", ("SINGLE", "DOUBLE", "TRIPLE", "AROMATIC"), True, _enum_name("GetBondType")
    ),
    Feature(
        "bond_stereo",
        ("STEREONONE", "STEREOZ", "STEREOE", "STEREOCIS", "STEREOTRANS", "STEREOANY"),
        False,
        _enum_name("GetStereo"),
    ),
    Feature("is_conjugated", (False, True), False, lambda b: b.GetIsConjugated()),
)


def atom_feature_dims() -> list[int]:
    """Values per atom feature, misc included (OGB's `get_atom_feature_dims`)."""
    return [f.dim for f in ATOM_FEATURES]


def bond_feature_dims() -> list[int]:
    """Values per bond feature, misc included (OGB's `get_bond_feature_dims`)."""
    return [f.dim for f in BOND_FEATURES]


_LOG_STAMP = re.compile(r"^\[\d\d:\d\d:\d\d\] ")


def _rdkit():
    """RDKit's `Chem` and `rdBase`, or the one-line `MissingExtraError` naming the extra."""
    extras.require("rdkit", "reading molecules (graphs.data.featurize)")
    from rdkit import Chem, rdBase

    return Chem, rdBase


def parse_smiles(smiles: str) -> Chem.Mol:
    """The sanitised RDKit molecule of `smiles`; `ValueError` naming it (and RDKit's reason)
    when RDKit cannot parse or sanitise it, or when it has no atoms."""
    Chem, rdBase = _rdkit()
    if not isinstance(smiles, str):
        raise TypeError(f"SMILES must be a str, got {type(smiles).__name__}: {smiles!r}")
    with rdBase.CaptureErrorLog() as log:  # RDKit's reason, instead of a line on stderr
        mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        lines = [_LOG_STAMP.sub("", line) for line in log.messages.splitlines() if line.strip()]
        reason = lines[0] if lines else "RDKit returned no molecule"
        raise ValueError(f"unparsable SMILES {smiles!r}: {reason}")
    if mol.GetNumAtoms() == 0:
        raise ValueError(f"SMILES {smiles!r} has no atoms")
    return mol


def _rows(features: Sequence[Feature], objs: list, mol: Chem.Mol) -> np.ndarray:
    # The hot loop of dataset builds: a dict lookup per value, misc (or None: no misc) as the
    # default; `Feature.index` only to word the error.
    lookups = [(f.read, f._table.get, len(f.values) if f.has_misc else None) for f in features]
    out = [[get(read(obj), misc) for read, get, misc in lookups] for obj in objs]
    for obj, row in zip(objs, out, strict=True):
        if None in row:
            Chem, _ = _rdkit()
            what = (
                f"bond {obj.GetBeginAtomIdx()}-{obj.GetEndAtomIdx()}"
                if isinstance(obj, Chem.Bond)
                else f"atom {obj.GetIdx()}"
            )
            try:
                for f in features:
                    f.index(f.read(obj))
            except ValueError as e:
                raise ValueError(f"molecule {Chem.MolToSmiles(mol)!r}, {what}: {e}") from None
    return np.asarray(out, np.int64).reshape(-1, len(features))


def mol_to_graph(mol: Chem.Mol) -> dict:
    """OGB's graph of an RDKit molecule: `{"node_feat": int64 [n, 9], "edge_index": int64
    [2, 2B], "edge_feat": int64 [2B, 3], "num_nodes": n}` (B bonds; see the module docstring)."""
    # Indexing is faster than iterating RDKit's GetAtoms()/GetBonds() sequence wrappers.
    atoms = [mol.GetAtomWithIdx(i) for i in range(mol.GetNumAtoms())]
    bonds = [mol.GetBondWithIdx(k) for k in range(mol.GetNumBonds())]
    ends = np.asarray([(b.GetBeginAtomIdx(), b.GetEndAtomIdx()) for b in bonds], np.int64)
    # Bond k gives the directed edges 2k = (i, j) and 2k + 1 = (j, i), as OGB lists them.
    edges = np.stack([ends, ends[:, ::-1]], axis=1).reshape(-1, 2) if bonds else ends
    return {
        "node_feat": _rows(ATOM_FEATURES, atoms, mol),
        "edge_index": np.ascontiguousarray(edges.reshape(-1, 2).T),
        "edge_feat": np.repeat(_rows(BOND_FEATURES, bonds, mol), 2, axis=0),
        "num_nodes": len(atoms),
    }


def smiles_to_graph(smiles: str) -> dict:
    """OGB's `smiles2graph(smiles)`: `mol_to_graph(parse_smiles(smiles))`."""
    return mol_to_graph(parse_smiles(smiles))
