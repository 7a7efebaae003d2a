"""Tests of attnbench/data/fetch.py: downloads against a local HTTP server that answers Range
requests and can cut a connection (resume, restart, checksums, network errors, local copies),
safe extraction, staged directories and manifests. Nothing leaves 127.0.0.1."""

from __future__ import annotations

import errno
import gzip
import hashlib
import io
import json
import os
import random
import socket
import stat
import tarfile
import threading
import time
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from attnbench import errors
from attnbench.data import fetch

BODY = random.Random(0).randbytes(300_000)
SHA256 = hashlib.sha256(BODY).hexdigest()
MD5 = hashlib.md5(BODY).hexdigest()
CHUNK = 1 << 14


class _Server:
    """A file server on 127.0.0.1: answers `Range: bytes=N-` with 206 (416 past the end)
    unless `ignore_range`; `cut_after` (one response) sends that many bytes of the body and
    closes the connection; `stall` (seconds) waits before answering; `requests` lists
    (path, Range header or None) of every request."""

    def __init__(self, files):
        self.files = dict(files)
        self.requests: list[tuple[str, str | None]] = []
        self.statuses: list[int] = []
        self.ignore_range = False
        self.cut_after: int | None = None
        self.stall = 0.0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                rng = self.headers.get("Range")
                server.requests.append((self.path, rng))
                if server.stall:
                    time.sleep(server.stall)
                body = server.files.get(self.path)
                if body is None:
                    return self._answer(404, b"not found", {})
                status, headers, start = 200, {}, 0
                if rng and not server.ignore_range:
                    start = int(rng.removeprefix("bytes=").split("-")[0])
                    if start >= len(body):
                        return self._answer(416, b"", {"Content-Range": f"bytes */{len(body)}"})
                    status = 206
                    headers["Content-Range"] = f"bytes {start}-{len(body) - 1}/{len(body)}"
                self._answer(status, body[start:], headers)

            def _answer(self, status, payload, headers):
                server.statuses.append(status)
                self.send_response(status)
                self.send_header("Content-Length", str(len(payload)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                cut, server.cut_after = server.cut_after, None
                try:
                    if cut is None:
                        self.wfile.write(payload)
                        return
                    self.wfile.write(payload[:cut])
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                    self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def url(self, path="/data.bin"):
        return self.base + path


@pytest.fixture
def server(monkeypatch):
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("no_proxy", "*")
    srv = _Server({"/data.bin": BODY})
    thread = threading.Thread(target=srv.httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield srv
    srv.httpd.shutdown()
    srv.httpd.server_close()


def _remote(url, **kw):
    kw.setdefault("size", len(BODY))
    return fetch.Remote(url, "data.bin", checksum_source="the test's own hash", **kw)


def _get(remote, dest, **kw):
    return fetch.download(remote, dest, progress=False, chunk=CHUNK, timeout=5, **kw)


# ----------------------------------------------------------------------------------- download


@pytest.mark.parametrize("checksum", ["sha256", "md5"])
def test_download_checks_the_published_checksum(server, tmp_path, checksum):
    remote = _remote(server.url(), **{checksum: SHA256 if checksum == "sha256" else MD5})
    path = _get(remote, tmp_path / "dl")
    assert path == tmp_path / "dl" / "data.bin" and path.read_bytes() == BODY
    assert not (tmp_path / "dl" / "data.bin.part").exists()
    assert server.requests == [("/data.bin", None)]
    assert _get(remote, tmp_path / "dl") == path  # a verified final file is reused
    assert len(server.requests) == 1


def test_interrupted_download_keeps_the_part_and_the_rerun_resumes_with_a_range(server, tmp_path):
    remote = _remote(server.url(), sha256=SHA256)
    server.cut_after = 100_000
    with pytest.raises(errors.DataError) as e:
        _get(remote, tmp_path)
    message = str(e.value)
    assert server.url() in message and "resume" in message and "--from FILE_OR_URL" in message
    part = tmp_path / "data.bin.part"
    assert part.stat().st_size == 100_000 and not (tmp_path / "data.bin").exists()
    path = _get(remote, tmp_path)
    assert server.requests[-1] == ("/data.bin", "bytes=100000-") and server.statuses[-1] == 206
    assert path.read_bytes() == BODY and not part.exists()


def test_a_server_ignoring_range_restarts_from_byte_zero(server, tmp_path):
    (tmp_path / "data.bin.part").write_bytes(b"x" * 5000)  # wrong bytes: must not be kept
    server.ignore_range = True
    path = _get(_remote(server.url(), sha256=SHA256), tmp_path)
    assert server.requests == [("/data.bin", "bytes=5000-")] and server.statuses == [200]
    assert path.read_bytes() == BODY


def test_a_complete_part_answered_416_is_finished_without_a_body(server, tmp_path):
    (tmp_path / "data.bin.part").write_bytes(BODY)
    path = _get(_remote(server.url(), sha256=SHA256), tmp_path)
    assert server.statuses == [416] and path.read_bytes() == BODY


def test_a_checksum_mismatch_leaves_neither_the_file_nor_the_part(server, tmp_path):
    wrong = "0" * 64
    with pytest.raises(errors.DataError) as e:
        _get(_remote(server.url(), sha256=wrong), tmp_path)
    message = str(e.value)
    assert "data.bin" in message and wrong in message and SHA256 in message
    assert "the test's own hash" in message and server.url() in message
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(errors.DataError, match=f"md5 {MD5} where {'f' * 32} is expected"):
        _get(_remote(server.url(), md5="F" * 32), tmp_path)  # published hex in any case
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(errors.DataError, match="bytes where 299,999 are expected"):
        _get(_remote(server.url(), size=len(BODY) - 1), tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_bad_final_file_is_named_and_not_replaced(server, tmp_path):
    (tmp_path / "data.bin").write_bytes(b"not it")
    with pytest.raises(errors.DataError, match="delete it") as e:
        _get(_remote(server.url(), md5=MD5), tmp_path)
    assert str(tmp_path / "data.bin") in str(e.value)
    assert (tmp_path / "data.bin").read_bytes() == b"not it" and server.requests == []


def test_network_errors_name_the_url_and_say_how_to_go_on(server, tmp_path):
    with pytest.raises(errors.DataError, match="HTTP 404") as e:
        _get(_remote(server.url("/missing.bin")), tmp_path)
    assert server.url("/missing.bin") in str(e.value) and "--from" in str(e.value)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}/data.bin"
    with pytest.raises(errors.DataError, match="run the same command again to resume") as e:
        _get(_remote(closed), tmp_path)
    assert closed in str(e.value)
    server.stall = 1.0
    with pytest.raises(errors.DataError, match="no answer within 0.3 s"):
        fetch.download(_remote(server.url()), tmp_path, progress=False, timeout=0.3)
    assert not (tmp_path / "data.bin").exists()


def test_source_takes_a_local_file_a_file_url_or_a_mirror(server, tmp_path):
    copy = tmp_path / "Downloads" / "release.bin"
    copy.parent.mkdir()
    copy.write_bytes(BODY)
    remote = _remote("http://127.0.0.1:9/unreachable", sha256=SHA256)
    for i, source in enumerate([str(copy), copy.as_uri(), server.url()]):
        path = _get(remote, tmp_path / f"dl{i}", source=source)
        assert path.read_bytes() == BODY and path.name == "data.bin"
    assert copy.read_bytes() == BODY  # copied, not moved
    bad = tmp_path / "bad.bin"
    bad.write_bytes(BODY[:-1] + bytes([BODY[-1] ^ 1]))  # one bit off
    with pytest.raises(errors.DataError) as e:
        _get(remote, tmp_path / "dl3", source=bad.as_uri())
    assert bad.as_uri() in str(e.value) and SHA256 in str(e.value)
    assert list((tmp_path / "dl3").iterdir()) == [] and bad.exists()
    with pytest.raises(errors.DataError, match="is not a file"):
        _get(remote, tmp_path / "dl4", source=tmp_path / "nothing.bin")


def test_without_a_published_checksum_the_manifest_records_the_computed_sha256(server, tmp_path):
    remote = fetch.Remote(server.url(), "data.bin")
    path = _get(remote, tmp_path / "dl")
    folder = tmp_path / "set"
    folder.mkdir()
    manifest = json.loads(fetch.write_manifest(folder, {}, remotes=[remote]).read_text())
    assert manifest["releases"] == [
        {
            "url": server.url(),
            "filename": "data.bin",
            "size": len(BODY),
            "sha256": SHA256,
            "published": "none published",
        }
    ]
    assert path.read_bytes() == BODY


def test_progress_is_one_rewritten_line_when_forced(server, tmp_path, capsys):
    fetch.download(_remote(server.url()), tmp_path, progress=True, chunk=CHUNK)
    err = capsys.readouterr().err
    assert err.startswith("\rdata.bin: ") and err.endswith("\n") and err.count("\n") == 1
    assert "(100%)" in err and "MB/s" in err
    fetch.download(_remote(server.url()), tmp_path / "quiet", progress=False)
    assert capsys.readouterr().err == ""


# ------------------------------------------------------------------------------------ extract


def _tar(path, entries):
    """entries: (name, bytes) for files, or a TarInfo for anything else."""
    with tarfile.open(path, "w:gz") as tf:
        for entry in entries:
            if isinstance(entry, tarfile.TarInfo):
                tf.addfile(entry)
            else:
                info = tarfile.TarInfo(entry[0])
                info.size = len(entry[1])
                tf.addfile(info, io.BytesIO(entry[1]))
    return path


def _link(name, target, kind=tarfile.SYMTYPE):
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info


@pytest.mark.parametrize(
    "bad, why",
    [
        (("../x", b"evil"), "'..' component"),
        (("data/../../x", b"evil"), "'..' component"),
        (("/abs", b"evil"), "absolute path"),
        (_link("data/out", "../../etc/passwd"), "symbolic link"),
        (_link("data/hard", "/etc/passwd", tarfile.LNKTYPE), "hard link"),
        (_link("data/fifo", "", tarfile.FIFOTYPE), "device file or fifo"),
    ],
)
def test_extract_refuses_unsafe_tar_members_and_writes_nothing(tmp_path, bad, why):
    archive = _tar(tmp_path / "a.tar.gz", [("data/ok.txt", b"fine"), bad])
    dest = tmp_path / "out"
    with pytest.raises(errors.DataError, match=why) as e:
        fetch.extract(archive, dest)
    name = bad.name if isinstance(bad, tarfile.TarInfo) else bad[0]
    assert str(archive) in str(e.value) and repr(name) in str(e.value)
    assert not dest.exists() and not (tmp_path / "x").exists()


def test_extract_refuses_unsafe_zip_members_and_writes_nothing(tmp_path):
    for name, attr, why in [
        ("../x", 0, "'..' component"),
        ("/abs", 0, "absolute path"),
        ("link", (stat.S_IFLNK | 0o777) << 16, "symbolic link"),
        ("fifo", (stat.S_IFIFO | 0o644) << 16, "device file or fifo"),
    ]:
        archive = tmp_path / "a.zip"
        with zipfile.ZipFile(archive, "w") as zf:
            zf.writestr("ok.txt", b"fine")
            info = zipfile.ZipInfo(name)
            info.create_system, info.external_attr = 3, attr
            zf.writestr(info, b"../../etc/passwd")
        dest = tmp_path / "out"
        with pytest.raises(errors.DataError, match=why) as e:
            fetch.extract(archive, dest)
        assert str(archive) in str(e.value) and repr(name) in str(e.value)
        assert not dest.exists() and not (tmp_path / "x").exists()


def test_extract_round_trips_tar_gz_zip_and_gz_and_filters_members(tmp_path):
    files = {"set/a.txt": b"alpha", "set/sub/b.bin": bytes(range(256)), "set/c.txt": b"gamma"}
    archive = _tar(tmp_path / "r.tgz", files.items())
    got = fetch.extract(archive, tmp_path / "t")
    assert sorted(got) == sorted(tmp_path / "t" / n for n in files)
    assert all((tmp_path / "t" / n).read_bytes() == b for n, b in files.items())

    with zipfile.ZipFile(tmp_path / "r.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("set/", b"")  # a directory entry: created, not returned
        for n, b in files.items():
            zf.writestr(n, b)
    got = fetch.extract(tmp_path / "r.zip", tmp_path / "z", members=lambda n: n.endswith(".txt"))
    assert sorted(got) == [tmp_path / "z" / "set/a.txt", tmp_path / "z" / "set/c.txt"]
    assert not (tmp_path / "z" / "set/sub").exists()

    (tmp_path / "labels.csv.gz").write_bytes(gzip.compress(b"1,2,3\n"))
    assert fetch.extract(tmp_path / "labels.csv.gz", tmp_path / "g") == [
        tmp_path / "g" / "labels.csv"
    ]
    assert (tmp_path / "g" / "labels.csv").read_bytes() == b"1,2,3\n"

    # a tar.gz published under a plain .gz name (LRA's lra_release.gz) is unpacked as a tar
    release = _tar(tmp_path / "r2.tgz", files.items()).rename(tmp_path / "lra_release.gz")
    got = fetch.extract(release, tmp_path / "l", members=lambda n: n.startswith("set/sub"))
    assert got == [tmp_path / "l" / "set/sub/b.bin"]
    assert (tmp_path / "l" / "set/sub/b.bin").read_bytes() == bytes(range(256))


def test_extract_calls_a_damaged_archive_damaged(tmp_path):
    archive = _tar(tmp_path / "d.tar.gz", [("a", random.Random(1).randbytes(100_000))])
    archive.write_bytes(archive.read_bytes()[:5000])
    with pytest.raises(errors.DataError, match="damaged or truncated"):
        fetch.extract(archive, tmp_path / "out")


# ------------------------------------------------------------------------------------- staged


@pytest.mark.parametrize(
    "exc",
    [
        RuntimeError("boom"),
        KeyboardInterrupt(),
        OSError(errno.ENOSPC, "No space left on device"),
    ],
)
def test_staged_leaves_nothing_and_the_old_dir_untouched_when_the_block_raises(tmp_path, exc):
    final = tmp_path / "cifar10"
    final.mkdir()
    (final / "old.txt").write_text("old")
    with pytest.raises(type(exc)):
        with fetch.staged(final) as staging:
            assert staging == tmp_path / f".cifar10.staging-{os.getpid()}" and staging.is_dir()
            (staging / "half.bin").write_bytes(b"half")
            raise exc
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cifar10"]
    assert [p.name for p in final.iterdir()] == ["old.txt"]


def test_staged_replaces_the_final_dir_and_removes_stale_staging(tmp_path):
    final = tmp_path / "cifar10"
    final.mkdir()
    (final / "old.txt").write_text("old")
    stale = tmp_path / ".cifar10.staging-999999999"  # a killed run's (no such pid)
    stale_old = tmp_path / ".cifar10.old-999999998"
    running = tmp_path / f".cifar10.staging-{os.getppid()}"  # a running process's: kept
    for d in (stale, stale_old, running):
        d.mkdir()
        (d / "f").write_text("x")
    with fetch.staged(final) as staging:
        assert not stale.exists() and not stale_old.exists() and running.exists()
        (staging / "new.txt").write_text("new")
    assert [p.name for p in final.iterdir()] == ["new.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["cifar10", running.name])
    with fetch.staged(tmp_path / "fresh" / "set") as staging:  # no final dir yet
        (staging / "a").write_text("a")
    assert (tmp_path / "fresh" / "set" / "a").read_text() == "a"


# ----------------------------------------------------------------------------------- manifest


def test_manifest_catches_a_missing_file_a_changed_byte_and_a_missing_manifest(tmp_path):
    folder = tmp_path / "set"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.bin").write_bytes(b"abcdef")
    (folder / "sub" / "b.bin").write_bytes(b"123")
    (folder / "c.bin").write_bytes(b"size")
    release = tmp_path / "dl" / "r.tar"
    release.parent.mkdir()
    release.write_bytes(b"release")
    remote = fetch.Remote("https://example.org/r.tar", "r.tar", md5="abc", checksum_source="site")
    files = {str(p.relative_to(folder)): p for p in folder.rglob("*.bin")}
    path = fetch.write_manifest(folder, files, remotes=[remote], download_dir=release.parent)
    assert path == folder / "MANIFEST.json" and [p.name for p in folder.glob(".*")] == []
    manifest = json.loads(path.read_text())
    assert manifest["files"]["sub/b.bin"] == {
        "size": 3,
        "sha256": hashlib.sha256(b"123").hexdigest(),
    }
    assert manifest["releases"][0]["sha256"] == hashlib.sha256(b"release").hexdigest()
    assert manifest["releases"][0]["published"] == {
        "algorithm": "md5",
        "checksum": "abc",
        "source": "site",
    }
    assert fetch.check_manifest(folder) == []

    (folder / "a.bin").write_bytes(b"abcdeF")  # same size, one byte changed
    (folder / "sub" / "b.bin").unlink()
    (folder / "c.bin").write_bytes(b"longer")
    problems = fetch.check_manifest(folder)
    assert len(problems) == 3
    assert any(str(folder / "a.bin") in p and "sha256" in p for p in problems)
    assert any(str(folder / "sub" / "b.bin") in p and "missing" in p for p in problems)
    assert any(str(folder / "c.bin") in p and "6 bytes" in p for p in problems)

    path.unlink()
    (problem,) = fetch.check_manifest(folder)
    assert "MANIFEST.json" in problem and "missing" in problem


def test_a_folder_of_many_files_is_one_manifest_entry_that_still_catches_changes(
    tmp_path, monkeypatch
):
    """Above FOLDER_DIGEST_OVER files a folder is recorded as count, size and one digest
    (LRA's Pathfinder PNGs); a changed, missing or extra file there is one problem line."""
    monkeypatch.setattr(fetch, "FOLDER_DIGEST_OVER", 5)
    imgs = tmp_path / "d" / "imgs"
    imgs.mkdir(parents=True)
    for i in range(6):
        (imgs / f"{i}.png").write_bytes(bytes([i]) * (i + 1))
    (tmp_path / "d" / "meta.txt").write_text("m")
    files = {str(p.relative_to(tmp_path / "d")): p for p in (tmp_path / "d").rglob("*.*")}
    fetch.write_manifest(tmp_path / "d", files, remotes=[])
    listed = json.loads((tmp_path / "d" / fetch.MANIFEST).read_text())["files"]
    assert sorted(listed) == ["imgs/*", "meta.txt"]
    assert listed["imgs/*"]["files"] == 6 and listed["imgs/*"]["size"] == 21
    assert fetch.check_manifest(tmp_path / "d") == []
    (imgs / "3.png").write_bytes(b"\x09" * 4)  # same size, other bytes
    assert fetch.check_manifest(tmp_path / "d") == [
        f"{imgs}/: a file's contents differ from those {fetch.MANIFEST} records"
    ]
    (imgs / "3.png").unlink()
    assert fetch.check_manifest(tmp_path / "d") == [
        f"{imgs}/: 5 files where {fetch.MANIFEST} lists 6"
    ]
