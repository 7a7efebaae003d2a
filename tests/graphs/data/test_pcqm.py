"""`graphs.data.pcqm`: the QM9-like stand-in on small CSV files written here in qm9pack's layout
(its header, rows with the real Index / SMILES / gap values of a few QM9 molecules and
placeholders elsewhere; the real `qm9pack` files only in the slow tier), and the official
PCQM4Mv2 / PCQM4M reader on csv.gz + split_dict.pt files written here (zip and legacy torch.save,
by test_torch_pickle's writers), checked against hand-worked graphs, targets and splits."""

import csv
import gzip
import importlib.util
import json
import time

import numpy as np
import pytest

from attnbench import errors
from attnbench.data import cache, pipeline
from graphs.data import batching, featurize, official, pcqm
from tests.attnbench.data.formats.test_torch_pickle import (
    tensor,
    torch_writer_legacy,
    torch_writer_zip,
)

# qm9pack's header (qm9pack 1.0.3, data/qm9_part1.csv, line 1).
HEADER = (
    "XYZ_file,Index,SMILES,InChi,N_atoms,Stoichiometry,Elements,XYZ_Ang,Mulliken_pop,"
    "Harmonic_Freq_cmi,RotA_GHz,RotB_GHz,RotC_GHz,Dipole_debye,Polarizability_bohr3,HOMO_au,"
    "LUMO_au,HOMO_LUMO_gap_au,R2_bohr2,ZPVE_au,InternalEnergy_0K_au,InternalEnergy_298K_au,"
    "Enthalphy_298K_au,GibbsFreeEnergy_298K_au,Heatcapacity_Cv_cal_mol_K"
).split(",")
# (QM9 Index, SMILES, HOMO-LUMO gap in Hartree) as in qm9pack's part1; index 999 is made up,
# with a SMILES RDKit rejects (an unclosed ring).
MOLECULES = [
    (1, "C", 0.5048),
    (2, "N", 0.3399),
    (3, "O", 0.3615),
    (6, "C=O", 0.2263),
    (999, "C1CC", 0.3),
    (21, "CC(C)C", 0.401),
    (104, "OC1CC1O", 0.3011),
    (1027, "O=CC1=CN=CN1", 0.193),
]
GOOD = [m for m in MOLECULES if m[0] != 999]
DROP = dict(drop_invalid=True)  # MOLECULES holds one SMILES RDKit cannot parse (QM9 999)


def write_csv(path, molecules, header=HEADER):
    with open(path, "w", newline="") as f:
        writer = csv.writer(f, quoting=csv.QUOTE_NONNUMERIC)
        writer.writerow(header)
        for index, smiles, gap in molecules:
            row = {c: 0.0 for c in header}
            row.update(
                XYZ_file=f"dsgdb9nsd_{index:06d}.xyz", Index=index, SMILES=smiles,
                InChi="InChI=1S/x", Elements="['C','H']", XYZ_Ang="[[0.,0.,0.]]",
                HOMO_LUMO_gap_au=gap,
            )  # fmt: skip
            writer.writerow([row[c] for c in header])
    return path


@pytest.fixture
def source(tmp_path):
    return write_csv(tmp_path / "qm9_part1.csv", MOLECULES)


def expected_split(seed, molecules, sizes):
    """Reference split: the seeded permutation of the rows, unparsable rows dropped, then val,
    test, train in that order."""
    order = np.random.default_rng(seed).permutation(len(molecules))
    walk = [molecules[i] for i in order if molecules[i][0] != 999]
    n_train, n_val, n_test = sizes
    return {
        "val": walk[:n_val],
        "test": walk[n_val : n_val + n_test],
        "train": walk[n_val + n_test :][: n_train or None],
    }


