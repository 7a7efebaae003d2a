"""A catalog dataset from the Hugging Face Hub, through the `datasets` package (the `hf` extra).

    attnbench-data fetch wikitext103 --from hf                 # Salesforce/wikitext, as listed
    attnbench-data fetch wikitext103 --from hf:/data/wikitext  # a local copy of that repository

`load(source, dataset, data_root)` resolves `hf` or `hf:REPO_OR_FOLDER` against the dataset's
`catalog.HFSource` and returns its splits ({Hub split: `datasets.Dataset`}) with a record for
the manifest. The Hub's own cache goes under `<data root>/downloads/huggingface/` (the
`datasets` package resumes and reuses it), so nothing outside the data root is written. A
repository or configuration that does not load is one `DataError` line naming it.
"""

from __future__ import annotations

import pathlib

from attnbench import errors, extras

__all__ = ["PREFIX", "is_hf", "load"]

PREFIX = "hf"


def is_hf(source: str | None) -> bool:
    """Whether a `--from` value names the Hugging Face Hub (`hf` or `hf:REPO_OR_FOLDER`)."""
    return source is not None and (source == PREFIX or source.startswith(PREFIX + ":"))


def load(source: str, dataset, data_root: pathlib.Path) -> tuple[dict, dict]:
    """({Hub split: datasets.Dataset}, manifest record) of `dataset` (a `catalog.Dataset` with
    `hf`), from its repository or the one `source` names after `hf:`."""
    spec = dataset.hf
    if spec is None:
        raise errors.ConfigError(
            f"--from hf: {dataset.name} has no Hugging Face source here; fetch it without --from"
            " (the release files)"
        )
    repo = source.partition(":")[2] or spec.repo
    local = pathlib.Path(repo).expanduser()
    if local.is_dir():
        repo = str(local.resolve())
    ds = extras.require("datasets", f"attnbench-data fetch {dataset.name} --from hf")
    cache_dir = data_root / "downloads" / "huggingface"
    cache_dir.mkdir(parents=True, exist_ok=True)
    try:
        splits = ds.load_dataset(repo, spec.config, cache_dir=str(cache_dir))
    except Exception as e:  # the package raises many kinds (hub, network, config, format)
        raise errors.DataError(
            f"Hugging Face datasets could not load {repo} (configuration {spec.config}): "
            f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}; check the name "
            "and the network, or fetch the release files without --from"
        ) from e
    record = {
        "huggingface": {
            "repo": repo,
            "config": spec.config,
            "datasets_version": ds.__version__,
            "splits": {
                name: {"rows": len(split), "fingerprint": getattr(split, "_fingerprint", None)}
                for name, split in splits.items()
            },
        }
    }
    return dict(splits), record
