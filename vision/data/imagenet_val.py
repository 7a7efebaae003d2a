"""ILSVRC-2012's validation images moved into class folders: `attnbench-data imagenet-val`.

    attnbench-data imagenet-val /data/imagenet/val --devkit ILSVRC2012_devkit_t12.tar.gz
    attnbench-data imagenet-val /data/imagenet/val --devkit ILSVRC2012_devkit_t12 --dry-run

ILSVRC2012_img_val.tar unpacks to 50,000 images side by side (ILSVRC2012_val_00000001.JPEG ...
ILSVRC2012_val_00050000.JPEG); the class folders the readers read (`vision.data.folders`,
`val/<wnid>/`) come from the development kit: line i of
`data/ILSVRC2012_validation_ground_truth.txt` is the ILSVRC2012_ID (1..1000) of image i, and
`data/meta.mat`'s `synsets` struct array maps each ILSVRC2012_ID to its WordNet id (`WNID`),
the 1,000 classes being its leaves (`num_children == 0`; the other synsets are their ancestors).
This is the mapping torchvision's ImageNet reads (torchvision/datasets/imagenet.py
`parse_devkit_archive`). DEVKIT is the devkit tarball (ILSVRC2012_devkit_t12.tar.gz, read
without unpacking it) or its unpacked folder.

Nothing is moved unless everything checks out first: the ground truth must name a class of the
devkit on every line, and VAL_DIR must hold exactly the images it lists (no image missing, none
that it does not list, none already in another class's folder); otherwise one line says what
differs (a `DataError`: exit status 2). Each image is moved by a rename within VAL_DIR, so a run
that is killed leaves every image either where it was or where it belongs: running the same
command again moves the rest (an image already in its class folder is recognised and left).
"""

from __future__ import annotations

import dataclasses
import io
import os
import pathlib
import re
import tarfile
from collections.abc import Callable, Mapping

from attnbench.data import cache
from attnbench.data.formats import image_folder

__all__ = ["Devkit", "Plan", "read_devkit", "plan", "reorganise", "main", "image_name"]

GROUND_TRUTH = "data/ILSVRC2012_validation_ground_truth.txt"
META = "data/meta.mat"
# The devkit's struct fields this reads (meta.mat's `synsets` also has words, gloss, children,
# wordnet_height, num_train_images).
_FIELDS = ("ILSVRC2012_ID", "WNID", "num_children")
_IMAGE = re.compile(r"ILSVRC2012_val_(\d{8})\.JPEG")


def image_name(number: int) -> str:
    """The file name of validation image `number` (1-based): ILSVRC2012_val_00000001.JPEG."""
    return f"ILSVRC2012_val_{number:08d}.JPEG"


@dataclasses.dataclass(frozen=True)
class Devkit:
    """What the devkit says about the validation images.

    Attributes:
      wnids: ILSVRC2012_ID -> WNID of the classes (the leaf synsets).
      labels: the ILSVRC2012_ID of each validation image, in file order (image i is
        labels[i - 1]).
      source: where it was read from (for messages).
    """

    wnids: Mapping[int, str]
    labels: tuple[int, ...]
    source: str


def read_devkit(devkit: str | os.PathLike) -> Devkit:
    """The devkit's class map and validation labels, from the tarball or its folder (the folder
    holding `data/`, or the one above it); a `DataError` naming the file when a file is missing
    or malformed, or a label is not one of the classes' ILSVRC2012_IDs."""
    path = pathlib.Path(devkit).expanduser()
    if path.is_file():
        meta, truth = _from_tarball(path)
    elif path.is_dir():
        meta, truth = _from_folder(path)
    else:
        raise cache.DataError(
            f"{path}: devkit not found; give ILSVRC2012_devkit_t12.tar.gz (from "
            "https://image-net.org, with the images) or the folder it unpacks to"
        )
    wnids = _parse_meta(meta, f"{path}: {META}")
    labels = _parse_ground_truth(truth, f"{path}: {GROUND_TRUTH}", wnids)
    return Devkit(wnids=wnids, labels=labels, source=str(path))


