"""Download, verify and unpack official release files, leaving nothing half-written in the data
root.

    remote = Remote(url, "cifar-10-python.tar.gz", size=170498071, md5="c58f3010...",
                    checksum_source="torchvision datasets/cifar.py")
    archive = download(remote, root / "downloads", source=from_file)  # resumes a .part
    with staged(root / "cifar10") as tmp:                # renamed into place at the end
        files = extract(archive, tmp)
        write_manifest(tmp, {str(p.relative_to(tmp)): p for p in files}, remotes=[remote])
    problems = check_manifest(root / "cifar10")          # [] when intact

`Remote` describes one published release file: its URL, file name, size and published checksum
(sha256 or md5) with where that checksum comes from.

`download(remote, dest_dir, *, source=None, progress=None, chunk=1 << 20, timeout=60)` writes
`dest_dir/<filename>.part` and renames it to `dest_dir/<filename>` only once its size and
checksum match; a rerun resumes the .part with an HTTP `Range` request. `source` is a mirror URL,
or a local path / file:// URL of a copy already downloaded (copied, then checked the same way).
A final file already there is checked and reused. Network errors keep the .part and say that the
same command resumes; a checksum mismatch deletes the .part. Progress is one `\\r`-updated line
on stderr when stderr is a terminal (`progress=True` forces it, `False` silences it).

`extract(archive, dest_dir, *, members=None)` unpacks .zip, .tar, .tar.gz/.tgz, .tar.bz2,
.tar.xz and single-file .gz, refusing (before writing anything) absolute names, `..`
components, links and device files or fifos.

`staged(final_dir)` yields a fresh sibling staging directory that replaces `final_dir` when the
with-block ends normally, and is deleted (leaving `final_dir` as it was) when it raises.

`write_manifest` / `check_manifest` record and check `MANIFEST.json`: the release files (URL,
size, sha256, published checksum and its source) and every arranged file's size and sha256.

Every user-fixable failure is an `attnbench.errors.DataError` whose message names the file.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import hashlib
import http.client
import json
import lzma
import os
import pathlib
import shutil
import stat
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence

from attnbench import errors

__all__ = [
    "Remote",
    "download",
    "extract",
    "staged",
    "sha256_file",
    "md5_file",
    "write_manifest",
    "check_manifest",
    "MANIFEST",
]

MANIFEST = "MANIFEST.json"
_USER_AGENT = "attnbench-data (python urllib)"
_FROM_HINT = "--from FILE_OR_URL takes a mirror URL or a copy of {name} you downloaded"


@dataclasses.dataclass(frozen=True)
class Remote:
    """One published release file."""

    url: str  # where the release file is published
    filename: str  # its file name once downloaded
    size: int | None = None  # bytes, where known
    sha256: str | None = None  # published checksum (hex), or
    md5: str | None = None  # published md5 (hex) where that is what the source publishes
    # Where the checksum comes from (a URL or "torchvision datasets/cifar.py"); "" when none is.
    checksum_source: str = ""

    @property
    def published(self) -> tuple[str, str] | None:
        """(algorithm, lower-case hex) of the published checksum, sha256 preferred; None."""
        if self.sha256:
            return "sha256", self.sha256.strip().lower()
        if self.md5:
            return "md5", self.md5.strip().lower()
        return None


# ------------------------------------------------------------------------------------ hashing


def _digests(path: str | os.PathLike, *algorithms: str) -> dict[str, str]:
    """The hex digests of a file for several algorithms, in one pass over it."""
    hashers = {a: hashlib.new(a, usedforsecurity=False) for a in algorithms}
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            for h in hashers.values():
                h.update(block)
    return {a: h.hexdigest() for a, h in hashers.items()}


def sha256_file(path: str | os.PathLike) -> str:
    """The file's sha256 as lower-case hex."""
    return _digests(path, "sha256")["sha256"]


def md5_file(path: str | os.PathLike) -> str:
    """The file's md5 as lower-case hex (what some sources, e.g. CIFAR's, publish)."""
    return _digests(path, "md5")["md5"]


