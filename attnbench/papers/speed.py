"""What the papers' speed tables measure: the functions their table configs' speed and memory
cells name (`Cell.measure`), and the `Session` that runs each (function, arguments) once.

A speed cell says `measure="attnbench.papers.speed:lra_text_step"`, `measure_args={"attn":
"softmax", "length": 1000}`; `Session.step` calls the function with those arguments, scaled to the
session's scale (`SCALES`), in its own process (`attnbench.launch.isolate`) unless `isolated=False`,
and serves every other cell that names the same call from its cache (the speed and the memory cell
of one training step, the same step quoted by several tables). `attnbench.papers.speed_tables`
renders the tables.

    session = speed.Session(scale="smoke", isolated=False)
    record = session.step("attnbench.papers.speed:lra_text_step", attn="softmax", length=32)
"""

from __future__ import annotations

import dataclasses
import json
import os
import types

from attnbench import config as config_lib
from attnbench.bench import attention as bench_attention
from attnbench.bench import train as bench_train
from attnbench.data import catalog
from attnbench.launch import isolate

__all__ = [
    "SCALES",
    "Session",
    "lra_text_step",
    "samsa_inference",
    "measure_explicit_gfsa",
    "recipe_step",
    "recipe_value",
    "UNITS",
    "with_args",
]

# Sizes per scale. `full` is what results/bench holds; `smoke` runs in seconds (tests).
# `sizes[table][arg]` maps a cell's `measure_args` value to this scale's; a cell whose value is
# not in the map is not measured at this scale (no entry: the paper's value).
SCALES = {
    "full": dict(
        sizes={},
        samsa_extra_lengths=[4096],
        samsa_batch=8,
        text_config="lra/text.py",
        samsa_config="lra/text.py:model=samsa",
        slice_batch=2,
        slice_mechanisms=[
            "softmax",
            "softmax_chunked",
            "local",
            "linear",
            "performer",
            "linformer",
            "reformer",
            "sinkformer",
            "sparse_transformer_dense",
            "sparse_transformer",
            "sinkhorn",
            "synthesizer_random",
            "longformer_dense",
            "longformer",
            "bigbird",
            "bigbird_dense",
            "cosformer",
            "sliceformer",
            "samsa",
            "ssa",
            "gfsa",
            "gfsa_linear",
            "grf",
        ],
        gfsa_lengths=[64, 128, 197, 256, 512, 1024],
        gfsa_heads=6,
        gfsa_head_dims=[64, 32],
        ssa_lengths=[1024, 4096, 16384],
        ssa_keeps=[0.5, 0.25, 0.125],
        grf_flop_lengths=[2**i for i in range(0, 17)],
        grf_time_lengths=[1024, 4096, 16384, 65536],
        grf_dense_max=16384,
        steps=3,
        repeats=3,
        recipe_preset="",  # the recipe as the paper ran it
        recipe_batch=None,  # None: the recipe's own batch (capped by `Session.max_batch`)
        recipe_min_time_s=3.0,  # short steps: timed until they add up to this (median)
    ),
    "smoke": dict(
        sizes={
            "samsa": {"length": {1024: 64}, "k": {128: 8}},
            "sliceformer": {"length": {1000: 32, 2000: 64}},
            "gfsa": {"length": {1024: 32}},
            "ssa": {"length": {4096: 64}},
        },
        samsa_extra_lengths=[],
        samsa_batch=2,
        text_config="lra/text.py:preset=smoke",
        samsa_config="lra/text.py:preset=smoke,model=samsa",
        slice_batch=2,
        slice_mechanisms=["softmax", "sliceformer"],
        gfsa_lengths=[16, 32],
        gfsa_heads=2,
        gfsa_head_dims=[8],
        ssa_lengths=[64],
        ssa_keeps=[0.25],
        grf_flop_lengths=[1, 4, 16, 64],
        grf_time_lengths=[64, 256],
        grf_dense_max=64,
        steps=1,
        repeats=1,
        recipe_preset="preset=smoke",
        recipe_batch=2,
        recipe_min_time_s=0.0,
    ),
}


# Measuring functions: the ones the table configs' cells name, and the tables' own.


def lra_text_step(attn: str, length: int, *, scale: str = "full", keep: float | None = None):
    """Steps/s and compiled memory of one training step of the LRA Text model
    (`configs/lra/text.py`: 4 layers, width 256, 4 heads, MLP 1024; its smoke preset at
    `scale="smoke"`) with mechanism `attn` at `length` tokens, batch 2, synthetic tokens
    (`attnbench.bench.train.measure`). `keep`: SSA's fraction of the sources kept."""
    sc = SCALES[scale]
    return bench_train.measure(
        with_args(sc["text_config"], f"attn={attn},length={length}"),
        batch=sc["slice_batch"],
        mode="train",
        steps=sc["steps"],
        warmup=1,
        max_memory_gb=20.0,
        overrides=None if keep is None else {"attention.keep": keep},
    )


