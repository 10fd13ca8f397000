"""``rankbench data fetch NAME``: download, check and unpack a data set into the data root.

Only where the source allows a direct download (``sources.toml``: ``method = "direct"``), or
from a URL / archive the user gives (``--url``, ``--archive``: e.g. a mirror, or the file a web
drive or a licence page handed out).  Every step leaves nothing half-written that looks
complete:

1. the archive downloads to ``<root>/.rankbench-downloads/<archive>.part``, resuming with an
   HTTP ``Range`` request where an earlier run stopped (a server that ignores the range
   restarts it); an interrupted transfer stays ``.part`` and says how to resume;
2. a known archive sha256 is checked before the ``.part`` is renamed; a wrong one deletes it;
3. the archive unpacks into ``<root>/.rankbench-downloads/<name>.unpack``; the folder holding
   the catalogue's layout is found in it, its files checked against the shipped manifest
   (``rankbench.data.sources``), and only then renamed into ``<root>/<folder>``.

A download that no sum can verify (no archive sum and no file sums known) is refused unless
``unverified=True``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Callable
from http.client import HTTPException
from pathlib import Path

from rankbench.data.catalog import FILE_FAMILIES, dataset_spec
from rankbench.data.sources import (
    _SUFFIXES,
    _layout_entries,
    check_dataset,
    dataset_folders,
    dataset_source,
    file_sha256,
    manifest_for,
)

DOWNLOADS = ".rankbench-downloads"
_CHUNK = 1 << 20


class FetchError(RuntimeError):
    """A download, check or unpack step failed; the message says what is left where."""


class ManualSteps(RuntimeError):  # noqa: N818 (not an error: what the user does instead)
    """The data set cannot be downloaded directly; ``steps`` are what the user does instead."""

    def __init__(self, name: str, steps: list[str]):
        super().__init__(f"{name} cannot be downloaded by rankbench")
        self.steps = steps


def _say(progress: Callable[[str], None] | None, msg: str) -> None:
    if progress is not None:
        progress(msg)


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"  # pragma: no cover


def download(url: str, dest: Path, sha256: str = "", *, timeout: float = 60.0,
             progress: Callable[[str], None] | None = print) -> Path:
    """Download ``url`` to ``dest`` through ``dest.part`` (resumed if present); check ``sha256``
    when given; ``dest`` exists only once complete (and verified). FetchError otherwise."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    if dest.exists():
        if sha256 and file_sha256(dest) != sha256:
            dest.unlink()
        else:
            _say(progress, f"{dest} already downloaded")
            return dest
    offset = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"User-Agent": "rankbench-data-fetch"})
    if offset:
        request.add_header("Range", f"bytes={offset}-")
    total = None
    try:
        try:
            resp = urllib.request.urlopen(request, timeout=timeout)  # noqa: S310 (http(s) only, checked)
        except urllib.error.URLError as exc:
            if not isinstance(exc, urllib.error.HTTPError):
                raise FetchError(f"cannot reach {url}: {exc.reason}; nothing was saved") from exc
            if exc.code == 416 and offset:  # the range starts at the end: the .part is whole
                resp = None
            else:
                raise FetchError(f"HTTP {exc.code} {exc.reason} from {url}; nothing was saved"
                                 + (f" (the partial {part} of {_human(offset)} is kept for a "
                                    "resume)" if offset else "")) from exc
        if resp is not None:
            with resp:
                status = resp.status
                if offset and status == 200:  # the server ignored the range: start again
                    _say(progress, f"{url}: the server does not resume; downloading from the start")
                    offset = 0
                elif status == 206:
                    start = _range_start(resp.headers.get("Content-Range", ""))
                    if start != offset:
                        raise FetchError(f"{url} answered a resume at byte {offset} with bytes "
                                         f"from {start}; delete {part} and fetch again")
                length = resp.headers.get("Content-Length")
                total = offset + int(length) if length is not None else None
                _say(progress, f"downloading {url} -> {part}"
                     + (f" (resuming at {_human(offset)})" if offset else "")
                     + (f", {_human(total)}" if total else ""))
                with part.open("ab" if offset else "wb") as fh:
                    for chunk in iter(lambda: resp.read(_CHUNK), b""):
                        fh.write(chunk)
    except (HTTPException, OSError) as exc:  # IncompleteRead, reset, timeout
        got = part.stat().st_size if part.exists() else 0
        if not got and part.exists():
            part.unlink()
        raise FetchError(f"download of {url} interrupted after {_human(got)}"
                         + (f" of {_human(total)}" if total else "")
                         + f" ({type(exc).__name__}: {exc}); run the same command again to resume"
                         + (f" from {part}" if got else "")) from exc
    got = part.stat().st_size
    if total is not None and got < total:
        raise FetchError(f"download of {url} interrupted after {_human(got)} of {_human(total)}; "
                         f"run the same command again to resume from {part}")
    if sha256:
        digest = file_sha256(part)
        if digest != sha256:
            part.unlink()
            raise FetchError(f"checksum mismatch for {url}: sha256 {digest}, expected {sha256}; "
                             "the download was deleted (nothing was unpacked)")
        _say(progress, f"sha256 of {dest.name} verified")
    os.replace(part, dest)
    return dest


