"""GFSA Table 40: GFSA in linear Transformers on the Long Range Arena (ListOps and Image):
accuracy, runtime (s per 1,000 steps) and GPU memory of Transformer, Linformer, YOSO-E,
Efficient Attention (Shen et al.) and the two GFSA variants.

Numbers: GFSA (arXiv 2312.04234) Table 40 (App. U; Figure 4 plots its ListOps columns). The accuracy
cells of the mechanisms we have run in the LRA base recipes (configs/lra/base.py); run them:

    python -m scripts.reproduce gfsa.table40 --preset cpu
    python -m scripts.reproduce gfsa.table40 --preset cpu --cells listops

"Efficient Attention + GFSA" is the `gfsa` recipe (the base Transformer with `gfsa_linear`);
"Transformer + GFSA" is the base Transformer with the quadratic `gfsa` mechanism. The runtime and
memory cells time the same recipes at their paper preset and batch on one device (synthetic
tokens; `_gfsa_timing`), on whatever device it runs on, beside the paper's numbers:

    python -m scripts.speed_tables --tables timing_gfsa_lra
"""

from __future__ import annotations

from attnbench.papers.tables import Table, grid
from configs.tables import _gfsa_timing

TASKS = {  # column prefix: config file
    "ListOps": "lra/listops.py",
    "Image": "lra/image.py",
}
QUANTITIES = ("Accuracy", "Runtime (s/1k steps)", "GPU (GB)")
COLUMNS = tuple(f"{task} {q}" for task in TASKS for q in QUANTITIES)

# row: (config args or None, paper numbers in COLUMNS order)
ROWS = {
    "Transformer": ("model=transformer", (37.1, 198.3, 5.50, 38.2, 345.1, 5.88)),
    "Transformer + GFSA": ("model=transformer,attn=gfsa", (37.6, 635.8, 10.87, 40.2, 737.2, 11.20)),
    "Linformer": ("model=transformer,attn=linformer", (37.3, 63.4, 1.73, 37.8, 158.5, 3.45)),
    "YOSO-E": ("model=transformer,attn=yoso", (37.3, 85.7, 0.37, 39.8, 114.2, 1.42)),
    "Efficient Attention": (
        "model=transformer,attn=efficient_attention",
        (36.9, 49.2, 0.57, 40.2, 121.1, 1.14),
    ),
    "Efficient Attention + GFSA": ("model=gfsa", (37.9, 53.8, 0.67, 40.4, 135.8, 1.33)),
}

MECHANISM_NEEDS: dict[str, str] = {}  # every row's mechanism is registered

UNIT = {"Runtime (s/1k steps)": "s/1k steps", "GPU (GB)": "GB"}

COST_METRIC = {"Runtime (s/1k steps)": "train.seconds_per_1000_steps", "GPU (GB)": "train.peak_gb"}


def _config(row: str, column: str) -> str | None:
    task, quantity = column.split(" ", 1)
    args = ROWS[row][0]
    return f"{TASKS[task]}:{args}" if args is not None and quantity == "Accuracy" else None


def _needs(row: str, column: str) -> str | None:
    return MECHANISM_NEEDS.get(row)  # every cost cell is timed (`_timing`)


def _timing(row: str, column: str) -> dict | None:
    """The runtime and memory cells: the row's recipe at its own batch, one training step."""
    task, quantity = column.split(" ", 1)
    if quantity not in UNIT or ROWS[row][0] is None or row in MECHANISM_NEEDS:
        return None
    return dict(config=f"{TASKS[task]}:{ROWS[row][0]}", unit=UNIT[quantity])


def get_table() -> Table:
    return Table(
        key="gfsa.table40",
        caption="Comparison of accuracy (%), runtime (s per 1,000 steps) and GPU usage (GB) on "
        "the Long Range Arena benchmark (ListOps (2K), Image (4K)).",
        source="GFSA paper Table 40; arXiv 2312.04234",
        rows=tuple(ROWS),
        columns=COLUMNS,
        cells=grid(
            {row: numbers for row, (_, numbers) in ROWS.items()},
            COLUMNS,
            config=_config,
            metric=lambda _, column: (
                "test_best.accuracy"
                if column.endswith(" Accuracy")
                else COST_METRIC[column.split(" ", 1)[1]]
            ),
            scale=lambda _, column: 100.0 if column.endswith(" Accuracy") else 1.0,
            needs=_needs,
            **_gfsa_timing.recipe_timing("timing_gfsa_lra", _timing),
        ),
        higher_is_better={column: column.endswith("Accuracy") for column in COLUMNS},
        notes=(
            "App. U gives no model sizes, steps, batch, codebase, hardware or K (nor do Sec. 6 and "
            "Fig. 4). Our cells use the LRA base recipes of configs/lra (ListOps: 4 layers, width "
            "512, 8 heads, 5k steps at batch 32; Image: 1 layer, width 128, 8 heads, 35k steps at "
            "batch 256) and GFSA's registry default K = 3.",
            "Lengths: ListOps '(2K)' matches our generator (LRA's, 500-2,000 tokens). Image '(4K)' "
            "does not match LRA Image, 1,024 tokens (32 x 32 grayscale CIFAR-10), which our config "
            "uses; the paper does not explain 4K (App. U).",
            "Linformer runs at the registry's default projection length (proj_len 32); the "
            "paper gives none.",
            "Transformer + GFSA here applies the filter to V (A(AV), O(n^2 d)); the authors' "
            "released GFSA code forms A^2 explicitly (O(n^3) per head), so runtime and memory "
            "overheads would not compare one to one.",
            "Efficient Attention is `efficient_attention` (Shen et al.: softmax over features for "
            "queries, over positions for keys), which equals `gfsa_linear` with its filter at "
            "the identity; `linear` is Katharopoulos et al.'s elu+1 linear attention. YOSO-E is "
            "`yoso` (the expectation form, O(N^2); hash length tau 11 on ListOps and 10 on "
            "Image, the authors' LRA configs: configs/lra/base.py PER_TASK).",
            "Runtime and memory: `python -m scripts.speed_tables --tables timing_gfsa_lra` times "
            "one training step of each row's recipe at its paper preset and batch (synthetic "
            "tokens at the recipe's length) and reads the compiled step's peak memory (XLA's "
            "count, in 2^30 bytes; the paper's 'GPU usage' is presumably PyTorch's allocator "
            "peak), on one device, labelled with it.",
            "Figure 4 plots the ListOps columns (accuracy vs runtime, GPU memory as circle "
            "size); its '11.82x faster' is 635.8 / 53.8 (Transformer + GFSA vs Efficient "
            "Attention + GFSA).",
            "The baseline rows cite Transformer [77], Linformer [81], YOSO-E [97] and Efficient "
            "Attention [70]; the paper does not say whether their numbers were run or copied, "
            "so none is marked quoted.",
            "The Image task at the paper preset reads CIFAR-10 (config.data.dir); the cpu "
            "preset uses the Fashion-MNIST stand-in.",
        ),
    )
