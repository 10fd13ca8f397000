"""Reading a LETOR file: options, line ends, the engine over a file or bytes, the parse cache."""

from __future__ import annotations

import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from rankbench.data import cache as parse_cache
from rankbench.data import ranking_data
from rankbench.data.letor.assemble import MAX_FEATURES, assemble
from rankbench.data.letor.compression import decompress_bytes, is_compressed
from rankbench.data.letor.errors import file_line_text, line_text
from rankbench.data.letor.nulls import NULL_POLICIES
from rankbench.data.letor.scanning import BOM
from rankbench.data.letor.streaming import (
    STREAM_BLOCK,
    LoneCR,
    file_blocks,
    memory_blocks,
    stream_parse,
)
from rankbench.data.ranking_data import MAX_LABEL, RankingData


def check_options(null_policy: str, n_features: int | None, max_features: int | None,
                  max_label: int | None) -> None:
    """ValueError naming a reader option that is out of its domain."""
    if null_policy not in NULL_POLICIES:
        raise ValueError(f"null_policy must be one of {NULL_POLICIES}, got {null_policy!r}")
    if n_features is not None and (int(n_features) != n_features or n_features < 1):
        raise ValueError(f"n_features must be a positive integer, got {n_features!r}")
    if max_features is not None and (int(max_features) != max_features or max_features < 1):
        raise ValueError(f"max_features must be a positive integer or None, got {max_features!r}")
    if max_label is not None and (isinstance(max_label, bool) or int(max_label) != max_label
                                  or max_label < 0):
        raise ValueError(f"max_label must be a non-negative integer or None, got {max_label!r}")


def parse_letor_bytes(
    data: bytes,
    path: str | Path = "<bytes>",
    *,
    null_policy: str = "error",
    sparse: bool | None = None,
    n_features: int | None = None,
    max_features: int | None = MAX_FEATURES,
    max_label: int | None = MAX_LABEL,
) -> tuple[Any, np.ndarray, np.ndarray, dict[str, Any]]:
    """Parse decompressed LETOR bytes into (X, y, qid, info) in file order. O(len(data)).

    ``info`` holds ``n_null`` (NULL values replaced), ``null_all_missing`` (NULLs whose
    query had no non-NULL value of that feature, filled with 0), ``lines`` (1-based
    line of each document) and ``docids`` (the ``#docid = ...`` values as a str array,
    None when no line has one).  LF, CRLF and lone CR all end a line.  The streaming
    engine counts rows and tokens in a first pass over blocks of the bytes and fills the CSR
    arrays, allocated once at their final size, in a second.
    """
    check_options(null_policy, n_features, max_features, max_label)
    data = plain_line_ends(data)
    parsed = stream_parse(lambda: memory_blocks(data), path, lambda line: line_text(data, line))
    return assemble(parsed, path, null_policy, sparse, n_features, max_features, max_label)


def plain_line_ends(data: bytes) -> bytes:
    """``data`` without a leading UTF-8 BOM and, when a CR ends a line alone, with every CR, LF
    and CRLF written as LF (as Python's universal newlines read them). O(len(data))."""
    if data[:3] == BOM:  # a UTF-8 byte-order mark some editors write
        data = data[3:]
    if has_lone_cr(data):
        # a CR alone ends a line (classic Mac OS files, or mixed line ends)
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return data


def has_lone_cr(data: bytes) -> bool:
    """Whether a CR not followed by LF occurs (O(len) memchr when there is no CR at all)."""
    if data.find(b"\r") < 0:
        return False
    buf = np.frombuffer(data, dtype=np.uint8)
    cr = np.flatnonzero(buf == 13)
    after = cr + 1
    return bool(after[-1] == buf.shape[0] or np.any(buf[after[after < buf.shape[0]]] != 10))


def parse_letor_file(
    path: str | Path,
    *,
    null_policy: str = "error",
    sparse: bool | None = None,
    n_features: int | None = None,
    max_features: int | None = MAX_FEATURES,
    max_label: int | None = MAX_LABEL,
    block: int = STREAM_BLOCK,
) -> tuple[Any, np.ndarray, np.ndarray, dict[str, Any]]:
    """``parse_letor_bytes`` of an uncompressed file, read in blocks of ``block`` bytes. O(file size).

    The whole file is never held: it is read twice (count, then fill), so the peak memory
    is the result plus two blocks.  A file with lone-CR line ends is
    read whole and normalised as ``parse_letor_bytes`` does.
    """
    path = Path(path)
    check_options(null_policy, n_features, max_features, max_label)
    try:
        parsed = stream_parse(lambda: file_blocks(path, block), path,
                               lambda line: file_line_text(path, line))
    except LoneCR:
        return parse_letor_bytes(path.read_bytes(), path, null_policy=null_policy, sparse=sparse,
                                 n_features=n_features, max_features=max_features,
                                 max_label=max_label)
    return assemble(parsed, path, null_policy, sparse, n_features, max_features, max_label)