def test_load_graphs_targets_in_ev_and_split(tmp_path, source):
    data = pcqm.load(tmp_path / "data", source_file=source, sizes=(None, 2, 2), seed=5, **DROP)
    assert data.source == "standin"
    want = expected_split(5, MOLECULES, (None, 2, 2))
    (directory,) = (tmp_path / "data" / "graphs").glob("qm9-like-*")
    for split, ds in (("train", data.train), ("val", data.val), ("test", data.test)):
        assert len(ds) == len(want[split])
        stored = cache.load_arrays(directory / f"{split}.npz")
        assert stored["qm9_index"].tolist() == [m[0] for m in want[split]]
        assert stored["smiles"].tolist() == [m[1] for m in want[split]]
        for i, (_, smiles, gap) in enumerate(want[split]):
            graph, example = featurize.smiles_to_graph(smiles), ds[i]
            for k in ("node_feat", "edge_index", "edge_feat"):
                np.testing.assert_array_equal(example[k], graph[k])
            assert example["spd"].shape == (graph["num_nodes"],) * 2
            assert example["target"].dtype == np.float32
            assert example["target"] == pytest.approx(gap * 27.211386245988, rel=1e-6)
    # By hand: methane's gap 0.5048 Ha = 0.5 * 27.211386245988 + 0.0048 * 27.211386245988
    # = 13.605693123 + 0.130614654 = 13.736307777 eV.
    everything = [ds[i] for ds in (data.train, data.val, data.test) for i in range(len(ds))]
    methane = [g for g in everything if len(g["node_feat"]) == 1 and g["node_feat"][0, 0] == 5]
    assert len(methane) == 1 and methane[0]["target"] == pytest.approx(13.736307777, abs=1e-5)
    assert methane[0]["edge_index"].shape == (2, 0)
    skipped = data.description["skipped"]
    assert skipped["count"] == 1 and skipped["examined"] == len(MOLECULES)
    assert skipped["first"] == [f"{source.resolve()}, line 6"]  # row 5, after the header
    assert data.description["splits"]["train"]["graphs"] == 3
    assert "PCQM4Mv2" in data.description["standin_for"]
    json.dumps(data.description)  # summaries store it
    report = json.loads((directory / "skipped.json").read_text())
    assert (
        report["skipped"][0]["index"] == 999
        and "unparsable SMILES" in (report["skipped"][0]["error"])
    )


def test_num_train_keeps_val_and_test_and_cache_is_reused(tmp_path, source, monkeypatch):
    full = pcqm.load(tmp_path, source_file=source, sizes=(None, 2, 2), **DROP)
    small = pcqm.load(tmp_path, source_file=source, sizes=(None, 2, 2), num_train=1, **DROP)
    assert len(small.train) == 1 and len(full.train) == 3
    for a, b in ((full.val, small.val), (full.test, small.test), (full.train, small.train)):
        for i in range(len(b)):
            np.testing.assert_array_equal(a[i]["node_feat"], b[i]["node_feat"])
            assert a[i]["target"] == b[i]["target"]
    assert small.description["skipped"]["examined"] <= len(MOLECULES)
    monkeypatch.setattr(pcqm, "featurize_all", lambda *a, **k: pytest.fail("rebuilt"))
    again = pcqm.load(tmp_path, source_file=source, sizes=(1, 2, 2), **DROP)  # num_train=1
    assert again.description["cache"] == small.description["cache"]
    with pytest.raises(ValueError, match="contradicts"):
        pcqm.load(tmp_path, source_file=source, sizes=(2, 2, 2), num_train=1)


def test_seed_changes_the_split_and_files_concatenate(tmp_path, source):
    a = pcqm.load(tmp_path, source_file=source, sizes=(None, 3, 3), seed=0, **DROP)
    b = pcqm.load(tmp_path, source_file=source, sizes=(None, 3, 3), seed=1, **DROP)
    assert a.description["cache"] != b.description["cache"]
    vals = [[float(ds[i]["target"]) for i in range(3)] for ds in (a.val, b.val)]
    assert vals[0] != vals[1]
    # Two files are read in order, rows numbered across them (as qm9pack's three parts).
    first = write_csv(tmp_path / "p1.csv", MOLECULES[:4])
    second = write_csv(tmp_path / "p2.csv", MOLECULES[4:])
    both = pcqm.load(tmp_path, source_file=[first, second], sizes=(None, 2, 2), seed=5, **DROP)
    one = pcqm.load(tmp_path, source_file=source, sizes=(None, 2, 2), seed=5, **DROP)
    for x, y in ((both.train, one.train), (both.val, one.val), (both.test, one.test)):
        assert [x[i]["target"] for i in range(len(x))] == [y[i]["target"] for i in range(len(y))]
    assert both.description["skipped"]["first"] == [f"{second.resolve()}, line 2"]


