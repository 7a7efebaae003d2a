"""attnbench.papers.leaderboard on summaries laid out as scripts.train writes them (the fields of a
real results/tables/runs summary, config.json beside it): one section per task variant
(Pathfinder-32 apart from Path-X), mean ± std over seeds, the `~chance` mark, failed runs counted,
and a variant that cannot be read is an error naming the file and the field."""

import json
import math

import pytest

from attnbench import errors
from attnbench.papers import leaderboard

PF = "configs/lra/pathfinder.py"


def _run(
    root,
    name,
    value,
    *,
    task="lra.pathfinder",
    attn="softmax",
    spec=None,
    seed=0,
    resolution=32,
    majority=0.5,
    n_test=2000,
    num_classes=None,
    config=True,
    data_config=None,
):
    """A run directory `root/name/seed<seed>` with a summary.json (None `value`: a failed.json
    instead) and, unless `config` is False, the config.json beside it."""
    d = root / name / f"seed{seed}"
    d.mkdir(parents=True)
    spec = spec or f"{PF}:model=transformer,attn={attn},resolution={resolution},preset=cpu"
    command = f"python -m scripts.train --config={spec} --workdir={d}"
    if seed:
        command += f" --config.seed={seed}"
    data = {"source": "generated", "resolution": resolution, "seed": 0}
    if num_classes is not None:
        data["num_classes"] = num_classes
    summary = {
        "attention": {"name": attn, "dropout_rate": 0.0, "scale": None},
        "best_step": 250,
        "command": command,
        "data": data,
        "device": {"count": 1, "cpu_count": 2, "kind": "cpu", "platform": "cpu"},
        "git_revision": "ebdd36d3e22f70a5f87c7d9912175d48bab2a19c",
        "metrics": {
            "test_best": {"accuracy": value, "loss": 0.69, "num_examples": n_test},
            "test_last": {"accuracy": value, "loss": 0.69, "num_examples": n_test},
            "val_best": {"accuracy": 0.5, "loss": 0.69, "num_examples": 1000},
        },
        "num_examples": {"test": n_test, "train": 20000, "val": 1000},
        "preset": "cpu",
        "reference": {"majority_class_rate": {"test": majority, "train": 0.5, "val": 0.5}},
        "schema_version": 1,
        "steps": 500,
        "task": task,
    }
    if value is None:
        failed = {"error": "DivergedError", "message": "loss is nan at step 40", "command": command}
        (d / "failed.json").write_text(json.dumps(failed))
    else:
        (d / "summary.json").write_text(json.dumps(summary))
    if config:
        cfg_data = data_config or {
            "source": "generated",
            "resolution": resolution,
            "max_length": resolution**2,
        }
        cfg = {"task": task, "attention": {"name": attn}, "preset": "cpu", "seed": seed}
        (d / "config.json").write_text(json.dumps({**cfg, "data": cfg_data}))
    return d


def _section(md, title):
    return md.split(f"## {title}")[1].split("\n## ")[0]


def test_pathfinder_32_and_path_x_are_separate_sections(tmp_path):
    _run(tmp_path, "pf32", 0.80, resolution=32)
    _run(tmp_path, "pathx", 0.90, resolution=128, n_test=400)
    _run(tmp_path, "pf32-linear", 0.70, attn="linear", resolution=32)
    results = leaderboard.collect([tmp_path])
    assert set(results) == {
        ("lra.pathfinder", "cpu", "generated", "Pathfinder-32"),
        ("lra.pathfinder", "cpu", "generated", "Path-X"),
    }
    md = leaderboard.render(results)
    pf32 = _section(md, "lra.pathfinder: Pathfinder-32 (cpu preset, generated data)")
    pathx = _section(md, "lra.pathfinder: Path-X (cpu preset, generated data)")
    assert "| 1 | `softmax` | 0.8000 (n=1) |" in pf32 and "0.9000" not in pf32
    assert "| 2 | `linear` | 0.7000 (n=1) |" in pf32
    assert "| 1 | `softmax` | 0.9000 (n=1) |" in pathx and "`linear`" not in pathx
    assert md.index("Pathfinder-32") < md.index("Path-X (cpu")  # 32 before 128


