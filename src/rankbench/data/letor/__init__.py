"""Reader and writer for LETOR / SVMlight-with-qid files: ``label qid:Q i:v ... # comment``.

One module per job:

- ``scanning``: numba kernels reading one number, integer, label or docid from bytes
  (exact decimal conversion: Clinger's fast path, else Python's rules);
- ``streaming``: the engine -- two passes over the file in blocks of about 4 MiB (count rows
  and tokens, then fill the CSR arrays allocated once), so a file is never held whole;
- ``errors``: the message for a malformed line (file, line, problem), built in Python by
  re-reading that one line, so the kernels only detect;
- ``nulls``: LETOR 3.0's ``NULL`` values (refuse, zero, query minimum);
- ``docids``: the ``#docid = ...`` comments;
- ``assemble``: label and width limits, duplicate indices, dense or CSR X;
- ``compression``: .gz / .bz2 / .xz by magic bytes;
- ``reader``: ``read_letor`` (options, line ends, the parse cache), ``parse_letor_bytes``,
  ``parse_letor_file``;
- ``writing``: ``write_letor``.

The tests check the engine against an independent whole-buffer reader
(tests/letor_reference.py) and a plain-Python one, bit for bit.
"""

from rankbench.data.letor.assemble import (
    DENSE_MAX_BYTES,
    MAX_FEATURES,
    SPARSE_MAX_DENSITY,
    SPARSE_MIN_WIDTH,
)
from rankbench.data.letor.compression import decompress_bytes, decompress_file
from rankbench.data.letor.nulls import NULL_POLICIES
from rankbench.data.letor.reader import (
    parse_letor_bytes,
    parse_letor_file,
    read_letor,
    reader_fingerprint,
)
from rankbench.data.letor.streaming import STREAM_BLOCK
from rankbench.data.letor.writing import write_letor
from rankbench.data.ranking_data import MAX_LABEL

__all__ = [
    "DENSE_MAX_BYTES", "MAX_FEATURES", "MAX_LABEL", "NULL_POLICIES", "SPARSE_MAX_DENSITY",
    "SPARSE_MIN_WIDTH", "STREAM_BLOCK", "decompress_bytes", "decompress_file",
    "parse_letor_bytes", "parse_letor_file", "read_letor", "reader_fingerprint", "write_letor",
]