# sha256 of files this process downloaded and verified, so that write_manifest does not read a
# many-GB release file a second time: path -> (size, mtime_ns, inode, sha256); and the path each
# Remote was downloaded to.
_SHA256_SEEN: dict[pathlib.Path, tuple[int, int, int, str]] = {}
_DOWNLOADED: dict[Remote, pathlib.Path] = {}


def _stat_key(path: pathlib.Path) -> tuple[int, int, int]:
    st = path.stat()
    return st.st_size, st.st_mtime_ns, st.st_ino


def _remember_sha256(path: pathlib.Path, sha256: str) -> None:
    _SHA256_SEEN[path.resolve()] = (*_stat_key(path), sha256)


def _known_sha256(path: pathlib.Path) -> str:
    seen = _SHA256_SEEN.get(path.resolve())
    if seen is not None and seen[:3] == _stat_key(path):
        return seen[3]
    return sha256_file(path)


def _verify(path: pathlib.Path, remote: Remote) -> tuple[str | None, str]:
    """(problem, sha256): problem is None when the size and the published checksum match (or
    none is published), else says what differs, naming both checksums; sha256 is the file's,
    computed in the same pass as the published algorithm's."""
    size = path.stat().st_size
    published = remote.published
    algorithms = ["sha256"] + ([published[0]] if published and published[0] != "sha256" else [])
    got = _digests(path, *algorithms)
    problems = []
    if remote.size is not None and size != remote.size:
        problems.append(f"{size:,} bytes where {remote.size:,} are expected")
    if published is not None and got[published[0]] != published[1]:
        source = remote.checksum_source or "the dataset's catalog entry"
        problems.append(
            f"{published[0]} {got[published[0]]} where {published[1]} is expected "
            f"(the published checksum, from {source})"
        )
    return ", ".join(problems) or None, got["sha256"]


# ----------------------------------------------------------------------------------- download


class _Progress:
    """One line on stderr, rewritten in place with `\\r`: bytes, percent, MB/s, ETA."""

    def __init__(self, name: str, total: int | None, start: int, enabled: bool):
        self.name, self.total, self.start, self.enabled = name, total, start, enabled
        self.t0 = self.last = time.perf_counter()
        self.width = 0

    def update(self, done: int, *, force: bool = False) -> None:
        now = time.perf_counter()
        if not self.enabled or (now - self.last < 0.25 and not force):
            return
        self.last = now
        rate = (done - self.start) / max(now - self.t0, 1e-9)
        text = f"{self.name}: {done / 1e6:,.1f}"
        if self.total:
            text += f"/{self.total / 1e6:,.1f} MB ({100 * done / self.total:.0f}%)"
        else:
            text += " MB"
        text += f", {rate / 1e6:.1f} MB/s"
        if self.total and rate > 0:
            text += f", ETA {max(self.total - done, 0) / rate:.0f} s"
        sys.stderr.write("\r" + text.ljust(self.width))
        sys.stderr.flush()
        self.width = len(text)

    def close(self, done: int) -> None:
        if self.enabled:
            self.update(done, force=True)
            sys.stderr.write("\n")
            sys.stderr.flush()


def _local_path(where: str) -> pathlib.Path | None:
    """The file a `source` names when it is a local path or file:// URL; None for a URL."""
    parts = urllib.parse.urlsplit(where)
    if parts.scheme == "file":
        return pathlib.Path(urllib.request.url2pathname(parts.path))
    if parts.scheme in ("http", "https", "ftp"):
        return None
    return pathlib.Path(where).expanduser()


def _network_error(remote: Remote, url: str, part: pathlib.Path, reason: str) -> errors.DataError:
    kept = part.stat().st_size if part.exists() else 0
    keeps = f"{part} keeps the {kept:,} bytes received; " if kept else ""
    return errors.DataError(
        f"downloading {remote.filename} from {url} failed: {reason}; {keeps}run the same command "
        f"again to resume, or {_FROM_HINT.format(name=remote.filename)}"
    )