def _from_folder(path: pathlib.Path) -> tuple[bytes, bytes]:
    for root in (path, path / "ILSVRC2012_devkit_t12"):
        if (root / META).is_file():
            break
    else:
        raise cache.DataError(
            f"{path / META}: not found; DEVKIT is ILSVRC2012_devkit_t12.tar.gz or the folder it "
            "unpacks to (ILSVRC2012_devkit_t12/, holding data/meta.mat)"
        )
    truth = root / GROUND_TRUTH
    if not truth.is_file():
        raise cache.DataError(f"{truth}: not found (the devkit is incomplete)")
    return (root / META).read_bytes(), truth.read_bytes()


def _from_tarball(path: pathlib.Path) -> tuple[bytes, bytes]:
    """meta.mat and the ground truth read from the tarball's members, nothing unpacked."""
    found: dict[str, bytes] = {}
    try:
        with tarfile.open(path) as tar:
            for member in tar:
                for want in (META, GROUND_TRUTH):
                    name = member.name.lstrip("./")
                    if member.isfile() and (name == want or name.endswith("/" + want)):
                        found[want] = tar.extractfile(member).read()
    except (tarfile.TarError, OSError, EOFError) as e:
        raise cache.DataError(
            f"{path}: cannot read as the devkit tarball ({e}); download "
            "ILSVRC2012_devkit_t12.tar.gz again (md5 fa75699e90414af021442c21a62c3abf, "
            "torchvision's)"
        ) from None
    for want in (META, GROUND_TRUTH):
        if want not in found:
            raise cache.DataError(
                f"{path}: no {want} in the tarball; DEVKIT must be ILSVRC2012_devkit_t12.tar.gz"
            )
    return found[META], found[GROUND_TRUTH]


def _parse_meta(body: bytes, where: str) -> dict[int, str]:
    """ILSVRC2012_ID -> WNID of meta.mat's leaf synsets (num_children == 0)."""
    import scipy.io  # a dependency of attnbench (pyproject.toml)

    try:
        synsets = scipy.io.loadmat(io.BytesIO(body), squeeze_me=True)["synsets"]
        names = synsets.dtype.names or ()
        missing = [f for f in _FIELDS if f not in names]
        if missing:
            raise ValueError(f"its synsets have no {', '.join(missing)}")
        rows = [
            (int(s["ILSVRC2012_ID"]), str(s["WNID"]), int(s["num_children"]))
            for s in synsets.reshape(-1)
        ]
    except (ValueError, TypeError, KeyError, IndexError, OSError) as e:
        raise cache.DataError(
            f"{where}: not the ILSVRC-2012 devkit's meta.mat ({e}); expected a struct array "
            "`synsets` with ILSVRC2012_ID, WNID and num_children"
        ) from None
    wnids: dict[int, str] = {}
    for number, wnid, children in rows:
        if children == 0:
            if number in wnids or wnid in wnids.values():
                raise cache.DataError(f"{where}: class {number} ({wnid}) is listed twice")
            wnids[number] = wnid
    if not wnids:
        raise cache.DataError(f"{where}: no leaf synsets (num_children == 0): no classes")
    return wnids


def _parse_ground_truth(body: bytes, where: str, wnids: Mapping[int, str]) -> tuple[int, ...]:
    """One ILSVRC2012_ID per line, each a class of `wnids`."""
    try:
        lines = body.decode("ascii").splitlines()
    except UnicodeDecodeError as e:
        raise cache.DataError(f"{where}: not ASCII text (byte offset {e.start})") from None
    while lines and not lines[-1].strip():
        lines.pop()
    labels = []
    low, high = min(wnids), max(wnids)
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text.isdigit() or int(text) not in wnids:
            raise cache.DataError(
                f"{where}: line {number}: {text[:20]!r} is not the ILSVRC2012_ID of one of the "
                f"devkit's {len(wnids):,} classes ({low}..{high}); the devkit does not belong "
                "to these images, or the file is damaged"
            )
        labels.append(int(text))
    if not labels:
        raise cache.DataError(f"{where}: empty")
    return tuple(labels)


@dataclasses.dataclass(frozen=True)
class Plan:
    """What a run does: `moves` (source, destination) still to make, `placed` images already in
    their class folder, `folders` the class folders the images go to."""

    moves: tuple[tuple[pathlib.Path, pathlib.Path], ...]
    placed: int
    folders: tuple[str, ...]


