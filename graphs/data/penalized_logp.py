"""Penalized logP, the regression target of ZINC (benchmarking-gnns' ZINC-12k, JT-VAE's
property-optimisation score, "constrained solubility").

The three terms of a molecule (Kusner et al. 2017, "Grammar Variational Autoencoder"; Jin et al.
2018, "Junction Tree Variational Autoencoder", Sec. 4):

* `logp`: RDKit's Crippen `MolLogP` (Wildman & Crippen 1999);
* `sa`: the synthetic accessibility score of Ertl & Schuffenhauer (2009), 1 (easy) to 10 (hard),
  computed by RDKit's Contrib `SA_Score/sascorer.py` with the fragment model
  `SA_Score/fpscores.pkl.gz` shipped beside it (loaded from the installed RDKit at run time,
  never copied here);
* `ring_penalty`: `max(0, largest ring size - 6)`, the ring size counted in atoms over RDKit's
  ring perception (`GetRingInfo().AtomRings()`, the symmetrised SSSR); 0 without rings.

The target is `penalized_logp = z(logp) + z(-sa) + z(-ring_penalty)`, each term z-scored with
the statistics of JT-VAE's ZINC-250k training molecules (`ZINC250K_STATS`), the form found in
public code (JT-VAE `bo/gen_latent.py` normalises each term over its training set; GCPN's
`reward_penalized_log_p` and MoFlow's `mflow/utils/environment.py` hard-code the six
constants). `normalized=False` gives the raw sum `logp - sa - ring_penalty` instead; which of
the two the benchmarking-gnns ZINC file holds is unverified (not checked against that file
here).

A published value checks the whole chain: MoFlow (calvin-zcx/moflow,
`mflow/optimize_property.py`, docstring of `load_property_csv`) lists the normalised score of
the first two ZINC-250k molecules, 3.1399057164163766 for
`CC(C)(C)c1ccc2occ(CC(=O)Nc3ccccc3F)c2c1` and 0.17238635659148804 for
`C[C@@H]1CC(Nc2cncc(-c3nncn3C)c2)C[C@@H](C)C1`; we reproduce both to the last digit
(`tests/graphs/data/test_penalized_logp.py`).

Where public code differs: JT-VAE, GCPN and MoFlow take the largest cycle of a networkx
`cycle_basis` of the bond graph, a fundamental cycle basis that is not always made of the
smallest rings: for cages and peri-fused systems (adamantane, acenaphthene-like rings) it can
return an 8- to 11-atom cycle where every SSSR ring has 6 atoms. On a sample of 20,000 MOSES
molecules the two ring penalties differ for 52 (0.26%); we keep RDKit's rings (the chemical
ring size, and no networkx dependency).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import pathlib
from typing import TYPE_CHECKING

import numpy as np

from attnbench import errors, extras
from graphs.data import featurize

if TYPE_CHECKING:
    from rdkit import Chem

__all__ = [
    "ZINC250K_STATS",
    "Terms",
    "sa_scorer_dir",
    "sa_score",
    "ring_penalty",
    "terms",
    "combine",
    "penalized_logp",
]

# (mean, std) of each term over JT-VAE's ZINC-250k training set, the sign already applied to
# -sa and -ring_penalty: the constants of GCPN's `reward_penalized_log_p` (bowenliu16/
# rl_graph_generation, gym_molecule/envs/molecule.py), copied into MoFlow and many others.
ZINC250K_STATS = {
    "logp": (2.4570953396190123, 1.434324401111988),
    "neg_sa": (-3.0525811293166134, 0.8335207024513095),
    "neg_ring_penalty": (-0.0485696876403053, 0.2860212110245455),
}

_SA_FILES = ("sascorer.py", "fpscores.pkl.gz")


@dataclasses.dataclass(frozen=True)
class Terms:
    """The three raw terms of a molecule's penalized logP (see the module docstring)."""

    logp: float
    sa: float
    ring_penalty: int


def sa_scorer_dir() -> pathlib.Path:
    """The installed RDKit's `Contrib/SA_Score` folder (holding `sascorer.py` and
    `fpscores.pkl.gz`): `rdkit.RDConfig.RDContribDir`, else `Contrib/` inside the rdkit package
    (pip wheels ship it there). `DataError` naming each missing file otherwise."""
    rdkit = extras.require("rdkit", "penalized logP (graphs.data.penalized_logp)")
    from rdkit import RDConfig

    candidates = [
        pathlib.Path(RDConfig.RDContribDir) / "SA_Score",
        pathlib.Path(rdkit.__file__).parent / "Contrib" / "SA_Score",
    ]
    for folder in candidates:
        if all((folder / name).is_file() for name in _SA_FILES):
            return folder
    missing = [str(folder / name) for folder in candidates for name in _SA_FILES]
    missing = [path for path in missing if not pathlib.Path(path).is_file()]
    raise errors.DataError(
        f"RDKit's SA score model is missing: {', '.join(missing)} not found (RDKit "
        f"{rdkit.__version__}); the pip wheel `rdkit` ships Contrib/SA_Score/ (install the "
        "`molecules` extra), Debian's python3-rdkit needs `rdkit-data`"
    )


@functools.cache
def _sascorer():
    folder = sa_scorer_dir()
    spec = importlib.util.spec_from_file_location("_attnbench_sascorer", folder / "sascorer.py")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
        module.readFragmentScores()  # loads fpscores.pkl.gz now, so a bad file is named here
    except Exception as e:
        raise errors.DataError(f"{folder}: cannot load RDKit's SA scorer ({e})") from e
    return module


def _mol(mol: Chem.Mol | str) -> Chem.Mol:
    return featurize.parse_smiles(mol) if isinstance(mol, str) else mol


def sa_score(mol: Chem.Mol | str) -> float:
    """Synthetic accessibility, 1 (easy) to 10 (hard): RDKit Contrib's `calculateScore`."""
    return float(_sascorer().calculateScore(_mol(mol)))


def ring_penalty(mol: Chem.Mol | str) -> int:
    """`max(0, s - 6)` for `s` the atom count of the molecule's largest SSSR ring (0 if none)."""
    largest = max((len(ring) for ring in _mol(mol).GetRingInfo().AtomRings()), default=0)
    return max(0, largest - 6)


def terms(mol: Chem.Mol | str) -> Terms:
    """The raw `Terms` of a molecule (an RDKit `Mol`, or a SMILES parsed by
    `graphs.data.featurize.parse_smiles`)."""
    extras.require("rdkit", "penalized logP (graphs.data.penalized_logp)")
    from rdkit.Chem import Crippen

    mol = _mol(mol)
    return Terms(float(Crippen.MolLogP(mol)), sa_score(mol), ring_penalty(mol))


def combine(logp, sa, ring, *, normalized: bool = True):
    """Penalized logP from its terms (floats or arrays, broadcast): the sum of the z-scored
    `logp`, `-sa` and `-ring` (`ZINC250K_STATS`), or `logp - sa - ring` when not `normalized`."""
    logp, neg_sa, neg_ring = np.asarray(logp), -np.asarray(sa), -np.asarray(ring)
    if not normalized:
        return logp + neg_sa + neg_ring

    def z(value, key):
        mean, std = ZINC250K_STATS[key]
        return (value - mean) / std

    return z(logp, "logp") + z(neg_sa, "neg_sa") + z(neg_ring, "neg_ring_penalty")


def penalized_logp(mol: Chem.Mol | str, *, normalized: bool = True) -> float:
    """The penalized logP of one molecule (see the module docstring for the convention)."""
    t = terms(mol)
    return float(combine(t.logp, t.sa, t.ring_penalty, normalized=normalized))
