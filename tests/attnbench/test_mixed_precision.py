"""Mixed precision (`config.model.dtype`): bfloat16 compute with float32 parameters, optimizer
state, norm statistics, pooling, logits, loss and metrics; every registered mechanism inside
the LRA encoder in bfloat16; "auto" (bfloat16 on GPU/TPU, float32 on CPU) resolved at run
start and recorded; a bf16 smoke run close to float32's and resuming exactly."""

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

import attention
from attnbench import config as config_lib
from attnbench import errors, steps, tasks, train, validate
from attnbench.nn import layers
from tests.attnbench.test_train import _final_params, _leaves, _records, _run_cli, _strip_rates

SMOKE = "lra/listops.py:preset=smoke"
BF16 = jnp.dtype(jnp.bfloat16)
F32 = jnp.dtype(jnp.float32)
# bf16 vs float32 ListOps smoke losses, every one of the 12 steps: relative tolerance.
# Measured on CPU: at most 1.14e-2 apart (train), 2.5e-3 (val); bf16 keeps ~3 digits.
LOSS_RTOL = 5e-2


def _config(spec=SMOKE, dtype="bfloat16", **fields):
    c = config_lib.load(spec)
    with c.unlocked():
        c.model.dtype = dtype
        for k, v in fields.items():
            c[k] = v
    return c


def _setup(config):
    task = tasks.get(config.task)
    return task, steps.setup(task, config)


def _float_leaves(tree):
    return [x for x in jax.tree.leaves(tree) if jnp.issubdtype(x.dtype, jnp.floating)]


def _batch(task, config, n=4):
    return {k: jnp.asarray(v) for k, v in task.example_batch(config, n).items()}


# ---- "auto" -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "platform,expected",
    [
        ("cpu", "float32"),
        ("gpu", "bfloat16"),
        ("cuda", "bfloat16"),
        ("rocm", "bfloat16"),
        ("tpu", "bfloat16"),
        ("TPU", "bfloat16"),
        ("METAL", "float32"),
    ],
)
def test_auto_resolves_by_backend(platform, expected):
    assert config_lib.compute_dtype("auto", platform) == expected
    for name in layers.COMPUTE_DTYPES:  # explicit dtypes are kept on every backend
        assert config_lib.compute_dtype(name, platform) == name


def test_resolve_copies_the_config_and_models_never_see_auto():
    auto = _config(dtype="auto")
    on_gpu, on_cpu = config_lib.resolve(auto, "gpu"), config_lib.resolve(auto, "cpu")
    assert (on_gpu.model.dtype, on_cpu.model.dtype) == ("bfloat16", "float32")
    assert auto.model.dtype == "auto"  # the caller's config is not changed
    explicit = _config(dtype="bfloat16")
    assert config_lib.resolve(explicit, "cpu") is explicit
    # a run resolves it once, when it starts; a model built from the recipe itself computes in
    # the same dtype (one decision: attnbench.config.compute_dtype)
    resolved = config_lib.compute_dtype("auto")
    assert steps.setup(tasks.get(auto.task), auto).config.model.dtype == resolved
    model = tasks.get(auto.task).build_model(auto, nnx.Rngs(0))
    assert model.encoder.encoder.dtype == jnp.dtype(resolved)


@pytest.mark.parametrize("task", ["listops", "text", "retrieval", "image", "pathfinder"])
def test_paper_presets_use_mixed_precision_where_their_paper_did(task):
    spec = f"lra/{task}.py"
    for recipe in ("transformer", "samsa", "sliceformer", "gfsa"):
        paper = config_lib.load(f"{spec}:model={recipe}")
        # SAMSA ran FlashAttention (half precision); LRA, the Sliceformer fork, GFSA: float32.
        assert paper.model.dtype == ("auto" if recipe == "samsa" else "float32"), recipe
        validate.check(paper, tasks.get(paper.task))  # "auto" is a valid value
        for preset in ("cpu", "smoke"):
            scaled = config_lib.load(f"{spec}:model={recipe},preset={preset}")
            assert scaled.model.dtype == "float32", (recipe, preset)


@pytest.mark.slow  # ~15 s on 2 cores; `make test-slow`
def test_auto_run_records_the_resolved_dtype_and_refuses_another_backend(tmp_path):
    config = _config(dtype="auto", total_steps=2, eval_every=2, log_every=1)
    resolved = config_lib.compute_dtype("auto")
    summary = train.train_and_evaluate(config, tmp_path)
    assert summary["precision"] == {
        "compute_dtype": resolved,
        "requested_dtype": "auto",
        "params": "float32",
        "optimizer_state": "float32",
    }
    # The summary names the dense kernel the step traced (cuDNN on a GPU in bf16, XLA on a CPU).
    assert config.attention.name == "softmax"
    kernel = {"gpu": "cudnn", "cpu": "xla"}.get(jax.default_backend())
    if kernel is not None:
        assert summary["kernels"] == {"softmax": kernel}
    on_disk = json.loads((tmp_path / "config.json").read_text())
    assert on_disk["model"]["dtype"] == resolved
    assert config.model.dtype == "auto"
    # The same workdir and "auto" on the other kind of backend: refused, saying what to pass.
    other = "bfloat16" if resolved == "float32" else "float32"
    on_disk["model"]["dtype"] = other
    (tmp_path / "config.json").write_text(json.dumps(on_disk))
    with pytest.raises(errors.WorkdirError, match=f"--config.model.dtype={other}"):
        train.train_and_evaluate(config, tmp_path)


