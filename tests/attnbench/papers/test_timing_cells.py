"""The GFSA timing cells (runtime, throughput, inference time, memory) name their row's own recipe,
and `scripts.speed_tables --tables timing_gfsa_*` derives each cell's unit from one measured step
(`attnbench.papers.speed.recipe_step` / `recipe_value`, `attnbench.papers.speed_tables.timing`)."""

import math

import pytest

from attnbench.papers import speed, tables
from attnbench.papers.speed_tables import timing
from configs.tables import _gfsa_timing

GROUP_TABLES = [(g, key) for g, keys in _gfsa_timing.GROUPS.items() for key in keys]


def test_each_unit_names_the_step_it_times():
    assert _gfsa_timing.UNIT_MODE == {u: mode for u, (_, mode) in speed.UNITS.items()}


@pytest.mark.parametrize(("group", "key"), GROUP_TABLES)
def test_every_timing_cell_names_its_rows_recipe_and_a_split_that_exists(group, key):
    t = tables.load(key)
    tables.validate(t)  # the configs load and the arguments fit recipe_step
    timed = [c for c in t.cells if c.measure]
    assert timed
    for c in timed:
        assert c.measure == _gfsa_timing.RECIPE_STEP and not c.runnable and not c.needs
        assert c.elsewhere == _gfsa_timing.command(group)
        args = c.measure_args
        assert args["mode"] == _gfsa_timing.UNIT_MODE[args["unit"]]
        if args["unit"] in ("s/epoch", "s"):
            assert speed.split_size(args["examples"]) > 0
        trained = {o.config for o in t.cells if o.row == c.row and o.config}
        if trained:  # the recipe an accuracy cell of its row trains
            assert args["config"] in trained
    # nothing in the group's tables still waits for a GPU timing
    waiting = [c for c in t.cells if c.needs and "GPU timing" in c.needs]
    assert not waiting, waiting


def test_graph_and_lra_rows_time_the_recipes_their_accuracy_tables_train():
    t26, t4 = tables.load("gfsa.table26"), tables.load("gfsa.table4")
    zinc = {c.config for c in t4.cells if c.config}
    assert {c.measure_args["config"] for c in t26.cells if c.column == "ZINC"} == zinc
    t32 = tables.load("gfsa.table32")
    assert {c.measure_args["examples"] for c in t32.cells} == {
        "zinc:val",
        "pcqm4m:val",
        "pcqm4mv2:val",
    }
    t40 = tables.load("gfsa.table40")
    cell = t40.cell("Efficient Attention + GFSA", "Image GPU (GB)")
    assert cell.measure_args == {"config": "lra/image.py:model=gfsa", "mode": "train", "unit": "GB"}


def test_recipe_value_derives_each_unit_from_one_step():
    rec = {"batch": 4, "steps_per_s": 2.0, "peak_memory_bytes": 3 * 2**30}
    assert speed.recipe_value(rec, "img/s") == 8.0
    assert speed.recipe_value(rec, "s/1k steps") == 500.0
    assert speed.recipe_value(rec, "GB") == 3.0
    assert speed.recipe_value(rec, "s/epoch", "imagenet:train") == 1_281_167 / 8
    assert speed.recipe_value(rec, "s", "pcqm4mv2:val") == 73_545 / 8
    skipped = {"batch": 4, "steps_per_s": None, "peak_memory_bytes": None, "skipped": "memory"}
    assert speed.recipe_value(skipped, "s/epoch", "zinc:train") is None
    assert speed.recipe_value(skipped, "GB") is None
    with pytest.raises(ValueError, match="unit 'ms'"):
        speed.recipe_value(rec, "ms")
    with pytest.raises(ValueError, match="needs `examples`"):
        speed.recipe_value(rec, "s/epoch")
    with pytest.raises(ValueError, match="counted in examples"):
        speed.split_size("ptb:train")  # tokens: an epoch of GPT-2 blocks is not derivable
    with pytest.raises(ValueError, match="counted in examples"):
        speed.split_size("zinc:dev")