def read_letor(
    path: str | Path,
    null_policy: str = "error",
    sparse: bool | None = None,
    *,
    n_features: int | None = None,
    max_features: int | None = MAX_FEATURES,
    max_label: int | None = MAX_LABEL,
    name: str | None = None,
    cache: bool | str | Path = True,
) -> RankingData:
    """Read a LETOR / SVMlight-with-qid file (plain, .gz, .bz2 or .xz) into RankingData. O(file size).

    ``null_policy`` handles LETOR 3.0 ``NULL`` values: "error" (default) raises naming
    the line, "zero" writes 0, "query_min" writes the query's minimum of that feature
    over its non-NULL values (0 when the query has none: counted in
    ``meta["null_all_missing"]``).  LETOR's own Feature-min files are *not* reproduced
    by either rule: their filling differs between columns (0 in some, the query
    minimum in others), so use those files when you need LETOR's filled version.

    ``sparse``: None picks CSR for wide (> 10,000 features), sparse (< 25% of the
    cells present) or huge (> 1 GiB dense) files and a dense array otherwise;
    True/False forces it (a dense X larger than the machine's memory is refused).
    ``n_features`` fixes the width (an error if an index exceeds it), so splits of one
    data set share a width.  Without it the width is the largest index, which must
    not exceed ``max_features`` (default 2**24: a stray ``1000000000:0.5`` is an error
    naming its line instead of a model that exhausts memory; None lifts the limit).
    Labels above ``max_label`` (default ``MAX_LABEL`` = 65535, see docs/datasets.md) are
    refused naming the line: a typo such as ``1e9 qid:1`` or a column of scores read as
    labels; None lifts the limit.

    Documents keep their ``#docid = ...`` comment values in ``docids`` (lines without
    one get ``L<line>``, with a warning) and their line numbers in ``lines``.  LF, CRLF
    and lone CR (classic Mac OS) line ends are all read.  Documents of one query must be
    contiguous for learning; a file that interleaves queries is grouped stably by first
    appearance (``meta["order"]`` holds the permutation) with a warning naming the file.
    Parsed files are cached (see ``rankbench.data.cache``): ``cache=False`` disables
    it, a path selects the folder.  Errors (ValueError) name the file, the line and
    the problem; so does a corrupted or truncated compressed file.

    An uncompressed file is read in blocks, twice (count, then fill the CSR arrays
    allocated once), so the whole file is never in memory; a compressed file is
    decompressed in memory.
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory, not a LETOR file")
    if not path.is_file():
        raise FileNotFoundError(f"LETOR file not found: {path}")
    if null_policy not in NULL_POLICIES:
        raise ValueError(f"null_policy must be one of {NULL_POLICIES}, got {null_policy!r}")
    if sparse not in (None, True, False):
        raise ValueError(f"sparse must be None, True or False, got {sparse!r}")
    check_options(null_policy, n_features, max_features, max_label)
    with path.open("rb") as fh:
        compressed = is_compressed(fh.read(6))
    options = {"null_policy": null_policy, "sparse": sparse, "n_features": n_features,
               "max_features": max_features, "max_label": max_label}
    store = parse_cache.ParseCache.from_setting(cache)
    key = parse_cache.cache_key(path, options, reader_fingerprint()) if store is not None else None
    data = store.load(key) if store is not None else None
    if data is None:
        kw = {"null_policy": null_policy, "sparse": sparse, "n_features": n_features,
              "max_features": max_features, "max_label": max_label}
        if compressed:
            X, y, qid, info = parse_letor_bytes(decompress_bytes(path.read_bytes(), path), path, **kw)
        else:
            X, y, qid, info = parse_letor_file(path, **kw)
        meta = {"path": str(path), "null_policy": null_policy, "n_null": info["n_null"],
                "null_all_missing": info["null_all_missing"]}
        if info["docids"] is not None and info["docids_missing"]:
            meta["docids_missing"] = info["docids_missing"]
        data = RankingData.from_arrays(X, y, qid, name=name or _stem(path), source=str(path),
                                       meta=meta, docids=info["docids"], lines=info["lines"],
                                       max_label=None)  # checked above, naming the line
        if store is not None:
            store.save(key, data)
    # the entry is keyed by content: another file with the same bytes may have made it
    data = replace(data, name=name or _stem(path), source=str(path),
                   meta={**data.meta, "path": str(path)})
    if data.meta.get("order") is not None:
        warnings.warn(f"{path}: documents of a query are not contiguous; grouped them by "
                      "query (stable, by first appearance)", stacklevel=2)
    if data.meta.get("docids_missing"):
        warnings.warn(f"{path}: {data.meta['docids_missing']} documents have no '#docid = ...' "
                      "comment while others have one; they get the generated ids L<line>",
                      stacklevel=2)
    return data


def reader_fingerprint() -> str:
    """sha256 of the modules that turn bytes into RankingData (this package's, ranking_data's and
    the cache's): an edit to them retires old cache entries."""
    package = sorted(str(p) for p in Path(__file__).parent.glob("*.py"))
    return parse_cache.source_fingerprint(*package, ranking_data.__file__, parse_cache.__file__)


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".xz", ".gz", ".bz2"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name.rsplit(".", 1)[0] if "." in name else name
