"""Any mechanism in a paper table's cells: `scripts.reproduce <table> --attn NAME[:k=v,...]`.

A cell whose model has an attention runs again with `attn=NAME` in its config argument (every
LRA recipe takes it) and the spec's hyper-parameters as `--config.attention.<k>=<v>`
overrides. Cells whose substituted configs are identical (SAMSA Table 1's seven ListOps columns
differ only in SAMSA's own k and sampler, which a substituted mechanism does not have) share one
run: a run directory is keyed by a digest of the resolved config,
`<runs>/attn/<NAME[:k=v]>/<preset>/<digest>/seed<N>/`, and `scripts.tables --attn` finds it
from either cell.
"""

from __future__ import annotations

import hashlib
import json
import pathlib
import re

import attention
from attnbench import config as config_lib

__all__ = ["Substitution", "parse", "run_dir"]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9=.,:_-]+", "-", text).strip("-")


class Substitution:
    """`NAME[:k=v,...]` put into cells' configs."""

    def __init__(self, spec: str):
        self.spec = spec.strip()
        self.name, self.hparams = attention.parse(self.spec)

    @property
    def label(self) -> str:
        return self.spec

    def config_spec(self, cell_config: str, preset: str) -> str:
        """The cell's config argument with `attn=NAME` (replacing any `attn=`) and the preset."""
        path, sep, arg = cell_config.partition(":")
        items = [i for i in arg.split(",") if i and not i.startswith("attn=")] if sep else []
        items += [f"attn={self.name}", f"preset={preset}"]
        return f"{path}:{','.join(items)}"

    def overrides(self) -> dict[str, str]:
        return {
            f"attention.{k}": repr(v) if not isinstance(v, str) else v
            for k, v in self.hparams.items()
        }

    def config(self, cell_config: str, preset: str):
        """The resolved config, or None when the cell's model has no attention to swap."""
        base = config_lib.load(
            cell_config + ("," if ":" in cell_config else ":") + f"preset={preset}"
        )
        if "attention" not in base:
            return None
        c = config_lib.load(self.config_spec(cell_config, preset))
        return config_lib.override(c, self.overrides())

    def digest(self, cell_config: str, preset: str) -> str | None:
        c = self.config(cell_config, preset)
        if c is None:
            return None
        text = json.dumps(c.to_dict(), sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:12]


def parse(spec: str) -> Substitution:
    return Substitution(spec)


def run_dir(root, sub: Substitution, preset: str, digest: str, seed: int) -> pathlib.Path:
    return pathlib.Path(root) / "attn" / _slug(sub.label) / preset / digest / f"seed{seed}"
