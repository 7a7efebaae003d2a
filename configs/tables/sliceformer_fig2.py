"""Sliceformer Figure 2: the softmax numerical test (the paper's Algorithm 1).

For x ~ N(0, 1) of length N and a random permutation, softmax(x)[perm] and softmax(x[perm])
should be equal; the paper plots, over 100 trials per N (PyTorch 2.0.0), the std of softmax(x)
(a), the L1 norm of their difference ("MAE", b) and the fraction of bitwise-equal entries
("Prob", c), and reads a growing MAE and a falling Prob as the softmax's discrepancy of
permutation equivariance. The figure prints no numbers: the paper cells hold nothing, the
claims are in the notes below. Ours: `jax.nn.softmax` (jit, float32) on this machine's backend,
computed exactly (`attnbench.papers.exact.softmax_numerics`):

    python -m scripts.reproduce sliceformer.fig2
"""

from __future__ import annotations

from attnbench.papers.tables import Cell, Table

SIZES = (10, 100, 1_000, 10_000, 100_000, 1_000_000)
STATS = {"Std (a)": "std", "MAE, L1 norm (b)": "mae", "Prob equal (c)": "prob"}


def get_table() -> Table:
    rows = tuple(f"N={n:,}" for n in SIZES)
    cells = tuple(
        Cell(
            row,
            column,
            None,
            exact="attnbench.papers.exact:softmax_numerics",
            exact_args=dict(n=n, stat=stat, trials=100, seed=0),
            scale=1,
        )
        for row, n in zip(rows, SIZES, strict=True)
        for column, stat in STATS.items()
    )
    return Table(
        key="sliceformer.fig2",
        caption=(
            "Softmax numerical test (Algorithm 1): std of softmax(x), L1 difference between "
            "softmax-then-permute and permute-then-softmax, and fraction of identical entries, "
            "mean over 100 trials."
        ),
        source="Sliceformer paper Fig. 2 and Algorithm 1 (Sec. 3.1); arXiv 2310.17683",
        rows=rows,
        columns=tuple(STATS),
        cells=cells,
        higher_is_better={"MAE, L1 norm (b)": False},
        notes=(
            "Paper (figure only, no numbers): Std decreases with N, MAE increases with N, Prob "
            "decreases with N.",
            "The result depends on the backend's reduction order (our earlier check, not in the "
            "paper, measured L1 3-9e-8 and a non-monotone Prob with NumPy and with JAX 0.10.2); "
            "ours is what this backend gives, with the revision and device below.",
        ),
        plot="lines",
    )
