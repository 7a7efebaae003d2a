"""Recipes of the graph tasks (`graphs/tasks.py`): `zinc.py` (Graphormer on ZINC: GFSA Tables 4,
20), `pcqm.py` (Graphormer-base on PCQM4M / v2: Sliceformer Table 6, GFSA Tables 5, 21; EGT with
SSA: SSA Tables 3, 5), `peptides.py` (Graph-Bridge + SAMSA on LRGB Peptides: SAMSA Tables 1, 3);
`common.py` holds their shared sections."""