def test_the_batch_is_the_recipes_own_capped_by_the_session():
    args = {"config": "lra/listops.py:model=transformer", "mode": "train", "unit": "GB"}
    full = speed.Session(scale="full", isolated=False)
    assert timing.step_args(full, args) == {**_drop_unit(args), "batch": 32}
    capped = speed.Session(scale="full", isolated=False, max_batch=8)
    assert timing.step_args(capped, args)["batch"] == 8
    vision = dict(args, config="vision/imagenet.py:model=deit_s", batch=256)
    assert timing.step_args(capped, vision)["batch"] == 8
    smoke = speed.Session(scale="smoke", isolated=False)
    assert "batch" not in timing.step_args(smoke, vision)  # recipe_step's smoke batch


def _drop_unit(args):
    return {k: v for k, v in args.items() if k != "unit"}


def test_a_group_derives_every_cell_and_the_gfsa_overhead_from_its_steps(monkeypatch):
    """The rendering, on records made up here: each cell's value is its unit of its step, each
    GFSA row is divided by its vanilla row, and a step that was not measured says why."""
    calls = []

    def fake_call(target, kwargs):  # what the session's process would return
        assert target == _gfsa_timing.RECIPE_STEP
        calls.append(kwargs)
        gfsa = "gfsa" in kwargs["config"]
        if "image" in kwargs["config"] and "yoso" in kwargs["config"]:
            return {"batch": kwargs["batch"], "steps_per_s": None, "peak_memory_bytes": None,
                    "skipped": "compiled step needs 99 GiB"}  # fmt: skip
        return {
            "batch": kwargs["batch"],
            "steps_per_s": 1.0 if gfsa else 4.0,
            "peak_memory_bytes": (2 if gfsa else 1) * 2**30,
            "dtype": "float32",
        }

    monkeypatch.setattr(speed.isolate, "call", fake_call)
    session = speed.Session(scale="full", isolated=False, max_batch=4)
    result = timing.table(session, "timing_gfsa_lra")
    rows = {(r["row"], r["column"]): r for r in result["rows"]}
    assert len(rows) == 24
    assert len({(c["config"], c["batch"]) for c in calls}) == len(calls) == 12  # once per step
    assert rows[("Transformer", "ListOps Runtime (s/1k steps)")]["ours"] == 250.0
    assert rows[("Transformer + GFSA", "Image GPU (GB)")]["ours"] == 2.0
    yoso = rows[("YOSO-E", "Image Runtime (s/1k steps)")]
    assert yoso["ours"] is None and "99 GiB" in yoso["skipped"]
    over = {(o["row"], o["column"]): o for o in result["overheads"]}
    o = over[("Transformer + GFSA", "ListOps Runtime (s/1k steps)")]
    assert o["base"] == "Transformer" and o["ours"] == 4.0
    assert math.isclose(o["paper"], 635.8 / 198.3)
    (target,) = result["targets"]
    assert target["value"] == 22 / 24 and target["met"] is False
    md = "\n".join(result["md"])
    assert "not measured: compiled step needs 99 GiB" in md and "Batch capped at 4" in md


def test_recipe_step_measures_the_recipe_at_smoke_scale():
    rec = speed.recipe_step("lra/listops.py:model=transformer", "train", scale="smoke")
    assert rec["batch"] == 2 and rec["steps_per_s"] > 0 and rec["peak_memory_bytes"] > 0
    assert rec["dtype"] == "float32" and rec["config"].endswith("preset=smoke")


def test_a_step_too_large_for_the_device_is_timed_at_half_the_batch_until_it_fits(monkeypatch):
    seen = []

    def measure(spec, *, batch, mode, steps, warmup, max_memory_gb, min_time_s):
        seen.append(batch)
        assert max_memory_gb == speed.device_memory_gb() > 0
        fits = batch <= 3
        return {
            "batch": batch,
            "steps_per_s": 2.0 if fits else None,
            "peak_memory_bytes": batch * 2**30,
            "skipped": None if fits else f"compiled step needs {batch} GiB",
        }

    monkeypatch.setattr(speed.bench_train, "measure", measure)
    rec = speed.recipe_step("lra/listops.py:model=transformer", "train", batch=12)
    assert seen == [12, 6, 3] and rec["batch"] == 3 and rec["batch_asked"] == 12
    assert speed.recipe_value(rec, "img/s") == 6.0