# ---- what computes in which dtype -------------------------------------------------------------


# the slow tier (`make test-slow`), ~15 s each; the fast tier trains in bf16 end to end below
@pytest.mark.slow
@pytest.mark.parametrize("spec", [SMOKE, f"{SMOKE},model=samsa,k=8"])
def test_bf16_keeps_parameters_and_optimizer_state_float32(spec):
    config = _config(spec)
    task, built = _setup(config)
    state = built.state
    for part in ("params", "buffers", "opt_state"):
        leaves = _float_leaves(state[part])
        assert all(x.dtype == F32 for x in leaves), (part, {str(x.dtype) for x in leaves})
    batch = jax.device_put(_batch(task, config, 16))
    state, metrics = built.train_step(0)(state, batch)
    for part in ("params", "opt_state"):
        assert all(x.dtype == F32 for x in _float_leaves(state[part])), part
    for name, value in metrics.items():
        for leaf in jax.tree.leaves(value):
            assert leaf.dtype == F32, name
            assert np.isfinite(np.asarray(leaf)).all(), name


def _spy_mechanisms(model, seen: set) -> None:
    """Records (at trace time) the dtypes of every mechanism's q/k/v and output."""
    for block in model.encoder.encoder.blocks:
        mech = block.attn.mechanism

        def apply(params, q, k, v, _apply=mech.apply, **kw):
            out = _apply(params, q, k, v, **kw)
            seen.update(str(a.dtype) for a in (q, k, v, out) if a is not None)
            return out

        block.attn.mechanism = dataclasses.replace(mech, apply=apply)


# the SAMSA encoder's case is the slow tier (`make test-slow`)
@pytest.mark.parametrize(
    "spec", [SMOKE, pytest.param(f"{SMOKE},model=samsa,k=8", marks=pytest.mark.slow)]
)
def test_bf16_activations_between_layers_float32_logits_and_loss(spec, monkeypatch):
    config = _config(spec)
    task, built = _setup(config)
    graphdef, state = built.graphdef, built.state
    batch = _batch(task, config)
    blocks, mechanisms = [], set()  # dtypes seen while tracing
    block_cls = type(
        nnx.merge(graphdef, state["params"], state["buffers"]).encoder.encoder.blocks[0]
    )
    call = block_cls.__call__

    def spy(self, x, **kw):  # the residual stream: every block's input and output
        out = call(self, x, **kw)
        blocks.append((x.dtype, out.dtype))
        return out

    monkeypatch.setattr(block_cls, "__call__", spy)

    @jax.jit
    def forward(params, batch):
        model = nnx.merge(graphdef, params, state["buffers"])
        _spy_mechanisms(model, mechanisms)
        key = jax.random.key(0)
        embedded = model.encoder.embed(batch["tokens"].astype(jnp.int32))
        pooled = model.encoder(batch["tokens"], train=True, key=key)
        logits = model(batch["tokens"], train=True, key=key)
        loss, metrics = task.loss(model, batch, train=True, key=key)
        return embedded, pooled, logits, loss, metrics

    embedded, pooled, logits, loss, metrics = forward(state["params"], batch)
    assert embedded.dtype == F32  # positions are added in float32, then the stream is cast
    assert blocks and set(blocks) == {(BF16, BF16)}
    assert mechanisms == {"bfloat16"}
    assert pooled.dtype == F32  # pooled in float32; the head computes in float32
    assert logits.dtype == F32 and np.isfinite(np.asarray(logits)).all()
    assert loss.dtype == F32 and np.isfinite(float(loss))
    assert all(leaf.dtype == F32 for leaf in jax.tree.leaves(metrics))


@pytest.mark.parametrize("norm_cls", [nnx.LayerNorm, nnx.RMSNorm])
def test_norm_statistics_are_float32_under_bf16(norm_cls):
    """Inputs far from zero (mean 100, std 1): statistics summed in bfloat16 would be off by
    about the standard deviation; in float32 the bf16 output is the float32 one, rounded."""
    norm = norm_cls(64, dtype=jnp.bfloat16, rngs=nnx.Rngs(0))
    ref = norm_cls(64, dtype=jnp.float32, rngs=nnx.Rngs(0))
    x = (100.0 + jax.random.normal(jax.random.key(0), (8, 64))).astype(BF16)
    out = norm(x)
    assert out.dtype == BF16
    np.testing.assert_allclose(
        np.asarray(out, np.float32), np.asarray(ref(x.astype(F32))), rtol=1e-2, atol=1e-2
    )


