"""`graphs.data.peptides`: the offline Peptides-like stand-in (graphs of hand-worked peptides,
shape targets of hand-made conformers against explicit float64 computations and RDKit's own
descriptors, synthetic labels, standardisation, splits and the cached build on a few short
peptides; real generation at LRGB-like sizes only in the slow tier), and the official LRGB
Peptides reader on csv.gz + split pickles written here, checked against hand-worked graphs,
targets, standardisation and splits."""

import gzip
import json
import pickle
import time

import numpy as np
import pytest

from attnbench import errors
from attnbench.data import cache, pipeline
from graphs.data import batching, featurize, official, peptides

TINY = dict(num_peptides=8, lengths=(2, 4), workers=1)  # ~10 ms a conformer


def _rotation(seed):
    q, r = np.linalg.qr(np.random.default_rng(seed).normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    return q if np.linalg.det(q) > 0 else -q


# --- graphs -----------------------------------------------------------------------------------


def test_dipeptide_ga_graph_by_hand():
    """Gly-Ala, H2N-CH2-C(=O)-NH-CH(CH3)-C(=O)OH: 10 heavy atoms (5 C, 2 N, 3 O), 9 bonds (2
    C=O), in the order of its canonical SMILES C[C@H](NC(=O)CN)C(=O)O: Ala CB, Ala CA, Ala N,
    Gly C, Gly O, Gly CA, Gly N, Ala C, Ala O, Ala OXT. Rows as in
    tests/graphs/data/test_featurize.py: [Z-1, chirality, total degree, charge+5, Hs, radicals,
    hybridization (1 SP2, 2 SP3), aromatic, ring]. The amide N and the acid OH are SP2 in RDKit
    (conjugated with their carbonyl); Ala's CA is the one stereocentre: L, `@` = CCW (2)."""
    assert peptides.peptide_smiles("GA") == "C[C@H](NC(=O)CN)C(=O)O"
    g = peptides.peptide_graph("GA")
    expected_nodes = [
        [5, 0, 4, 5, 3, 0, 2, 0, 0],  # Ala CB: CH3
        [5, 2, 4, 5, 1, 0, 2, 0, 0],  # Ala CA: CH, L
        [6, 0, 3, 5, 1, 0, 1, 0, 0],  # Ala N (amide NH)
        [5, 0, 3, 5, 0, 0, 1, 0, 0],  # Gly C (carbonyl)
        [7, 0, 1, 5, 0, 0, 1, 0, 0],  # Gly O
        [5, 0, 4, 5, 2, 0, 2, 0, 0],  # Gly CA: CH2
        [6, 0, 3, 5, 2, 0, 2, 0, 0],  # Gly N: NH2
        [5, 0, 3, 5, 0, 0, 1, 0, 0],  # Ala C (carboxyl)
        [7, 0, 1, 5, 0, 0, 1, 0, 0],  # Ala O
        [7, 0, 2, 5, 1, 0, 1, 0, 0],  # Ala OXT: OH
    ]
    np.testing.assert_array_equal(g["node_feat"], expected_nodes)
    assert g["num_nodes"] == 10
    # 9 bonds -> 18 directed edges; (bond type 0 single / 1 double, conjugated): the two C=O
    # and the C-N / C-OH next to them are conjugated.
    bonds = {(0, 1): (0, 0), (1, 2): (0, 0), (2, 3): (0, 1), (3, 4): (1, 1), (3, 5): (0, 0),
             (5, 6): (0, 0), (1, 7): (0, 0), (7, 8): (1, 1), (7, 9): (0, 1)}  # fmt: skip
    assert g["edge_index"].shape == (2, 18)
    seen = {}
    for (i, j), feat in zip(g["edge_index"].T.tolist(), g["edge_feat"].tolist(), strict=True):
        seen[(i, j)] = (feat[0], feat[2])
        assert feat[1] == 0  # no bond stereo
    assert seen == {**bonds, **{(j, i): v for (i, j), v in bonds.items()}}
    assert g["node_feat"][:, 4].sum() == 10  # C5H10N2O3 carries 10 hydrogens


def test_bad_sequence_is_named():
    with pytest.raises(ValueError, match="peptide 'GXA'"):
        peptides.peptide_graph("GXA")


def test_sample_sequences_lengths_alphabet_and_seed():
    seqs = peptides.sample_sequences(300, seed=4, lengths=(5, 9))
    assert seqs == peptides.sample_sequences(300, seed=4, lengths=(5, 9))
    assert seqs != peptides.sample_sequences(300, seed=5, lengths=(5, 9))
    assert {len(s) for s in seqs} == set(range(5, 10))
    assert set("".join(seqs)) == set(peptides.AMINO_ACIDS)
    # The default lengths (6..30) give LRGB-like sizes: 8.35 heavy atoms a residue, + 1.
    heavy = {a: peptides.peptide_graph(a)["num_nodes"] - 1 for a in peptides.AMINO_ACIDS}
    assert np.mean(list(heavy.values())) == pytest.approx(8.35)
    lengths = [len(s) for s in peptides.sample_sequences(2000, seed=0)]
    assert min(lengths) == 6 and max(lengths) == 30
    assert 8.35 * np.mean(lengths) + 1 == pytest.approx(150.94, rel=0.03)
    with pytest.raises(ValueError, match="lengths"):
        peptides.sample_sequences(3, lengths=(4, 2))


# --- struct targets ---------------------------------------------------------------------------


def _reference_targets(x, masses, hydrogens):
    """Explicit float64 loops (no shared code with the module)."""
    x = np.asarray(x, np.float64)
    n = len(x)

    def moments(w):
        total = sum(w)
        c = [sum(w[i] * x[i][k] for i in range(n)) / total for k in range(3)]
        tensor = np.zeros((3, 3))
        for i in range(n):
            r = [x[i][k] - c[k] for k in range(3)]
            r2 = r[0] ** 2 + r[1] ** 2 + r[2] ** 2
            for j in range(3):
                for k in range(3):
                    tensor[j, k] += w[i] * ((r2 if j == k else 0.0) - r[j] * r[k])
        return sorted(np.linalg.eigvalsh(tensor / total))

    c = [sum(x[i][k] for i in range(n)) / n for k in range(3)]
    cov = np.zeros((3, 3))
    for i in range(n):
        for j in range(3):
            for k in range(3):
                cov[j, k] += (x[i][j] - c[j]) * (x[i][k] - c[k]) / n
    evals, evecs = np.linalg.eigh(cov)
    extents = []
    for k in range(3):
        p = [sum((x[i][m] - c[m]) * evecs[m, k] for m in range(3)) for i in range(n)]
        extents.append(max(p) - min(p))
    plane = sum(abs(sum((x[i][m] - c[m]) * evecs[m, 0] for m in range(3))) for i in range(n)) / n
    return [
        *moments(list(masses)),
        *moments(list(hydrogens)),
        *sorted(extents, reverse=True),
        3 * evals[0] / sum(evals),
        plane,
    ]


def test_shape_targets_of_an_axis_cross_by_hand():
    """Unit-weight points (+-a,0,0), (0,+-b,0), (0,0,+-c), a > b > c, rotated and moved: lengths
    2a, 2b, 2c; moments (per unit weight) ((b2+c2), (a2+c2), (a2+b2)) / 3; spherocity
    3 c2 / (a2+b2+c2); plane of best fit z = 0, mean distance 2c / 6."""
    a, b, c = 5.0, 3.0, 1.0
    pts = np.array([[a, 0, 0], [-a, 0, 0], [0, b, 0], [0, -b, 0], [0, 0, c], [0, 0, -c]])
    x = pts @ _rotation(0).T + np.array([1.5, -2.0, 7.0])
    ones = np.ones(6)
    got = peptides.shape_targets(x, ones, ones)
    moments = [(b * b + c * c) / 3, (a * a + c * c) / 3, (a * a + b * b) / 3]
    expected = [*moments, *moments, 2 * a, 2 * b, 2 * c, 3 * c * c / (a * a + b * b + c * c), c / 3]
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    assert got.dtype == np.float64 and got.shape == (len(peptides.STRUCT_TARGETS),)


def test_shape_targets_match_explicit_loops_with_weights():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(9, 3)) * [4.0, 2.0, 0.7]
    masses = rng.uniform(12, 33, size=9)
    hydrogens = np.array([0, 1, 3, 0, 2, 0, 0, 1, 1])
    got = peptides.shape_targets(x, masses, hydrogens)
    np.testing.assert_allclose(got, _reference_targets(x, masses, hydrogens), rtol=1e-10)
    # Invariant under rotation and translation.
    moved = x @ _rotation(2).T + 3.0
    np.testing.assert_allclose(peptides.shape_targets(moved, masses, hydrogens), got, rtol=1e-9)
    # Valence moments depend only on where the hydrogens are.
    zero_h = hydrogens == 0
    x2 = x.copy()
    x2[zero_h] += 10.0
    np.testing.assert_allclose(
        peptides.shape_targets(x2, masses, hydrogens)[3:6], got[3:6], rtol=1e-9
    )