def _reason(exc: BaseException, timeout: float) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    if isinstance(exc, TimeoutError):
        return f"no answer within {timeout:g} s"
    if isinstance(exc, urllib.error.URLError):
        inner = exc.reason
        if isinstance(inner, TimeoutError):
            return f"no answer within {timeout:g} s"
        return str(getattr(inner, "strerror", None) or inner)
    return str(getattr(exc, "strerror", None) or exc) or type(exc).__name__


def _content_range(value: str | None) -> tuple[int | None, int | None]:
    """(first byte, total size) of a `Content-Range: bytes A-B/TOTAL` (or `bytes */TOTAL`)."""
    if not value or not value.startswith("bytes "):
        return None, None
    span, _, total = value[6:].partition("/")
    first = span.partition("-")[0]
    return (
        int(first) if first.isdigit() else None,
        int(total) if total.isdigit() else None,
    )


def _stream(read, part: pathlib.Path, offset: int, total, progress, chunk: int, net_error) -> int:
    """Appends what `read(chunk)` yields to `part` (truncated first when offset is 0); returns
    the .part's size. A failing read is `net_error(exc)`; a failing write is a DataError."""
    done = offset
    bar = _Progress(part.name.removesuffix(".part"), total, offset, progress)
    try:
        with open(part, "ab" if offset else "wb") as out:
            while True:
                try:
                    data = read(chunk)
                except (OSError, http.client.HTTPException) as e:
                    raise net_error(e) from e
                if not data:
                    return done
                try:
                    out.write(data)
                except OSError as e:
                    raise errors.DataError(
                        f"cannot write {part}: {e.strerror or e}; free space (or fix the "
                        "permissions) and run the same command again to resume"
                    ) from e
                done += len(data)
                bar.update(done)
    finally:
        bar.close(done)


def _fetch(remote, url, part, *, progress, chunk, timeout) -> None:
    """Downloads `url` into `part`, resuming it with a Range request when it has bytes."""
    for _ in range(2):  # a second try from byte 0 when the server's answer voids the .part
        offset = part.stat().st_size if part.exists() else 0
        request = urllib.request.Request(url, headers={"User-Agent": _USER_AGENT})
        if offset:
            request.add_header("Range", f"bytes={offset}-")
        try:
            response = urllib.request.urlopen(request, timeout=timeout)
        except urllib.error.HTTPError as e:
            if e.code == 416 and offset:  # nothing after byte `offset`: complete, or too long
                total = _content_range(e.headers.get("Content-Range"))[1] or remote.size
                e.close()
                if total == offset:
                    return
                part.unlink()
                continue
            raise _network_error(remote, url, part, _reason(e, timeout)) from e
        except (OSError, http.client.HTTPException, ValueError) as e:
            raise _network_error(remote, url, part, _reason(e, timeout)) from e
        with response:
            length = response.headers.get("Content-Length")
            length = int(length) if length and length.isdigit() else None
            if offset and response.status == 206:
                first, total = _content_range(response.headers.get("Content-Range"))
                if first != offset:  # not the bytes asked for: start again from byte 0
                    part.unlink()
                    continue
            else:  # 200: the server ignored the Range, so the whole file comes again
                offset, total = 0, length
            total = remote.size or total
            end = offset + length if length is not None else None

            def net_error(e, _url=url):
                return _network_error(remote, _url, part, _reason(e, timeout))

            done = _stream(response.read, part, offset, total, progress, chunk, net_error)
            if end is not None and done < end:
                raise _network_error(
                    remote, url, part, f"the connection closed after {done:,} of {end:,} bytes"
                )
            return
    raise errors.DataError(
        f"{url} does not answer Range requests consistently; delete {part} and run the same "
        f"command again, or {_FROM_HINT.format(name=remote.filename)}"
    )


