"""Results store: one JSON file per run record, written atomically, read back as records or a frame.

Layout: ``<root>/<experiment>/<run_id>.json``.  A record is written to a temporary file
in the same directory, fsynced, then moved into place with ``os.replace``; the directory
is fsynced after the rename.  ``rename`` within one directory is atomic on every POSIX
file system (NFS included), so a reader sees either no file or a whole record, any
number of processes on any number of machines may append concurrently without a lock,
and a writer killed mid-write leaves at most a hidden temporary file (ignored by
readers).  Re-writing a run (a failed run redone) replaces its file whole.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1

# Experiment tags become directory names: keep them to a portable alphabet.
_TAG_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
# a tag is a directory name, and every file system takes 255 bytes: a tag of at most this many
# characters is refused at validation, never after training
MAX_TAG_LENGTH = 128
_RUN_ID_RE = re.compile(r"^[0-9a-f]{40}$")

# Record blocks flattened into "<block>.<key>" columns by ``to_frame``.
_METRIC_SPLITS = ("train", "vali", "test")
_FRAME_SCALARS = (
    "run_id", "status", "error", "experiment", "dataset", "variant", "synthetic",
    "fold", "solver", "seed",
)


class CorruptRecordError(ValueError):
    """A record file that is not a valid record; the message names the file(s) and the problem."""

    def __init__(self, problems: list[tuple[Path, str]]):
        self.problems = list(problems)
        lines = [f"{p}: {why}" for p, why in self.problems]
        head = f"{len(lines)} corrupt record file(s) in the results store"
        super().__init__(head + ":\n  " + "\n  ".join(lines))


class StoreWriteError(OSError):
    """A record could not be written to the store; ``fallback`` is where it was saved instead."""

    def __init__(self, path: Path, cause: BaseException, fallback: Path | None):
        self.path, self.cause, self.fallback = Path(path), cause, fallback
        kept = (f"the record was saved to {fallback} instead (copy it into the store when the "
                "problem is fixed)") if fallback else "the record could not be saved anywhere"
        super().__init__(f"cannot write {path}: {type(cause).__name__}: {cause}; {kept}")


# Records are shared on cluster stores: readable by everyone, whatever the umask.
RECORD_MODE = 0o644
STATUSES = ("ok", "failed", "skipped")


def fallback_dir() -> Path:
    """Where records go when the store cannot take them: RANKBENCH_FALLBACK, else a temp folder."""
    env = os.environ.get("RANKBENCH_FALLBACK")
    return Path(env) if env else Path(tempfile.gettempdir()) / "rankbench-unsaved-records"


def check_experiment_tag(tag: str) -> str:
    """Return ``tag`` when it is usable as a directory name, else raise ValueError."""
    if not isinstance(tag, str) or not _TAG_RE.match(tag):
        raise ValueError(
            f"experiment tag {tag!r} is not valid: use letters, digits, '_', '-', '.' "
            "and start with a letter or digit"
        )
    if len(tag) > MAX_TAG_LENGTH:
        raise ValueError(f"experiment tag of {len(tag)} characters is too long for a directory "
                         f"name: at most {MAX_TAG_LENGTH}")
    return tag


def to_jsonable(obj: Any) -> Any:
    """Convert numpy scalars/arrays, tuples, Paths and non-finite floats into strict JSON values.

    NaN and +-inf become None (strict JSON has no such numbers); the record keeps
    ``null`` where a metric is undefined.
    """
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, Path):
        return str(obj)
    tolist = getattr(obj, "tolist", None)  # numpy scalars and arrays
    if tolist is not None:
        return to_jsonable(tolist())
    raise TypeError(f"value of type {type(obj).__name__} cannot be stored in a record: {obj!r}")


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems refuse fsync on directories; the rename is still atomic
    finally:
        os.close(fd)


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write ``obj`` as JSON to ``path`` atomically (temp file in the same dir, fsync, os.replace)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(obj, indent=1, sort_keys=True, allow_nan=False) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, RECORD_MODE)  # mkstemp makes 0600 files
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _fsync_dir(path.parent)


_STR_OR_NONE = (str, type(None))


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    """A finite JSON number, or null (strict JSON has no NaN or infinity; Python's reader
    accepts them, and ``1e400`` reads as infinity)."""
    if v is None:
        return True
    if not isinstance(v, int | float) or isinstance(v, bool):
        return False
    try:
        return math.isfinite(v)
    except OverflowError:  # an int beyond float range (JSON allows it): no metric value
        return False


def _validate_record(obj: Any) -> str | None:
    """Why ``obj`` is not a record, or None: the record schema (docs/interfaces.md), types
    included, and its run id the sha1 of its spec.  A record is data: nothing in it is ever
    imported, called or turned into a path without this check and the spec's own."""
    if not isinstance(obj, dict):
        return f"top-level JSON value is a {type(obj).__name__}, expected an object"
    for key in ("run_id", "status", "experiment"):
        if key not in obj:
            return f"missing field {key!r}"
    if obj["status"] not in STATUSES:
        return f"status is {obj['status']!r}, expected one of {', '.join(STATUSES)}"
    if not isinstance(obj["run_id"], str) or not _RUN_ID_RE.match(obj["run_id"]):
        return f"run_id {obj['run_id']!r} is not a 40-digit hex sha1"
    try:
        check_experiment_tag(obj["experiment"])
    except ValueError as exc:
        return str(exc)
    types = {"error": _STR_OR_NONE, "dataset": str, "variant": _STR_OR_NONE, "solver": str,
             "synthetic": (bool, type(None)), "params": dict, "metrics": dict, "per_query": dict,
             "scores": dict, "train": dict, "history": list, "extra": dict, "spec": dict,
             "env": dict}
    for key, want in types.items():
        if key in obj and not isinstance(obj[key], want):
            return f"field {key!r} is a {type(obj[key]).__name__}, expected {_names(want)}"
    for key, low in (("fold", 1), ("seed", 0)):
        if key in obj and not (_is_int(obj[key]) and obj[key] >= low):
            return f"field {key!r} is {obj[key]!r}, expected an integer >= {low}"
    for split, values in (obj.get("metrics") or {}).items():
        if not isinstance(values, dict):
            return f"metrics.{split} is a {type(values).__name__}, expected an object"
        bad = [k for k, v in values.items() if not _is_number(v)]
        if bad:
            return f"metrics.{split}.{bad[0]} is {values[bad[0]]!r}, expected a finite number or null"
    for split, table in (obj.get("per_query") or {}).items():
        if not isinstance(table, dict) or not all(isinstance(v, list) for v in table.values()):
            return f"per_query.{split} must map each measure to a list"
        lengths = {k: len(v) for k, v in table.items()}
        if len(set(lengths.values())) > 1:
            return f"per_query.{split} lists have different lengths {lengths}"
        bad = [k for k, v in table.items() if k != "qid" and not all(_is_number(x) for x in v)]
        if bad:
            return f"per_query.{split}.{bad[0]} holds a value that is not a finite number or null"
    bad = [k for k, v in (obj.get("train") or {}).items()
           if not (_is_number(v) or isinstance(v, bool | dict))]
    if bad:
        return f"train.{bad[0]} is {obj['train'][bad[0]]!r}, expected a finite number or null"
    if any(not isinstance(h, dict) for h in obj.get("history") or []):
        return "history must be a list of objects"
    if "spec" in obj and spec_digest(obj["spec"]) != obj["run_id"]:
        return f"run_id {obj['run_id']} is not the sha1 of its spec ({spec_digest(obj['spec'])})"
    return None


