"""`python -m rankbench.data list | check | fetch`: the catalogue's sources, the shipped checksum
manifest, and downloads from a local HTTP server on 127.0.0.1 (truncated transfer and resume,
a server that ignores ranges, a wrong checksum, a server error, files that fail the manifest):
clear messages, and nothing half-written left where it would look complete."""

from __future__ import annotations

import hashlib
import io
import lzma
import re
import tarfile
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from rankbench.data.__main__ import main
from rankbench.data.fetch import DOWNLOADS, FetchError, fetch_dataset
from rankbench.data.sources import check_dataset, manifest, manifest_for


@pytest.fixture(autouse=True)
def _private_env(tmp_path, monkeypatch):
    monkeypatch.setenv("RANKBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("RANKBENCH_DATA", raising=False)


# ---------------------------------------------------------------- a local server


class _Handler(BaseHTTPRequestHandler):
    files: dict[str, bytes] = {}  # noqa: RUF012 (set per test by the fixture)
    plan: dict = {}  # noqa: RUF012
    requests: list = []  # noqa: RUF012

    def log_message(self, *args):  # quiet
        pass

    def do_GET(self):  # noqa: N802 (http.server's name)
        self.requests.append({"path": self.path, "range": self.headers.get("Range")})
        if self.plan.get("status"):
            self.send_error(self.plan["status"], "fixture failure")
            return
        body = self.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        start = 0
        rng = self.headers.get("Range")
        if rng and self.plan.get("ranges", True):
            start = int(rng.split("=")[1].split("-")[0])
            if start >= len(body):
                self.send_error(416)
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(len(body) - start))
        self.end_headers()
        if self.plan.get("truncate", 0) > 0:  # announce everything, send half, hang up
            self.plan["truncate"] -= 1
            self.wfile.write(body[start: start + (len(body) - start) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body[start:])


@pytest.fixture
def server():
    _Handler.files, _Handler.plan, _Handler.requests = {}, {}, []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd, f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def _tar_gz(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _td2003_files(prefix="letor/") -> dict[str, bytes]:
    out = {}
    for fold in range(1, 6):
        for k, split in enumerate(("train", "vali", "test")):
            q = 10 * fold + k
            # padding makes the archive big enough that half of it is a real truncation
            pad = "".join(f"0 qid:{q} {j % 64 + 1}:0.{j:04d}\n" for j in range(400))
            out[f"{prefix}TD2003/QueryLevelNorm/Fold{fold}/{split}.txt"] = (
                f"1 qid:{q} 1:0.5\n{pad}".encode())
    return out


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _left_behind(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


# ---------------------------------------------------------------- fetch


def _served_td2003(server, tmp_path, path="/td2003.tar.gz"):
    """(url, archive bytes, empty data root) with the TD2003 fixture served at ``path``."""
    _, base = server
    archive = _tar_gz(_td2003_files())
    _Handler.files[path] = archive
    root = tmp_path / "data"
    root.mkdir()
    return f"{base}{path}", archive, root


def test_fetch_downloads_checks_unpacks_and_places(server, tmp_path, capsys):
    url, archive, root = _served_td2003(server, tmp_path, "/gov/td2003.tar.gz")
    rc = main(["fetch", "td2003", "--root", str(root), "--url", url, "--sha256", _sha(archive)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "sha256 of td2003.tar.gz verified" in out and "placed at" in out
    # the archive's own top folder (letor/) is not carried over: the catalogue's layout is
    assert (root / "TD2003" / "QueryLevelNorm" / "Fold3" / "vali.txt").is_file()
    assert not (root / DOWNLOADS).exists()
    from rankbench.data import load_fold

    assert load_fold("td2003", 2, "test", root=root).n_queries == 1
    assert main(["check", "td2003", "--root", str(root)]) == 0
    assert "no checksum known for this data set: only the layout was checked" in capsys.readouterr().out
    # a second fetch does not overwrite
    assert main(["fetch", "td2003", "--root", str(root), "--url", url, "--sha256", _sha(archive)]) == 1
    assert "exists already" in capsys.readouterr().err


def test_truncated_download_leaves_a_part_file_and_the_next_run_resumes(server, tmp_path, capsys):
    url, archive, root = _served_td2003(server, tmp_path)
    _Handler.plan["truncate"] = 1
    args = ["fetch", "td2003", "--root", str(root), "--url", url, "--sha256", _sha(archive)]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "interrupted after" in err and "run the same command again to resume" in err
    part = root / DOWNLOADS / "td2003.tar.gz.part"
    assert _left_behind(root) == [DOWNLOADS, f"{DOWNLOADS}/td2003.tar.gz.part"]  # only the .part
    half = part.stat().st_size
    assert 0 < half < len(archive)
    assert main(args) == 0, capsys.readouterr()
    assert "resuming at" in capsys.readouterr().out
    assert _Handler.requests[-1]["range"] == f"bytes={half}-"
    assert (root / "TD2003" / "QueryLevelNorm" / "Fold1" / "train.txt").is_file()
    assert not (root / DOWNLOADS).exists()


def test_a_server_that_ignores_the_range_restarts_the_download(server, tmp_path, capsys):
    url, archive, root = _served_td2003(server, tmp_path)
    _Handler.plan.update(truncate=1, ranges=False)
    args = ["fetch", "td2003", "--root", str(root), "--url", url, "--sha256", _sha(archive)]
    assert main(args) == 1
    assert main(args) == 0
    assert "does not resume; downloading from the start" in capsys.readouterr().out
    assert (root / "TD2003").is_dir()


def test_wrong_checksum_deletes_the_download_and_unpacks_nothing(server, tmp_path, capsys):
    url, archive, root = _served_td2003(server, tmp_path)
    wrong = _sha(archive + b"x")
    assert main(["fetch", "td2003", "--root", str(root), "--url", url, "--sha256", wrong]) == 1
    err = capsys.readouterr().err
    assert f"checksum mismatch for {url}: sha256 {_sha(archive)}, expected {wrong}" in err
    assert "the download was deleted (nothing was unpacked)" in err
    assert _left_behind(root) == [DOWNLOADS] or _left_behind(root) == []
    assert not (root / "TD2003").exists()


@pytest.mark.parametrize("status", [500, 404])
def test_server_error_is_named_and_nothing_is_left(server, tmp_path, capsys, status):
    _, base = server
    _Handler.plan["status"] = status
    root = tmp_path / "data"
    root.mkdir()
    assert main(["fetch", "td2003", "--root", str(root), "--url", f"{base}/td2003.tar.gz",
                 "--sha256", "0" * 64]) == 1
    err = capsys.readouterr().err
    assert f"HTTP {status}" in err and f"from {base}/td2003.tar.gz; nothing was saved" in err
    assert _left_behind(root) == []


def test_no_checksum_known_is_refused_unless_unverified(server, tmp_path, capsys):
    url, archive, root = _served_td2003(server, tmp_path)
    assert main(["fetch", "td2003", "--root", str(root), "--url", url]) == 1
    assert "no checksum known" in capsys.readouterr().err
    assert _Handler.requests == [] and _left_behind(root) == []
    assert main(["fetch", "td2003", "--root", str(root), "--url", url, "--unverified"]) == 0
    assert "placed unverified (no checksum known)" in capsys.readouterr().out


def test_files_that_fail_the_shipped_manifest_are_not_placed(server, tmp_path):
    """MQ2008's files have known sums: an archive holding other bytes under the right names is
    refused after unpacking, even with the archive's own checksum right."""
    _, base = server
    files = {f"MQ2008/Fold{k}/{s}.txt": f"0 qid:{k} 1:0.1\n".encode()
             for k in range(1, 6) for s in ("train", "vali", "test")}
    archive = _tar_gz(files)
    _Handler.files["/MQ2008.tar.gz"] = archive
    root = tmp_path / "data"
    root.mkdir()
    with pytest.raises(FetchError, match=r"failed the check; nothing was placed:\n  MQ2008/Fold1/test.txt: mismatch"):
        fetch_dataset("mq2008", root, url=f"{base}/MQ2008.tar.gz", sha256=_sha(archive), progress=None)
    assert not (root / "MQ2008").exists()
    assert not any((root / DOWNLOADS).glob("*.unpack"))


def test_real_mq2008_from_a_local_mirror_is_verified_file_by_file(server, tmp_path, data_root, capsys):
    """The team's MQ2008 copy zipped and served without an archive sum: every file is verified
    against the shipped manifest, so the fetch needs no --sha256 and no --unverified."""
    src = data_root / "MQ2008"
    if not src.is_dir():
        pytest.skip("MQ2008 not present")
    _, base = server
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for p in sorted(src.rglob("*")):
            if p.is_file():
                # uncompressed as the original distribution has them, with CRLF line endings
                data = lzma.open(p).read() if p.suffix == ".xz" else p.read_bytes()
                name = p.relative_to(data_root).as_posix().removesuffix(".xz")
                zf.writestr(name, data.replace(b"\n", b"\r\n"))
    _Handler.files["/mirror/MQ2008.zip"] = buf.getvalue()
    root = tmp_path / "data"
    root.mkdir()
    assert main(["fetch", "mq2008", "--root", str(root), "--url", f"{base}/mirror/MQ2008.zip"]) == 0
    assert main(["check", "mq2008", "--root", str(root)]) == 0
    out = capsys.readouterr().out
    assert "sha256 of the uncompressed content (CRLF read as LF)" in out and "mq2008: OK (17 ok)" in out


def test_web_drive_and_click_through_sets_print_the_steps(capsys, tmp_path):
    assert main(["fetch", "yahoo_set1", "--root", str(tmp_path)]) == 2
    out = capsys.readouterr().out
    assert "sign in and accept the licence" in out and "webscope.sandbox.yahoo.com" in out
    assert f"{tmp_path}/ltrc_yahoo/set1.{{train,valid,test}}.txt" in out
    assert main(["fetch", "mq2008", "--root", str(tmp_path)]) == 2
    out = capsys.readouterr().out
    assert "follow its link to the web drive" in out and "Download MQ2008.rar." in out
    assert "rankbench data fetch mq2008 --archive PATH/MQ2008.rar` (a .rar needs unrar" in out
    assert _left_behind(tmp_path) == []


def test_a_missing_data_root_is_named_and_not_created(tmp_path, capsys):
    root = tmp_path / "nope"
    assert main(["fetch", "istella_s", "--root", str(root)]) == 1
    assert f"the data root {root} does not exist" in capsys.readouterr().err
    assert not root.exists()


# ---------------------------------------------------------------- manifest, check, list


def test_manifest_covers_ohsumed_and_mq2008_exactly(data_root):
    """Every OHSUMED / MQ2008 line of the team's SHA256SUMS is in the shipped manifest, unchanged,
    and nothing else of theirs: the files on disk are exactly the manifest's."""
    sums = data_root / "SHA256SUMS"
    if not sums.is_file():
        pytest.skip("the data root has no SHA256SUMS")
    theirs = {line.split(None, 1)[1].strip().removeprefix("./"): line.split()[0]
              for line in sums.read_text().splitlines()
              if line.split(None, 1)[1].strip().startswith(("./OHSUMED/", "./MQ2008/"))}
    ours = {}
    for e in manifest_for("ohsumed") + manifest_for("mq2008"):
        for suffix, digest in e.stored.items():
            ours[e.path + suffix] = digest
    assert ours == theirs
    on_disk = {p.relative_to(data_root).as_posix() for top in ("OHSUMED", "MQ2008")
               for p in (data_root / top).rglob("*") if p.is_file()}
    assert on_disk == set(ours)
    assert all(e.content for e in manifest_for("ohsumed") + manifest_for("mq2008"))
    assert {e.path.split("/")[0] for e in manifest().values() if e.stored} == {"OHSUMED", "MQ2008"}


def test_check_passes_on_the_real_data_and_names_a_corrupt_or_missing_file(data_root, tmp_path, capsys):
    if not (data_root / "MQ2008").is_dir():
        pytest.skip("MQ2008 not present")
    assert main(["check", "mq2008", "--root", str(data_root)]) == 0
    assert "mq2008: OK (17 ok)" in capsys.readouterr().out
    # a copy with one byte changed (decompressed, so the content sum is what is compared)
    root = tmp_path / "data"
    for p in (data_root / "MQ2008").rglob("*"):
        if p.is_file():
            dest = root / p.relative_to(data_root)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(p.read_bytes())
    bad = root / "MQ2008" / "Fold2" / "vali.txt.xz"
    data = bytearray(lzma.open(bad).read())
    data[100] = ord("9") if data[100] != ord("9") else ord("8")
    bad.unlink()
    (root / "MQ2008" / "Fold2" / "vali.txt").write_bytes(bytes(data))
    (root / "MQ2008" / "Fold4" / "test.txt.xz").unlink()
    (root / "MQ2008" / "readme.txt").unlink()  # optional: not read by rankbench
    (root / "MQ2008" / "notes.txt").write_text("mine")
    assert main(["check", "mq2008", "--root", str(root)]) == 1
    out = capsys.readouterr().out
    assert re.search(r"MQ2008/Fold2/vali.txt +mismatch: content sha256 [0-9a-f]{64} differs", out)
    assert re.search(r"MQ2008/Fold4/test.txt +missing\n", out)
    assert re.search(r"MQ2008/readme.txt +absent: optional", out)
    assert "MQ2008/notes.txt  not in the manifest (left alone)" in out
    assert "mq2008: FAILED (14 ok, 1 mismatch, 1 missing, 1 absent)" in out


def test_check_accepts_a_whole_variant_absent_but_not_a_partial_one(data_root, tmp_path):
    if not (data_root / "OHSUMED").is_dir():
        pytest.skip("OHSUMED not present")
    root = tmp_path / "data"
    src = data_root / "OHSUMED" / "QueryLevelNorm"
    for p in src.rglob("*"):
        if p.is_file():
            dest = root / p.relative_to(data_root)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(p.read_bytes())
    report = check_dataset("ohsumed", root)
    assert report.ok, report.lines()
    assert sum(f.status == "ok" for f in report.files) == 15
    (root / "OHSUMED" / "QueryLevelNorm" / "Fold5" / "train.txt.xz").unlink()
    assert not check_dataset("ohsumed", root).ok


def test_list_names_every_catalogued_set_with_status_place_and_source(tmp_path, capsys):
    from rankbench.data import list_datasets

    (tmp_path / "TD2003").mkdir()
    assert main(["list", "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for name in list_datasets():
        assert f"  {name} " in out
    assert "istella_s" in out and "direct" in out and "http://library.istella.it/dataset/istella-s-letor.tar.gz" in out
    assert f"looked in {tmp_path}/MQ2008/Fold{{1..5}}/{{train,vali,test}}.txt" in out
    line = next(x for x in out.splitlines() if x.startswith("  mq2008 "))
    assert " absent " in line and "web-drive" in line and "sha256 known" in line
    line = next(x for x in out.splitlines() if x.startswith("  yahoo_set1 "))
    assert "click-through" in line and "no checksum known" in line