def test_lra_tasks_by_length_and_vision_by_image_size(tmp_path):
    spec = "configs/lra/listops.py:model=transformer,preset=cpu"
    for name, length in (("short", 250), ("long", 2000)):
        _run(
            tmp_path,
            name,
            0.4,
            task="lra.listops",
            spec=spec + f",len={length}",
            data_config={"source": "generated", "max_length": length},
        )
    _run(
        tmp_path,
        "vit",
        0.7,
        task="vision.cifar10",
        spec="configs/vision/cifar10.py:model=vit,preset=cpu",
        data_config={"source": "generated", "image_size": 32},
    )
    md = leaderboard.render(leaderboard.collect([tmp_path]))
    assert "## lra.listops: ListOps, length 250 (cpu preset" in md
    assert "## lra.listops: ListOps, length 2000 (cpu preset" in md
    assert md.index("length 250 (") < md.index("length 2000 (")  # by length, not as text
    assert "## vision.cifar10: 32x32 images (cpu preset" in md


def test_seeds_of_one_config_give_mean_std_and_count(tmp_path):
    _run(tmp_path, "cell", 0.60, seed=0)
    _run(tmp_path, "cell", 0.64, seed=1)
    results = leaderboard.collect([tmp_path])
    (table,) = results.values()
    e = table["softmax"]
    assert e["seeds"] == 2 and e["value"] == pytest.approx(0.62)
    assert e["std"] == pytest.approx(math.sqrt(0.02**2 * 2 / (2 - 1)))  # sample std: n - 1
    assert e["config"] == f"{PF}:model=transformer,attn=softmax,resolution=32,preset=cpu"
    md = leaderboard.render(results)
    assert "| 1 | `softmax` | 0.6200 ± 0.0283 (n=2) |" in md


def test_the_best_config_by_mean_is_shown_and_one_seed_says_n_1(tmp_path):
    _run(tmp_path, "a", 0.60, seed=0)
    _run(tmp_path, "a", 0.64, seed=1)
    _run(tmp_path, "b", 0.70, spec=f"{PF}:model=big,preset=cpu")
    (table,) = leaderboard.collect([tmp_path]).values()
    assert table["softmax"]["config"] == f"{PF}:model=big,preset=cpu"
    md = leaderboard.render({("lra.pathfinder", "cpu", "generated", "Pathfinder-32"): table})
    assert "| 1 | `softmax` | 0.7000 (n=1) |" in md and "±" not in md.split("|---|")[-1]


def test_the_same_config_and_seed_twice_counts_once_the_first_root_wins(tmp_path):
    _run(tmp_path / "mine", "cell", 0.70)
    _run(tmp_path / "committed", "cell", 0.60)  # the same run, committed
    _run(tmp_path / "committed", "cell", 0.64, seed=1)  # another seed
    (table,) = leaderboard.collect([tmp_path / "mine", tmp_path / "committed"]).values()
    assert table["softmax"]["seeds"] == 2
    assert table["softmax"]["value"] == pytest.approx(0.67)


