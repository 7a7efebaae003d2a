"""The ZINC-like stand-in, on small SMILES files written here in MOSES' layout (gzipped CSV,
header `SMILES`); the real MOSES file (`pip install --no-deps molsets==0.3.1`) only in the slow
tier."""

import gzip
import importlib.metadata
import json
import time

import numpy as np
import pytest

from attnbench.data import cache, pipeline
from graphs import batching, featurize, zinc_like
from graphs import penalized_logp as plogp

# The first 16 molecules of MOSES' train.csv.gz.
SMILES = [
    "CCCS(=O)c1ccc2[nH]c(=NC(=O)OC)[nH]c2c1",
    "CC(C)(C)C(=O)C(Oc1ccc(Cl)cc1)n1ccnc1",
    "Cc1c(Cl)cccc1Nc1ncccc1C(=O)OCC(O)CO",
    "Cn1cnc2c1c(=O)n(CC(O)CO)c(=O)n2C",
    "CC1Oc2ccc(Cl)cc2N(CC(O)CO)C1=O",
    "CCOC(=O)c1cncn1C1CCCc2ccccc21",
    "COc1ccccc1OC(=O)Oc1ccccc1OC",
    "O=C1Nc2ccc(Cl)cc2C(c2ccccc2Cl)=NC1O",
    "CN1C(=O)C(O)N=C(c2ccccc2Cl)c2cc(Cl)ccc21",
    "CCC(=O)c1ccc(OCC(O)CO)c(OC)c1",
    "Cc1nc2c([nH]1)c(=O)n(C)c(=O)n2CC1CC=CCC1",
    "COc1cc2c(cc1O)N=CC1CCC(O)N1C2=O",
    "COc1c(C)cnc(CS(=O)c2nc3ccccc3[nH]2)c1C",
    "COc1cc(C)c(Cc2cnc(N)nc2N)cc1OC",
    "O=C1Nc2ccc(Cl)cc2C(c2ccccc2)=NC1O",
    "CC1CC(OC(=O)CN2CCCC2=O)CC(C)(C)C1",
]
SIZES = (8, 4, 4)


def write_smiles(path, smiles, header="SMILES"):
    with gzip.open(path, "wt") as f:
        f.write("\n".join([header, *smiles]) + "\n")
    return path


@pytest.fixture
def source(tmp_path):
    return write_smiles(tmp_path / "train.csv.gz", SMILES)


def test_load_builds_splits_with_exact_targets(tmp_path, source):
    data = zinc_like.load(tmp_path / "data", source_file=source, sizes=SIZES, seed=3)
    assert data.source == "standin"
    assert [len(s) for s in (data.train, data.val, data.test)] == list(SIZES)
    # The split is the seeded permutation of the file's molecules, in order.
    order = np.random.default_rng(3).permutation(len(SMILES))
    (directory,) = (tmp_path / "data" / "graphs").glob("zinc-like-*")
    seen = []
    for split, ds, lo in (("train", data.train, 0), ("val", data.val, 8), ("test", data.test, 12)):
        stored = cache.load_arrays(directory / f"{split}.npz")
        assert stored["smiles"].tolist() == [SMILES[i] for i in order[lo : lo + len(ds)]]
        np.testing.assert_array_equal(stored["line"], order[lo : lo + len(ds)] + 2)
        for i, smiles in enumerate(stored["smiles"].tolist()):
            graph = featurize.smiles_to_graph(smiles)
            example = ds[i]
            for k in ("node_feat", "edge_index", "edge_feat"):
                np.testing.assert_array_equal(example[k], graph[k])
            assert example["spd"].shape == (graph["num_nodes"],) * 2
            assert example["target"].dtype == np.float32
            assert example["target"] == pytest.approx(plogp.penalized_logp(smiles), abs=1e-5)
            seen.append(smiles)
    assert sorted(seen) == sorted(SMILES)
    assert data.description["splits"]["train"]["graphs"] == 8
    json.dumps(data.description)  # summaries store it


