"""`graphs.data.official`, what the official readers share: packing SMILES in chunks gives the
arrays of one pack. The readers themselves are tested with their datasets (test_zinc.py,
test_pcqm.py, test_peptides.py), on records written in each official layout."""

import numpy as np

from graphs.data import batching, featurize, official


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
