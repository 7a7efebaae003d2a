"""graphs.official on a few records written here in each official layout: ZINC pickles with
torch tensors (by test_torch_pickle's writer), PCQM4Mv2/PCQM4M csv.gz + split_dict.pt (zip and
legacy torch.save), LRGB Peptides csv.gz + split pickles; checked against hand-worked graphs,
targets and splits."""

import gzip
import json
import pickle

import numpy as np
import pytest

from attnbench import errors
from attnbench.data import cache
from graphs import batching, featurize, official
from tests.graphs.test_torch_pickle import (
    tensor,
    torch_writer_legacy,
    torch_writer_pickle,
    torch_writer_zip,
)

# ----------------------------------------------------------------------------- ZINC


def zinc_molecule(atoms, adjacency, target):
    """One record as benchmarking-gnns stores it (tensors: LongTensor, LongTensor, FloatTensor
    of one value; num_atom a Python int)."""
    return {
        "num_atom": len(atoms),
        "atom_type": tensor(np.asarray(atoms, np.int64)),
        "bond_type": tensor(np.asarray(adjacency, np.int64)),
        "logP_SA_cycle_normalized": tensor(np.asarray([target], np.float32)),
    }


# A 3-atom chain: atom types 0, 2, 1; bond 0-1 of type 1, bond 1-2 of type 2.
CHAIN = zinc_molecule([0, 2, 1], [[0, 1, 0], [1, 0, 2], [0, 2, 0]], 0.5)
# A 2-atom molecule with a type-3 bond, and a triangle of type-1 bonds.
PAIR = zinc_molecule([5, 27], [[0, 3], [3, 0]], -1.25)
TRIANGLE = zinc_molecule([1, 1, 1], [[0, 1, 1], [1, 0, 1], [1, 1, 0]], 2.0)
SINGLE = zinc_molecule([4], [[0]], 3.0)


def write_zinc(folder, *, index=True):
    folder.mkdir(parents=True, exist_ok=True)
    splits = {
        "train": ([SINGLE, PAIR, CHAIN, TRIANGLE], "2,0\n"),
        "val": ([TRIANGLE, CHAIN], "1\n"),
        "test": ([PAIR], "0\n"),
    }
    for split, (molecules, lines) in splits.items():
        (folder / f"{split}.pickle").write_bytes(torch_writer_pickle(molecules, protocol=4))
        if index:
            (folder / f"{split}.index").write_text(lines)
    return folder


def test_zinc_graph_by_hand():
    graph, target = official.zinc_graph(
        {
            "atom_type": np.array([0, 2, 1]),
            "bond_type": np.array([[0, 1, 0], [1, 0, 2], [0, 2, 0]]),
            "logP_SA_cycle_normalized": np.array([0.5], np.float32),
            "num_atom": 3,
        }
    )
    np.testing.assert_array_equal(graph["node_feat"], [[0], [2], [1]])
    # Row-major nonzero entries: (0,1) (1,0) (1,2) (2,1).
    np.testing.assert_array_equal(graph["edge_index"], [[0, 1, 1, 2], [1, 0, 2, 1]])
    np.testing.assert_array_equal(graph["edge_feat"], [[1], [1], [2], [2]])
    assert target == 0.5
    with pytest.raises(errors.DataError, match="rec 7: atom_type"):
        official.zinc_graph(
            {"atom_type": np.zeros(2, int), "bond_type": np.zeros((3, 3)), "num_atom": 2,
             "logP_SA_cycle_normalized": 1.0},
            "rec 7",
        )  # fmt: skip