def test_a_result_at_the_majority_rate_is_marked_one_far_above_is_not(tmp_path):
    # p = 0.5 on 2000 test examples: 2 sigma = 2 sqrt(0.25 / 2000) = 0.0224
    _run(tmp_path, "at", 0.5095, attn="linear", majority=0.5095)
    _run(tmp_path, "near", 0.52, attn="local", majority=0.5)
    _run(tmp_path, "far", 0.80, attn="softmax", majority=0.5)
    _run(tmp_path, "below", 0.40, attn="performer", majority=0.5)
    results = leaderboard.collect([tmp_path])
    (table,) = results.values()
    assert table["linear"]["chance"]["mark"] == "~chance"
    assert table["local"]["chance"]["mark"] == "~chance"
    assert table["softmax"]["chance"]["mark"] == ""
    assert table["performer"]["chance"]["mark"] == "<chance"
    assert table["softmax"]["chance"]["sigma"] == pytest.approx(math.sqrt(0.25 / 2000))
    md = leaderboard.render(results)
    assert "| `linear` | 0.5095 (n=1) | +0.0000 (2σ 0.0224) `~chance` |" in md
    assert "| `local` | 0.5200 (n=1) | +0.0200 (2σ 0.0224) `~chance` |" in md
    assert "| `softmax` | 0.8000 (n=1) | +0.3000 (2σ 0.0224) |" in md
    assert "| `performer` | 0.4000 (n=1) | -0.1000 (2σ 0.0224) `<chance` |" in md
    assert "Chance rate p: the test set's majority-class rate 0.5000, 2000 test examples" in md


def test_the_seed_spread_widens_the_noise_and_the_random_rate_stands_in(tmp_path):
    # two seeds 0.52 and 0.56: s = 0.0283, sigma = sqrt(0.25 / 2000 + s^2 / 2) = 0.0245
    _run(tmp_path, "a", 0.52, seed=0)
    _run(tmp_path, "a", 0.56, seed=1)
    (table,) = leaderboard.collect([tmp_path]).values()
    sigma = math.sqrt(0.25 / 2000 + 0.02**2 * 2 / 2)
    assert table["softmax"]["chance"]["sigma"] == pytest.approx(sigma)
    assert table["softmax"]["chance"]["mark"] == "~chance"  # 0.04 above, 2 sigma = 0.049
    # no test majority-class rate recorded (vision's stand-in): 1/num_classes
    spec = "configs/vision/cifar10.py:model=vit,preset=cpu"
    vision = dict(task="vision.cifar10", spec=spec, majority=None, n_test=5000)
    image = {"source": "generated", "image_size": 32}
    _run(tmp_path / "v", "x", 0.105, num_classes=10, data_config=image, **vision)
    _run(tmp_path / "v", "y", 0.5, attn="vit", num_classes=10, data_config=image, **vision)
    md = leaderboard.render(leaderboard.collect([tmp_path / "v"]))
    assert "`softmax` | 0.1050 (n=1) | +0.0050 (2σ 0.0085) `~chance` |" in md
    assert "`vit` | 0.5000 (n=1) | +0.4000 (2σ 0.0085) |" in md
    assert "1/num_classes = 0.1000 (no test majority-class rate recorded)" in md


def test_no_chance_rate_means_no_mark(tmp_path):
    _run(tmp_path, "a", 0.5, majority=None)  # neither majority rate nor num_classes
    md = leaderboard.render(leaderboard.collect([tmp_path]))
    assert "| `softmax` | 0.5000 (n=1) | - |" in md and "chance`" not in md.split("|---|")[-1]


def test_a_failed_run_is_counted_not_dropped(tmp_path):
    _run(tmp_path, "cell", 0.60, seed=0)
    _run(tmp_path, "cell", 0.62, seed=1)
    _run(tmp_path, "cell", None, seed=2)  # failed.json beside its config.json, no summary
    _run(tmp_path, "cell", float("nan"), seed=3)  # a non-finite metric
    _run(tmp_path, "gone", None, attn="linear")  # every run of linear failed
    _run(tmp_path, "bad", None, spec=f"{PF}:model=x,preset=cpu")  # another config of softmax
    _run(tmp_path, "lost", None, config=False)  # no config.json: its task is unknown
    results = leaderboard.collect([tmp_path])
    table = results[("lra.pathfinder", "cpu", "generated", "Pathfinder-32")]
    assert table["softmax"]["seeds"] == 2 and table["softmax"]["failed"] == 2
    assert table["softmax"]["value"] == pytest.approx(0.61)
    assert table["linear"]["value"] is None and table["linear"]["failed"] == 1
    md = leaderboard.render(results)
    assert "| 1 | `softmax` | 0.6100 ± 0.0141 (n=2, 2 failed) |" in md
    assert "| - | `linear` | failed (n=0, 1 failed) | - |" in md
    assert f"Failed runs of configs not shown: `softmax` `{PF}:model=x,preset=cpu` (1 failed)" in md
    assert "## Failed runs without a config" in md
    assert f"- `{tmp_path / 'lost' / 'seed0' / 'failed.json'}`: DivergedError" in md
    assert "nan" not in md.lower().replace("non-finite", "")