def plan(val_dir: str | os.PathLike, devkit: Devkit) -> Plan:
    """The moves that put every image of `val_dir` into its class folder; a `DataError`, with
    nothing moved, when `val_dir` does not hold exactly the images the ground truth lists."""
    root = pathlib.Path(val_dir).expanduser()
    if not root.is_dir():
        raise cache.DataError(
            f"{root}: not found; VAL_DIR is the folder ILSVRC2012_img_val.tar was unpacked into"
        )
    expected = {image_name(i): devkit.wnids[label] for i, label in enumerate(devkit.labels, 1)}
    flat: set[str] = set()
    placed_in: dict[str, str] = {}  # image -> the class folder it is in
    with os.scandir(root) as entries:
        for entry in entries:
            if entry.is_dir() and not entry.name.startswith("."):
                with os.scandir(entry.path) as inside:
                    for image in inside:
                        if _is_image(image):
                            if image.name in placed_in:
                                raise _twice(root, image.name, placed_in[image.name], entry.name)
                            placed_in[image.name] = entry.name
            elif _is_image(entry):
                flat.add(entry.name)
    for name in sorted(flat & placed_in.keys()):
        raise _twice(root, name, "", placed_in[name])
    present = len(flat) + len(placed_in)
    counts = f"the ground truth lists {len(expected):,} images, {root} holds {present:,}"
    stray = sorted(n for n in (*flat, *placed_in) if n not in expected)
    if stray:
        raise cache.DataError(
            f"{root}: {len(stray):,} images the devkit's ground truth does not list (first: "
            f"{stray[0]}); {counts}. Nothing was moved"
        )
    missing = [n for n in expected if n not in flat and n not in placed_in]
    if missing:
        raise cache.DataError(
            f"{root / missing[0]}: not found ({len(missing):,} of the listed images are missing; "
            f"{counts}): unpack ILSVRC2012_img_val.tar again. Nothing was moved"
        )
    for name, folder in placed_in.items():
        if folder != expected[name]:
            raise cache.DataError(
                f"{root / folder / name}: in class folder {folder}, the devkit's ground truth "
                f"says {expected[name]}; move it back to {root} and run again. Nothing was moved"
            )
    moves = tuple((root / name, root / expected[name] / name) for name in sorted(flat, key=_number))
    return Plan(moves=moves, placed=len(placed_in), folders=tuple(sorted(set(expected.values()))))


def _is_image(entry: os.DirEntry) -> bool:
    return entry.is_file() and os.path.splitext(entry.name)[1].lower() in image_folder.EXTENSIONS


def _number(name: str) -> int:
    match = _IMAGE.fullmatch(name)
    return int(match.group(1)) if match else 0


def _twice(root: pathlib.Path, name: str, first: str, second: str) -> cache.DataError:
    where = f"{first}/" if first else "VAL_DIR itself"
    return cache.DataError(
        f"{root}: {name} is both in {where} and in {second}/: delete the copy that should not "
        "be there and run again. Nothing was moved"
    )


def _move(source: pathlib.Path, destination: pathlib.Path) -> None:
    """One image into its class folder: a rename within VAL_DIR (atomic; never a copy)."""
    os.rename(source, destination)


def reorganise(
    val_dir: str | os.PathLike,
    devkit: str | os.PathLike,
    *,
    dry_run: bool = False,
    say: Callable[[str], None] = print,
) -> Plan:
    """Moves `val_dir`'s flat validation images into `val_dir/<wnid>/` (`plan`, then the
    renames); with `dry_run`, says what it would do and moves nothing."""
    kit = read_devkit(devkit)
    todo = plan(val_dir, kit)
    root = pathlib.Path(val_dir).expanduser()
    already = f"{todo.placed:,} already in their class folders"
    if dry_run:
        say(
            f"{root}: would move {len(todo.moves):,} images into {len(todo.folders):,} class "
            f"folders ({already}); the devkit: {kit.source}"
        )
        for source, destination in todo.moves[:3]:
            say(f"  {source.name} -> {destination.parent.name}/")
        return todo
    for folder in todo.folders:
        (root / folder).mkdir(exist_ok=True)
    for source, destination in todo.moves:
        _move(source, destination)
    say(
        f"{root}: moved {len(todo.moves):,} images into {len(todo.folders):,} class folders "
        f"({already}); `attnbench-data verify imagenet` checks the whole release"
    )
    return todo


def main(val_dir: str, devkit: str, dry_run: bool = False) -> int:
    """`attnbench-data imagenet-val VAL_DIR --devkit DEVKIT [--dry-run]`: 0, or a `DataError`."""
    reorganise(val_dir, devkit, dry_run=dry_run)
    return 0
