"""Molecules and peptides as graphs.

  tasks.py       the registered tasks (`graphs.zinc`, `graphs.pcqm`, `graphs.peptides_struct`,
                 `graphs.peptides_func`) and their losses
  models.py      `GraphPredictor`, the task-facing model: a graph backbone and a linear head
  backbones/     `graphormer`, `egt`, `gps` and `graph_bridge`, registered in
                 `attnbench.nn.backbones`
  data/          per dataset the official reader and the offline stand-in: `zinc` (ZINC-12k;
                 MOSES molecules with ZINC's penalized logP), `pcqm` (PCQM4M / PCQM4Mv2; QM9's
                 DFT gaps), `peptides` (LRGB Peptides; generated peptides with conformer-based
                 targets); the official readers' shared plumbing (`official`; torch files are
                 read by `attnbench.data.formats.torch_pickle`), OGB-style featurisation of
                 SMILES (`featurize`), ZINC's target (`penalized_logp`), packed datasets and
                 padded, size-bucketed batches (`batching`), positional encodings (`positional`)
  pe_timing.py   SAMSA Table 4's measurement

RDKit is needed only by the modules that read molecules; install it with the `molecules` extra
(`pip install -e '.[molecules]'`). `data.batching` is numpy only (scipy for large graphs).
"""
