"""DATA.md, written from the catalog (`attnbench.data.catalog`): `attnbench-data markdown`.

The repository's DATA.md is this module's output (tests/attnbench/data/test_datamd.py checks it
is current): per dataset its source files and where each checksum comes from, its size and
licence, the folder and files the reader reads, the configs (and flags) that read it, the
official split sizes `verify` checks, and what is known to differ between releases.
"""

from __future__ import annotations

from attnbench.data import catalog

__all__ = ["render"]

_INTRO = """\
# Official data

Generated from `attnbench.data.catalog` by `attnbench-data markdown > DATA.md`; do not edit by
hand (a test checks that this file is current).

Every dataset a config reads with `source=official` is listed here. The data root is
`--dir` / `config.data.dir`, else `$ATTNBENCH_DATA`, else `~/.cache/attnbench`; a config whose
`config.data.dir` is empty reads each dataset from its folder under the data root, where
`attnbench-data fetch NAME` puts it.

    attnbench-data list                 # this, in short
    attnbench-data fetch NAME           # download (resumable), checksum, extract, arrange
    attnbench-data fetch NAME --from F  # a mirror URL or a release file already downloaded
    attnbench-data verify NAME [DIR]    # manifest (sizes, sha256), then the reader's split sizes
    attnbench-data where NAME           # the folder a config reads

`fetch` writes nothing into a dataset's folder until the whole release is downloaded, checked and
arranged (a staging folder is renamed into place), and refuses archive members with absolute
paths, `..` or links. Where the source publishes no checksum, `fetch` records each file's size
and sha256 in `MANIFEST.json` beside the data, and says so; `verify` checks them later.

## Other sources

- **Hugging Face Hub** (the `hf` extra: `pip install 'attnbench[hf]'`): the datasets below that
  name a Hub repository can be fetched from it with `attnbench-data fetch NAME --from hf` (or
  `--from hf:REPO_OR_FOLDER` for a mirror or a local copy of the repository). The rows are
  written back in the release's file layout and checked by the same split sizes. PTB and enwik8
  are on the Hub only as loading scripts, which `datasets` 4 and later no longer run, so they
  are fetched from their release files only.
- **TensorFlow Datasets** (vision only; the `tfds` extra): see `vision/data/tfds.py` for the
  configs' `config.data.tfds_name`, the prepared format random access needs, and what reading
  requires.
"""


def _checksum(remote) -> str:
    published = remote.published
    if published is None:
        return "no published checksum (fetch records size and sha256 in MANIFEST.json)"
    algorithm, value = published
    return f"{algorithm} `{value}` ({remote.checksum_source})"


def _section(d: catalog.Dataset) -> str:
    lines = [f"## `{d.name}`: {d.title}", ""]
    how = (
        f"`attnbench-data fetch {d.name}`"
        if d.arrange is not None
        else f"by hand (registration or licence): `attnbench-data fetch {d.name}` prints the steps"
    )
    lines += [
        f"- **Get it:** {how}",
        f"- **Size:** {d.size}",
        f"- **Licence:** {d.licence}",
        f"- **Homepage:** {d.homepage}",
    ]
    for r in d.remotes:
        size = f", {r.size:,} bytes" if r.size else ""
        lines.append(f"- **Release file:** `{r.filename}` from {r.url}{size}; {_checksum(r)}")
    if d.hf is not None:
        lines.append(
            f"- **Hugging Face:** `{d.hf.repo}`, configuration `{d.hf.config}` "
            f"(`--from hf`). {d.hf.notes}".rstrip()
        )
    lines.append(f"- **Folder:** `<data root>/{d.folder}`" if d.folder else "- **Folder:** ")
    if d.layout:
        lines.append(f"- **Layout:** {d.layout}")
    lines.append("- **Read by:** " + ", ".join(f"`{c}`" for c in d.configs))
    if d.splits:
        sizes = ", ".join(f"{k} {v:,}" for k, v in d.splits.items())
        lines.append(f"- **Official split sizes (`verify`):** {sizes}")
    elif d.count is not None:
        lines.append(
            "- **Official split sizes:** none recorded here; `verify` reads every split with the "
            "reader and reports its sizes"
        )
    else:
        lines.append("- **Official split sizes:** not checked by `verify`")
    if d.steps:
        lines.append(f"- **Steps:** {d.steps}")
    if d.notes:
        lines.append(f"- **Notes:** {d.notes}")
    return "\n".join(lines) + "\n"


def render() -> str:
    """DATA.md's text."""
    datasets = [catalog.get(n) for n in catalog.names()]
    index = ["| name | dataset | size | how |", "|---|---|---|---|"]
    for d in datasets:
        how = "fetch" if d.arrange is not None else "by hand"
        if d.hf is not None:
            how += ", or --from hf"
        index.append(f"| `{d.name}` | {d.title} | {d.size} | {how} |")
    body = "\n".join(_section(d) for d in datasets)
    return f"{_INTRO}\n## Index\n\n" + "\n".join(index) + "\n\n" + body
