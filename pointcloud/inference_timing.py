"""SAMSA Table 5 on this machine: inference time over the whole ModelNet40 test split (2,468
clouds of 1,024 points, batch 32) for hard and soft SAMSA, full attention, PointNet and DGCNN,
all timed in one process, side by side.

What is timed: the jitted forward pass of each model (`model(points)` -> logits, evaluation
mode) over every batch of the split, the last batch padded to 32 as the trainer's evaluation
pads it, with `jax.block_until_ready` at the end; compilation is excluded (one untimed batch
first). The split is moved to the device before timing (the paper's "1 A100 and 8 CPUs" does not
say whether its time includes data loading; ours does not). Weights are freshly initialised:
inference time does not depend on their values. SAMSA's k is not stated for Table 5 (neither
its caption nor Sec. 5.3 names one): `k` (default 128, Table 1's smallest column) is recorded.

Models: the `modelnet40` recipe (6 layers, d 256, FFN 768, 8 heads;
`configs/pointcloud/modelnet40.py`) with SAMSA hard / soft and with softmax attention (the
paper's full-attention model); PointNet and DGCNN as `pointcloud.models` builds them
(LayerNorm in place of BatchNorm: the same FLOPs within a few per cent).
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from attnbench import config as config_lib
from attnbench import io

RECIPE = "pointcloud/modelnet40.py"
PAPER_S = {"pointnet": 18.0, "dgcnn": 23.0, "hard": None, "soft": 1.0}  # SAMSA Table 5
PAPER_PRINTED = {"pointnet": "18s", "dgcnn": "23s", "hard": "<1s", "soft": "1s"}
TEST_SHAPES = 2_468  # ModelNet40's test split (Wu et al. 2015)
MODELS = ("hard", "soft", "full", "pointnet", "dgcnn")
LABELS = {
    "pointnet": "PointNet",
    "dgcnn": "DGCNN",
    "hard": "hard-SAMSA",
    "soft": "soft-SAMSA",
    "full": "full attention (softmax, same model)",
}


def _config(model: str, k: int, source: str, data_dir: str, num_points: int):
    arg = {
        "hard": f"k={k},mode=hard",
        "soft": f"k={k},mode=soft",
        "full": "attn=softmax",
        "pointnet": "model=pointnet",
        "dgcnn": "model=dgcnn",
    }[model]
    config = config_lib.load(f"{RECIPE}:{arg},source={source}")
    with config.unlocked():
        config.data.dir = data_dir
        config.data.num_points = num_points
        config.model.dtype = "float32" if jax.default_backend() == "cpu" else "bfloat16"
    return config


def _test_points(source: str, data_dir: str, num_points: int, num_clouds: int) -> tuple:
    from pointcloud import data

    config = config_lib.load(f"{RECIPE}:source={source}")
    with config.unlocked():
        config.data.dir = data_dir
        config.data.num_points = num_points
        if source == "standin":
            config.data.num_train, config.data.num_val = 32, 32
            config.data.num_test = num_clouds
    splits, description = data.load(config.data)
    test = splits["test"]
    n = min(len(test), num_clouds) if num_clouds else len(test)
    points = np.stack([np.asarray(test[i]["points"], np.float32) for i in range(n)])
    return points, description


def measure(
    *,
    models: tuple[str, ...] = MODELS,
    k: int = 128,
    batch: int = 32,
    num_points: int = 1024,
    num_clouds: int = TEST_SHAPES,
    source: str = "standin",
    data_dir: str = "",
    repeats: int = 1,
) -> dict:
    """One record: seconds per model over the test split (see the module docstring)."""
    from attnbench import tasks

    points, description = _test_points(source, data_dir, num_points, num_clouds)
    n = len(points)
    pad = (-n) % batch
    padded = np.concatenate([points, np.zeros((pad, *points.shape[1:]), np.float32)])
    batches = [jnp.asarray(padded[i : i + batch]) for i in range(0, len(padded), batch)]
    rec = {
        "device": io.device_info(),
        "data": {
            "source": source,
            "clouds": n,
            "points": num_points,
            "description": {
                k_: v for k_, v in description.items() if isinstance(v, str | int | float)
            },
        },  # fmt: skip
        "batch": batch,
        "batches": len(batches),
        "k": k,
        "seconds": {},
        "compile_s": {},
        "params": {},
    }
    for name in models:
        config = _config(name, k, source, data_dir, num_points)
        task = tasks.get(config.task)
        model = task.build_model(config, nnx.Rngs(0))
        graphdef, state = nnx.split(model)

        @jax.jit
        def forward(state, x, graphdef=graphdef):
            return nnx.merge(graphdef, state)(x, train=False, key=None)

        t = time.perf_counter()
        jax.block_until_ready(forward(state, batches[0]))
        rec["compile_s"][name] = time.perf_counter() - t
        best = float("inf")
        for _ in range(repeats):
            t = time.perf_counter()
            out = [forward(state, b) for b in batches]
            jax.block_until_ready(out)
            best = min(best, time.perf_counter() - t)
        rec["seconds"][name] = best
        rec["params"][name] = int(
            sum(int(np.prod(x.shape)) for x in jax.tree.leaves(nnx.state(model, nnx.Param)))
        )
        rec["config_" + name] = config.to_dict()["attention"]
    return rec


def markdown(rec: dict) -> str:
    dev, s = rec["device"], rec["seconds"]
    lines = [
        "# SAMSA Table 5 on this machine: ModelNet40 test-split inference time",
        "",
        f"Device: {dev.get('kind')} x {dev.get('count')} ({dev.get('platform')}), "
        f"{dev.get('cpu_count')} CPUs. Data: {rec['data']['source']} test split, "
        f"{rec['data']['clouds']} clouds of {rec['data']['points']} points, batch {rec['batch']} "
        f"({rec['batches']} batches, the last padded). SAMSA k = {rec['k']}. Forward passes "
        "only, compiled before timing, data already on the device; fresh weights.",
        "",
        "| model | paper (s) | ours (s) | ours per cloud (ms) | parameters | ours / hard-SAMSA |",
        "|---|---|---|---|---|---|",
    ]
    ref = s.get("hard")
    for name, secs in s.items():
        paper = PAPER_PRINTED.get(name, "-")
        ratio = f"{secs / ref:.2f}" if ref else "-"
        lines.append(
            f"| {LABELS[name]} | {paper} | {secs:.2f} | {1e3 * secs / rec['data']['clouds']:.2f} "
            f"| {rec['params'][name]:,} | {ratio} |"
        )
    lines += [
        "",
        "The paper's PointNet and DGCNN seconds are quoted from Kaba et al. 2023 (other "
        "hardware and code); its SAMSA seconds are the authors' A100. Ours are one process on "
        "the device above, every model timed in the same run. Reproduce: "
        "`python -m scripts.samsa_table5`.",
    ]
    return "\n".join(lines) + "\n"