def test_batches_through_the_train_iterator(tmp_path, source):
    data = pcqm.load(tmp_path, source_file=source, sizes=(None, 2, 2), **DROP)
    batch = next(
        pipeline.train_iterator(data.train, batch_size=2, seed=0, collate=data.collate, prefetch=0)
    )
    assert set(batch) >= {"nodes", "node_mask", "edges", "edge_index", "spd", "target"}
    assert batch["nodes"].shape[1] in batching.NODE_BUCKETS
    assert batch["target"].shape == (2,)


def test_missing_package_names_the_install_command(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(cache.DataError, match=r"qm9pack.*--no-deps qm9pack==1.0.3"):
        pcqm.qm9pack_files()


def test_file_errors_are_named(tmp_path):
    with pytest.raises(cache.DataError, match=r"nope.csv: file not found.*qm9pack"):
        pcqm.load(tmp_path, source_file=tmp_path / "nope.csv")
    header = write_csv(tmp_path / "header.csv", GOOD, header=[*HEADER[:17], "gap", *HEADER[18:]])
    with pytest.raises(cache.DataError, match=r"header.csv: no column\(s\) \['HOMO_LUMO_gap_au'\]"):
        pcqm.load(tmp_path, source_file=header, sizes=(1, 1, 1))
    bad_gap = write_csv(tmp_path / "gap.csv", [*GOOD[:2], (5, "CC", "n/a")])
    with pytest.raises(cache.DataError, match=r"gap.csv, line 4: .*'n/a' is not a number"):
        pcqm.load(tmp_path, source_file=bad_gap, sizes=(1, 1, 1))
    short = tmp_path / "short.csv"
    short.write_text(",".join(HEADER) + "\n1,2,3\n")
    with pytest.raises(cache.DataError, match=r"short.csv, line 2: 3 fields, expected 25"):
        pcqm.load(tmp_path, source_file=short, sizes=(1, 1, 1))
    binary = tmp_path / "binary.csv"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(cache.DataError, match="binary.csv: not a readable CSV file"):
        pcqm.load(tmp_path, source_file=binary, sizes=(1, 1, 1))
    few = write_csv(tmp_path / "few.csv", MOLECULES[:5])  # 4 usable
    with pytest.raises(cache.DataError, match=r"few.csv: 4 usable molecules \(1 skipped\)"):
        pcqm.load(tmp_path, source_file=few, sizes=(None, 2, 2))
    with pytest.raises(ValueError, match="split sizes must be positive"):
        pcqm.load(tmp_path, source_file=few, sizes=(None, 0, 2))
    assert not list((tmp_path / "graphs").glob("qm9-like-*"))  # no failed build left behind


def real_files():
    try:
        return pcqm.qm9pack_files()
    except cache.DataError as e:
        pytest.skip(str(e))


@pytest.mark.slow
def test_pool_matches_in_process_featurization():
    smiles = pcqm.read_csv(real_files()[:1]).smiles[:3_000]
    smiles = [*smiles[:1_500], "C1CC", *smiles[1_500:]]
    in_process = pcqm.featurize_all(smiles, workers=1)
    pooled = pcqm.featurize_all(smiles, needed=2_900, workers=2, chunk=250, min_pool=0)
    assert pooled[0] == in_process[0][:2_900] == [*range(1_500), *range(1_501, 2_901)]
    assert pooled[2] == in_process[2] and [p for p, _ in pooled[2]] == [1_500]
    for a, b in zip(pooled[1], in_process[1], strict=False):
        for k in ("node_feat", "edge_index", "edge_feat"):
            np.testing.assert_array_equal(a[k], b[k])


@pytest.mark.slow
def test_real_qm9_sample(tmp_path):
    """qm9pack's 130,831 rows, a 5,000-molecule train split: 9 heavy atoms at most, every SMILES
    parsed (RDKit 2025+), the gap statistics of QM9 (mean ~6.86 eV, std ~1.28 eV)."""
    real_files()
    start = time.perf_counter()
    data = pcqm.load(tmp_path, num_train=5_000)
    seconds = time.perf_counter() - start
    assert [len(s) for s in (data.train, data.val, data.test)] == [5_000, 10_000, 10_000]
    assert data.description["skipped"]["count"] == 0
    for stats in data.description["splits"].values():
        assert stats["nodes_max"] <= 9
        assert 6.7 < stats["target_mean"] < 7.0 and 1.2 < stats["target_std"] < 1.4
    assert seconds < 120, f"QM9-like 25k build took {seconds:.1f} s"


# ---------------------------------------------------------------------- official files (load_pcqm)


PCQM_ROWS = [  # idx, smiles, homolumogap ("" for the unlabelled test rows)
    (0, "CO", 6.75),
    (1, "C=C", 7.5),
    (2, "c1ccccc1", 6.1),
    (3, "CC(=O)O", 5.25),
    (4, "N#N", ""),
    (5, "O", 8.0),
]


def write_pcqm(folder, *, version="v2", fmt="zip", rows=PCQM_ROWS, valid=(5, 1)):
    (folder / "raw").mkdir(parents=True, exist_ok=True)
    with gzip.open(folder / "raw" / "data.csv.gz", "wt") as f:
        f.write("idx,smiles,homolumogap\n")
        f.writelines(f"{i},{s},{g}\n" for i, s, g in rows)
    if version == "v2":
        splits = {"train": [3, 0, 2], "valid": valid, "test-dev": [4], "test-challenge": [4]}
    else:
        splits = {"train": [3, 0, 2], "valid": valid, "test": [4]}
    obj = {k: tensor(np.asarray(v, np.int64)) for k, v in splits.items()}
    writer = torch_writer_zip if fmt == "zip" else torch_writer_legacy
    (folder / "split_dict.pt").write_bytes(writer(obj))
    return folder / "raw" / "data.csv.gz"


def test_pcqm_v2(tmp_path):
    write_pcqm(tmp_path / "pcqm4m-v2")
    data = pcqm.load_pcqm(tmp_path)
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
    data = pcqm.load_pcqm(tmp_path / "pcqm4m_kddcup2021", version="v1", max_train=2)
    assert len(data.train) == 2 and len(data.val) == 2
    assert [float(data.train[i]["target"]) for i in range(2)] == [5.25, 6.75]  # rows 3, 0
    assert "first 2" in data.description["splits_used"]


def test_pcqm_not_found_names_the_fetch_command_and_the_folders(tmp_path, monkeypatch):
    """Files not found under the data root (config.data.dir empty): one line naming the file,
    every folder looked in (the data root's own path, not "/"), `attnbench-data fetch
    pcqm4mv2` and where it puts the release (the catalog's folder), config.data.dir and the
    stand-in; PCQM4M (v1) likewise names `attnbench-data fetch pcqm4m`."""
    pytest.importorskip("rdkit")
    from attnbench.data import catalog

    for version, name in (("v2", "pcqm4mv2"), ("v1", "pcqm4m")):
        assert pcqm.PCQM_CATALOG[version] == (name, catalog.get(name).folder)
    root = (tmp_path / "root").resolve()
    monkeypatch.setenv("ATTNBENCH_DATA", str(root))
    with pytest.raises(errors.DataError) as e:
        pcqm.load_pcqm("")
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(f"PCQM4Mv2: no raw/data.csv.gz in {root}, {root}/pcqm4m-v2, ")
    url = pcqm.PCQM_URLS["v2"]
    assert f"`attnbench-data fetch pcqm4mv2` (from {url}, into {root}/pcqm4m-v2)" in msg
    assert "or set config.data.dir to the folder holding it" in msg
    assert "config.data.source='standin'" in msg
    assert "into /" not in msg.replace(str(root), "<root>")  # no folder but the data root's
    write_pcqm(root / "pcqm4m-v2")
    (root / "pcqm4m-v2" / "split_dict.pt").unlink()
    with pytest.raises(errors.DataError, match=r"^PCQM4Mv2: no split_dict.pt in .*`attnbench-da"):
        pcqm.load_pcqm("")
    with pytest.raises(errors.DataError) as e:
        pcqm.load_pcqm(tmp_path / "v1", version="v1")
    v1 = tmp_path.resolve() / "v1"
    assert str(e.value).startswith(f"PCQM4M: no raw/data.csv.gz in {v1}, ")
    assert (
        f"`attnbench-data fetch pcqm4m --dir {v1}` (from {pcqm.PCQM_URLS['v1']}, into "
        f"{v1}/pcqm4m_kddcup2021)" in str(e.value)
    )


def test_pcqm_errors(tmp_path):
    with pytest.raises(errors.DataError, match=r"no raw/data.csv.gz in .*pcqm4m-v2.zip"):
        pcqm.load_pcqm(tmp_path)
    with pytest.raises(errors.ConfigError, match="version='v3'"):
        pcqm.load_pcqm(tmp_path, version="v3")
    write_pcqm(tmp_path / "pcqm4m-v2")
    (tmp_path / "pcqm4m-v2" / "split_dict.pt").write_bytes(
        torch_writer_zip({"train": tensor(np.array([4]))})
    )
    with pytest.raises(errors.DataError, match=r"split_dict.pt: no split\(s\) \['valid'"):
        pcqm.load_pcqm(tmp_path)
    (tmp_path / "pcqm4m-v2" / "split_dict.pt").write_bytes(
        torch_writer_zip({k: tensor(np.array([4])) for k in ("train", "valid", "test-dev",
                                                             "test-challenge")})
    )  # fmt: skip
    with pytest.raises(
        errors.DataError,
        match=r"data.csv.gz, data row 4 \(split 'train'\): homolumogap is nan, not a finite number",
    ):
        pcqm.load_pcqm(tmp_path)


def _rows(**changes):
    """PCQM_ROWS with rows replaced: `changes[f"r{i}"] = (smiles, gap)`."""
    rows = list(PCQM_ROWS)
    for key, (smiles, gap) in changes.items():
        i = int(key[1:])
        rows[i] = (i, smiles, gap)
    return rows


def test_pcqm_unparsable_smiles_are_an_error_unless_dropped(tmp_path, capsys, monkeypatch):
    """Issue 32: molecules RDKit cannot parse were dropped from train / valid silently. Now an
    error naming the file, each split's count and first SMILES; with drop_invalid=True (the
    cached build reused) one stderr line per split and the description's `dropped`."""
    csv_path = write_pcqm(
        tmp_path / "pcqm4m-v2", rows=_rows(r0=("c1cccc1", 6.75), r1=("C1CC", 7.5))
    ).resolve()
    with pytest.raises(
        errors.DataError,
        match=r"data.csv.gz: RDKit cannot parse 1 of the 3 molecules of split 'train' \(data row "
        r"0: unparsable SMILES 'c1cccc1'.*\); .*data.csv.gz: RDKit cannot parse 1 of the 2 "
        r"molecules of split 'val' \(data row 1: unparsable SMILES 'C1CC'.*\); fix those SMILES, "
        r"or set config.data.drop_invalid=True",
    ):
        pcqm.load_pcqm(tmp_path)
    capsys.readouterr()
    monkeypatch.setattr(official, "_featurize", lambda *a, **k: pytest.fail("rebuilt"))
    data = pcqm.load_pcqm(tmp_path, drop_invalid=True)
    assert [len(data.train), len(data.val)] == [2, 1]
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"[PCQM4Mv2] dropped 1 of 3 molecules RDKit cannot parse in {csv_path} (split train)",
        f"[PCQM4Mv2] dropped 1 of 2 molecules RDKit cannot parse in {csv_path} (split val)",
    ]
    dropped = data.description["dropped"]
    assert set(dropped) == {"train", "val"}
    assert {k: dropped["val"][k] for k in ("count", "of", "file")} == dict(
        count=1, of=2, file=str(csv_path)
    )
    assert "drop_invalid" in dropped["val"]["reason"]
    assert dropped["val"]["first"][0].startswith("data row 1: unparsable SMILES 'C1CC'")
    json.dumps(data.description)