def _range_start(content_range: str) -> int | None:
    # "bytes 100-199/200"
    try:
        return int(content_range.split()[1].split("-")[0])
    except (IndexError, ValueError):
        return None


# ---------------------------------------------------------------- unpacking


def _safe_member(base: Path, name: str) -> Path:
    target = (base / name).resolve()
    if not str(target).startswith(str(base.resolve()) + os.sep) and target != base.resolve():
        raise FetchError(f"archive member {name!r} would land outside {base}: refused")
    return target


def unpack(archive: Path, into: Path) -> None:
    """Unpack a .zip, .tar(.gz/.bz2/.xz) or (with unrar, 7z or bsdtar on PATH) .rar into ``into``;
    members that would land outside it are refused."""
    into.mkdir(parents=True, exist_ok=True)
    name = archive.name.lower()
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            for member in zf.namelist():
                _safe_member(into, member)
            zf.extractall(into)
        return
    if tarfile.is_tarfile(archive):
        with tarfile.open(archive) as tf:
            for member in tf.getmembers():
                _safe_member(into, member.name)
                if member.issym() or member.islnk():
                    raise FetchError(f"archive member {member.name!r} is a link: refused")
            tf.extractall(into)  # noqa: S202 (members checked above)
        return
    if name.endswith(".rar"):
        for tool, args in (("unrar", ["x", "-o+", str(archive), str(into) + os.sep]),
                           ("7z", ["x", f"-o{into}", str(archive)]),
                           ("bsdtar", ["-xf", str(archive), "-C", str(into)])):
            if shutil.which(tool):
                done = subprocess.run([tool, *args], capture_output=True, text=True)
                if done.returncode != 0:
                    raise FetchError(f"{tool} could not unpack {archive}: {done.stderr.strip()[-500:]}")
                return
        raise FetchError(f"{archive} is a RAR archive and none of unrar, 7z or bsdtar is installed "
                         "(e.g. `apt-get install unrar` or `libarchive-tools`); unpack it yourself "
                         "into the data root, then run `rankbench data check`")
    raise FetchError(f"{archive}: not a zip, tar or rar archive")


def _relative_layout(name: str) -> list[list[str]]:
    """Per variant, the files the registry reads, relative to the data set's top folder."""
    spec = dataset_spec(name)
    top = dataset_folders(name)[0]
    out = []
    for variant in spec.variants:
        entries = _layout_entries(name, variant)
        out.append([e.path[len(top) + 1:] for e in entries])
    return out


def locate_layout(name: str, tree: Path) -> Path | None:
    """The folder inside ``tree`` that holds ``name``'s layout (the catalogue's top folder, e.g.
    ``MQ2008``: ``Fold1/train.txt`` ... below it), searched breadth-first; None if absent."""
    layouts = _relative_layout(name)

    def holds(d: Path) -> bool:
        return any(all(any((d / f"{rel}{s}").is_file() for s in _SUFFIXES) for rel in files)
                   for files in layouts)

    queue = [tree]
    while queue:
        d = queue.pop(0)
        if holds(d):
            return d
        queue += sorted(p for p in d.iterdir() if p.is_dir())
    return None


# ---------------------------------------------------------------- fetch


