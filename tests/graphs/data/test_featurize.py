"""OGB's smiles2graph features on hand-worked molecules.

Each expected row is written out by hand from the chemistry, in the order of
`graphs.data.featurize.ATOM_FEATURES`:

    [atomic_num - 1, chirality, total degree, formal charge + 5, total Hs, radical electrons,
     hybridization, is aromatic, is in ring]

with chirality 0 CHI_UNSPECIFIED, 1 CW, 2 CCW; hybridization 0 SP, 1 SP2, 2 SP3, 5 misc. Bond
rows: [bond type (0 single, 1 double, 2 triple, 3 aromatic, 4 misc), stereo (0 NONE, 1 Z, 2 E),
is conjugated]. The total degree counts hydrogens (OGB's GetTotalDegree).

Needs RDKit: without it, importing graphs.data.featurize fails with the install command (CI installs
the `molecules` extra).
"""

import re

import numpy as np
import pytest
from rdkit import Chem

from graphs.data import featurize

CARBON, NITROGEN, OXYGEN = 5, 6, 7  # atomic number - 1
UNCHARGED = 5  # formal charge 0 + 5
SP, SP2, SP3, HYB_MISC = 0, 1, 2, 5


def _graph(smiles):
    g = featurize.smiles_to_graph(smiles)
    n, e = len(g["node_feat"]), g["edge_index"].shape[1]
    assert g["num_nodes"] == n
    assert g["node_feat"].shape == (n, 9) and g["node_feat"].dtype == np.int64
    assert g["edge_index"].shape == (2, e) and g["edge_feat"].shape == (e, 3)
    return g


def _edges(bonds):
    """OGB's edge order: bond (i, j) gives (i, j) then (j, i)."""
    src = [x for i, j in bonds for x in (i, j)]
    dst = [x for i, j in bonds for x in (j, i)]
    return [src, dst]


def _both_directions(rows):
    return [row for row in rows for _ in range(2)]


def test_feature_dims_are_ogbs():
    # Lengths of OGB's allowable lists, misc included: 118 elements + misc, 4 chirality tags +
    # misc, degree 0..10 + misc, charge -5..5 + misc, Hs 0..8 + misc, radicals 0..4 + misc,
    # 5 hybridizations + misc, two booleans; bond type 4 + misc, 6 stereo values, a boolean.
    assert featurize.atom_feature_dims() == [119, 5, 12, 12, 10, 6, 6, 2, 2]
    assert featurize.bond_feature_dims() == [5, 6, 2]
    assert [f.name for f in featurize.ATOM_FEATURES][0] == "atomic_num"


def test_ethanol():
    g = _graph("CCO")
    assert g["node_feat"].tolist() == [
        [CARBON, 0, 4, UNCHARGED, 3, 0, SP3, 0, 0],  # CH3: 1 heavy neighbour + 3 H
        [CARBON, 0, 4, UNCHARGED, 2, 0, SP3, 0, 0],  # CH2: C and O + 2 H
        [OXYGEN, 0, 2, UNCHARGED, 1, 0, SP3, 0, 0],  # OH: C + 1 H
    ]
    assert g["edge_index"].tolist() == _edges([(0, 1), (1, 2)])
    assert g["edge_feat"].tolist() == _both_directions([[0, 0, 0], [0, 0, 0]])  # single, plain


def test_benzene():
    g = _graph("c1ccccc1")
    # Every CH: 2 ring neighbours + 1 H, SP2, aromatic, in a ring.
    assert g["node_feat"].tolist() == [[CARBON, 0, 3, UNCHARGED, 1, 0, SP2, 1, 1]] * 6
    assert g["edge_index"].tolist() == _edges([(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 0)])
    assert g["edge_feat"].tolist() == [[3, 0, 1]] * 12  # aromatic, conjugated


def test_kekule_benzene_is_aromatised():
    # RDKit's sanitisation perceives the Kekule form as aromatic: the same graph as c1ccccc1.
    a, b = _graph("C1=CC=CC=C1"), _graph("c1ccccc1")
    for k in ("node_feat", "edge_index", "edge_feat"):
        np.testing.assert_array_equal(a[k], b[k])


def test_acetic_acid():
    g = _graph("CC(=O)O")
    assert g["node_feat"].tolist() == [
        [CARBON, 0, 4, UNCHARGED, 3, 0, SP3, 0, 0],  # CH3
        [CARBON, 0, 3, UNCHARGED, 0, 0, SP2, 0, 0],  # carboxyl C: C, =O, O; no H
        [OXYGEN, 0, 1, UNCHARGED, 0, 0, SP2, 0, 0],  # =O
        # OH: C + H; its lone pair is conjugated with the C=O, so RDKit calls it SP2
        [OXYGEN, 0, 2, UNCHARGED, 1, 0, SP2, 0, 0],
    ]
    assert g["edge_index"].tolist() == _edges([(0, 1), (1, 2), (1, 3)])
    assert g["edge_feat"].tolist() == _both_directions(
        [[0, 0, 0], [1, 0, 1], [0, 0, 1]]  # C-C plain; C=O and C-OH conjugated
    )