def test_a_variant_that_cannot_be_read_is_an_error_naming_the_file_and_field(tmp_path):
    d = _run(tmp_path, "a", 0.6, data_config={"source": "generated"})  # no data.resolution
    with pytest.raises(errors.DataError) as err:
        leaderboard.collect([tmp_path])
    message = str(err.value)
    assert message.startswith(f"{d / 'config.json'}:") and "data.resolution" in message, message

    other = tmp_path / "other"
    d = _run(other, "a", 0.6, config=False)  # no config.json at all
    with pytest.raises(errors.DataError) as err:
        leaderboard.collect([other])
    message = str(err.value)
    assert message.startswith(f"{d / 'summary.json'}:"), message
    assert "config.json" in message and "data.resolution" in message

    third = tmp_path / "third"
    d = _run(third, "a", 0.6, data_config={"source": "generated", "resolution": "big"})
    with pytest.raises(errors.DataError) as err:
        leaderboard.collect([third])
    assert str(err.value).startswith(f"{d / 'config.json'}: data.resolution is 'big', not an")


def test_the_header_defines_sections_entries_and_the_mark(tmp_path):
    _run(tmp_path, "a", 0.6)
    md = leaderboard.render(leaderboard.collect([tmp_path]), header="<!-- generated -->")
    head = md.split("\n## ")[0]
    assert head.startswith("<!-- generated -->\n# Leaderboard")
    for words in ("**Sections**", "`data.resolution`", "`data.max_length`", "`data.image_size`"):
        assert words in head
    assert "`mean ± std (n=K)`" in head and "sample standard deviation" in head
    assert "|mean − p| ≤ 2σ, σ = sqrt(p(1 − p)/n_test + s²/K)" in head
    assert "majority-class rate" in head and "1/num_classes" in head
    assert "**Failed runs**" in head
    section = _section(md, "lra.pathfinder: Pathfinder-32 (cpu preset, generated data)")
    assert "Runs: cpu preset, generated data; device: cpu x1 (2 CPU cores); revision: ebdd36d." in (
        section
    )


def test_language_models_are_ranked_per_corpus(tmp_path):
    for name, dataset, value in (("e8", "enwik8", 1.2), ("wt", "wikitext-103", 30.0)):
        spec = f"configs/language/x.py:dataset={dataset},preset=cpu"
        d = tmp_path / name / "seed0"
        d.mkdir(parents=True)
        s = {
            "attention": {"name": "softmax"},
            "command": f"python -m scripts.train --config={spec} --workdir={d}",
            "data": {"source": "standin"},
            "device": {"count": 1, "cpu_count": 2, "kind": "cpu", "platform": "cpu"},
            "git_revision": "ebdd36d3e22f70a5f87c7d9912175d48bab2a19c",
            "metrics": {"test_best": {"perplexity": value, "num_examples": 10}},
            "preset": "cpu",
            "schema_version": 1,
            "task": "language.lm",
        }
        (d / "summary.json").write_text(json.dumps(s))
        cfg = {"task": "language.lm", "data": {"dataset": dataset}, "preset": "cpu"}
        (d / "config.json").write_text(json.dumps(cfg))
    results = leaderboard.collect([tmp_path])
    assert set(results) == {
        ("language.lm", "cpu", "standin", "enwik8"),
        ("language.lm", "cpu", "standin", "wikitext-103"),
    }