def fetch_dataset(name: str, root: Path, *, url: str = "", sha256: str = "", archive: Path | None = None,
                  unverified: bool = False, progress: Callable[[str], None] | None = print) -> Path:
    """Download (or take ``archive``), check and unpack ``name`` into ``root``; returns the folder
    placed. ManualSteps when it needs a browser; FetchError for a failed step."""
    spec = dataset_spec(name)
    src = dataset_source(spec.name)
    given = bool(url) or archive is not None
    if src.method == "generated" or (src.method in ("click-through", "web-drive") and not given):
        raise ManualSteps(spec.name, src.steps(spec.name, root))
    if not root.is_dir():
        raise FetchError(f"the data root {root} does not exist: create it (mkdir -p {root}) or "
                         "point RANKBENCH_DATA / --root at another folder")
    if src.method == "sklearn":
        from sklearn.datasets import fetch_rcv1

        home = root / "rcv1"
        existed = home.exists()
        _say(progress, f"scikit-learn's fetch_rcv1 -> {home} (it checks its own sha256 sums)")
        try:
            fetch_rcv1(data_home=str(home), download_if_missing=True)
        except OSError as exc:  # URLError and socket errors included
            if not existed:  # fetch_rcv1 makes its folders before it downloads
                for d in sorted(home.rglob("*"), reverse=True) + [home]:
                    if d.is_dir() and not any(d.iterdir()):
                        d.rmdir()
            raise FetchError(f"scikit-learn's fetch_rcv1 could not download RCV1 into {home}: "
                             f"{exc}") from exc
        return home
    if spec.family not in FILE_FAMILIES:  # pragma: no cover - every file family has a source
        raise ManualSteps(spec.name, src.steps(spec.name, root))
    if not given:  # a direct source
        url, sha256 = src.url, sha256 or src.archive_sha256
    top = dataset_folders(spec.name)[0]
    target = root / top
    if target.exists():
        raise FetchError(f"{target} exists already: check it with `rankbench data check {spec.name}`, "
                         "or move it away to fetch again")
    file_sums = bool(manifest_for(spec.name))
    if not (sha256 or file_sums or unverified):
        raise FetchError(f"no checksum known for {url or archive} nor for {spec.name}'s files: the "
                         "download could not be verified; pass --sha256 SUM, or --unverified to "
                         "take it as it comes")
    work = root / DOWNLOADS
    if archive is None:
        parsed = urllib.parse.urlparse(url)
        if parsed.scheme not in ("http", "https"):
            raise FetchError(f"only http(s) URLs are fetched, got {url!r}")
        fname = Path(parsed.path).name or f"{spec.name}.archive"
        try:
            archive = download(url, work / fname, sha256, progress=progress)
        except FetchError:
            if work.is_dir() and not any(work.iterdir()):
                work.rmdir()  # no folder left behind by a download that saved nothing
            raise
    else:
        archive = Path(archive)
        if not archive.is_file():
            raise FetchError(f"{archive}: no such file")
        if sha256:
            digest = file_sha256(archive)
            if digest != sha256:
                raise FetchError(f"checksum mismatch for {archive}: sha256 {digest}, expected {sha256}")
    unpack_dir = work / f"{spec.name}.unpack"
    if unpack_dir.exists():
        shutil.rmtree(unpack_dir)
    try:
        _say(progress, f"unpacking {archive.name}")
        unpack(archive, unpack_dir)
        found = locate_layout(spec.name, unpack_dir)
        if found is None:
            want = spec.layout(spec.default_variant).split("/", 1)[1]
            raise FetchError(f"{archive.name} holds no folder with {spec.name}'s layout "
                             f"({top}/{want}); nothing was placed")
        staging = unpack_dir / ".staged"
        (staging / top).parent.mkdir(parents=True, exist_ok=True)
        os.replace(found, staging / top)
        report = check_dataset(spec.name, staging)
        if not report.ok:
            bad = [f"  {f.path}: {f.status}" + (f" ({f.detail})" if f.detail else "")
                   for f in report.files if f.status in ("mismatch", "missing", "ambiguous")]
            raise FetchError(f"{spec.name} from {archive.name} failed the check; nothing was "
                             "placed:\n" + "\n".join(bad[:10]))
        if not file_sums and not sha256:
            _say(progress, f"warning: {spec.name} placed unverified (no checksum known)")
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging / top, target)
    finally:
        shutil.rmtree(unpack_dir, ignore_errors=True)
    if archive.parent == work:
        archive.unlink()
        if not any(work.iterdir()):
            work.rmdir()
    _say(progress, f"{spec.name}: placed at {target}; `rankbench data check {spec.name}` "
                   + ("verified every file" if file_sums else "found the layout"))
    return target


__all__ = ["FetchError", "ManualSteps", "download", "fetch_dataset", "locate_layout", "unpack"]
