"""Issue 16's scaling target, measured: k-NN graphs and asymmetric GRF attention from 4k to 32k
points (GRF, arXiv 2410.03462: HD-VPD's point clouds have N = 32,768 particles, Sec. 4 and App.
C.3; a forward/backward timing and memory test at that N is our substitute for Figs. 4-5, whose
robot data is not public).

What is timed (`measure`), each (what, N) in its own subprocess
(`python -m pointcloud.scaling --worker ...`) so that its peak memory is its own:
  knn_k{3,16}       `attention.graphs.batch_knn_graph` of one random cloud `[1, N, 3]`, jitted.
                    It is blocked brute force: O(N^2) distance work (a `chunk` x N block at a
                    time, so O(chunk N) memory), so its time grows quadratically; the issue asks
                    for its time and memory at 32k, not for linear growth.
  grf_with_knn      forward + backward (`jax.value_and_grad` of a weighted sum of the output
                    with respect to q, k, v and f) of `grf_asym` (batch 1, one head, width `dim`,
                    k = 3, 3 enumerated hops: 40 slots per point), the k-NN build included.
  grf_no_knn        the same on a precomputed graph (`grf_asym.apply_on_graph`): the attention
                    alone, O(N L d); the issue's target is a log-log slope <= 1.15 of its time.
Times are the median of `reps` calls after one untimed call that compiles. Memory: on CPU the
worker's peak resident set (`resource.getrusage(RUSAGE_SELF).ru_maxrss`), which includes the
Python + JAX runtime (reported alone as `baseline`, a worker that only runs a tiny jitted op);
on a GPU the device's `peak_bytes_in_use` (`memory_stats`). The issue's memory target is
"within 2 GiB at 32k".
"""

from __future__ import annotations

import json
import os
import pathlib
import resource
import subprocess
import sys
import time

import numpy as np

__all__ = ["SIZES", "KINDS", "measure", "run_worker", "loglog_slope", "markdown", "plot"]

SIZES = (4096, 8192, 16384, 32768)
KINDS = ("knn_k3", "knn_k16", "grf_with_knn", "grf_no_knn")
_ROOT = pathlib.Path(__file__).resolve().parents[1]


def loglog_slope(sizes, times) -> float:
    """Least-squares slope of log(time) against log(N)."""
    x, y = np.log(np.asarray(sizes, float)), np.log(np.asarray(times, float))
    return float(np.polyfit(x, y, 1)[0])


def _peak_bytes() -> dict:
    import jax

    dev = jax.devices()[0]
    out = {"rss_peak_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
    if dev.platform != "cpu":
        stats = dev.memory_stats() or {}
        out["device_peak_bytes"] = stats.get("peak_bytes_in_use")
    return out


def run_worker(kind: str, n: int, *, dim: int, reps: int, seed: int = 0) -> dict:
    """Times `kind` at `n` points in this process; returns times and peak memory."""
    import jax
    import jax.numpy as jnp

    from attention import graphs, grf_asym

    rng = np.random.default_rng(seed)
    coords = jnp.asarray(rng.uniform(-1, 1, size=(1, n, 3)), jnp.float32)
    if kind == "baseline":
        fn, args = jax.jit(lambda x: x * 2.0), (coords,)
    elif kind.startswith("knn_k"):
        k = int(kind[len("knn_k") :])
        fn, args = jax.jit(lambda x: graphs.batch_knn_graph(x, k)), (coords,)
    elif kind in ("grf_with_knn", "grf_no_knn"):
        q, k_, v = (jnp.asarray(rng.normal(size=(1, n, 1, dim)), jnp.float32) for _ in range(3))
        w = jnp.asarray(rng.normal(size=(1, n, 1, dim)), jnp.float32)
        params = grf_asym.init(None, num_heads=1, head_dim=dim)
        if kind == "grf_with_knn":

            def loss(p, q, k, v, x):
                return jnp.sum(grf_asym.apply(p, q, k, v, coords=x) * w)

            graph = coords
        else:

            def loss(p, q, k, v, nbrs):
                return jnp.sum(grf_asym.apply_on_graph(p, q, k, v, nbrs) * w)

            graph = jax.block_until_ready(jax.jit(graphs.batch_knn_graph, static_argnums=1)(
                coords, 3))  # fmt: skip
        fn = jax.jit(jax.value_and_grad(loss, argnums=(0, 1, 2, 3)))
        args = (params, q, k_, v, graph)
    else:
        raise ValueError(f"unknown kind {kind!r}; known: baseline, {', '.join(KINDS)}")
    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args))
    compile_s = time.perf_counter() - t0
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
    return {"kind": kind, "n": n, "dim": dim, "times_s": times,
            "median_s": float(np.median(times)), "first_call_s": compile_s,
            **_peak_bytes()}  # fmt: skip


