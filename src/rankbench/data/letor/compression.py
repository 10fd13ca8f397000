"""Compressed LETOR files: gzip, bzip2 or xz, recognised by their magic bytes, decompressed in memory."""

from __future__ import annotations

import bz2
import gzip
import lzma
import zlib
from pathlib import Path


def is_compressed(head: bytes) -> bool:
    """Whether a file starting with ``head`` (its first 6 bytes) is gzip, bzip2 or xz."""
    return head[:2] == b"\x1f\x8b" or head[:3] == b"BZh" or head[:6] == b"\xfd7zXZ\x00"


def decompress_file(path: str | Path) -> bytes:
    """The bytes of ``path``, transparently decompressing gzip, bzip2 or xz (detected by magic bytes)."""
    raw = Path(path).read_bytes()
    return decompress_bytes(raw, path)


def decompress_bytes(raw: bytes, path: str | Path = "<bytes>") -> bytes:
    """Decompress ``raw`` when it starts with a gzip, bzip2 or xz header; return it unchanged otherwise.

    A truncated or corrupted stream raises ValueError naming ``path`` (a bit flipped inside
    a deflate stream raises ``zlib.error``, a bad CRC ``gzip.BadGzipFile``, xz ``LZMAError``,
    bzip2 ``OSError``: every one is reported the same way)."""
    try:
        if raw[:2] == b"\x1f\x8b":
            return gzip.decompress(raw)
        if raw[:3] == b"BZh":
            return bz2.decompress(raw)
        if raw[:6] == b"\xfd7zXZ\x00":
            return lzma.decompress(raw)
    except (OSError, EOFError, lzma.LZMAError, zlib.error, ValueError) as exc:
        raise ValueError(f"{path}: cannot decompress ({exc}); the file is truncated or corrupted") from exc
    return raw
