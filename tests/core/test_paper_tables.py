"""Paper tables as data: every table config loads and names only known tasks, mechanisms and
metrics, and its numbers are the paper's."""

import dataclasses

import pytest

from core import paper_tables


@pytest.mark.parametrize("key", paper_tables.names())
def test_every_table_config_loads_and_names_only_known_things(key):
    table = paper_tables.load(key)
    paper_tables.validate(table)
    assert table.cells and table.caption and table.source
    for cell in table.cells:
        assert cell.runnable or cell.needs or cell.elsewhere or cell.mean_of  # never silent


def test_samsa_table1_holds_the_papers_numbers_and_sources():
    t = paper_tables.load("samsa.table1")
    names = paper_tables.names()
    assert "samsa.table1" in names and names.index("gfsa.table2") < names.index("gfsa.table10")
    # spot checks against the notes' extraction of Table 1
    assert t.cell("ListOps", "256 Soft").paper == 41.89
    assert t.cell("Pathfinder", "128 Soft").paper == 81.97
    assert t.cell("Retrieval", "128 Soft").paper is None  # "-": not run by the authors
    assert t.cell("Retrieval", "128 Soft").runnable  # ... but we can run it
    assert t.cell("Peptides-struct (MAE)", "128 Hard").paper == 0.2458
    assert not t.cell("ModelNet40", "128 Hard").runnable
    assert "ModelNet40" in t.cell("ModelNet40", "128 Hard").needs
    # Full SA numbers the authors quoted from other papers are marked as quoted
    assert "MEGA" in t.cell("Text", "Full SA").quoted
    assert t.cell("ModelNet40", "Full SA").quoted is None  # run by the authors
    assert t.cell("Image", "512 Hard").config == "configs/lra/image.py:model=samsa,k=512,mode=hard"
    assert t.higher_is_better["Peptides-struct (MAE)"] is False
    assert sum(c.runnable for c in t.cells) == 5 * 7


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(config="configs/lra/nope.py:model=samsa"), "does not load"),
        (dict(config="configs/lra/text.py:attn=nope"), "does not load"),
        (dict(metric="test_best.f1"), "metric"),
        (dict(config="configs/lra/text.py:preset=cpu"), "preset"),
        (dict(row="Nope"), "row or column"),
        (dict(config=None, needs=None), "must say what it needs"),
    ],
)
def test_validate_names_the_bad_cell(change, message):
    t = paper_tables.load("samsa.table1")
    bad = dataclasses.replace(t.cells[0], **change)
    broken = dataclasses.replace(t, cells=(bad,) + t.cells[1:])
    with pytest.raises(paper_tables.TableError, match=message):
        paper_tables.validate(broken)


def test_unknown_table_lists_the_known_ones():
    with pytest.raises(paper_tables.TableError, match="samsa.table1"):
        paper_tables.load("samsa.table99")
