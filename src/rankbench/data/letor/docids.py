"""Document ids: the ``#docid = VALUE`` comments of a file as a str array (``L<line>`` where a line has none)."""

from __future__ import annotations

import numpy as np

from rankbench.data.letor.scanning import gather_spans


def docid_raw(buf: np.ndarray, span: np.ndarray) -> np.ndarray | None:
    """The ``docid`` comment values of ``span``'s rows as a bytes (S) array, b"" where none; None when no row has one."""
    has = span[:, 0] >= 0
    if not has.any():
        return None
    length = np.where(has, span[:, 1] - span[:, 0], 0)
    width = int(length.max())
    out = np.zeros((span.shape[0], width), dtype=np.uint8)
    gather_spans(buf, span, out)
    return out.view(f"S{width}").ravel()


def docid_finish(raw: np.ndarray, has: np.ndarray, lines: np.ndarray) -> np.ndarray:
    """The document ids as a str array: ``raw`` decoded, ``L<line>`` for the rows without one. O(n + total id length)."""
    width = raw.dtype.itemsize
    try:
        ids = raw.astype(f"U{width}")
    except UnicodeDecodeError:  # non-ASCII ids: kept distinct and whitespace-free
        ids = np.char.decode(raw, "utf-8", errors="backslashreplace")
    if not has.all():
        ids = np.where(has, ids, np.char.add("L", lines.astype(str)))
    return ids
