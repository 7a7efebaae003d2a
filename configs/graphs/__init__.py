"""Recipes of the graph tasks (`graphs/tasks.py`): `zinc.py` (Graphormer on ZINC, GFSA Tables 4
and 20)."""
