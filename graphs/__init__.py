"""Molecules and peptides as graphs: OGB-style featurisation of SMILES (`graphs.featurize`), the
penalized-logP target of ZINC (`graphs.penalized_logp`), packed graph datasets and padded,
size-bucketed batches (`graphs.batching`), and the offline ZINC-like stand-in built from MOSES
molecules (`graphs.zinc_like`).

RDKit is needed only by the modules that read molecules (`featurize`, `penalized_logp`,
`zinc_like`); install it with the `molecules` extra (`pip install -e '.[molecules]'`).
`graphs.batching` is numpy only.
"""
