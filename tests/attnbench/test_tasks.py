"""The contracts between the trainer and the domains: the `Task` base class, the one evaluation
path (`Task.eval_outputs` -> the evaluators of `config.evals`, or the task's defaults), the
training phases, per-call attention inputs as arguments, and the one registry kind."""

import ast
import inspect
import pathlib
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

import attention
from attnbench import config as config_lib
from attnbench import errors, evaluators, registry, steps, tasks, validate
from attnbench.nn import backbones
from tests.conftest import ROOT

LISTOPS = "lra/listops.py:preset=smoke"


# ---- the Task base class ------------------------------------------------------------------


def test_every_registered_task_is_a_task_with_its_name():
    names = tasks.names()
    assert len(names) >= 20
    for name in names:
        task = tasks.get(name)
        assert isinstance(task, tasks.Task) and task.name == name


def test_a_task_must_give_data_model_and_loss_and_only_a_task_registers():
    class Partial(tasks.Task):
        def load_data(self, config):
            return None

    with pytest.raises(TypeError, match="abstract"):
        Partial()
    with pytest.raises(TypeError, match="not a subclass of attnbench.tasks.Task"):
        tasks.register("toy.not_a_task")(type("NotATask", (), {}))


def test_the_defaults_of_a_task():
    class Minimal(tasks.Task):
        def load_data(self, config):
            raise NotImplementedError

        def build_model(self, config, rngs):
            raise NotImplementedError

        def loss(self, model, batch, *, train, key, **inputs):
            return jnp.float32(1.0), {"loss": (jnp.float32(3.0), jnp.float32(2.0))}

    task, config = Minimal(), config_lib.load(LISTOPS)
    assert task.check_config(config) == [] and task.archs == ()
    assert task.attention_length(config) == config.data.max_length + (config.model.pool == "cls")
    assert task.eval_outputs(None, {}) == {"metrics": {"loss": (3.0, 2.0)}}
    assert task.default_evals(config) == {"metrics": {"type": "task_metrics", "names": ("loss",)}}
    with pytest.raises(errors.ConfigError, match="makes no synthetic batches"):
        task.example_batch(config, 2)


def test_no_module_probes_a_task_with_hasattr_or_getattr():
    offenders = []
    for path in sorted(pathlib.Path(ROOT).glob("attnbench/**/*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in (
                "hasattr",
                "getattr",
            ):
                target = ast.unparse(node.args[0]) if node.args else ""
                if "task" in target:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} {ast.unparse(node)}")
    assert offenders == []


# ---- one registry kind ----------------------------------------------------------------------


def test_registry_refuses_a_second_registration_and_lists_the_known_names():
    reg = registry.Registry("widget")
    reg.register("a", 1)
    reg.register("b")(2)
    assert (reg.get("a"), reg.names(), "b" in reg, "c" in reg) == (1, ["a", "b"], True, False)
    with pytest.raises(
        errors.ConfigError, match="widget 'a' is already registered by an unknown module"
    ):
        reg.register("a", 3)
    reg.register("a", 1)  # the same thing again (a module imported twice) changes nothing
    with pytest.raises(errors.UnknownNameError, match="unknown widget 'c'; known: a, b"):
        reg.get("c")
    with pytest.raises(tasks.UnknownTaskError, match="known tasks: .*lra.listops"):
        tasks.get("lra.listop")
    with pytest.raises(errors.ConfigError, match="config.model.encoder='nope'"):
        backbones.build("nope", model_cfg=None, attention_cfg=None, max_len=1, rngs=None)
    with pytest.raises(errors.UnknownNameError, match="unknown evaluator 'nope'"):
        evaluators.get("nope")


PLUGIN_TASK = """
from attnbench import cli, tasks


def main(argv):
    @tasks.register("lra.listops")  # before anything imported lra.tasks
    class Mine(tasks.Task):
        pass


raise SystemExit(cli.run(main, []))
"""