def _copy(remote: Remote, local: pathlib.Path, part: pathlib.Path, *, progress, chunk) -> None:
    """Copies a local copy of the release file into `part` (no resume: it is fast)."""
    if local.is_dir():
        local = local / remote.filename
    if not local.is_file():
        raise errors.DataError(
            f"{local} (given with --from for {remote.filename}) is not a file; "
            f"{_FROM_HINT.format(name=remote.filename)}"
        )
    size = local.stat().st_size
    with open(local, "rb") as f:

        def read_error(e):
            return errors.DataError(f"cannot read {local}: {getattr(e, 'strerror', None) or e}")

        _stream(f.read, part, 0, size, progress, chunk, read_error)


def download(
    remote: Remote,
    dest_dir: str | os.PathLike,
    *,
    source: str | os.PathLike | None = None,
    progress: bool | None = None,
    chunk: int = 1 << 20,
    timeout: float = 60,
) -> pathlib.Path:
    """`dest_dir/remote.filename`, downloaded from `remote.url` (or `source`: a mirror URL, a
    local path or file:// URL of a copy, or a directory holding `remote.filename`), its size
    and published checksum checked. Returns the path.

    Bytes go to `<filename>.part`, renamed into place only once checked; a rerun with a .part
    resumes it (`Range: bytes=N-`; a server answering 200 restarts from byte 0, one answering
    416 to a .part of the full size has nothing left to send). A file already at the final path
    is checked and reused without a download. `progress`: None draws the progress line when
    stderr is a terminal, True always, False never. Raises DataError: on a network error (the
    .part is kept for the resume), on a size or checksum mismatch (the .part is deleted), on a
    final file that does not match (left for the user to delete).
    """
    dest = pathlib.Path(dest_dir)
    final = dest / remote.filename
    part = dest / (remote.filename + ".part")
    if final.exists():
        problem, sha256 = _verify(final, remote)
        if problem is not None:
            raise errors.DataError(
                f"{final} is not the published {remote.filename}: {problem}; delete it and run "
                "the same command again"
            )
        _remember_sha256(final, sha256)
        _DOWNLOADED[remote] = final
        return final
    where = os.fspath(source) if source is not None else remote.url
    if not where:
        raise errors.DataError(
            f"{remote.filename} has no download URL; {_FROM_HINT.format(name=remote.filename)}"
        )
    show = sys.stderr.isatty() if progress is None else bool(progress)
    dest.mkdir(parents=True, exist_ok=True)
    local = _local_path(where)
    if local is not None:
        _copy(remote, local, part, progress=show, chunk=chunk)
    else:
        _fetch(remote, where, part, progress=show, chunk=chunk, timeout=timeout)
    problem, sha256 = _verify(part, remote)
    if problem is not None:
        part.unlink(missing_ok=True)
        raise errors.DataError(
            f"{remote.filename} from {where} does not match: {problem}; the download was deleted; "
            f"run the same command again, or {_FROM_HINT.format(name=remote.filename)}"
        )
    os.replace(part, final)
    _remember_sha256(final, sha256)
    _DOWNLOADED[remote] = final
    return final


# ------------------------------------------------------------------------------------ extract

_TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tbz", ".tar.xz", ".txz")


def _unsafe_name(name: str) -> str | None:
    """Why a member name could write outside the destination, or None."""
    posix = name.replace("\\", "/")
    if posix.startswith("/") or (len(posix) > 1 and posix[1] == ":" and posix[0].isalpha()):
        return "an absolute path"
    if ".." in posix.split("/"):
        return "a '..' component"
    return None


def _refuse(archive: pathlib.Path, name: str, why: str) -> errors.DataError:
    return errors.DataError(
        f"{archive}: member {name!r} is {why}; refusing to extract anything from this archive "
        "(it is not the published release file, or a damaged one: delete it and download again)"
    )