@pytest.mark.parametrize("layout", ["molecules", "folder", "pyg"])
def test_zinc_subset(tmp_path, layout):
    inner = {"molecules": "molecules", "folder": "molecules", "pyg": "raw"}[layout]
    write_zinc(tmp_path / inner)
    root = tmp_path / "molecules" if layout == "folder" else tmp_path
    data = official.load_zinc(root, cache_dir=tmp_path / "cache")
    assert data.source == "official"
    assert [len(s) for s in (data.train, data.val, data.test)] == [2, 1, 1]
    chain = data.train[0]  # train.index "2,0": molecule 2 (the chain), then molecule 0
    np.testing.assert_array_equal(chain["node_feat"], [[0], [2], [1]])
    np.testing.assert_array_equal(chain["edge_index"], [[0, 1, 1, 2], [1, 0, 2, 1]])
    np.testing.assert_array_equal(chain["edge_feat"], [[1], [1], [2], [2]])
    np.testing.assert_array_equal(chain["spd"], [[0, 1, 2], [1, 0, 1], [2, 1, 0]])
    assert chain["target"].dtype == np.float32 and chain["target"] == 0.5
    single = data.train[1]
    assert single["node_feat"].tolist() == [[4]] and single["edge_index"].shape == (2, 0)
    assert single["target"] == 3.0
    val = data.val[0]  # val.index "1": the chain
    assert val["target"] == 0.5 and val["edge_feat"].ravel().tolist() == [1, 1, 2, 2]
    pair = data.test[0]
    assert pair["node_feat"].ravel().tolist() == [5, 27]
    assert pair["edge_feat"].ravel().tolist() == [3, 3] and pair["target"] == -1.25
    desc = data.description
    assert desc["splits"]["train"]["graphs"] == 2
    assert any(f.endswith("train.index") for f in desc["files"])
    assert desc["node_feature_dims"] == [28] and desc["edge_feature_dims"] == [4]
    json.dumps(desc)
    (directory,) = (tmp_path / "cache" / "graphs").glob("zinc-12k-official-*")
    np.testing.assert_array_equal(cache.load_arrays(directory / "train.npz")["index"], [2, 0])


def test_zinc_full_batches_and_cache_reuse(tmp_path, monkeypatch):
    write_zinc(tmp_path / "molecules", index=False)
    data = official.load_zinc(tmp_path, subset=False)
    assert [len(s) for s in (data.train, data.val, data.test)] == [4, 2, 1]
    triangle = data.train[3]
    np.testing.assert_array_equal(triangle["spd"], 1 - np.eye(3))
    assert triangle["edge_index"].shape == (2, 6)
    batch = data.collate([data.train[i] for i in range(4)])
    assert batch["nodes"].shape[:2] == (4, 4) and batch["target"].tolist() == [3, -1.25, 0.5, 2]
    monkeypatch.setattr(
        official.torch_pickle, "loads_pickle", lambda *a: pytest.fail("rebuilt the cache")
    )
    again = official.load_zinc(tmp_path, subset=False)
    assert again.description["cache"] == data.description["cache"]


def test_zinc_errors(tmp_path):
    with pytest.raises(errors.DataError, match=r"no train.pickle in .*molecules.zip"):
        official.load_zinc(tmp_path / "empty")
    write_zinc(tmp_path / "molecules", index=False)
    with pytest.raises(errors.DataError, match=r"missing .*train.index.*benchmarking-gnns"):
        official.load_zinc(tmp_path)
    (tmp_path / "molecules" / "train.index").write_text("0,9\n")
    (tmp_path / "molecules" / "val.index").write_text("0\n")
    (tmp_path / "molecules" / "test.index").write_text("0\n")
    with pytest.raises(errors.DataError, match=r"train.index: split 'train' has indices in"):
        official.load_zinc(tmp_path)
    (tmp_path / "molecules" / "train.pickle").write_bytes(b"garbage")
    with pytest.raises(errors.DataError, match=r"train.pickle: (corrupt|truncated)"):
        official.load_zinc(tmp_path)
    assert not list((tmp_path / "graphs").glob("zinc-*"))  # no failed build left behind


# ----------------------------------------------------------------------------- PCQM

PCQM_ROWS = [  # idx, smiles, homolumogap ("" for the unlabelled test rows)
    (0, "CO", 6.75),
    (1, "C=C", 7.5),
    (2, "c1ccccc1", 6.1),
    (3, "CC(=O)O", 5.25),
    (4, "N#N", ""),
    (5, "O", 8.0),
]


def write_pcqm(folder, *, version="v2", fmt="zip"):
    (folder / "raw").mkdir(parents=True, exist_ok=True)
    with gzip.open(folder / "raw" / "data.csv.gz", "wt") as f:
        f.write("idx,smiles,homolumogap\n")
        f.writelines(f"{i},{s},{g}\n" for i, s, g in PCQM_ROWS)
    if version == "v2":
        splits = {"train": [3, 0, 2], "valid": [5, 1], "test-dev": [4], "test-challenge": [4]}
    else:
        splits = {"train": [3, 0, 2], "valid": [5, 1], "test": [4]}
    obj = {k: tensor(np.asarray(v, np.int64)) for k, v in splits.items()}
    writer = torch_writer_zip if fmt == "zip" else torch_writer_legacy
    (folder / "split_dict.pt").write_bytes(writer(obj))


