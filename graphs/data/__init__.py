"""The graph datasets, one module each with its official reader and its offline stand-in, and
the data helpers they share.

  zinc      ZINC-12k's official files (`load_zinc`) and the ZINC-like stand-in of MOSES
            molecules (`load`)
  pcqm      PCQM4Mv2 / PCQM4M's official files (`load_pcqm`) and the QM9-like stand-in (`load`)
  peptides  LRGB Peptides-func / Peptides-struct's official files (`load_peptides`) and the
            generated Peptides-like stand-in (`load`)

Shared: `official` (what the official readers share: finding the files, featurising SMILES in
a process pool, packing, caching), `featurize` (OGB's `smiles2graph`), `penalized_logp` (ZINC's
target), `batching` (packed datasets and padded, size-bucketed batches) and `positional`
(Laplacian and random-walk positional encodings). The official files are read without torch
(`attnbench.data.formats.torch_pickle`).
"""