def _tar_members(archive, tf: tarfile.TarFile, keep) -> list[tarfile.TarInfo]:
    chosen = [m for m in tf.getmembers() if keep is None or keep(m.name)]
    for m in chosen:
        why = _unsafe_name(m.name)
        if why is None and (m.issym() or m.islnk()):
            why = f"a {'symbolic' if m.issym() else 'hard'} link (to {m.linkname!r})"
        if why is None and not (m.isfile() or m.isdir()):
            why = "a device file or fifo"
        if why is not None:
            raise _refuse(archive, m.name, why)
    return chosen


def _zip_members(archive, zf: zipfile.ZipFile, keep) -> list[zipfile.ZipInfo]:
    chosen = [i for i in zf.infolist() if keep is None or keep(i.filename)]
    for info in chosen:
        why = _unsafe_name(info.filename)
        mode = info.external_attr >> 16  # unix st_mode, where the zip was made on unix
        kind = stat.S_IFMT(mode)
        if why is None and stat.S_ISLNK(mode):
            why = "a symbolic link"
        elif why is None and kind and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            why = "a device file or fifo"
        if why is not None:
            raise _refuse(archive, info.filename, why)
    return chosen


def extract(
    archive: str | os.PathLike,
    dest_dir: str | os.PathLike,
    *,
    members: Callable[[str], bool] | None = None,
) -> list[pathlib.Path]:
    """Unpacks `archive` (.zip, .tar, .tar.gz/.tgz, .tar.bz2, .tar.xz, a tar compressed under a
    plain .gz name, or a single-file .gz, which becomes the name without .gz) into `dest_dir`;
    returns the files written.

    `members(name)` selects the members to extract (by their name in the archive). Every
    selected member is checked before anything is written: an absolute name, a `..` component,
    a link (tar: any; zip: symbolic) or a device file / fifo is a DataError naming the archive
    and the member. tar extraction also uses tarfile's "data" filter. A damaged archive can
    leave some files written: extract into a `staged` directory.
    """
    archive = pathlib.Path(archive)
    dest = pathlib.Path(dest_dir)
    if not archive.is_file():
        raise errors.DataError(f"{archive}: no such archive file")
    lower = archive.name.lower()
    try:
        if lower.endswith(".zip") or (
            not lower.endswith(_TAR_SUFFIXES + (".gz",)) and zipfile.is_zipfile(archive)
        ):
            with zipfile.ZipFile(archive) as zf:
                chosen = _zip_members(archive, zf, members)
                dest.mkdir(parents=True, exist_ok=True)
                written = [pathlib.Path(zf.extract(info, dest)) for info in chosen]
                return [p for p, i in zip(written, chosen, strict=True) if not i.is_dir()]
        # a tar under a plain .gz name (LRA's lra_release.gz) is a tar: tarfile reads the
        # first block through the compression to tell
        if lower.endswith(_TAR_SUFFIXES) or tarfile.is_tarfile(archive):
            with tarfile.open(archive, "r:*") as tf:
                chosen = _tar_members(archive, tf, members)
                dest.mkdir(parents=True, exist_ok=True)
                extra = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
                tf.extractall(dest, members=chosen, **extra)
                return [dest / m.name for m in chosen if m.isfile()]
        if lower.endswith(".gz"):
            name = archive.name[: -len(".gz")]
            if members is not None and not members(name):
                return []
            dest.mkdir(parents=True, exist_ok=True)
            out = dest / name
            try:
                with gzip.open(archive, "rb") as src, open(out, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
            except BaseException:
                out.unlink(missing_ok=True)
                raise
            return [out]
    except errors.DataError:
        raise
    except tarfile.FilterError as e:
        raise _refuse(archive, getattr(e.tarinfo, "name", "?"), str(e)) from e
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error, lzma.LZMAError) as e:
        raise _damaged(archive, e) from e
    except OSError as e:
        if e.errno is None or isinstance(e, gzip.BadGzipFile):  # bz2/gzip: invalid data
            raise _damaged(archive, e) from e
        raise errors.DataError(f"extracting {archive} into {dest}: {e.strerror or e}") from e
    raise errors.DataError(
        f"{archive}: not an archive this can extract (.zip, .tar, .tar.gz/.tgz, .tar.bz2, "
        ".tar.xz, .gz)"
    )