def test_raw_target_and_cache_reuse(tmp_path, source, monkeypatch):
    normalized = zinc_like.load(tmp_path, source_file=source, sizes=SIZES)
    monkeypatch.setattr(zinc_like, "build", lambda *a, **k: pytest.fail("rebuilt the cache"))
    raw = zinc_like.load(tmp_path, source_file=source, sizes=SIZES, normalized=False)
    (directory,) = (tmp_path / "graphs").glob("zinc-like-*")
    stored = cache.load_arrays(directory / "train.npz")
    for i, smiles in enumerate(stored["smiles"].tolist()):
        t = plogp.terms(smiles)
        assert raw.train[i]["target"] == pytest.approx(t.logp - t.sa - t.ring_penalty, abs=1e-5)
        assert normalized.train[i]["target"] == pytest.approx(plogp.penalized_logp(smiles), 1e-5)
    assert "logP - SA" in raw.description["target"]


def test_seed_changes_the_sample(tmp_path, source):
    a = zinc_like.load(tmp_path, source_file=source, sizes=SIZES, seed=0)
    b = zinc_like.load(tmp_path, source_file=source, sizes=SIZES, seed=1)
    assert a.description["cache"] != b.description["cache"]
    targets = [[ds[i]["target"] for i in range(len(ds))] for ds in (a.train, b.train)]
    assert targets[0] != targets[1]


def test_batches_through_the_train_iterator(tmp_path, source):
    data = zinc_like.load(tmp_path, source_file=source, sizes=SIZES)
    it = pipeline.train_iterator(data.train, batch_size=4, seed=0, collate=data.collate, prefetch=0)
    batch = next(it)
    assert set(batch) >= {"nodes", "node_mask", "edges", "edge_index", "edge_mask", "spd"}
    assert batch["nodes"].shape[1] in batching.NODE_BUCKETS
    assert batch["target"].shape == (4,)


def test_missing_molsets_names_file_and_install_command(monkeypatch):
    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", missing)
    with pytest.raises(
        cache.DataError, match=r"moses/dataset/data/train.csv.gz.*--no-deps molsets"
    ):
        zinc_like.moses_file()


def test_file_errors_are_named(tmp_path):
    missing = tmp_path / "nope.csv.gz"
    with pytest.raises(cache.DataError, match=r"nope.csv.gz: file not found.*--no-deps molsets"):
        zinc_like.load(tmp_path, source_file=missing)
    corrupt = tmp_path / "corrupt.csv.gz"
    corrupt.write_bytes(b"not gzip at all")
    with pytest.raises(cache.DataError, match="corrupt.csv.gz: not a readable gzip file"):
        zinc_like.load(tmp_path, source_file=corrupt, sizes=(1, 1, 1))
    header = write_smiles(tmp_path / "header.csv.gz", SMILES, header="smiles_string")
    with pytest.raises(cache.DataError, match="header.csv.gz: expected the header 'SMILES'"):
        zinc_like.load(tmp_path, source_file=header, sizes=(1, 1, 1))
    short = write_smiles(tmp_path / "short.csv.gz", SMILES[:5])
    with pytest.raises(cache.DataError, match=r"short.csv.gz: 5 molecules, fewer than the 16"):
        zinc_like.load(tmp_path, source_file=short, sizes=SIZES)
    bad = write_smiles(tmp_path / "bad.csv.gz", ["CCO", "C1CC", "CCN"])
    with pytest.raises(cache.DataError, match=r"bad.csv.gz, line 3: unparsable SMILES 'C1CC'"):
        zinc_like.load(tmp_path, source_file=bad, sizes=(1, 1, 1))
    with pytest.raises(ValueError, match="sizes must be 3 positive counts"):
        zinc_like.load(tmp_path, source_file=bad, sizes=(1, 0, 1))
    assert not list((tmp_path / "graphs").glob("zinc-like-*"))  # no failed build left behind


@pytest.mark.slow
def test_moses_12k_build_time_and_padding(tmp_path):
    """The issue's targets on the real file: 12k molecules built in under a minute (2 cores;
    this build uses one), padding waste under 30% of node slots."""
    try:
        zinc_like.moses_file()
    except cache.DataError as e:
        pytest.skip(str(e))
    start = time.perf_counter()
    data = zinc_like.load(tmp_path)
    seconds = time.perf_counter() - start
    assert [len(s) for s in (data.train, data.val, data.test)] == [10_000, 1_000, 1_000]
    assert seconds < 60, f"ZINC-like build took {seconds:.1f} s"
    it = pipeline.train_iterator(data.train, batch_size=128, seed=0, collate=data.collate)
    waste = np.mean([batching.padding_waste(next(it)) for _ in range(50)])
    assert waste < 0.30, waste