def test_pcqm_v2(tmp_path):
    write_pcqm(tmp_path / "pcqm4m-v2")
    data = official.load_pcqm(tmp_path)
    assert [len(s) for s in (data.train, data.val)] == [3, 2]
    assert data.test is data.val
    # Methanol (train position 1), OGB features worked by hand: C = atomic number 6 (index 5),
    # CHI_UNSPECIFIED, total degree 4, charge 0 (index 5), 3 H, 0 radicals, SP3 (index 2),
    # not aromatic, not in a ring; O likewise with degree 2 and 1 H; one single,
    # non-conjugated bond without stereo.
    methanol = data.train[1]
    np.testing.assert_array_equal(
        methanol["node_feat"], [[5, 0, 4, 5, 3, 0, 2, 0, 0], [7, 0, 2, 5, 1, 0, 2, 0, 0]]
    )
    np.testing.assert_array_equal(methanol["edge_index"], [[0, 1], [1, 0]])
    np.testing.assert_array_equal(methanol["edge_feat"], [[0, 0, 0], [0, 0, 0]])
    assert methanol["target"].dtype == np.float32 and methanol["target"] == 6.75
    expected = {"train": [3, 0, 2], "val": [5, 1]}
    for split, ds in (("train", data.train), ("val", data.val)):
        for k, pos in enumerate(expected[split]):
            graph = featurize.smiles_to_graph(PCQM_ROWS[pos][1])
            np.testing.assert_array_equal(ds[k]["node_feat"], graph["node_feat"])
            np.testing.assert_array_equal(ds[k]["edge_index"], graph["edge_index"])
            np.testing.assert_array_equal(ds[k]["edge_feat"], graph["edge_feat"])
            assert ds[k]["target"] == np.float32(PCQM_ROWS[pos][2])
    assert data.train[2]["spd"].max() == 3  # benzene: opposite atoms 3 bonds apart
    assert "test = OGB valid" in data.description["splits_used"]
    assert data.description["node_feature_dims"] == featurize.atom_feature_dims()
    json.dumps(data.description)


def test_pcqm_v1_legacy_split_file_and_max_train(tmp_path):
    write_pcqm(tmp_path / "pcqm4m_kddcup2021", version="v1", fmt="legacy")
    data = official.load_pcqm(tmp_path / "pcqm4m_kddcup2021", version="v1", max_train=2)
    assert len(data.train) == 2 and len(data.val) == 2
    assert [float(data.train[i]["target"]) for i in range(2)] == [5.25, 6.75]  # rows 3, 0
    assert "first 2" in data.description["splits_used"]


def test_pcqm_errors(tmp_path):
    with pytest.raises(errors.DataError, match=r"no raw/data.csv.gz under .*pcqm4m-v2.zip"):
        official.load_pcqm(tmp_path)
    with pytest.raises(errors.ConfigError, match="version='v3'"):
        official.load_pcqm(tmp_path, version="v3")
    write_pcqm(tmp_path / "pcqm4m-v2")
    (tmp_path / "pcqm4m-v2" / "split_dict.pt").write_bytes(
        torch_writer_zip({"train": tensor(np.array([4]))})
    )
    with pytest.raises(errors.DataError, match=r"split_dict.pt: no split\(s\) \['valid'"):
        official.load_pcqm(tmp_path)
    (tmp_path / "pcqm4m-v2" / "split_dict.pt").write_bytes(
        torch_writer_zip({k: tensor(np.array([4])) for k in ("train", "valid", "test-dev",
                                                             "test-challenge")})
    )  # fmt: skip
    with pytest.raises(errors.DataError, match=r"data.csv.gz: molecules \[4\] .* no homolumogap"):
        official.load_pcqm(tmp_path)


# ----------------------------------------------------------------------------- Peptides

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