def _damaged(archive: pathlib.Path, e: BaseException) -> errors.DataError:
    return errors.DataError(
        f"{archive} is damaged or truncated ({e or type(e).__name__}); delete it and download "
        "it again"
    )


# ------------------------------------------------------------------------------------- staged


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # ours is from an earlier call of this process that could not clean up
    try:
        os.kill(pid, 0)
    except PermissionError:  # another user's process
        return True
    except (ProcessLookupError, OverflowError, ValueError):
        return False
    return True


def _remove(path: pathlib.Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


@contextlib.contextmanager
def staged(final_dir: str | os.PathLike) -> Iterator[pathlib.Path]:
    """A fresh directory `final_dir.parent/.<name>.staging-<pid>` to build `final_dir` in.

    When the with-block ends normally the staging directory takes `final_dir`'s place: an
    existing `final_dir` is renamed aside to `.<name>.old-<pid>`, the staging directory renamed
    to `final_dir`, the old one deleted. When it raises (anything, KeyboardInterrupt and a full
    disk included) the staging directory is deleted and `final_dir` is left as it was. Staging
    and old directories of processes that no longer run (a killed earlier run) are deleted
    first; a running process's are left alone (two commands fetching the same data).
    """
    final = pathlib.Path(final_dir)
    parent = final.parent
    parent.mkdir(parents=True, exist_ok=True)
    stale = [*parent.glob(f".{final.name}.staging-*"), *parent.glob(f".{final.name}.old-*")]
    for leftover in stale:
        pid = leftover.name.rpartition("-")[2]
        if not (pid.isdigit() and _pid_alive(int(pid))):
            _remove(leftover)
    staging = parent / f".{final.name}.staging-{os.getpid()}"
    staging.mkdir()
    try:
        yield staging
    except BaseException:
        _remove(staging)
        raise
    old = parent / f".{final.name}.old-{os.getpid()}"
    try:
        if final.exists() or final.is_symlink():
            os.replace(final, old)
        try:
            os.replace(staging, final)
        except BaseException:
            if old.exists() and not final.exists():
                os.replace(old, final)
            raise
    except BaseException:
        _remove(staging)
        raise
    _remove(old)


# ----------------------------------------------------------------------------------- manifest


def _atomic_write_text(path: pathlib.Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


# A folder holding more files than this gets one manifest entry, "<folder>/*": its file count,
# total size and a sha256 over its files' names and sha256s (LRA's Pathfinder folders hold
# hundreds of thousands of PNGs: one entry each would make a manifest of tens of MB).
FOLDER_DIGEST_OVER = 1000


def _folder_digest(members: Mapping[str, str | os.PathLike]) -> dict:
    """{"files", "size", "sha256"} of a folder's files ({name: path}): the sha256 of the lines
    "name<TAB>sha256 of the file" in name order."""
    h = hashlib.sha256()
    size = 0
    for name in sorted(members):
        size += os.path.getsize(members[name])
        h.update(f"{name}\t{sha256_file(members[name])}\n".encode())
    return {"files": len(members), "size": size, "sha256": h.hexdigest()}


def write_manifest(
    folder: str | os.PathLike,
    files: Mapping[str, str | os.PathLike],
    *,
    remotes: Sequence[Remote],
    download_dir: str | os.PathLike | None = None,
    origin: Mapping | None = None,
) -> pathlib.Path:
    """Writes `folder/MANIFEST.json` (atomically) and returns its path.

    `files` maps each arranged file's path relative to `folder` (as `check_manifest` will look
    for it) to the file to measure now; each gets its size and sha256. Each release file in
    `remotes` gets its URL, file name, size and sha256 (computed from the downloaded file:
    `download_dir/<filename>`, or where `download` put it in this process; the published size
    and sha256 when the file is not there), and its published checksum with its source, or
    "none published". `origin`, where the data came from somewhere else than release files (the
    Hugging Face Hub), is recorded as it is under "origin".
    """
    folder = pathlib.Path(folder)
    releases = []
    for remote in remotes:
        path = (
            pathlib.Path(download_dir) / remote.filename
            if download_dir is not None
            else _DOWNLOADED.get(remote)
        )
        if path is not None and path.is_file():
            size, sha256 = path.stat().st_size, _known_sha256(path)
        else:
            size, sha256 = remote.size, remote.sha256.strip().lower() if remote.sha256 else None
        published = remote.published
        releases.append(
            {
                "url": remote.url,
                "filename": remote.filename,
                "size": size,
                "sha256": sha256 or None,
                "published": (
                    {
                        "algorithm": published[0],
                        "checksum": published[1],
                        "source": remote.checksum_source or "not recorded",
                    }
                    if published
                    else "none published"
                ),
            }
        )
    arranged: dict = {}
    by_folder: dict[str, dict[str, str | os.PathLike]] = {}
    for rel, path in files.items():
        parent, _, name = pathlib.PurePath(rel).as_posix().rpartition("/")
        by_folder.setdefault(parent, {})[name] = path
    for parent, members in sorted(by_folder.items()):
        prefix = f"{parent}/" if parent else ""
        if len(members) > FOLDER_DIGEST_OVER:  # one entry for the folder (Pathfinder's PNGs)
            arranged[prefix + "*"] = _folder_digest(members)
            continue
        for name, path in sorted(members.items()):
            arranged[prefix + name] = {"size": os.path.getsize(path), "sha256": sha256_file(path)}
    manifest = {"format": 1, "releases": releases, "files": arranged}
    if origin is not None:
        manifest["origin"] = dict(origin)
    target = folder / MANIFEST
    _atomic_write_text(target, json.dumps(manifest, indent=1) + "\n")
    return target


def check_manifest(folder: str | os.PathLike) -> list[str]:
    """One line per problem with the files `folder/MANIFEST.json` lists: missing, of another
    size, or of another sha256 (each line names the file); [] when all match. A missing or
    unreadable MANIFEST.json is one problem line. Release files are not checked (they may
    have been deleted after extraction)."""
    folder = pathlib.Path(folder)
    path = folder / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        listed = manifest["files"]
        if not isinstance(listed, dict):
            raise TypeError("'files' is not an object")
    except FileNotFoundError:
        return [f"{path}: missing (the data was not arranged by attnbench-data, or not finished)"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        return [f"{path}: unreadable ({e}); arrange the data again"]
    problems = []
    for rel, want in listed.items():
        file = folder / rel
        if rel == "*" or rel.endswith("/*"):  # a folder's digest (FOLDER_DIGEST_OVER)
            problems += _check_folder(file.parent, want)
            continue
        try:
            size = file.stat().st_size
        except FileNotFoundError:
            problems.append(f"{file}: listed in {MANIFEST} but missing")
            continue
        if size != want.get("size"):
            problems.append(f"{file}: {size:,} bytes where {MANIFEST} lists {want.get('size')}")
            continue
        got = sha256_file(file)
        if got != want.get("sha256"):
            problems.append(f"{file}: sha256 {got} where {MANIFEST} lists {want.get('sha256')}")
    return problems


def _check_folder(directory: pathlib.Path, want: Mapping) -> list[str]:
    """The problem with a folder recorded as one digest (count, size, then content), or []."""
    if not directory.is_dir():
        return [f"{directory}/: listed in {MANIFEST} but missing"]
    members = {p.name: p for p in directory.iterdir() if p.is_file() and p.name != MANIFEST}
    if len(members) != want.get("files"):
        return [f"{directory}/: {len(members):,} files where {MANIFEST} lists {want.get('files')}"]
    got = _folder_digest(members)
    if got["size"] != want.get("size"):
        return [f"{directory}/: {got['size']:,} bytes where {MANIFEST} lists {want.get('size')}"]
    if got["sha256"] != want.get("sha256"):
        return [f"{directory}/: a file's contents differ from those {MANIFEST} records"]
    return []
