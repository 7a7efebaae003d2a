"""What the GFSA timing tables (12, 24, 25, 26) share: the cells that name our counterpart of
GFSA's overhead, one training step of the LRA Text encoder at 1,024 tokens with softmax and
with GFSA, which `python -m scripts.speed_tables --tables gfsa` measures and prints beside the
paper's numbers (a different model, so compare the ratios). Not a table (the leading
underscore keeps it out of `attnbench.papers.tables.names`)."""

from __future__ import annotations

from collections.abc import Mapping

STEP = "attnbench.papers.speed:lra_text_step"  # steps/s of one LRA Text training step


def step_counterpart(rows: Mapping[str, str], column: str) -> dict:
    """`grid()` fields naming our counterpart of GFSA's overhead for the cells of `column` in
    `rows` (row -> our mechanism, "softmax" or "gfsa"): one training step of the LRA Text
    encoder at 1,024 tokens; the other cells name none. The GFSA tables 12 and 24-26 share it."""

    def measured(row: str, col: str) -> bool:
        return row in rows and col == column

    return dict(
        measure=lambda row, col: STEP if measured(row, col) else None,
        measure_args=lambda row, col: (
            {"attn": rows[row], "length": 1024} if measured(row, col) else {}
        ),
    )