def samsa_inference(
    length: int,
    *,
    scale: str = "full",
    k: int | None = None,
    mode: str | None = None,
    attn: str | None = None,
):
    """Inference steps/s of the SAMSA encoder of the LRA-Text recipe (4 layers, d 128, FFN 512,
    8 heads; SAMSA Table 8) at `length` tokens: SAMSA with `k` and `mode` (hard / soft), or the
    same model with attention `attn` (full softmax)."""
    sc = SCALES[scale]
    spec = with_args(sc["samsa_config"], f"length={length}")
    spec += f",attn={attn}" if attn else f",k={k},mode={mode}"
    return bench_train.measure(
        spec, batch=sc["samsa_batch"], mode="inference", steps=5, warmup=1, max_memory_gb=20.0
    )


def _explicit_gfsa():
    from attention import gfsa

    return types.SimpleNamespace(
        name="gfsa_explicit",
        hparams={"order": 3, "w0": 0.0},
        init=gfsa.init,
        apply=gfsa.gfsa_explicit_apply,
        inputs=(),
        needs_qk=True,
    )


def measure_explicit_gfsa(length, heads, head_dim, modes, repeats):
    """The authors' explicit A @ A formulation (not registered: a speed baseline only)."""
    return bench_attention.measure_mechanism(
        _explicit_gfsa(),
        "gfsa_explicit",
        "gfsa_explicit (authors' A @ A)",
        length,
        batch=1,
        heads=heads,
        head_dim=head_dim,
        dtype="float32",
        modes=modes,
        repeats=repeats,
        max_memory_gb=20.0,
    )


# What a recipe-timing cell reports (`recipe_value`): unit -> (what it is, the step it times).
UNITS = {
    "s/epoch": ("training seconds per epoch: examples / (batch x steps/s)", "train"),
    "img/s": ("inference throughput: batch x steps/s", "inference"),
    "s": ("inference seconds over the split: examples / (batch x steps/s)", "inference"),
    "s/1k steps": ("training seconds per 1,000 steps: 1000 / steps/s", "train"),
    "GB": ("peak memory of the compiled training step (XLA's count), in 2^30 bytes", "train"),
}


def recipe_step(
    config: str,
    mode: str,
    *,
    scale: str = "full",
    batch: int | None = None,
    unit: str | None = None,
    examples: str | None = None,
):
    """Steps/s and compiled memory of recipe `config`'s own model at its own shapes (synthetic
    inputs from the task's `example_batch`; `attnbench.bench.train.measure`): its `mode`
    ("train" or "inference") step at `batch` examples per step on one device (None: the
    recipe's `batch_size`, or `eval_batch_size` for inference). At `scale="smoke"` the recipe's
    smoke preset at batch 2. `unit` and `examples` say what the cell reports (`recipe_value`):
    they leave the measurement alone, so the cells of one step share it.

    A step whose compiled memory exceeds the device's (`device_memory_gb`) is not run: the
    batch is halved until it fits (`batch_asked` keeps the first), so a small machine still
    times the recipe, at the batch the record names."""
    del unit, examples  # the cell's reading of the record (`recipe_value`)
    sc = SCALES[scale]
    spec = with_args(config, sc["recipe_preset"]) if sc["recipe_preset"] else config
    if sc["recipe_batch"] is not None:
        batch = sc["recipe_batch"]
    elif batch is None:
        batch = recipe_batch(config, mode)
    asked, limit = batch, device_memory_gb()
    while True:
        rec = bench_train.measure(
            spec,
            batch=batch,
            mode=mode,
            steps=sc["steps"],
            warmup=1,
            max_memory_gb=limit,
            min_time_s=sc["recipe_min_time_s"],
        )
        if rec["steps_per_s"] is not None or batch == 1:
            break
        batch //= 2
    rec["batch_asked"] = asked
    rec["dtype"] = str(config_lib.load(spec).model.get("dtype", "float32"))
    return rec


def device_memory_gb() -> float:
    """What one step may take, in GiB: the accelerator's memory where it reports it; on a CPU
    60% of the machine's RAM (the process, its inputs and the OS need the rest)."""
    import jax

    device = jax.devices()[0]
    stats = device.memory_stats() if device.platform != "cpu" else None
    if stats and stats.get("bytes_limit"):
        return stats["bytes_limit"] / 2**30
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return 0.6 * ram / 2**30