def test_pcqm_a_split_rdkit_rejects_entirely_or_that_lists_nothing(tmp_path):
    write_pcqm(tmp_path / "a" / "pcqm4m-v2", rows=_rows(r5=("C1CC", 8.0), r1=("c1cccc1", 7.5)))
    with pytest.raises(
        errors.DataError,
        match=r"data.csv.gz: RDKit cannot parse any of the 2 molecules of split 'val' \(data row "
        r"5: unparsable SMILES 'C1CC'.*\), so the split would be empty",
    ):
        pcqm.load_pcqm(tmp_path / "a", drop_invalid=True)
    write_pcqm(tmp_path / "b" / "pcqm4m-v2", valid=())
    with pytest.raises(
        errors.DataError,
        match=r"split_dict.pt: split 'valid' lists no molecules \(0 indices\), so the val split "
        r"would be empty; download https://\S+pcqm4m-v2.zip",
    ):
        pcqm.load_pcqm(tmp_path / "b")


@pytest.mark.parametrize("gap", ["inf", "-inf", "nan"])
def test_pcqm_non_finite_target(tmp_path, gap):
    write_pcqm(tmp_path / "pcqm4m-v2", rows=_rows(r5=("O", gap)))
    with pytest.raises(
        errors.DataError,
        match=rf"data.csv.gz, data row 5 \(split 'val'\): homolumogap is {gap}, not a finite "
        "number; every target must be a finite number",
    ):
        pcqm.load_pcqm(tmp_path)


