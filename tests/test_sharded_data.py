"""A data set sharded on disk (rankbench.data.sharded): LETOR files -> query-balanced .npy shards
-> the same documents back; its manifest, its checksums, its errors and its memory bound.

The reference is the LETOR reader itself (``read_letor``: the whole file in memory, queries
grouped by first appearance): the shards, put back together, must hold exactly its arrays."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import json
import lzma
import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from rankbench.data import make_letor_like, read_letor, write_letor
from rankbench.data.__main__ import main as data_main
from rankbench.data.sharded import (
    MANIFEST,
    Block,
    ShardedDataset,
    ShardFileError,
    shard_blocks,
    shard_letor,
)
from rankbench.distributed import pairs_per_query, shard_queries
from rankbench.objective import count_pairs


def _letor_file(path, n_queries=40, docs=15, d=6, seed=0):
    data = make_letor_like(n_queries=n_queries, docs_per_query=docs, n_features=d, seed=seed)
    write_letor(data, path)
    return path


def _read(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # interleaved queries: read_letor groups them, with a warning
        return read_letor(path, cache=False)


def _same(ds: ShardedDataset, ref) -> None:
    got = ds.to_ranking_data()
    a = got.X.toarray() if sp.issparse(got.X) else got.X
    b = ref.X.toarray() if sp.issparse(ref.X) else ref.X
    assert a.shape == b.shape and np.array_equal(a, b)
    assert np.array_equal(got.y, ref.y) and np.array_equal(got.qid, ref.qid)
    assert np.array_equal(got.query_ptr, ref.query_ptr)


def test_shards_hold_the_files_documents_balanced_with_a_manifest(tmp_path):
    src = _letor_file(tmp_path / "train.txt")
    ref = _read(src)
    mf = shard_letor([src], tmp_path / "out", 3, block_bytes=4096)  # many blocks
    ds = ShardedDataset(tmp_path / "out")
    assert mf == tmp_path / "out" / MANIFEST and ds.n_shards == 3 and ds.storage == "dense"
    _same(ds, ref)
    m = ds.manifest
    assert (m["n_docs"], m["n_queries"], m["n_features"]) == (ref.n_docs, ref.n_queries, ref.n_features)
    assert m["n_pairs"] == count_pairs(ref.y, ref.query_ptr) == ds.n_pairs()
    labels, counts = np.unique(ref.y, return_counts=True)
    assert m["labels"] == {str(int(k)): int(c) for k, c in zip(labels, counts, strict=True)}
    assert m["interleaved_runs"] == 0
    # cut where shard_queries cuts the same queries by documents
    bounds = shard_queries(ref.query_ptr, 3)
    assert ds.shard_docs().tolist() == np.diff(ref.query_ptr[bounds]).tolist()
    per_q = pairs_per_query(ref.y, ref.query_ptr)
    assert ds.shard_pairs().tolist() == [int(per_q[a:b].sum()) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    # the source's size and sha256, every shard file's size and sha256
    raw = src.read_bytes()
    assert m["sources"] == [{"path": str(src.resolve()), "bytes": len(raw), "read_bytes": len(raw),
                             "sha256": hashlib.sha256(raw).hexdigest()}]
    for s, rec in enumerate(m["shards"]):
        folder = tmp_path / "out" / rec["dir"]
        assert sorted(rec["files"]) == ["X.npy", "qid.npy", "query_ptr.npy", "y.npy"]
        for name, f in rec["files"].items():
            assert f["sha256"] == hashlib.sha256((folder / name).read_bytes()).hexdigest()
        X = np.load(folder / "X.npy", mmap_mode="r")
        assert isinstance(X, np.memmap) and X.shape == (rec["n_docs"], ref.n_features)
        # a query never straddles two shards: each shard's qids are its own
        qids = np.load(folder / "qid.npy")
        assert np.array_equal(qids, ref.query_ids()[bounds[s]:bounds[s + 1]])
    # one shard maps its files; several are concatenated in order
    X0, y0, ptr0 = ds.load([0])
    assert isinstance(X0, np.memmap) and not X0.flags.writeable
    X12, y12, ptr12 = ds.load([1, 2])
    a = ref.query_ptr[bounds[1]]
    assert np.array_equal(X12, ref.X[a:]) and np.array_equal(y12, ref.y[a:])
    assert np.array_equal(ptr12, ref.query_ptr[bounds[1]:] - a)


def test_balance_by_pairs(tmp_path):
    src = _letor_file(tmp_path / "t.txt", n_queries=60, docs=20, seed=3)
    ref = _read(src)
    ds = ShardedDataset(shard_letor(src, tmp_path / "out", 4, balance="pairs").parent)
    per_q = pairs_per_query(ref.y, ref.query_ptr)
    b = shard_queries(ref.query_ptr, 4, per_q)
    assert ds.shard_pairs().tolist() == [int(per_q[x:y].sum()) for x, y in zip(b[:-1], b[1:], strict=True)]
    assert ds.manifest["balance"] == "pairs"
    _same(ds, ref)


@pytest.mark.parametrize("suffix,opener", [(".gz", gzip.open), (".bz2", bz2.open), (".xz", lzma.open)])
def test_compressed_sources_give_the_same_shards(tmp_path, suffix, opener):
    src = _letor_file(tmp_path / "t.txt", seed=1)
    packed = tmp_path / f"t.txt{suffix}"
    with opener(packed, "wb") as fh:
        fh.write(src.read_bytes())
    plain = ShardedDataset(shard_letor(src, tmp_path / "a", 2).parent)
    comp = ShardedDataset(shard_letor(packed, tmp_path / "b", 2, block_bytes=1000).parent)
    _same(comp, plain.to_ranking_data())
    # the compressed file's own bytes are checksummed
    rec = comp.manifest["sources"][0]
    assert rec["sha256"] == hashlib.sha256(packed.read_bytes()).hexdigest()
    assert [s["files"]["X.npy"]["sha256"] for s in comp.manifest["shards"]] == \
        [s["files"]["X.npy"]["sha256"] for s in plain.manifest["shards"]]


def test_interleaved_queries_are_never_split(tmp_path):
    """Lines of a query scattered over the file and over two files: each query whole, in one shard,
    its documents in file order, as read_letor groups them (first appearance)."""
    src = _letor_file(tmp_path / "t.txt", n_queries=30, docs=10, seed=2)
    lines = src.read_text().splitlines()
    rng = np.random.default_rng(0)
    perm = rng.permutation(len(lines))
    half = len(lines) // 2
    (tmp_path / "a.txt").write_text("\n".join(lines[i] for i in perm[:half]) + "\n")
    (tmp_path / "b.txt").write_text("\n".join(lines[i] for i in perm[half:]) + "\n")
    (tmp_path / "ab.txt").write_text("\n".join(lines[i] for i in perm) + "\n")
    ref = _read(tmp_path / "ab.txt")
    ds = ShardedDataset(shard_letor([tmp_path / "a.txt", tmp_path / "b.txt"], tmp_path / "out", 4,
                                    block_bytes=700).parent)
    _same(ds, ref)
    assert ds.n_queries == 30 and ds.manifest["interleaved_runs"] > 100
    seen = np.concatenate([np.load(tmp_path / "out" / s["dir"] / "qid.npy") for s in ds.manifest["shards"]])
    assert len(set(seen.tolist())) == seen.shape[0] == 30  # every query in exactly one shard


def test_wide_sparse_files_shard_as_csr(tmp_path):
    rng = np.random.default_rng(4)
    rows = []
    for q in range(12):
        for _ in range(8):
            cols = np.sort(rng.choice(50_000, size=5, replace=False)) + 1
            rows.append(f"{rng.integers(0, 3)} qid:{q} " + " ".join(f"{c}:{rng.random():.4f}" for c in cols))
    (tmp_path / "s.txt").write_text("\n".join(rows) + "\n")
    ref = _read(tmp_path / "s.txt")
    ds = ShardedDataset(shard_letor(tmp_path / "s.txt", tmp_path / "out", 3, block_bytes=300).parent)
    assert ds.storage == "csr" and ds.manifest["nnz"] == 12 * 8 * 5
    X, _, _ = ds.load([1])
    assert sp.issparse(X) and X.indices.dtype == np.int32
    _same(ds, ref)
    # forced layouts
    dense = ShardedDataset(shard_letor(tmp_path / "s.txt", tmp_path / "d", 2, sparse=False,
                                       n_features=50_000).parent)
    assert dense.storage == "dense" and dense.n_features == 50_000
    np.testing.assert_array_equal(dense.to_ranking_data().X[:, :ref.n_features], ref.X.toarray())


def test_blocks_from_a_generator(tmp_path):
    """shard_blocks takes any re-iterable source of blocks (a generator of dense arrays here)."""
    data = make_letor_like(n_queries=20, docs_per_query=10, n_features=4, seed=5)

    def blocks():
        for a in range(0, data.n_docs, 37):
            b = min(a + 37, data.n_docs)
            yield Block(data.X[a:b], data.y[a:b], data.qid[a:b], 0)

    ds = ShardedDataset(shard_blocks(blocks, tmp_path / "g", 3, synthetic=True).parent)
    assert ds.synthetic and ds.manifest["sources"] == []
    _same(ds, data)


def test_sharding_memory_is_bounded_by_a_block(tmp_path):
    """Peak Python-tracked memory while sharding a file is a few blocks, not the data (numpy's
    allocations are traced): 19 MB of documents through 256 KiB blocks."""
    rng = np.random.default_rng(0)
    n, d = 20_000, 120
    with (tmp_path / "big.txt").open("w") as fh:
        feats = " ".join(f"{j + 1}:{{{j}:.3f}}" for j in range(d))
        for start in range(0, n, 2000):
            X = rng.random((2000, d))
            fh.writelines(f"{int(i % 3)} qid:{(start + i) // 100} " + feats.format(*X[i]) + "\n"
                          for i in range(2000))
    data_bytes = n * d * 8
    shard_letor(_letor_file(tmp_path / "warm.txt"), tmp_path / "warm", 2)  # numba's kernels loaded
    tracemalloc.start()
    try:
        shard_letor(tmp_path / "big.txt", tmp_path / "out", 4, block_bytes=256 << 10)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    ds = ShardedDataset(tmp_path / "out")
    assert ds.n_docs == n and ds.data_bytes() > data_bytes
    assert peak < 0.15 * data_bytes, f"peak {peak / 2**20:.1f} MiB for {data_bytes / 2**20:.1f} MiB of data"


# errors ---------------------------------------------------------------------------------

def test_a_bad_line_is_named_with_its_line_in_the_whole_file(tmp_path):
    src = _letor_file(tmp_path / "t.txt", n_queries=30)
    lines = src.read_text().splitlines()
    lines[401] = "1 qid:3 1:0.5 2:abc"
    src.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"t\.txt, line 402: .*abc"):
        shard_letor(src, tmp_path / "out", 2, block_bytes=2000)  # line 402 is in a later block
    assert not (tmp_path / "out").exists()
    assert not list(tmp_path.glob(".out.partial-*"))  # nothing half-written is left


def test_bad_options_and_inputs_are_refused(tmp_path):
    src = _letor_file(tmp_path / "t.txt", n_queries=5)
    with pytest.raises(ValueError, match="n_shards=6 exceeds the number of queries \\(5\\)"):
        shard_letor(src, tmp_path / "o1", 6)
    with pytest.raises(ValueError, match="query_min"):
        shard_letor(src, tmp_path / "o2", 2, null_policy="query_min")
    with pytest.raises(ValueError, match="exceeds n_features=3"):
        shard_letor(src, tmp_path / "o3", 2, n_features=3)
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        shard_letor(tmp_path / "nope.txt", tmp_path / "o4", 2)
    shard_letor(src, tmp_path / "o5", 2)
    with pytest.raises(FileExistsError, match="o5 exists"):
        shard_letor(src, tmp_path / "o5", 2)
    shard_letor(src, tmp_path / "o5", 3, overwrite=True)
    assert ShardedDataset(tmp_path / "o5").n_shards == 3
    (tmp_path / "null.txt").write_text("1 qid:1 1:NULL 2:0.5\n0 qid:1 1:0.1 2:0.2\n")
    with pytest.raises(ValueError, match=r"null\.txt, line 1: feature 1 is NULL"):
        shard_letor(tmp_path / "null.txt", tmp_path / "o6", 1)
    assert ShardedDataset(shard_letor(tmp_path / "null.txt", tmp_path / "o6", 1,
                                      null_policy="zero").parent).to_ranking_data().X[0, 0] == 0.0
    # a corrupted gzip stream: a ValueError naming the file, not zlib.error
    packed = gzip.compress(src.read_bytes())
    bad = bytearray(packed)
    bad[len(bad) // 2] ^= 0xFF
    (tmp_path / "bad.txt.gz").write_bytes(bytes(bad))
    with pytest.raises(ValueError, match=r"bad\.txt\.gz: cannot decompress"):
        shard_letor(tmp_path / "bad.txt.gz", tmp_path / "o7", 2)


def test_missing_truncated_or_corrupt_shard_files_are_named(tmp_path):
    src = _letor_file(tmp_path / "t.txt")
    out = shard_letor(src, tmp_path / "out", 3).parent
    ShardedDataset(out).verify()
    x1 = out / "shard-00001" / "X.npy"
    raw = x1.read_bytes()
    # corrupt, same size: found by the checksum
    flipped = bytearray(raw)
    flipped[-5] ^= 0x01
    x1.write_bytes(bytes(flipped))
    ds = ShardedDataset(out)  # sizes are right
    with pytest.raises(ShardFileError, match=r"shard-00001/X\.npy: shard 1 file is corrupt"):
        ds.verify()
    with pytest.raises(ShardFileError, match="corrupt"):
        ds.load([1])
    ds.load([0])  # the others are fine
    # truncated
    x1.write_bytes(raw[:-8])
    with pytest.raises(ShardFileError, match=r"shard-00001/X\.npy: shard 1 file has \d+ bytes"):
        ShardedDataset(out)
    # missing
    x1.unlink()
    with pytest.raises(ShardFileError, match=r"shard-00001/X\.npy: shard 1 file missing"):
        ShardedDataset(out)
    (out / MANIFEST).write_text("{")
    with pytest.raises(ShardFileError, match="not valid JSON"):
        ShardedDataset(out)
    with pytest.raises(ShardFileError, match="no manifest"):
        ShardedDataset(tmp_path)


def test_partition_groups_whole_shards(tmp_path):
    src = _letor_file(tmp_path / "t.txt", n_queries=80, docs=10)
    ds = ShardedDataset(shard_letor(src, tmp_path / "out", 8).parent)
    assert ds.partition() == [[s] for s in range(8)]
    groups = ds.partition(3)
    assert [s for g in groups for s in g] == list(range(8)) and len(groups) == 3
    docs = ds.shard_docs()
    assert max(docs[g].sum() for g in groups) <= ds.n_docs / 3 + docs.max()
    with pytest.raises(ValueError, match="n_shards=9 exceeds the 8 shards"):
        ds.partition(9)


# the command line -----------------------------------------------------------------------

def test_shard_command(tmp_path, capsys):
    src = _letor_file(tmp_path / "t.txt")
    assert data_main(["shard", str(src), str(tmp_path / "out"), "--shards", "2", "--quiet"]) == 0
    assert "2 shards" in capsys.readouterr().out
    manifest = json.loads((tmp_path / "out" / MANIFEST).read_text())
    assert manifest["n_shards"] == 2 and manifest["storage"] == "dense"
    # a data error: exit 1 with the file and line; a usage error: exit 2
    (tmp_path / "bad.txt").write_text("1 qid:1 1:0.5\nx qid:1 1:0.5\n")
    assert data_main(["shard", str(tmp_path / "bad.txt"), str(tmp_path / "o2"), "--shards", "1"]) == 1
    assert "bad.txt, line 2" in capsys.readouterr().err
    assert data_main(["shard", str(src), str(tmp_path / "out"), "--shards", "2"]) == 1
    assert "exists" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        data_main(["shard", str(src), "--shards", "2"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        data_main(["shard", str(src), str(tmp_path / "o3")])  # no --shards
    assert exc.value.code == 2
