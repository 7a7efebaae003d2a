"""What `attnbench-data` does (scripts/data.py parses the command line): list the catalog's
datasets, fetch one into the data root, verify a folder against the catalog.

`fetch` downloads each release file into `<root>/downloads/` (`attnbench.data.fetch.download`:
resumes, checks the published checksum), arranges them in a staging folder
(`attnbench.data.fetch.staged`) with a MANIFEST.json, moves it into place, then reads it with the
project's reader and compares the split sizes with the official counts. `verify` checks the
manifest (where the folder has one) and the split sizes, one `problem:` line on stderr each.
"""

from __future__ import annotations

import pathlib
import sys
import time

from attnbench import cli, errors
from attnbench.data import cache, catalog, fetch, hf

__all__ = ["list_datasets", "fetch_dataset", "verify_dataset"]


def list_datasets() -> int:
    """Prints every dataset of the catalog; 0."""
    for name in catalog.names():
        d = catalog.get(name)
        how = "fetch" if d.arrange is not None else "by hand (`fetch` prints the steps)"
        print(f"{name}: {d.title} ({d.size}; {how})")
        print(f"  licence: {d.licence}")
        for r in d.remotes:
            checksum = (
                f"{'sha256' if r.sha256 else 'md5'} from {r.checksum_source}"
                if (r.sha256 or r.md5)
                else "no published checksum"
            )
            print(f"  source: {r.url} ({checksum})")
        if not d.remotes:
            print(f"  source: {d.homepage}")
        if d.hf is not None:
            print(f"  also: Hugging Face {d.hf.repo} ({d.hf.config}; `fetch {name} --from hf`)")
        print(f"  folder: <data root>{'/' + d.folder if d.folder else ''}")
        sizes = ", ".join(f"{k} {v:,}" for k, v in d.splits.items())
        print(f"  splits: {sizes or '(not checked by attnbench-data yet)'}")
        print(f"  read by: {', '.join(d.configs)}")
    return 0


def fetch_dataset(name: str, data_dir: str = "", source: str | None = None) -> int:
    """Fetches `name` into the data root (`data_dir`); 0, or 1 when the reader's split sizes
    differ from the official ones (the folder is kept, the problems printed)."""
    d = catalog.get(name)
    target = catalog.where(name, data_dir)
    if hf.is_hf(source):
        return _fetch_hf(d, target, source, data_dir)
    if d.arrange is None:
        print(f"{d.title} is not fetched by a script yet; to use it:")
        for r in d.remotes:
            print(f"  download {r.url} (as {r.filename})")
        print(f"  {d.steps}\n  (the data root: {cache.data_root(data_dir)}; the folder: {target})")
        print(f"Then: attnbench-data verify {name}" + (f" --dir {data_dir}" if data_dir else ""))
        return 0
    if source is not None and len(d.remotes) != 1:
        raise errors.ConfigError(
            f"--from names one file, and {name} is {len(d.remotes)} release files; put them in "
            f"{cache.data_root(data_dir) / 'downloads'} and run fetch without --from"
        )
    downloads_dir = cache.data_root(data_dir) / "downloads"
    downloads_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    downloads = {}
    for r in d.remotes:
        print(f"{name}: {r.filename} from {source or r.url}", flush=True)
        downloads[r.filename] = fetch.download(r, downloads_dir, source=source)
    unchecked = [r.filename for r in d.remotes if not (r.sha256 or r.md5)]
    with fetch.staged(target) as staging:
        d.arrange(downloads, staging)
        files = {str(p.relative_to(staging)): p for p in sorted(staging.rglob("*")) if p.is_file()}
        fetch.write_manifest(staging, files, remotes=d.remotes)
    problems = _check_counts(d, target)
    for line in problems:
        print(f"problem: {line}", file=sys.stderr)
    note = (
        f"; no checksum is published for {', '.join(unchecked)}: its size and sha256 are in "
        f"{target / 'MANIFEST.json'}"
        if unchecked
        else "; checksums as published"
    )
    print(f"{name}: in {target} ({time.perf_counter() - t0:.0f}s{note})")
    return 1 if problems else 0


def _fetch_hf(d: catalog.Dataset, target: pathlib.Path, source: str, data_dir: str) -> int:
    """`fetch NAME --from hf[:REPO]`: the Hub's copy through `datasets`, arranged in the
    reader's layout and checked like the release files (no release checksum: the manifest
    records the files' sha256 and the Hub repository, configuration and fingerprints)."""
    t0 = time.perf_counter()
    splits, record = hf.load(source, d, cache.data_root(data_dir))
    print(f"{d.name}: from Hugging Face {record['huggingface']['repo']}", flush=True)
    with fetch.staged(target) as staging:
        d.hf.arrange(splits, staging)
        files = {str(p.relative_to(staging)): p for p in sorted(staging.rglob("*")) if p.is_file()}
        fetch.write_manifest(staging, files, remotes=(), origin=record)
    problems = _check_counts(d, target)
    for line in problems:
        print(f"problem: {line}", file=sys.stderr)
    print(
        f"{d.name}: in {target} ({time.perf_counter() - t0:.0f}s; from the Hugging Face Hub, "
        f"no release checksum: the files' sha256 are in {target / fetch.MANIFEST})"
    )
    return 1 if problems else 0


def _check_counts(d: catalog.Dataset, folder: pathlib.Path, counted: dict | None = None):
    """One line per split whose size differs from the official one (or the reader's error);
    the sizes the reader counted go into `counted`."""
    if d.count is None:
        return []
    try:
        counts = d.count(folder)
    except errors.UserError as e:
        return [cli.one_line(e)]
    if counted is not None:
        counted.update(counts)
    out = []
    for split, expected in d.splits.items():
        got = counts.get(split)
        if got != expected:
            out.append(
                f"{folder}: split {split} has {'no' if got is None else f'{got:,}'} {d.unit}, "
                f"the official release {expected:,}"
            )
    return out


def verify_dataset(name: str, folder: str | None = None, data_dir: str = "") -> int:
    """Checks `folder` (default: where `name` is fetched); 0, or 1 with a line per problem."""
    d = catalog.get(name)
    path = pathlib.Path(folder).expanduser() if folder else catalog.where(name, data_dir)
    if not path.is_dir():
        print(
            f"problem: {path}: not found; fetch it with `attnbench-data fetch {name}`",
            file=sys.stderr,
        )
        return 1
    problems = []
    if (path / fetch.MANIFEST).is_file():
        problems += fetch.check_manifest(path)
    else:  # a folder made by hand: the reader's view below is the check
        print(
            f"{name}: {path} has no {fetch.MANIFEST} (not fetched by attnbench-data): its files "
            "are checked by the reader, not by checksum"
        )
    counted: dict = {}
    problems += _check_counts(d, path, counted)
    for line in problems:
        print(f"problem: {line}", file=sys.stderr)
    if not problems and d.count is None:
        print(f"{name}: {path} exists; attnbench-data does not check its contents yet")
    elif not problems and d.splits:
        sizes = ", ".join(f"{k} {v:,}" for k, v in d.splits.items())
        print(f"{name}: {path} is complete ({sizes})")
    elif not problems:
        sizes = ", ".join(f"{k} {v:,}" for k, v in counted.items())
        print(
            f"{name}: {path} is read by its reader ({sizes} {d.unit}); no official split sizes "
            "are recorded to compare with"
        )
    return 1 if problems else 0