def test_standin_unparsable_smiles_are_an_error_unless_dropped(
    tmp_path, source, capsys, monkeypatch
):
    """The QM9 stand-in holds to the same rule: its rejected molecule (QM9 999, line 6) is an
    error; with drop_invalid=True the walk skips it, the split it was drawn for says so."""
    with pytest.raises(
        cache.DataError,
        match=r"qm9_part1.csv: RDKit cannot parse 1 of the 8 molecules the splits drew from "
        r"\(.*qm9_part1.csv, line 6: unparsable SMILES 'C1CC'.*\); fix those SMILES, or set "
        r"config.data.drop_invalid=True",
    ):
        pcqm.load(tmp_path, source_file=source, sizes=(None, 2, 2), seed=5)
    capsys.readouterr()
    monkeypatch.setattr(pcqm, "featurize_all", lambda *a, **k: pytest.fail("rebuilt"))
    data = pcqm.load(tmp_path, source_file=source, sizes=(None, 2, 2), seed=5, **DROP)
    # The split being filled when the walk met it: val (2), then test (2), then train.
    order = np.random.default_rng(5).permutation(len(MOLECULES))
    before = [MOLECULES[i][0] for i in order].index(999)
    split = "val" if before < 2 else "test" if before < 4 else "train"
    ds = {"train": data.train, "val": data.val, "test": data.test}[split]
    line = (
        f"[qm9-like] dropped 1 of {len(ds) + 1} molecules RDKit cannot parse in "
        f"{source.resolve()} (split {split})"
    )
    assert capsys.readouterr().err.splitlines() == [line]
    dropped = data.description["dropped"]
    assert list(dropped) == [split]
    assert {k: dropped[split][k] for k in ("count", "of", "file")} == dict(
        count=1, of=len(ds) + 1, file=str(source.resolve())
    )
    assert dropped[split]["first"] == [f"{source.resolve()}, line 6"]


@pytest.mark.slow
def test_pcqm_build_in_a_process_pool(tmp_path, monkeypatch):
    """The spawn pool gives the same arrays as the in-process build."""
    write_pcqm(tmp_path / "pcqm4m-v2")
    serial = pcqm.load_pcqm(tmp_path, workers=1, cache_dir=tmp_path / "a")
    monkeypatch.setitem(official._POOL_MIN, "pcqm", 1)
    pooled = pcqm.load_pcqm(tmp_path, workers=2, cache_dir=tmp_path / "b")
    for a, b in ((serial.train, pooled.train), (serial.val, pooled.val)):
        for key in a.arrays:
            np.testing.assert_array_equal(a.arrays[key], b.arrays[key])