def recipe_batch(config: str, mode: str) -> int:
    """The recipe's own batch: `batch_size` for training, `eval_batch_size` for inference."""
    c = config_lib.load(config)
    return int(c.batch_size if mode == "train" else c.get("eval_batch_size", c.batch_size))


def split_size(examples: str) -> int:
    """`"imagenet:train"` -> the official size of that split (`attnbench.data.catalog`)."""
    name, _, split = examples.partition(":")
    dataset = catalog.get(name)
    if dataset.unit != "examples" or split not in dataset.splits:
        raise ValueError(f"{examples!r}: not a split of {name} counted in examples")
    return int(dataset.splits[split])


def recipe_value(rec: dict, unit: str, examples: str | None = None) -> float | None:
    """What a recipe-timing cell reports in `unit` (`UNITS`) from a `recipe_step` record;
    `examples` ("dataset:split", the catalog's official size) for the per-epoch and
    per-split units. None where the step was not measured."""
    if unit not in UNITS:
        raise ValueError(f"unit {unit!r}; known: {', '.join(UNITS)}")
    if unit == "GB":
        mem = rec.get("peak_memory_bytes")
        return None if mem is None else mem / 2**30
    rate = rec.get("steps_per_s")
    if not rate:
        return None
    if unit == "s/1k steps":
        return 1000.0 / rate
    per_s = rec["batch"] * rate  # examples per second
    if unit == "img/s":
        return per_s
    if examples is None:
        raise ValueError(f"unit {unit!r} needs `examples` ('dataset:split')")
    return split_size(examples) / per_s


@dataclasses.dataclass
class Session:
    """One run of the tables at a scale: measures each (function, arguments) once, in its own
    process unless `isolated=False` (the test suite: no process start-up)."""

    scale: str = "full"
    isolated: bool = True
    cache: dict = dataclasses.field(default_factory=dict)
    # recipe timing (`recipe_step`): at most this many examples per step (None: the recipe's)
    max_batch: int | None = None

    @property
    def sc(self) -> dict:
        return SCALES[self.scale]

    def measure(self, target: str, timeout_s: float = 3600, **kwargs) -> dict:
        """`target` ("module:function") called with `kwargs`, or the record already measured."""
        key = (target, json.dumps(kwargs, sort_keys=True))
        if key not in self.cache:
            if self.isolated:
                self.cache[key] = isolate.run(target, kwargs, timeout_s=timeout_s)
            else:
                self.cache[key] = isolate.call(target, kwargs)
        return self.cache[key]

    def step(self, target: str, **kwargs) -> dict:
        """A whole-model record (`steps_per_s`, `peak_memory_bytes`; None when skipped)."""
        known = len(self.cache)
        rec = self.measure(target, scale=self.scale, **kwargs)
        rec.setdefault("steps_per_s", None)
        rec.setdefault("peak_memory_bytes", None)
        if len(self.cache) > known:  # measured now, not served from an earlier cell
            shown = f"{rec['steps_per_s']:.3f} steps/s" if rec["steps_per_s"] else rec["skipped"]
            print(f"  {target} {kwargs}: {shown}", flush=True)
        return rec

    def attn(self, spec, n, *, heads, head_dim, modes, repeats, batch=1) -> dict:
        """Attention alone (`attnbench.bench.attention`): `{mode: record}`."""
        got = self.measure(
            "attnbench.bench.attention:measure_attention",
            spec=spec,
            length=n,
            batch=batch,
            heads=heads,
            head_dim=head_dim,
            dtype="float32",
            modes=list(modes),
            repeats=repeats,
            max_memory_gb=20.0,
        )
        if "records" not in got:
            skipped = got["skipped"]
            return {m: {"time_s": None, "memory_bytes": None, "skipped": skipped} for m in modes}
        return {r["mode"]: r for r in got["records"]}

    def scaled(self, table: str, args: dict) -> dict | None:
        """A cell's `measure_args` at this scale, or None when this scale leaves it out."""
        sizes = self.sc["sizes"].get(table, {})
        out = {}
        for name, value in args.items():
            if name in sizes:
                if value not in sizes[name]:
                    return None
                value = sizes[name][value]
            out[name] = value
        return out


def with_args(base: str, args: str) -> str:
    """`configs/x.py[:a=1]` + `b=2` -> `configs/x.py:a=1,b=2`."""
    return base + ("," if ":" in base else ":") + args