def test_conformer_targets_match_rdkit_descriptors():
    """On a real conformer, Spherocity and Plane_best_fit are RDKit's CalcSpherocityIndex and
    CalcPBF, and the mass moments (with heavy-atom masses) RDKit's CalcPMI1-3 / total mass."""
    from rdkit import Chem
    from rdkit.Chem import AllChem, rdMolDescriptors

    mol = Chem.MolFromSequence("GAW")
    params = AllChem.ETKDGv3()
    params.randomSeed, params.useRandomCoords, params.enforceChirality = 7, True, False
    assert AllChem.EmbedMolecule(mol, params) == 0
    x = mol.GetConformer().GetPositions()
    atom_mass = np.array([a.GetMass() for a in mol.GetAtoms()])
    hydrogens = np.array([a.GetTotalNumHs() for a in mol.GetAtoms()])
    got = peptides.shape_targets(x, atom_mass, hydrogens)
    pmi = [getattr(rdMolDescriptors, f"CalcPMI{k}")(mol) for k in (1, 2, 3)]
    np.testing.assert_allclose(got[:3] * atom_mass.sum(), pmi, rtol=1e-9)
    assert got[9] == pytest.approx(rdMolDescriptors.CalcSpherocityIndex(mol), rel=1e-9)
    assert got[10] == pytest.approx(rdMolDescriptors.CalcPBF(mol), rel=1e-9)