def test_a_plugin_cannot_shadow_a_builtin_task_even_registering_first(tmp_path):
    """The registry loads the module that owns a name before checking it, so a plugin's task
    under a built-in's name is refused in one line, not used silently in its place."""
    out = subprocess.run(
        [sys.executable, "-c", PLUGIN_TASK], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 2, out.stderr[-2000:]
    assert out.stderr.strip() == (
        "error: task 'lra.listops' is already registered by lra.tasks; register yours under "
        "another name"
    )


# ---- one evaluation path ------------------------------------------------------------------


def test_without_evals_the_task_metrics_evaluator_adds_up_the_losses_sums():
    ev = evaluators.get("task_metrics", names=("loss", "mae"))
    ev.update({"metrics": {"loss": (1.5, 2.0), "mae": (np.float32(4.0), 4.0)}}, {})
    ev.update({"metrics": {"loss": (4.5, 4.0), "mae": (2.0, 4.0)}}, {})
    assert ev.result() == {"loss": 1.0, "mae": 0.75}
    assert ev.reports == ("loss", "mae")
    zinc = config_lib.load("graphs/zinc.py:preset=smoke")
    task = tasks.get(zinc.task)
    assert not zinc.get("evals")
    assert evaluators.of(zinc, task) == task.default_evals(zinc)
    listops = config_lib.load(LISTOPS)
    assert evaluators.of(listops, tasks.get(listops.task)) == listops.evals


def test_the_classification_evaluator_reports_the_majority_class_rate_as_a_reference():
    ev = evaluators.get("classification")
    logits = np.eye(3)[[0, 1, 2, 0, 0]]
    ev.update({"logits": logits}, {"label": np.array([0, 1, 1, 1, 2]), "weight": np.ones(5)})
    ev.update({"logits": np.zeros((2, 3))}, {"label": np.array([1, 0]), "weight": [1.0, 0.0]})
    # labels counted: 0, 1, 1, 1, 2, 1 (the padding example is not): class 1 holds 4 of 6
    assert ev.reference() == {"majority_class_rate": pytest.approx(4 / 6)}
    assert "majority_class_rate" not in ev.result()


# ---- training phases and per-call attention inputs -----------------------------------------


@pytest.mark.parametrize(
    "fraction, expected",
    [
        (0.0, [("train", 0, 40, {})]),
        (0.1, [("train", 0, 36, {}), ("dense_finetune", 36, 40, {"subsample": False})]),
        (1.0, [("dense_finetune", 0, 40, {"subsample": False})]),
    ],
)
def test_phases_cover_the_run(fraction, expected):
    config = config_lib.load(f"{LISTOPS},attn=ssa")
    with config.unlocked():
        config.total_steps, config.dense_finetune_fraction = 40, fraction
    got = [(p.name, p.start, p.end, dict(p.inputs)) for p in steps.phases(config)]
    assert got == expected


def test_the_finetune_phase_passes_its_inputs_to_the_attention():
    """The dense phase's step computes the loss with `subsample=False` given to the task: the
    same number as the task's loss called that way, and another than the sampled phase's."""
    config = config_lib.load(f"{LISTOPS},attn=ssa")
    with config.unlocked():
        config.total_steps, config.dense_finetune_fraction = 10, 0.5
        config.attention.keep = 0.25  # sample few sources: the two phases must differ
    task = tasks.get(config.task)
    built = steps.setup(task, config)
    batch = {k: jnp.asarray(v) for k, v in task.example_batch(config, 4).items()}
    model = nnx.merge(built.graphdef, built.state["params"], built.state["buffers"])
    key = jax.random.fold_in(jax.random.key(config.seed), 0)
    dense = float(task.loss(model, batch, train=True, key=key, subsample=False)[0])
    sampled = float(task.loss(model, batch, train=True, key=key)[0])
    assert abs(dense - sampled) > 1e-4
    assert built.phase(4).name == "train" and built.phase(5).name == "dense_finetune"
    state = jax.tree.map(jnp.copy, built.state)
    _, metrics = built.train_step(5)(state, batch)
    np.testing.assert_allclose(float(metrics["train_loss"]), dense, rtol=1e-5)
    _, metrics = built.train_step(0)(jax.tree.map(jnp.copy, built.state), batch)
    np.testing.assert_allclose(float(metrics["train_loss"]), sampled, rtol=1e-5)


@pytest.mark.parametrize(
    "spec",
    [
        LISTOPS,
        f"{LISTOPS},model=samsa,k=8",
        "vision/imagenet.py:preset=smoke,model=swin_t",
        "vision/imagenet.py:preset=smoke,model=cait_s24",
        "graphs/zinc.py:preset=smoke",
        "graphs/pcqm.py:preset=smoke,model=egt",
        "graphs/zinc.py:preset=smoke,model=gps",
        "graphs/peptides.py:preset=smoke",
        "language/enwik8.py:preset=smoke",
    ],
)
def test_every_backbone_takes_per_call_attention_inputs_as_arguments(spec):
    config = config_lib.load(spec)
    task = tasks.get(config.task)
    model = nnx.eval_shape(lambda: task.build_model(config, nnx.Rngs(0)))
    encoders = [
        m
        for _, m in nnx.iter_graph(model)
        if isinstance(m, nnx.Module) and type(m).__name__ in _BACKBONE_CLASSES
    ]
    assert encoders, f"no registered backbone in {type(model).__name__}"
    for encoder in encoders:
        params = inspect.signature(type(encoder).__call__).parameters.values()
        assert any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params), type(encoder)


_BACKBONE_CLASSES = {
    "TransformerEncoder",
    "SAMSAEncoder",
    "SwinEncoder",
    "CaiTEncoder",
    "Graphormer",
    "EGT",
    "GPS",
    "GraphBridge",
    "DecoderStack",
}


def test_no_context_variable_carries_attention_inputs():
    for package in ("attnbench", "attention", "lra", "vision", "graphs", "pointcloud", "language"):
        for path in pathlib.Path(ROOT, package).rglob("*.py"):
            assert "contextvars" not in path.read_text(), path


def test_a_mechanism_needing_inputs_the_task_does_not_give_is_a_config_error():
    """grf_asym builds its graph from the points' coordinates: a point-cloud task gives them,
    an LRA task does not (a config error naming both, instead of a traceback in the step)."""
    assert attention.get("grf_asym").requires == ("coords",)
    listops = config_lib.load(f"{LISTOPS},attn=grf_asym")
    problems = validate.problems(listops, tasks.get(listops.task))
    assert any("needs the per-call input(s) coords, which lra.listops" in p for p in problems)
    points = config_lib.load("pointcloud/modelnet40.py:preset=smoke,attn=grf_asym")
    assert not [p for p in validate.problems(points, tasks.get(points.task)) if "per-call" in p]