def test_pooling_sums_and_counts_in_float32():
    # 301 real tokens of value 1 + 2^-7: bfloat16 (8 significant bits) holds neither 301 nor
    # their sum, 303.35.
    value = 1 + 2**-7
    x = jnp.full((1, 400, 2), value, BF16)
    mask = jnp.arange(400)[None] < 301
    for mode, expected in (("mean", value), ("sum", 301 * value), ("cls", value)):
        out = layers.pool(x, mask, mode)
        assert out.dtype == F32
        np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-6)


# ---- every mechanism --------------------------------------------------------------------------


@pytest.mark.slow  # ~80 s for the 22 mechanisms; softmax and SAMSA run in bf16 in the fast tier
# Mechanisms that require per-call inputs ListOps does not give (grf_asym's point coordinates)
# are left out: the config check refuses them on ListOps (tests/attnbench/test_tasks.py).
@pytest.mark.parametrize("name", [n for n in attention.names() if not attention.get(n).requires])
def test_every_mechanism_runs_in_bf16_inside_the_encoder(name):
    """The forward pass, training (dropout, noise, sampling) and evaluation, in one compiled
    call; gradients in bf16 are covered by the train steps above (softmax, SAMSA)."""
    config = _config(f"{SMOKE},attn={name},k=8")
    task, built = _setup(config)
    graphdef, state = built.graphdef, built.state
    batch = _batch(task, config)
    dtypes = set()

    @jax.jit
    def forward(params):
        model = nnx.merge(graphdef, params, state["buffers"])
        _spy_mechanisms(model, dtypes)
        train_loss, _ = task.loss(model, batch, train=True, key=jax.random.key(1))
        eval_logits = model(batch["tokens"], train=False, key=None)
        return train_loss, eval_logits

    train_loss, eval_logits = forward(state["params"])
    assert train_loss.dtype == eval_logits.dtype == F32
    assert np.isfinite(float(train_loss)) and np.isfinite(np.asarray(eval_logits)).all()
    assert dtypes == {"bfloat16"}, f"{name}: q/k/v/out dtypes {dtypes}"


# ---- whole runs -------------------------------------------------------------------------------

BF16_FLAGS = ("--config.model.dtype=bfloat16", "--config.log_every=1")


@pytest.fixture(scope="module")
def bf16_reference(tmp_path_factory):
    """An uninterrupted bf16 ListOps smoke run (synchronous checkpoints), logging every step."""
    ref = tmp_path_factory.mktemp("bf16") / "ref"
    out = _run_cli(ref, *BF16_FLAGS, "--config.async_checkpoints=False")
    assert out.returncode == 0, out.stderr[-3000:]
    return ref


@pytest.mark.slow  # ~36 s on CPU (bf16 is emulated); make test-gpu runs it where bf16 is native
def test_bf16_smoke_run_is_finite_and_close_to_float32(bf16_reference, tmp_path):
    summary = json.loads((bf16_reference / "summary.json").read_text())
    assert summary["precision"] == {
        "compute_dtype": "bfloat16",
        "requested_dtype": "bfloat16",
        "params": "float32",
        "optimizer_state": "float32",
    }
    config = json.loads((bf16_reference / "config.json").read_text())
    assert config["model"]["dtype"] == "bfloat16"
    f32 = _config(dtype="float32", log_every=1)
    train.train_and_evaluate(f32, tmp_path)
    for split in ("train", "val"):
        bf = [r["loss"] for r in _records(bf16_reference, split)]
        fp = [r["loss"] for r in _records(tmp_path, split)]
        assert len(bf) == len(fp) == (12 if split == "train" else 3)
        assert np.isfinite(bf).all()
        np.testing.assert_allclose(bf, fp, rtol=LOSS_RTOL, err_msg=split)


@pytest.mark.slow  # the float32 kill/resume tests of test_train cover the mechanism
def test_killed_bf16_run_resumes_to_identical_params_and_metrics(bf16_reference, tmp_path):
    flags = (*BF16_FLAGS, "--config.async_checkpoints=False")
    killed = _run_cli(tmp_path, *flags, env={"ATTNBENCH_KILL_AT_STEP": "6"})
    assert killed.returncode == -9, killed.stderr[-2000:]
    done = _run_cli(tmp_path, *flags)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "resumed from step 4" in done.stdout
    a, b = _final_params(bf16_reference, 12), _final_params(tmp_path, 12)
    for x, y in zip(_leaves(a), _leaves(b), strict=True):
        assert x.dtype == np.float32
        np.testing.assert_array_equal(x, y)
    ref_train = _records(bf16_reference, "train")
    assert ref_train == _strip_rates(_records(tmp_path, "train"), ref_train)
    assert _records(bf16_reference, "val") == _records(tmp_path, "val")