def test_conformer_targets_are_seeded():
    a = peptides.conformer_targets("GAWK", 11)
    np.testing.assert_array_equal(a, peptides.conformer_targets("GAWK", 11))
    assert not np.allclose(a, peptides.conformer_targets("GAWK", 12))
    assert np.all(np.isfinite(a)) and np.all(a[:9] > 0)
    assert a[0] <= a[1] <= a[2] and a[6] >= a[7] >= a[8]


# --- labels, standardisation, splits ----------------------------------------------------------


def test_func_labels_by_hand():
    names = [n for n, _ in peptides.FUNC_RULES]
    assert len(names) == 10

    def label(seq, name):
        return int(peptides.func_labels(seq)[names.index(name)])

    assert label("KKAG", "net_positive") == 1 and label("KRDAG", "net_positive") == 0
    assert label("DEAG", "net_negative") == 1 and label("DKAG", "net_negative") == 0
    assert label("IIVG", "hydropathy_above_0") == 1 and label("KKDG", "hydropathy_above_0") == 0
    assert label("AIGG", "hydrophobic_fraction_ge_0.4") == 1  # 2 / 4
    assert label("AGGGG", "hydrophobic_fraction_ge_0.4") == 0  # 1 / 5
    assert label("SAGK", "polar_fraction_ge_0.25") == 1  # 1 / 4
    assert label("SAGKA", "polar_fraction_ge_0.25") == 0  # 1 / 5
    assert label("AGPA", "has_GP_PG_GG_or_PP_motif") == 1
    assert label("AGAP", "has_GP_PG_GG_or_PP_motif") == 0
    far = "W" + "A" * 10 + "Y"  # aromatic at both ends of a 12-mer
    assert label(far, "aromatic_in_first_5_and_last_5") == 1
    assert label("W" + "A" * 11, "aromatic_in_first_5_and_last_5") == 0
    assert label("C" + "A" * 11 + "M", "cys_or_met_pair_12_apart") == 1  # positions 0 and 12
    assert label("C" + "A" * 10 + "M", "cys_or_met_pair_12_apart") == 0  # 11 apart
    assert label("KK" + "A" * 10 + "DD", "ends_charge_opposite") == 1
    assert label("KK" + "A" * 10 + "KD", "ends_charge_opposite") == 0  # C-end charge 0
    assert label("KAAAD", "first_last_same_class") == 1  # both charged
    assert label("KAAAS", "first_last_same_class") == 0
    assert peptides.func_labels("KKAG").dtype == np.int8