def canonical(obj: Any) -> Any:
    """``obj`` as JSON values with whole floats as integers: 1 and 1.0 (C=1 from YAML, C=1.0
    from a sweep) hash alike."""
    obj = to_jsonable(obj)
    if isinstance(obj, dict):
        return {str(k): canonical(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [canonical(v) for v in obj]
    if isinstance(obj, float) and obj.is_integer():
        return int(obj)
    return obj


def spec_digest(hashed: dict[str, Any]) -> str:
    """The run id of a spec's hashed form: sha1 of its canonical, key-sorted, compact JSON."""
    import hashlib

    text = json.dumps(canonical(hashed), sort_keys=True, separators=(",", ":"))
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def _names(want: Any) -> str:
    kinds = want if isinstance(want, tuple) else (want,)
    return " or ".join("null" if k is type(None) else {"str": "a string", "dict": "an object",
                                                        "list": "an array", "bool": "a boolean"
                                                        }.get(k.__name__, k.__name__) for k in kinds)


class ResultStore:
    """Append-only store of run records under ``root`` (one JSON file per record)."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"ResultStore({str(self.root)!r})"

    # ---- paths -------------------------------------------------------------
    def path_for(self, run_id: str, experiment: str) -> Path:
        """File holding the record of ``run_id`` in ``experiment``."""
        check_experiment_tag(experiment)
        if not _RUN_ID_RE.match(run_id):
            raise ValueError(f"run_id {run_id!r} is not a 40-digit hex sha1")
        return self.root / experiment / f"{run_id}.json"

    def _find(self, run_id: str) -> Path | None:
        if not _RUN_ID_RE.match(str(run_id)):
            raise ValueError(f"run_id {run_id!r} is not a 40-digit hex sha1")
        if not self.root.is_dir():
            return None
        hits = sorted(self.root.glob(f"*/{run_id}.json"))
        return hits[0] if hits else None

    def files(self, experiment: str | None = None) -> Iterator[Path]:
        """Record files (sorted), optionally of one experiment; temporary files are skipped."""
        if not self.root.is_dir():
            return iter(())
        pattern = f"{experiment}/*.json" if experiment else "*/*.json"
        return iter(sorted(p for p in self.root.glob(pattern) if not p.name.startswith(".")))

    def experiments(self) -> list[str]:
        """Experiment tags present in the store."""
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if p.is_dir() and not p.name.startswith("."))

    # ---- write -------------------------------------------------------------
    def append(self, record: dict[str, Any]) -> Path:
        """Store ``record`` atomically (replacing an earlier record of the same run); return its path."""
        rec = to_jsonable(record)  # numpy values become JSON ones first
        problem = _validate_record(rec)
        if problem:
            raise ValueError(f"not a run record: {problem}")
        rec.setdefault("schema_version", SCHEMA_VERSION)
        path = self.path_for(rec["run_id"], rec["experiment"])
        try:
            write_json_atomic(path, rec)
        except OSError as exc:
            fallback = fallback_dir() / rec["experiment"] / path.name
            try:
                write_json_atomic(fallback, rec)
            except OSError:
                fallback = None
            raise StoreWriteError(path, exc, fallback) from exc
        return path

    def check_writable(self) -> None:
        """Raise StoreWriteError-like OSError now, before any training, when records cannot be written."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".write-check.", dir=self.root)
            os.close(fd)
            os.unlink(tmp)
        except OSError as exc:
            raise OSError(f"results store {self.root} is not writable: {type(exc).__name__}: "
                          f"{exc.strerror or exc}") from None

    # ---- read --------------------------------------------------------------
    @staticmethod
    def read_file(path: str | os.PathLike) -> dict[str, Any]:
        """Read one record file; CorruptRecordError (naming the file) when it is not a record."""
        path = Path(path)
        if path.is_symlink():  # a record is a file of its store, never a door to another one
            raise CorruptRecordError([(path, "is a symbolic link, not a record file")])
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise CorruptRecordError([(path, f"not UTF-8 text ({exc.reason})")]) from None
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CorruptRecordError(
                [(path, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}")]
            ) from None
        problem = _validate_record(obj)
        if problem is None and path.stem != obj["run_id"]:
            problem = f"file name does not match its run_id {obj['run_id']!r}"
        if problem:
            raise CorruptRecordError([(path, problem)])
        return obj

    def has(self, run_id: str, ok_only: bool = False) -> bool:
        """True when a record of ``run_id`` is stored (with ``ok_only``: stored with status ok)."""
        path = self._find(run_id)
        if path is None:
            return False
        if not ok_only:
            return True
        return self.read_file(path)["status"] == "ok"

    def get(self, run_id: str) -> dict[str, Any]:
        """The stored record of ``run_id``; KeyError when absent, CorruptRecordError when unreadable."""
        path = self._find(run_id)
        if path is None:
            raise KeyError(f"no record with run_id {run_id} in {self.root}")
        return self.read_file(path)

    def scan(self, experiment: str | None = None) -> tuple[list[dict], list[tuple[Path, str]]]:
        """All records and all corrupt files (path, problem): nothing is dropped silently."""
        records, corrupt = [], []
        for path in self.files(experiment):
            try:
                records.append(self.read_file(path))
            except CorruptRecordError as exc:
                corrupt.extend(exc.problems)
        return records, corrupt

    def records(self, on_corrupt: str = "raise", **filters: Any) -> list[dict[str, Any]]:
        """Records matching ``filters`` (field=value, or field=list of accepted values).

        Filters apply to top-level fields (``experiment``, ``dataset``, ``solver``, ``status``,
        ``fold`` ...) and to parameters as ``params__C=1e-4``.  A corrupt file raises
        CorruptRecordError naming it (``on_corrupt="warn"`` warns and skips instead).
        """
        if on_corrupt not in ("raise", "warn"):
            raise ValueError(f"on_corrupt must be 'raise' or 'warn', got {on_corrupt!r}")
        exp = filters.get("experiment")
        records, corrupt = self.scan(exp if isinstance(exp, str) else None)
        if corrupt:
            err = CorruptRecordError(corrupt)
            if on_corrupt == "raise":
                raise err
            import warnings

            warnings.warn(str(err), stacklevel=2)
        return [r for r in records if matches_filters(r, filters)]

    def to_frame(self, records: list[dict] | None = None, on_corrupt: str = "raise", **filters: Any):
        """Records flattened to a pandas DataFrame: ``test.ndcg@10``, ``train.wall_s``, ``params.C`` ..."""
        import pandas as pd

        if records is None:
            records = self.records(on_corrupt=on_corrupt, **filters)
        rows = [flatten_record(r) for r in records]
        frame = pd.DataFrame(rows)
        if frame.empty:
            frame = pd.DataFrame(columns=list(_FRAME_SCALARS) + ["params"])
        return frame


def matches_filters(record: dict, filters: dict[str, Any]) -> bool:
    """Whether ``record`` passes ``filters`` (as in ``ResultStore.records``)."""
    for key, want in filters.items():
        if want is None:
            continue
        if "__" in key:
            block, sub = key.split("__", 1)
            have = (record.get(block) or {}).get(sub)
        else:
            have = record.get(key)
        accepted = want if isinstance(want, list | tuple | set) else [want]
        if not any(_same(have, a) for a in accepted):
            return False
    return True


def _same(have: Any, want: Any) -> bool:
    if have == want:
        return True
    # Filters typed on a command line arrive as strings: compare by value.
    if isinstance(want, str) and not isinstance(have, str) and have is not None:
        try:
            if isinstance(have, bool):
                return want.lower() == str(have).lower()
            if isinstance(have, int | float):
                return float(want) == float(have)
        except ValueError:
            return False
    return False


def flatten_record(record: dict[str, Any]) -> dict[str, Any]:
    """One flat row: scalars, ``params.<p>``, ``<split>.<metric>``, ``train.<timing>``, ``env.<k>``.

    ``params`` also stays as one canonical JSON string so rows can be grouped by parameter set.
    """
    row: dict[str, Any] = {k: record.get(k) for k in _FRAME_SCALARS}
    params = record.get("params") or {}
    row["params"] = json.dumps(params, sort_keys=True)
    for k, v in params.items():
        row[f"params.{k}"] = v
    for split in _METRIC_SPLITS:
        for k, v in ((record.get("metrics") or {}).get(split) or {}).items():
            row[f"{split}.{k}"] = v
    for k, v in (record.get("train") or {}).items():
        row[f"train.{k}"] = v
    for k, v in (record.get("extra") or {}).items():
        if not isinstance(v, dict | list):
            row[f"extra.{k}"] = v
    # the metric convention of the metrics (a record that names none: LETOR's); ``convention``
    # on the record itself: metrics recomputed in memory (rankbench results --convention)
    row["convention"] = (record.get("convention") or (record.get("spec") or {}).get("convention")
                         or "letor")
    env = record.get("env") or {}
    for k in ("git_commit", "started", "finished"):
        row[f"env.{k}"] = env.get(k)
    machine = env.get("machine") or {}
    row["env.hostname"] = machine.get("hostname") if isinstance(machine, dict) else machine
    return row


def encode_scores(scores: Any) -> dict[str, Any]:
    """Scores as base64 of little-endian float32 (4 bytes a document), order of the split's rows."""
    import numpy as np

    a = np.ascontiguousarray(scores, dtype="<f4")
    return {"dtype": "float32", "n": int(a.shape[0]), "base64": base64.b64encode(a.tobytes()).decode()}


def decode_scores(block: dict[str, Any]) -> Any:
    """Inverse of ``encode_scores`` (float64 array); ValueError when the block holds no scores."""
    import numpy as np

    if not block or "base64" not in block:
        raise ValueError(f"no stored scores ({(block or {}).get('omitted', 'none recorded')})")
    a = np.frombuffer(base64.b64decode(block["base64"]), dtype="<f4").astype(np.float64)
    if a.shape[0] != block["n"]:
        raise ValueError(f"stored scores hold {a.shape[0]} values, the record says {block['n']}")
    return a


def stored_ok(store: ResultStore, rid: str) -> dict[str, Any] | None:
    """The record ``rid`` when stored with status ok; None when absent, failed, skipped or
    corrupt (a corrupt file is named in a warning: the run will be redone)."""
    try:
        rec = store.get(rid)
    except KeyError:
        return None
    except CorruptRecordError as exc:
        warnings.warn(f"{exc} -- the run will be redone", stacklevel=3)
        return None
    return rec if rec["status"] == "ok" else None
