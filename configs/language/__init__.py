"""Recipes of the causal language-modelling task (`language/tasks.py`): `enwik8.py` (SSA's byte
decoder, SSA Tables 1, 4, 8; the offline byte-level stand-in for the `cpu` / `smoke` presets)."""