def test_label_rates_between_10_and_50_percent():
    labels = np.stack([peptides.func_labels(s) for s in peptides.sample_sequences(1000, seed=3)])
    rates = labels.mean(0)
    assert np.all((rates >= 0.10) & (rates <= 0.50)), dict(
        zip(peptides.FUNC_RULES, rates, strict=True)
    )


def test_standardize_is_lrgbs_zscore():
    v = np.array([[1.0, 5.0], [2.0, 5.0], [4.0, 5.0], [9.0, 5.0]])
    z = peptides.standardize(v)
    mean = (1 + 2 + 4 + 9) / 4
    std = np.sqrt(sum((t - mean) ** 2 for t in (1, 2, 4, 9)) / 3)  # pandas: ddof=1
    np.testing.assert_allclose(z[:, 0], [(t - mean) / std for t in (1, 2, 4, 9)], rtol=1e-12)
    np.testing.assert_array_equal(z[:, 1], 0.0)  # a constant column


def test_split_sizes_are_lrgbs_proportions():
    assert peptides.split_sizes(15_535) == (10_873, 2_331, 2_331)
    assert peptides.split_sizes(360) == (252, 54, 54)
    assert peptides.split_sizes(8) == (4, 2, 2)
    assert peptides.split_sizes(20) == (14, 3, 3)


# --- the cached build -------------------------------------------------------------------------


def test_load_tiny_build_both_kinds(tmp_path, monkeypatch):
    func = peptides.load(tmp_path, kind="func", seed=2, **TINY)
    assert func.source == "standin"
    assert "not LRGB" in func.description["data"]
    assert "generation_seconds" in func.description
    rates = list(func.description["label_rates"].values())
    assert len(rates) == 10 and all(0 <= r <= 1 for r in rates)
    assert [len(s) for s in (func.train, func.val, func.test)] == [4, 2, 2]
    (directory,) = (tmp_path / "graphs").glob("peptides-like-*")
    stored = {s: cache.load_arrays(directory / f"{s}.npz") for s in peptides.SPLITS}
    # The splits partition the generated peptides, each one the sequence sampled at its index.
    seqs = peptides.sample_sequences(8, seed=2, lengths=(2, 4))
    index = np.concatenate([stored[s]["index"] for s in peptides.SPLITS])
    assert sorted(index.tolist()) == list(range(8))
    for s, ds in zip(peptides.SPLITS, (func.train, func.val, func.test), strict=True):
        for k, i in enumerate(stored[s]["index"]):
            seq = stored[s]["sequence"][k]
            assert seq == seqs[i]
            graph, example = peptides.peptide_graph(seq), ds[k]
            for key in ("node_feat", "edge_index", "edge_feat"):
                np.testing.assert_array_equal(example[key], graph[key])
            assert example["spd"].shape == (graph["num_nodes"],) * 2
            np.testing.assert_array_equal(example["target"], peptides.func_labels(seq))
            assert example["target"].dtype == np.float32
            raw = peptides.conformer_targets(seq, peptides._embed_seed(2, i))
            np.testing.assert_allclose(stored[s]["struct_raw"][k], raw, rtol=1e-12)
    # struct: z-scored over the whole set, from the same build (no rebuild).
    monkeypatch.setattr(peptides, "build", lambda *a, **k: pytest.fail("rebuilt the cache"))
    struct = peptides.load(tmp_path, kind="struct", seed=2, **TINY)
    raw = np.concatenate([stored[s]["struct_raw"] for s in peptides.SPLITS])
    z = np.concatenate([np.stack([ds[k]["target"] for k in range(len(ds))])
                        for ds in (struct.train, struct.val, struct.test)])  # fmt: skip
    np.testing.assert_allclose(z, peptides.standardize(raw), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(z.mean(0), 0.0, atol=1e-5)
    np.testing.assert_allclose(z.std(0, ddof=1), 1.0, rtol=1e-5)
    assert struct.train[0]["target"].shape == (11,)
    assert json.loads(json.dumps(struct.description))["kind"] == "struct"
    # Batches through the trainer's iterator.
    batch = next(pipeline.train_iterator(func.train, batch_size=4, seed=0,
                                          collate=func.collate, prefetch=0))  # fmt: skip
    assert batch["target"].shape == (4, 10)
    assert batch["nodes"].shape[1] in batching.NODE_BUCKETS


def test_load_is_deterministic_and_seeded(tmp_path):
    a = peptides.load(tmp_path / "a", kind="struct", seed=0, **TINY)
    b = peptides.load(tmp_path / "b", kind="struct", seed=0, **TINY)
    c = peptides.load(tmp_path / "c", kind="struct", seed=1, **TINY)
    for x, y in zip(a.train.arrays.values(), b.train.arrays.values(), strict=True):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a.train.arrays["target"], c.train.arrays["target"])