def write_peptides(root, kind, struct_file="peptide_structure_normalized_dataset.csv.gz"):
    folder = root / ("peptides-functional" if kind == "func" else "peptides-structural")
    (folder / "raw").mkdir(parents=True, exist_ok=True)
    if kind == "func":
        name, split_name = "peptide_multi_class_dataset.csv.gz", "splits_random_stratified_peptide"
        # A field longer than the csv module's default limit (131,072 characters), as the
        # struct file's distance matrices are.
        long = "G" * 200_000
        lines = ["smiles,peptide_seq,labels"] + [
            f'{s},{long},"{labels}"' for s, labels in zip(PEPTIDES, FUNC_LABELS, strict=True)
        ]
    else:
        name = struct_file
        split_name = "splits_random_stratified_peptide_structure"
        header = ["smiles", "peptide_seq", *official.STRUCT_TARGETS]
        cols = [PATTERNS[j % 3] for j in range(11)]
        lines = [",".join(header)] + [
            ",".join([s, "G", *(str(c[i]) for c in cols)]) for i, s in enumerate(PEPTIDES)
        ]
    with gzip.open(folder / "raw" / name, "wt") as f:
        f.write("\n".join(lines) + "\n")
    (folder / f"{split_name}.pickle").write_bytes(pickle.dumps(SPLIT))
    return folder


def test_peptides_func(tmp_path):
    write_peptides(tmp_path, "func")
    data = official.load_peptides(tmp_path, kind="func")
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
    data = official.load_peptides(folder, kind="struct")  # the dataset folder itself
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
    again = official.standardize_struct(official.standardize_struct(np.array(PATTERNS).T))
    np.testing.assert_allclose(again, np.array(STANDARD).T, atol=2e-6)


def test_peptides_errors(tmp_path):
    with pytest.raises(errors.DataError, match=r"no peptide_multi_class_dataset.csv.gz .*dropbox"):
        official.load_peptides(tmp_path, kind="func")
    with pytest.raises(errors.ConfigError, match="kind='both'"):
        official.load_peptides(tmp_path, kind="both")
    folder = write_peptides(tmp_path, "func")
    (folder / "splits_random_stratified_peptide.pickle").write_bytes(
        pickle.dumps({"train": np.array([0, 7]), "val": np.array([1]), "test": np.array([2])})
    )
    with pytest.raises(errors.DataError, match=r"peptide.pickle: split 'train' has indices in"):
        official.load_peptides(tmp_path, kind="func")
    with gzip.open(folder / "raw" / "peptide_multi_class_dataset.csv.gz", "wt") as f:
        f.write("smiles,peptide_seq\nNCC(=O)O,G\n")
    with pytest.raises(errors.DataError, match=r"dataset.csv.gz: no column\(s\) \['labels'\]"):
        official.load_peptides(tmp_path, kind="func")
    (folder / "raw" / "peptide_multi_class_dataset.csv.gz").write_bytes(b"not gzip")
    with pytest.raises(errors.DataError, match=r"dataset.csv.gz: not a readable gzipped CSV"):
        official.load_peptides(tmp_path, kind="func")


# ----------------------------------------------------------------------------- machinery


def test_concat_of_chunks_equals_one_pack():
    graphs = [featurize.smiles_to_graph(s) for s in ["CO", "c1ccccc1", "O", "CC(=O)O"]]
    target = np.arange(4, dtype=np.float32)
    whole = batching.pack(graphs, target=target)
    parts = [
        batching.pack(graphs[:1], target=target[:1]),
        batching.pack(graphs[1:], target=target[1:]),
    ]
    joined = official._concat(parts)
    assert joined.keys() == whole.keys()
    for key in whole:
        np.testing.assert_array_equal(joined[key], whole[key])


@pytest.mark.slow
def test_pcqm_build_in_a_process_pool(tmp_path, monkeypatch):
    """The spawn pool gives the same arrays as the in-process build."""
    write_pcqm(tmp_path / "pcqm4m-v2")
    serial = official.load_pcqm(tmp_path, workers=1, cache_dir=tmp_path / "a")
    monkeypatch.setitem(official._POOL_MIN, "pcqm", 1)
    pooled = official.load_pcqm(tmp_path, workers=2, cache_dir=tmp_path / "b")
    for a, b in ((serial.train, pooled.train), (serial.val, pooled.val)):
        for key in a.arrays:
            np.testing.assert_array_equal(a.arrays[key], b.arrays[key])
