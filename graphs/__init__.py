"""Molecules and peptides as graphs.

Data: OGB-style featurisation of SMILES (`featurize`), packed datasets and padded, size-bucketed
batches (`batching`), the official files read without torch (`official`, `torch_pickle`: ZINC-12k,
PCQM4M / PCQM4Mv2, LRGB Peptides) and offline stand-ins (`zinc_like`: MOSES molecules with ZINC's
penalized logP, `penalized_logp`; `qm9_like`: QM9's DFT gaps; `peptides_like`: generated peptides
with conformer-based targets), positional encodings (`positional`). Models: the backbones
`graphormer`, `egt` and `graph_bridge`, registered in `attnbench.nn.backbones`; the tasks in `tasks`
(`graphs.zinc`, `graphs.pcqm`, `graphs.peptides_struct`, `graphs.peptides_func`); `pe_timing` is
SAMSA Table 4's measurement.

RDKit is needed only by the modules that read molecules; install it with the `molecules` extra
(`pip install -e '.[molecules]'`). `batching` is numpy only (scipy for large graphs).
"""