def test_embedding_failures_are_skipped_and_counted(tmp_path, monkeypatch):
    seqs = peptides.sample_sequences(8, seed=0, lengths=(2, 4))
    real = peptides.conformer_targets
    monkeypatch.setattr(
        peptides, "conformer_targets", lambda s, *a: None if s == seqs[3] else real(s, *a)
    )
    data = peptides.load(tmp_path, kind="func", **TINY)
    assert sum(len(d) for d in (data.train, data.val, data.test)) == 7
    assert [len(d) for d in (data.train, data.val, data.test)] == list(peptides.split_sizes(7))
    assert "8 generated, 1 conformer failures" in data.description["data"]
    (directory,) = (tmp_path / "graphs").glob("peptides-like-*")
    kept = np.concatenate(
        [cache.load_arrays(directory / f"{s}.npz")["index"] for s in peptides.SPLITS]
    )
    assert sorted(kept.tolist()) == [0, 1, 2, 4, 5, 6, 7]
    monkeypatch.setattr(peptides, "conformer_targets", lambda *a: None)
    with pytest.raises(cache.DataError, match="no peptide embedded"):
        peptides.load(tmp_path, kind="func", seed=9, **TINY)


def test_errors_are_named(tmp_path):
    with pytest.raises(ValueError, match="kind must be 'func' or 'struct'"):
        peptides.load(tmp_path, kind="both", **TINY)
    with pytest.raises(ValueError, match="num_peptides must be at least 3"):
        peptides.load(tmp_path, num_peptides=2, lengths=(2, 3), workers=1)
    peptides.load(tmp_path, **TINY)
    (directory,) = (tmp_path / "graphs").glob("peptides-like-*")
    (directory / "val.npz").write_bytes(b"not an npz")
    with pytest.raises(cache.DataError, match="val.npz: corrupt array file"):
        peptides.load(tmp_path, **TINY)


# --- real sizes (slow) ------------------------------------------------------------------------


@pytest.mark.slow
def test_lrgb_like_sample_in_a_process_pool(tmp_path):
    """40 peptides at the default lengths, 2 spawn workers: LRGB-like sizes, no embedding
    failure, the pool's targets equal to in-process ones; prints the measured rate."""
    start = time.perf_counter()
    data = peptides.load(tmp_path, kind="struct", num_peptides=40, seed=0, workers=2)
    seconds = time.perf_counter() - start
    nodes = np.concatenate([ds.num_nodes for ds in (data.train, data.val, data.test)])
    assert len(nodes) == 40  # no failures
    assert 120 < nodes.mean() < 185, nodes.mean()
    print(f"40 LRGB-like peptides in {seconds:.0f} s ({40 / seconds:.2f}/s), "
          f"mean {nodes.mean():.1f} nodes")  # fmt: skip
    (directory,) = (tmp_path / "graphs").glob("peptides-like-*")
    stored = cache.load_arrays(directory / "test.npz")
    for k in range(2):
        seq, i = stored["sequence"][k], stored["index"][k]
        np.testing.assert_allclose(
            stored["struct_raw"][k],
            peptides.conformer_targets(seq, peptides._embed_seed(0, i)),
            rtol=1e-12,
        )


# ------------------------------------------------------------------ official files (load_peptides)