def _spawn(kind: str, n: int, dim: int, reps: int) -> dict:
    cmd = [sys.executable, "-m", "pointcloud.scaling", "--worker", kind, str(n), str(dim),
           str(reps)]  # fmt: skip
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(_ROOT), os.environ.get("PYTHONPATH", "")])
    )
    proc = subprocess.run(cmd, cwd=_ROOT, env=env, capture_output=True, text=True, check=False)
    if proc.returncode:
        raise RuntimeError(f"worker {kind} at N={n} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(sizes=SIZES, *, dim: int = 64, reps: int = 3, kinds=KINDS, log=print) -> dict:
    """Every (kind, N): `{"rows": [...], "slopes": {kind: slope}, "baseline": {...}}` plus the
    device and the settings."""
    from attnbench import io

    baseline = _spawn("baseline", 8, dim, 1)
    rows = []
    for kind in kinds:
        for n in sizes:
            row = _spawn(kind, n, dim, reps)
            rows.append(row)
            mem = row.get("device_peak_bytes") or row["rss_peak_bytes"]
            log(f"{kind:13s} N={n:6d}: {row['median_s']:.4f} s, peak {mem / 2**20:.0f} MiB")
    slopes = {}
    for kind in kinds:
        pts = [(r["n"], r["median_s"]) for r in rows if r["kind"] == kind]
        if len(pts) >= 2:
            slopes[kind] = loglog_slope(*zip(*pts, strict=True))
    return {
        "sizes": list(sizes),
        "dim": dim,
        "reps": reps,
        "grf": {"knn_k": 3, "hops": 3, "walks": "enumerate", "slots": 40, "heads": 1},
        "rows": rows,
        "baseline": baseline,
        "slopes": slopes,
        "targets": {"grf_no_knn_slope_max": 1.15, "peak_memory_max_bytes": 2 * 2**30},
        "device": io.device_info(),
        "versions": io.versions(),
        "git_revision": io.git_revision(),
    }


def _mib(x) -> str:
    return "-" if x is None else f"{x / 2**20:,.0f}"


def markdown(rec: dict, command: str) -> str:
    dev = rec["device"]
    base = rec["baseline"]
    lines = [
        "# Point-cloud scaling: blocked k-NN and asymmetric GRF attention (issue 16 target)",
        "",
        f"Device: {dev.get('kind')} x {dev.get('count')} ({dev.get('platform')}, "
        f"{dev.get('cpu_count')} CPUs). GRF: `grf_asym`, batch 1, 1 head, width {rec['dim']}, "
        "k = 3, 3 enumerated hops (40 slots per point); forward + backward (gradients of q, k, "
        f"v, f). Median of {rec['reps']} calls after a compiling call; each row in its own "
        "process.",
        "",
        "Memory: peak resident set of that process (CPU; includes the Python + JAX runtime, "
        f"{_mib(base['rss_peak_bytes'])} MiB alone) or the device's peak bytes in use (GPU).",
        "",
        "| what | N | time (s) | first call (s) | peak RSS (MiB) | device peak (MiB) |",
        "|---|---|---|---|---|---|",
    ]
    for r in rec["rows"]:
        lines.append(
            f"| {r['kind']} | {r['n']:,} | {r['median_s']:.4f} | {r['first_call_s']:.2f} | "
            f"{_mib(r['rss_peak_bytes'])} | {_mib(r.get('device_peak_bytes'))} |"
        )
    lines += ["", "Log-log slope of time against N (least squares over the sizes):", ""]
    for kind, s in rec["slopes"].items():
        note = {
            "grf_no_knn": " (target <= 1.15)",
            "knn_k3": " (blocked brute force: O(N^2) work, expected ~2)",
            "knn_k16": " (blocked brute force: O(N^2) work, expected ~2)",
            "grf_with_knn": " (dominated by the O(N^2) k-NN at large N)",
        }.get(kind, "")
        lines.append(f"- {kind}: {s:.3f}{note}")
    lines += ["", f"Reproduce: `{command}`", ""]
    return "\n".join(lines)


def plot(rec: dict, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from attnbench import io

    fig, ax = plt.subplots(figsize=(6, 4))
    for kind in sorted({r["kind"] for r in rec["rows"]}):
        pts = sorted((r["n"], r["median_s"]) for r in rec["rows"] if r["kind"] == kind)
        n, t = zip(*pts, strict=True)
        slope = rec["slopes"].get(kind)
        label = kind if slope is None else f"{kind} (slope {slope:.2f})"
        ax.loglog(n, t, "o-", label=label)
    ax.set_xlabel("points N")
    ax.set_ylabel("seconds per call")
    dev = rec["device"]
    ax.set_title(f"k-NN and grf_asym fwd+bwd, {dev.get('kind')}", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    io.save_figure(fig, path, dpi=120, bbox_inches="tight")


def _worker_main(argv) -> None:
    kind, n, dim, reps = argv[0], int(argv[1]), int(argv[2]), int(argv[3])
    print(json.dumps(run_worker(kind, n, dim=dim, reps=reps)))


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "--worker":
        _worker_main(sys.argv[2:])
    else:
        raise SystemExit(
            "use: python -m scripts.pointcloud_scaling (this module's CLI is a worker)"
        )