def test_ammonium_has_charge_and_no_edges():
    g = _graph("[NH4+]")
    # 4 H (total degree 4), charge +1 -> index 6, SP3.
    assert g["node_feat"].tolist() == [[NITROGEN, 0, 4, 6, 4, 0, SP3, 0, 0]]
    assert g["edge_index"].shape == (2, 0) and g["edge_feat"].shape == (0, 3)


def test_alanine_chiral_centre():
    g = _graph("C[C@H](N)C(=O)O")
    assert g["node_feat"].tolist() == [
        [CARBON, 0, 4, UNCHARGED, 3, 0, SP3, 0, 0],  # CH3
        [CARBON, 2, 4, UNCHARGED, 1, 0, SP3, 0, 0],  # C@H as written: CHI_TETRAHEDRAL_CCW = 2
        [NITROGEN, 0, 3, UNCHARGED, 2, 0, SP3, 0, 0],  # NH2: C + 2 H
        [CARBON, 0, 3, UNCHARGED, 0, 0, SP2, 0, 0],  # carboxyl C
        [OXYGEN, 0, 1, UNCHARGED, 0, 0, SP2, 0, 0],  # =O
        [OXYGEN, 0, 2, UNCHARGED, 1, 0, SP2, 0, 0],  # OH, conjugated
    ]
    assert g["edge_index"].tolist() == _edges([(0, 1), (1, 2), (1, 3), (3, 4), (3, 5)])
    assert g["edge_feat"].tolist() == _both_directions(
        [[0, 0, 0], [0, 0, 0], [0, 0, 0], [1, 0, 1], [0, 0, 1]]
    )
    # The mirror image differs only in the chirality tag (@@: CW = 1).
    mirror = _graph("C[C@@H](N)C(=O)O")["node_feat"]
    assert mirror[1, 1] == 1 and np.array_equal(
        np.delete(mirror, 1, 0), np.delete(g["node_feat"], 1, 0)
    )


@pytest.mark.parametrize("smiles,stereo", [("C/C=C/C", 2), ("C/C=C\\C", 1)])  # E, Z
def test_butene_double_bond_stereo(smiles, stereo):
    g = _graph(smiles)
    ch3 = [CARBON, 0, 4, UNCHARGED, 3, 0, SP3, 0, 0]
    ch = [CARBON, 0, 3, UNCHARGED, 1, 0, SP2, 0, 0]  # =CH-: 2 carbons + 1 H
    assert g["node_feat"].tolist() == [ch3, ch, ch, ch3]
    # The C=C is not conjugated (nothing to conjugate with); trans = STEREOE, cis = STEREOZ.
    assert g["edge_feat"].tolist() == _both_directions([[0, 0, 0], [1, stereo, 0], [0, 0, 0]])


def test_ogbs_own_example():
    # The check in OGB's ogb/utils/features.py comments: Cl[C@H](/C=C/C)Br, atom 1 (the chiral
    # carbon) is [5, 2, 4, 5, 1, 0, 2, 0, 0] and bond 2 (the double bond) is [1, 2, 0].
    g = _graph("Cl[C@H](/C=C/C)Br")
    assert g["node_feat"][1].tolist() == [5, 2, 4, 5, 1, 0, 2, 0, 0]
    assert g["edge_feat"][2 * 2].tolist() == [1, 2, 0]


def test_misc_fallbacks():
    # A dummy atom has atomic number 0 (not in 1..118 -> misc 118) and unspecified
    # hybridization (misc 5); a lone Na+ has RDKit hybridization S (not in OGB's list -> 5);
    # a dative bond is not one of the four bond types (-> misc 4).
    dummy = _graph("*C")["node_feat"][0]
    assert dummy[0] == 118 and dummy[6] == HYB_MISC
    sodium = _graph("[Na+].[Cl-]")["node_feat"]
    assert sodium[0].tolist() == [10, 0, 0, 6, 0, 0, HYB_MISC, 0, 0]
    assert _graph("[NH3]->[Cu]")["edge_feat"][0].tolist() == [4, 0, 0]


def test_stereo_outside_ogbs_list_is_an_error():
    mol = featurize.parse_smiles("C/C=C/C")
    mol.GetBondWithIdx(1).SetStereo(Chem.BondStereo.STEREOATROPCW)
    with pytest.raises(ValueError, match="bond 1-2: bond_stereo 'STEREOATROPCW'"):
        featurize.mol_to_graph(mol)


@pytest.mark.parametrize(
    "smiles,reason",
    [
        ("C1CC", "unclosed ring"),
        ("xyz", "syntax error"),
        ("C(C)(C)(C)(C)C", "valence"),
        ("c1cccc1", "[Kk]ekulize"),
    ],
)
def test_unparsable_smiles_names_it(smiles, reason):
    with pytest.raises(
        ValueError, match=rf"unparsable SMILES {re.escape(repr(smiles))}: .*{reason}"
    ):
        featurize.smiles_to_graph(smiles)


def test_empty_and_non_string_smiles():
    with pytest.raises(ValueError, match="has no atoms"):
        featurize.smiles_to_graph("")
    with pytest.raises(TypeError, match="must be a str"):
        featurize.smiles_to_graph(None)