PEPTIDES = ["NCC(=O)O", "CC(N)C(=O)O", "NCC(=O)NCC(=O)O", "CC(C)C(N)C(=O)O"]
SPLIT = {"train": np.array([2, 0]), "val": np.array([3]), "test": np.array([1])}
FUNC_LABELS = [
    [1, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    [0, 1, 0, 0, 0, 0, 0, 0, 0, 1],
    [0, 0, 1, 1, 0, 0, 0, 0, 0, 0],
    [0, 0, 0, 0, 0, 0, 0, 0, 1, 0],
]
# Three column patterns whose standardisation (sample std) is worked by hand:
# [1, 2, 3, 4]: mean 2.5, std sqrt(5/3) -> [-1.161895, -0.387298, 0.387298, 1.161895]
# [10, 10, 10, 14]: mean 11, std 2 -> [-0.5, -0.5, -0.5, 1.5]
# [0, 0, 2, 2]: mean 1, std sqrt(4/3) -> [-0.866025, -0.866025, 0.866025, 0.866025]
PATTERNS = [[1, 2, 3, 4], [10, 10, 10, 14], [0, 0, 2, 2]]
STANDARD = [
    [-1.161895, -0.387298, 0.387298, 1.161895],
    [-0.5, -0.5, -0.5, 1.5],
    [-0.866025, -0.866025, 0.866025, 0.866025],
]


def write_peptides(
    root,
    kind,
    struct_file="peptide_structure_normalized_dataset.csv.gz",
    *,
    smiles=PEPTIDES,
    labels=FUNC_LABELS,
    values=None,
    split=SPLIT,
):
    """LRGB's files for `kind` under `root`; `values[(row, column)]` replaces a struct value's
    text."""
    folder = root / ("peptides-functional" if kind == "func" else "peptides-structural")
    (folder / "raw").mkdir(parents=True, exist_ok=True)
    if kind == "func":
        name, split_name = "peptide_multi_class_dataset.csv.gz", "splits_random_stratified_peptide"
        # A field longer than the csv module's default limit (131,072 characters), as the
        # struct file's distance matrices are.
        long = "G" * 200_000
        lines = ["smiles,peptide_seq,labels"] + [
            f'{s},{long},"{row}"' for s, row in zip(smiles, labels, strict=True)
        ]
    else:
        name = struct_file
        split_name = "splits_random_stratified_peptide_structure"
        header = ["smiles", "peptide_seq", *peptides.STRUCT_TARGETS]
        cols = [PATTERNS[j % 3] for j in range(11)]
        text = {(i, j): str(c[i]) for j, c in enumerate(cols) for i in range(len(smiles))}
        text.update(values or {})
        lines = [",".join(header)] + [
            ",".join([s, "G", *(text[i, j] for j in range(11))]) for i, s in enumerate(smiles)
        ]
    with gzip.open(folder / "raw" / name, "wt") as f:
        f.write("\n".join(lines) + "\n")
    (folder / f"{split_name}.pickle").write_bytes(pickle.dumps(split))
    return folder


def test_peptides_func(tmp_path):
    write_peptides(tmp_path, "func")
    data = peptides.load_peptides(tmp_path, kind="func")
    assert [len(s) for s in (data.train, data.val, data.test)] == [2, 1, 1]
    for split, ds in (("train", data.train), ("val", data.val), ("test", data.test)):
        for k, pos in enumerate(SPLIT[split]):
            assert ds[k]["target"].dtype == np.float32 and ds[k]["target"].shape == (10,)
            np.testing.assert_array_equal(ds[k]["target"], FUNC_LABELS[pos])
            graph = featurize.smiles_to_graph(PEPTIDES[pos])
            np.testing.assert_array_equal(ds[k]["node_feat"], graph["node_feat"])
            np.testing.assert_array_equal(ds[k]["edge_index"], graph["edge_index"])
    batch = data.collate([data.train[0], data.train[1]])
    assert batch["target"].shape == (2, 10)
    assert "antifungal" in data.description["target"]
    json.dumps(data.description)


@pytest.mark.parametrize(
    "struct_file",
    ["peptide_structure_normalized_dataset.csv.gz", "peptide_structure_dataset.csv.gz"],
)
def test_peptides_struct_standardisation(tmp_path, struct_file):
    folder = write_peptides(tmp_path, "struct", struct_file)
    data = peptides.load_peptides(folder, kind="struct")  # the dataset folder itself
    got = {}
    for split, ds in (("train", data.train), ("val", data.val), ("test", data.test)):
        for k, pos in enumerate(SPLIT[split]):
            assert ds[k]["target"].dtype == np.float32 and ds[k]["target"].shape == (11,)
            got[int(pos)] = ds[k]["target"]
    for row in range(4):
        want = [STANDARD[j % 3][row] for j in range(11)]
        np.testing.assert_allclose(got[row], want, atol=2e-6)
    assert data.description["files"][0].endswith(struct_file)
    assert data.description["url"].split("/")[-1].startswith(struct_file)
    # The standardisation is idempotent: LRGB's normalised file gives the same targets.
    again = peptides.standardize_struct(peptides.standardize_struct(np.array(PATTERNS).T))
    np.testing.assert_allclose(again, np.array(STANDARD).T, atol=2e-6)


def test_peptides_not_found_names_the_fetch_command_and_the_folders(tmp_path, monkeypatch):
    """Files not found under the data root (config.data.dir empty): one line naming the missing
    file, every folder looked in (the data root's own path, not "/"), `attnbench-data fetch
    peptides` and where it puts the files (the catalog's folder), config.data.dir and the
    stand-in; the split pickle missing beside a csv names the pickle."""
    pytest.importorskip("rdkit")
    from attnbench.data import catalog

    assert peptides.PEPTIDES_CATALOG == ("peptides", catalog.get("peptides").folder)
    root = (tmp_path / "root").resolve()
    monkeypatch.setenv("ATTNBENCH_DATA", str(root))
    for kind, name in (
        ("func", "peptide_multi_class_dataset.csv.gz"),
        ("struct", "peptide_structure_normalized_dataset.csv.gz"),
    ):
        with pytest.raises(errors.DataError) as e:
            peptides.load_peptides("", kind)
        msg = str(e.value)
        assert "\n" not in msg and msg.startswith(f"Peptides-{kind}: no {name} in {root}, ")
        url = peptides.PEPTIDES_URLS[name]
        assert f"`attnbench-data fetch peptides` (from {url}, into {root}/peptides)" in msg
        assert "or set config.data.dir to the folder holding it" in msg
        assert "config.data.source='standin'" in msg
        assert "into /" not in msg.replace(str(root), "<root>")  # no folder but the data root's
    folder = write_peptides(root, "func")  # the csv in <root>/peptides-functional/raw
    (folder / "splits_random_stratified_peptide.pickle").unlink()
    with pytest.raises(errors.DataError) as e:
        peptides.load_peptides("", "func")
    assert "no splits_random_stratified_peptide.pickle in " in str(e.value)
    assert "`attnbench-data fetch peptides`" in str(e.value)


def test_peptides_errors(tmp_path):
    with pytest.raises(errors.DataError, match=r"no peptide_multi_class_dataset.csv.gz .*dropbox"):
        peptides.load_peptides(tmp_path, kind="func")
    with pytest.raises(errors.ConfigError, match="kind='both'"):
        peptides.load_peptides(tmp_path, kind="both")
    folder = write_peptides(tmp_path, "func")
    (folder / "splits_random_stratified_peptide.pickle").write_bytes(
        pickle.dumps({"train": np.array([0, 7]), "val": np.array([1]), "test": np.array([2])})
    )
    with pytest.raises(errors.DataError, match=r"peptide.pickle: split 'train' has indices in"):
        peptides.load_peptides(tmp_path, kind="func")
    with gzip.open(folder / "raw" / "peptide_multi_class_dataset.csv.gz", "wt") as f:
        f.write("smiles,peptide_seq\nNCC(=O)O,G\n")
    with pytest.raises(errors.DataError, match=r"dataset.csv.gz: no column\(s\) \['labels'\]"):
        peptides.load_peptides(tmp_path, kind="func")
    (folder / "raw" / "peptide_multi_class_dataset.csv.gz").write_bytes(b"not gzip")
    with pytest.raises(errors.DataError, match=r"dataset.csv.gz: not a readable gzipped CSV"):
        peptides.load_peptides(tmp_path, kind="func")


# Issue 32: no bad input read silently.


@pytest.mark.parametrize(
    "row, column, value, split",
    [(2, 2, 2, "train"), (3, 0, -1, "val"), (1, 9, 0.5, "test")],
)
def test_peptides_func_labels_must_be_0_or_1(tmp_path, row, column, value, split):
    """A label of 2 counted as a positive for the AP; -1 and 0.5 were read as they came."""
    labels = [list(r) for r in FUNC_LABELS]
    labels[row][column] = value
    write_peptides(tmp_path, "func", labels=labels)
    with pytest.raises(
        errors.DataError,
        match=rf"peptide_multi_class_dataset.csv.gz, data row {row} \(split '{split}'\): "
        rf"{peptides.FUNC_CLASSES[column]} is {value:g}, not 0 or 1; Peptides-func's labels are "
        r"0 or 1: fix the file or download https://www.dropbox.com/\S+ again",
    ):
        peptides.load_peptides(tmp_path, kind="func")


@pytest.mark.parametrize("text, shown", [("nan", "nan"), ("", "nan"), ("inf", "inf")])
def test_peptides_struct_targets_must_be_finite(tmp_path, text, shown):
    write_peptides(tmp_path, "struct", values={(3, 6): text})  # row 3: val
    with pytest.raises(
        errors.DataError,
        match=rf"peptide_structure_normalized_dataset.csv.gz, data row 3 \(split 'val'\): "
        rf"length_a is {shown}, not a finite number",
    ):
        peptides.load_peptides(tmp_path, kind="struct")


def test_peptides_struct_column_without_spread_is_refused(tmp_path):
    write_peptides(tmp_path, "struct", values={(i, 10): "0.25" for i in range(4)})
    with pytest.raises(
        errors.DataError,
        match=r"dataset.csv.gz: column Plane_best_fit has no spread over the file's rows "
        r"\(sample std 0\), so LRGB's standardisation .* NaN",
    ):
        peptides.load_peptides(tmp_path, kind="struct")


def test_peptides_unparsable_smiles_are_an_error_unless_dropped(tmp_path, capsys, monkeypatch):
    """RDKit's rejects were left out silently (5 of 6 in a split); now an error naming the file,
    the split's count and the SMILES; with drop_invalid=True (the cache reused) a line per
    split on stderr and `dropped` in the description."""
    smiles = ["C1CC", *PEPTIDES[1:]]  # data row 0: train (rows 2, 0)
    folder = write_peptides(tmp_path, "func", smiles=smiles)
    csv_path = (folder / "raw" / "peptide_multi_class_dataset.csv.gz").resolve()
    with pytest.raises(
        errors.DataError,
        match=r"peptide_multi_class_dataset.csv.gz: RDKit cannot parse 1 of the 2 molecules of "
        r"split 'train' \(data row 0: unparsable SMILES 'C1CC'.*\); fix those SMILES, or set "
        r"config.data.drop_invalid=True",
    ):
        peptides.load_peptides(tmp_path, kind="func")
    capsys.readouterr()
    monkeypatch.setattr(official, "_featurize", lambda *a, **k: pytest.fail("rebuilt"))
    data = peptides.load_peptides(tmp_path, kind="func", drop_invalid=True)
    assert [len(s) for s in (data.train, data.val, data.test)] == [1, 1, 1]
    np.testing.assert_array_equal(data.train[0]["target"], FUNC_LABELS[2])
    assert capsys.readouterr().err.splitlines() == [
        f"[Peptides-func] dropped 1 of 2 molecules RDKit cannot parse in {csv_path} (split train)"
    ]
    assert {k: data.description["dropped"]["train"][k] for k in ("count", "of", "file")} == dict(
        count=1, of=2, file=str(csv_path)
    )
    json.dumps(data.description)


def test_peptides_empty_split_says_which_and_why(tmp_path):
    """An empty test split read as "RDKit rejected every molecule": now the split file's empty
    split, or every molecule of the split rejected, each named."""
    empty = dict(SPLIT, test=np.array([], np.int64))
    write_peptides(tmp_path / "a", "func", split=empty)
    with pytest.raises(
        errors.DataError,
        match=r"splits_random_stratified_peptide.pickle: split 'test' lists no molecules "
        r"\(0 indices\), so the test split would be empty; download https://\S+ again",
    ):
        peptides.load_peptides(tmp_path / "a", kind="func")
    write_peptides(tmp_path / "b", "func", smiles=[PEPTIDES[0], "C1CC", *PEPTIDES[2:]])
    with pytest.raises(
        errors.DataError,
        match=r"peptide_multi_class_dataset.csv.gz: RDKit cannot parse any of the 1 molecules of "
        r"split 'test' \(data row 1: unparsable SMILES 'C1CC'.*\), so the split would be empty",
    ):
        peptides.load_peptides(tmp_path / "b", kind="func", drop_invalid=True)
    folder = write_peptides(tmp_path / "c", "func")
    with gzip.open(folder / "raw" / "peptide_multi_class_dataset.csv.gz", "wt") as f:
        f.write("smiles,peptide_seq,labels\n")
    with pytest.raises(
        errors.DataError, match=r"dataset.csv.gz: no data rows, so every split would be empty"
    ):
        peptides.load_peptides(tmp_path / "c", kind="func")
