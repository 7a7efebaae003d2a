"""Paper tables as data: every table config loads and names only known tasks, mechanisms and
metrics, and its numbers are the paper's."""

import dataclasses

import pytest

from attnbench.papers import tables


@pytest.mark.parametrize("key", tables.names())
def test_every_table_config_loads_and_names_only_known_things(key):
    table = tables.load(key)
    tables.validate(table)
    assert table.cells and table.caption and table.source
    for cell in table.cells:
        assert cell.runnable or cell.needs or cell.elsewhere or cell.mean_of  # never silent


def test_samsa_table1_holds_the_papers_numbers_and_sources():
    t = tables.load("samsa.table1")
    names = tables.names()
    assert "samsa.table1" in names and names.index("gfsa.table2") < names.index("gfsa.table10")
    # spot checks against the notes' extraction of Table 1
    assert t.cell("ListOps", "256 Soft").paper == 41.89
    assert t.cell("Pathfinder", "128 Soft").paper == 81.97
    assert t.cell("Retrieval", "128 Soft").paper is None  # "-": not run by the authors
    assert t.cell("Retrieval", "128 Soft").runnable  # ... but we can run it
    assert t.cell("Peptides-struct (MAE)", "128 Hard").paper == 0.2458
    assert t.cell("ModelNet40", "128 Hard").config == ("pointcloud/modelnet40.py:k=128,mode=hard")
    # Full SA numbers the authors quoted from other papers are marked as quoted
    assert "MEGA" in t.cell("Text", "Full SA").quoted
    assert t.cell("ModelNet40", "Full SA").quoted is None  # run by the authors
    assert t.cell("Image", "512 Hard").config == "lra/image.py:model=samsa,k=512,mode=hard"
    assert t.higher_is_better["Peptides-struct (MAE)"] is False
    # LRA (5 tasks), LRGB Peptides (2, Graph-Bridge on the official files), ModelNet40 and
    # ShapeNetPart (the point Transformer on the official releases) x 7 columns
    assert sum(c.runnable for c in t.cells) == 9 * 7
    assert t.cell("Peptides-struct (MAE)", "Full SA").config == (
        "graphs/peptides.py:kind=struct,attn=softmax"
    )


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(config="lra/nope.py:model=samsa"), "does not load"),
        (dict(config="lra/text.py:attn=nope"), "does not load"),
        (dict(metric="test_best.f2"), "metric"),
        (dict(config="lra/text.py:preset=cpu"), "preset"),
        (dict(row="Nope"), "row or column"),
        (dict(config=None, needs=None), "must say what it needs"),
    ],
)
def test_validate_names_the_bad_cell(change, message):
    t = tables.load("samsa.table1")
    bad = dataclasses.replace(t.cells[0], **change)
    broken = dataclasses.replace(t, cells=(bad,) + t.cells[1:])
    with pytest.raises(tables.TableError, match=message):
        tables.validate(broken)


def test_unknown_table_lists_the_known_ones():
    with pytest.raises(tables.TableError, match="samsa.table1"):
        tables.load("samsa.table99")


def test_grid_makes_one_cell_per_printed_number_row_by_row():
    columns = ("A", "B", "C")
    rows = {
        "tuple": (1, 2.5, None),  # None: blank, no cell
        "printed": "0.1 - 0.3",  # "-": blank, no cell
        "std": ("0.5±0.01", (0.6, 0.02), 7),  # mean±std and (mean, std) set paper_std
    }
    notes = {("printed", "C"): "a note"}
    cells = tables.grid(
        rows,
        columns,
        metric="test_best.mae",  # one value for every cell
        scale=lambda row, column: 100 if column == "A" else 1,  # a function of (row, column)
        needs=lambda row, column: f"{row} {column}",
        note=lambda row, column: notes.get((row, column)),
    )
    assert isinstance(cells, tuple)
    got = [(c.row, c.column, c.paper, c.paper_std) for c in cells]
    assert got == [
        ("tuple", "A", 1.0, None),
        ("tuple", "B", 2.5, None),
        ("printed", "A", 0.1, None),
        ("printed", "C", 0.3, None),
        ("std", "A", 0.5, 0.01),
        ("std", "B", 0.6, 0.02),
        ("std", "C", 7.0, None),
    ]
    assert all(type(c.paper) is float for c in cells)  # ints and printed strings alike
    assert {c.metric for c in cells} == {"test_best.mae"}
    assert [c.scale for c in cells if c.row == "std"] == [100, 1, 1]
    assert cells[3] == tables.Cell(
        "printed", "C", 0.3, metric="test_best.mae", scale=1, needs="printed C", note="a note"
    )


def test_grid_single_column_blanks_and_errors():
    # one column: each row's value is the entry itself (a number, a pair, or a printed string)
    cells = tables.grid({"a": 0.1, "b": (0.2, 0.01), "c": "0.3"}, ("MAE",), needs="x")
    assert [(c.row, c.column, c.paper, c.paper_std) for c in cells] == [
        ("a", "MAE", 0.1, None),
        ("b", "MAE", 0.2, 0.01),
        ("c", "MAE", 0.3, None),
    ]
    # keep_blanks: a blank still makes a cell (e.g. a runnable one the paper prints as FAIL)
    kept = tables.grid({"r": (1.0, None)}, ("A", "B"), keep_blanks=True, config="c.py")
    assert [(c.column, c.paper, c.config) for c in kept] == [
        ("A", 1.0, "c.py"),
        ("B", None, "c.py"),
    ]
    assert tables.grid({"r": (1.0, None)}, ("A", "B"), config="c.py")[-1].column == "A"
    with pytest.raises(tables.TableError, match="'r': 3 numbers for 2 columns"):
        tables.grid({"r": "1 2 3"}, ("A", "B"))
    with pytest.raises(TypeError, match="paper"):
        tables.grid({"r": (1.0, 2.0)}, ("A", "B"), paper=3.0)


def _recipes() -> list[str]:
    """Every recipe file's name under configs/ (the domains' `get_config` files)."""
    import pathlib

    import configs

    root = pathlib.Path(configs.__file__).parent
    out = []
    for path in sorted(root.glob("*/*.py")):
        if path.parent.name != "tables" and "def get_config" in path.read_text():
            out.append(path.relative_to(root).as_posix())
    return out


# The one recipe without a public release: HD-VPD's robot data, simulated (`generated`).
NO_RELEASE = {"pointcloud/dynamics.py"}


@pytest.mark.parametrize("recipe", _recipes())
def test_the_paper_preset_reads_the_official_data_and_the_scaled_ones_do_not(recipe):
    from attnbench import config as config_lib

    if recipe in NO_RELEASE:  # simulated at every preset, never a stand-in for a release
        assert config_lib.load(recipe).data.get("source") is None
        return
    assert config_lib.load(recipe).data.source == "official"  # the default preset is paper
    for preset in ("cpu", "smoke"):
        assert config_lib.load(f"{recipe}:preset={preset}").data.source in ("standin", "generated")


def test_every_trainable_cell_reads_official_data_at_paper_and_offline_data_when_scaled():
    from attnbench import config as config_lib

    specs = {c.config for k in tables.names() for c in tables.load(k).cells if c.config}
    assert len(specs) > 250
    for spec in sorted(specs):
        sep = "," if ":" in spec else ":"
        assert config_lib.load(f"{spec}{sep}preset=paper").data.source == "official", spec
        smoke = config_lib.load(f"{spec}{sep}preset=smoke").data.source
        assert smoke in ("standin", "generated"), spec
