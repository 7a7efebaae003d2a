"""What the GFSA timing tables share: cells timed on the recipe they report, at its own shapes.

A runtime, throughput, inference-time or memory cell of GFSA Tables 12, 25, 26, 31, 32, 39, 40 and
Figure 3 names `attnbench.papers.speed:recipe_step` with the recipe of its row (the one its
accuracy cell trains), the step it times ("train" or "inference"), the unit it reports and, for
the per-epoch and per-split units, the official split whose size the time is multiplied by
(`attnbench.data.catalog`). One command per group measures every cell of the group on whatever
device it runs on and prints the paper's number beside ours, labelled with the device:

    python -m scripts.speed_tables --tables timing_gfsa_vision   # Tables 12, 25, 31, 39, Fig. 3
    python -m scripts.speed_tables --tables timing_gfsa_graphs   # Tables 26, 32
    python -m scripts.speed_tables --tables timing_gfsa_lra      # Table 40

Not a table (the leading underscore keeps it out of `attnbench.papers.tables.names`).
"""

from __future__ import annotations

from collections.abc import Callable

RECIPE_STEP = "attnbench.papers.speed:recipe_step"

# unit -> the step it times (`attnbench.papers.speed.UNITS` says what each is; a test keeps the
# two equal without importing the benchmark code into every table config)
UNIT_MODE = {
    "s/epoch": "train",
    "s/1k steps": "train",
    "GB": "train",
    "img/s": "inference",
    "s": "inference",
}

GROUPS = {  # speed table -> the paper tables whose timing cells it measures
    "timing_gfsa_vision": (
        "gfsa.table12",
        "gfsa.table25",
        "gfsa.table31",
        "gfsa.table39",
        "gfsa.fig3",
    ),
    "timing_gfsa_graphs": ("gfsa.table26", "gfsa.table32"),
    "timing_gfsa_lra": ("gfsa.table40",),
}

# ImageNet: GFSA's DeiT / CaiT / Swin runs train at batch 1,024 on 4 RTX 3090s (App. M.1; the
# authors' Image/README.md), 256 images per GPU; the paper gives no batch for throughput and
# inference, which we time at the same 256 per device.
IMAGENET_BATCH = 256


def command(group: str) -> str:
    return f"python -m scripts.speed_tables --tables {group} (results/bench/paper_{group}.md)"


def recipe_timing(group: str, spec: Callable[[str, str], dict | None]) -> dict:
    """`grid()` fields for the timing cells of a table: `spec(row, column)` is None for a cell
    that is not timed, else `{"config", "unit"}` plus `"examples"` ("dataset:split", for s/epoch
    and s) and `"batch"` (examples per step on one device; default the recipe's own)."""

    def args(row: str, column: str) -> dict:
        s = spec(row, column)
        if s is None:
            return {}
        out = {"config": s["config"], "mode": UNIT_MODE[s["unit"]], "unit": s["unit"]}
        out |= {k: s[k] for k in ("batch", "examples") if s.get(k) is not None}
        return out

    return dict(
        measure=lambda row, column: RECIPE_STEP if spec(row, column) else None,
        measure_args=args,
        elsewhere=lambda row, column: command(group) if spec(row, column) else None,
    )


def imagenet(config: str | None, unit: str) -> dict | None:
    """A timing cell of an ImageNet recipe: s/epoch over ImageNet-1k's training images, or
    inference seconds over its 50,000 validation images, or images/s; 256 images per step."""
    if config is None:
        return None
    examples = {"s/epoch": "imagenet:train", "s": "imagenet:val"}.get(unit)
    return dict(config=config, unit=unit, batch=IMAGENET_BATCH, examples=examples)
