"""Failure injection for the peer wrappers (rankbench.peers): no hang, no orphan, no garbage.

Fake peer programs (small Python scripts) are installed under a private ``RANKBENCH_PEERS``,
where the wrappers look for ``train``, ``sofia-ml`` and ``svm_learn``: programs that hang
(and start a child of their own), write binary or malformed models, or NaN weights.  Every
case asserts the exception, that the message names the model file and line, that no process
of the fake survives and that no ``rankbench-<peer>-*`` temporary folder is left.
"""

from __future__ import annotations

import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

import bystander
from rankbench.data.synthetic import make_letor_like
from rankbench.peers.process import DEFAULT_TIMEOUT_S
from rankbench.peers.solvers import LiblinearPairs, LiblinearRankSVM, SofiaML, SVMLightRanker

ROOT = Path(__file__).resolve().parents[1]

# peer -> (wrapper class, its programs, the folder prefix)
PEERS = {
    "liblinear": (LiblinearRankSVM, ("train", "predict")),
    "sofia": (SofiaML, ("sofia-ml",)),
    "svmlight": (SVMLightRanker, ("svm_learn", "svm_classify")),
}

FAKE = """#!{python}
import os, subprocess, sys, time
argv = sys.argv[1:]
model = argv[argv.index("--model_out") + 1] if "--model_out" in argv else (argv[-1] if argv else None)
mode = {mode!r}
if mode == "hang":
    # a child of its own, in the same process group: it must die with the peer
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    with open({pids!r}, "a") as fh:
        fh.write(f"{{os.getpid()}} {{child.pid}}\\n")
    time.sleep(3600)
if model is not None:
    with open(model, "wb") as fh:
        fh.write({content!r})
print("Time to complete training: 0.001")
"""


def install_fakes(home: Path, mode: str, content: bytes = b"", pids: Path | None = None) -> Path:
    """Fake programs of every peer under ``home`` (a RANKBENCH_PEERS folder)."""
    for peer, (_, programs) in PEERS.items():
        for name in programs:
            p = home / peer / "bin" / name
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(FAKE.format(python=sys.executable, mode=mode, content=content,
                                     pids=str(pids or home / "pids.txt")))
            p.chmod(0o755)
    return home


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not reaped by its new parent, counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def _all_gone(pids: list[int], wait_s: float = 5.0) -> bool:
    """Whether every pid has ended, waiting up to ``wait_s``: SIGKILL to a process group is
    delivered at once, but a member dies only when next scheduled, which on a loaded machine
    (make test's two workers) came after the check once (CI at b0bf2fc5).  A process outside
    the group, which the kill does not reach, is still alive after the wait."""
    deadline = time.monotonic() + wait_s
    while any(_alive(p) for p in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _fake_pids(path: Path) -> list[int]:
    return [int(p) for line in path.read_text().splitlines() for p in line.split()] if path.is_file() else []


def _leftovers(tmp: Path) -> list[str]:
    return sorted(p.name for p in tmp.glob("rankbench-*"))


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """A private temporary-files folder, so a left-over peer folder is ours to see."""
    d = tmp_path / "tmp"
    d.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    return d


def _small():
    d = make_letor_like(n_queries=4, docs_per_query=5, n_features=3, seed=0)
    return d.X, d.y, d.qid


# -- time limits ----------------------------------------------------------------------------

def test_every_peer_has_a_finite_default_timeout_stated_in_its_config():
    # before: timeout_s=None in the API and null (no limit) in conf/solver/*.yaml
    assert math.isfinite(DEFAULT_TIMEOUT_S) and DEFAULT_TIMEOUT_S == 14400
    for cls, _ in PEERS.values():
        assert cls().timeout_s == DEFAULT_TIMEOUT_S
    for name in ("liblinear_ranksvm", "sofia_ml", "svmlight"):
        text = (ROOT / "conf" / "solver" / f"{name}.yaml").read_text()
        # null keeps the run ids of every stored run; the comment states what null means
        assert "\ntimeout_s: null\n" in text
        assert f"DEFAULT_TIMEOUT_S = {DEFAULT_TIMEOUT_S:.0f} s" in text


@pytest.mark.parametrize("bad", [0, -1.0, math.inf, math.nan, "600", True])
def test_a_timeout_that_is_no_limit_is_refused(bad, tmp_path, monkeypatch):
    monkeypatch.setenv("RANKBENCH_PEERS", str(install_fakes(tmp_path / "peers", "model")))
    X, y, qid = _small()
    for cls, _ in PEERS.values():
        with pytest.raises(ValueError, match="timeout_s must be a positive finite number of seconds"):
            cls(timeout_s=bad).fit(X, y, qid)


def test_the_stored_peer_runs_keep_their_run_ids():
    # the experiments that set timeout_s (600: sculley2009, 7200: chapelle2010) hash it; null does not
    from rankbench.spec import run_id

    base = {"experiment": "x", "dataset": "ohsumed", "fold": 1, "solver": "svmlight"}
    default = run_id({**base, "params": {"C": 1.0}})
    assert run_id({**base, "params": {"C": 1.0, "timeout_s": None}}) == default
    assert run_id({**base, "params": {"C": 1.0, "timeout_s": 7200}}) != default
    for name, value in (("sculley2009/fig1_sofia", 600), ("chapelle2010/fig2", 7200)):
        assert f"timeout_s: {value}" in (ROOT / "conf" / "experiment" / f"{name}.yaml").read_text()


@pytest.mark.parametrize("peer", sorted(PEERS))
def test_a_hanging_peer_is_killed_with_its_children_at_the_time_limit(peer, tmp_path, private_tmp,
                                                                     monkeypatch):
    # before: subprocess.run killed the program only; a child it started kept running
    pids = tmp_path / "pids.txt"
    monkeypatch.setenv("RANKBENCH_PEERS", str(install_fakes(tmp_path / "peers", "hang", pids=pids)))
    cls = PEERS[peer][0]
    X, y, qid = _small()
    t0 = time.perf_counter()
    with pytest.raises(TimeoutError, match=r"did not finish within 1\.5 s .*killed with its process group"):
        cls(timeout_s=1.5).fit(X, y, qid)
    assert time.perf_counter() - t0 < 30
    started = _fake_pids(pids)
    assert len(started) == 2 and _all_gone(started), started
    assert _leftovers(private_tmp) == []


# the scripts take Python's own SIGINT handler (KeyboardInterrupt) even when the test session
# inherited SIGINT ignored (a shell's background job, nohup): the tests are of a user's Ctrl-C
API_RUN = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from rankbench.data.synthetic import make_letor_like
from rankbench.peers.solvers import {cls}
d = make_letor_like(n_queries=4, docs_per_query=5, n_features=3, seed=0)
{cls}().fit(d.X, d.y, d.qid)
"""


def _env(peers: Path, tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["RANKBENCH_PEERS"] = str(peers)
    env["TMPDIR"] = str(tmp)
    return env


def _wait_for_fake(proc: subprocess.Popen, pids: Path, timeout: float = 120.0) -> None:
    end = time.monotonic() + timeout
    while len(_fake_pids(pids)) < 2:
        if proc.poll() is not None:
            raise AssertionError(f"exited before the fake peer started: {proc.communicate()}")
        if time.monotonic() > end:
            proc.kill()
            raise AssertionError("the fake peer did not start")
        time.sleep(0.1)


@pytest.mark.parametrize(("sig", "cls"), [(signal.SIGTERM, "SofiaML"), (signal.SIGINT, "LiblinearRankSVM"),
                                          (signal.SIGTERM, "SVMLightRanker")])
def test_an_interrupted_python_api_fit_leaves_no_process_and_no_folder(sig, cls, tmp_path):
    # before: after SIGTERM the peer kept running and its folder stayed
    pids, tmp = tmp_path / "pids.txt", tmp_path / "tmp"
    tmp.mkdir()
    peers = install_fakes(tmp_path / "peers", "hang", pids=pids)
    proc = subprocess.Popen([sys.executable, "-c", API_RUN.format(cls=cls)], env=_env(peers, tmp),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for_fake(proc, pids)
    assert _leftovers(tmp) != []  # the folder exists while the peer runs
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert ("KeyboardInterrupt" in err) if sig == signal.SIGINT else proc.returncode == 143, err
    started = _fake_pids(pids)
    assert len(started) == 2 and _all_gone(started), started
    assert _leftovers(tmp) == []


API_RUN_THREAD = bystander.SCRIPT + """
from rankbench.data.synthetic import make_letor_like
from rankbench.peers.solvers import LiblinearRankSVM
d = make_letor_like(n_queries=4, docs_per_query=5, n_features=3, seed=0)
LiblinearRankSVM().fit(d.X, d.y, d.qid)
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_taken_by_another_thread_still_ends_the_wait_for_a_hanging_peer(sig, tmp_path):
    """The kernel may hand a process's signal to any of its threads (numba's workers, a
    library's); Python then only sets a flag, which the main thread reads when it next runs.
    The wait for a peer wakes every 0.2 s to read it.  Before, the main thread slept in select()
    on the peer's pipes until the peer's time limit (4 h): CI once timed out this way, on the
    SIGINT case above.  Here the signal goes to the other thread on purpose (tgkill)."""
    pids, tmp = tmp_path / "pids.txt", tmp_path / "tmp"
    tmp.mkdir()
    peers = install_fakes(tmp_path / "peers", "hang", pids=pids)
    tid_file = tmp_path / "tid.txt"
    proc = subprocess.Popen([sys.executable, "-c", API_RUN_THREAD, str(tid_file)],
                            env=_env(peers, tmp), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    _wait_for_fake(proc, pids)
    bystander.signal_bystander(proc.pid, tid_file, sig)
    _, err = proc.communicate(timeout=60)
    assert ("KeyboardInterrupt" in err) if sig == signal.SIGINT else proc.returncode == 143, err
    started = _fake_pids(pids)
    assert len(started) == 2 and _all_gone(started), started
    assert _leftovers(tmp) == []


def test_a_sigtermed_cli_run_with_a_hanging_peer_leaves_no_process_and_no_folder(tmp_path):
    pids, tmp = tmp_path / "pids.txt", tmp_path / "tmp"
    tmp.mkdir()
    peers = install_fakes(tmp_path / "peers", "hang", pids=pids)
    args = [sys.executable, "-m", "rankbench", "dataset=synthetic", "solver=liblinear_ranksvm",
            "+dataset.data_params.n_queries=10", "+dataset.data_params.docs_per_query=6",
            "+dataset.data_params.n_features=4", "protocol.folds=[1]",
            f"store={tmp_path / 'store'}", "experiment_name=hang", "progress=false",
            f"hydra.run.dir={tmp_path / 'hydra'}"]
    proc = subprocess.Popen(args, cwd=tmp_path, env=_env(peers, tmp), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    _wait_for_fake(proc, pids)
    assert [n for n in _leftovers(tmp) if n.startswith("rankbench-liblinear-")]
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0, err
    started = _fake_pids(pids)
    assert len(started) == 2 and _all_gone(started), (started, err[-2000:])
    assert _leftovers(tmp) == [], err[-2000:]


# -- garbage output -------------------------------------------------------------------------

LIBLINEAR_HEADER = b"solver_type L2R_L2LOSS_RANKSVM\nnr_class 2\nnr_feature 3\nbias -1\nw\n"
SVMLIGHT_HEADER = (b"SVM-light Version V6.02\n0 # kernel type\n3 # kernel parameter -d \n"
                   b"1 # kernel parameter -g \n1 # kernel parameter -s \n1 # kernel parameter -r \n"
                   b"empty# kernel parameter -u \n3 # highest feature index \n"
                   b"5 # number of training documents \n3 # number of support vectors plus 1 \n"
                   b"0 # threshold b, each following line is a SV (starting with alpha*y)\n")

GARBAGE = [
    # before: UnicodeDecodeError naming no file
    ("liblinear", b"\x89HDF\r\n\x1a\n\x00\x00\xff\xfe binary", r"line 1: not a LIBLINEAR model \(byte 0x89 at offset 0"),
    # before: "could not convert string to float: 'abc'"
    ("liblinear", LIBLINEAR_HEADER.replace(b"bias -1", b"bias abc") + b"0.5\n0.25\n1\n",
     r"line 4: bias 'abc' is not a number"),
    ("liblinear", LIBLINEAR_HEADER + b"0.5\nnan\n1\n", r"line 7: weight 'nan' is NaN or infinite"),
    ("liblinear", LIBLINEAR_HEADER + b"0.5\n0.25\n", r"2 weights, the header says nr_feature 3"),
    ("liblinear", LIBLINEAR_HEADER + b"0.5 0.1\n0.25\n1\n", r"line 6: 2 weights on one line"),
    ("liblinear", b"solver_type L2R_L2LOSS_RANKSVM\nnr_feature 3\n", r"no 'w' line"),
    # before: sofia-ml's wrapper accepted NaN weights
    ("sofia", b"0.1 nan 0.2 0.3\n", r"line 1: weight 1 'nan' is NaN or infinite"),
    ("sofia", b"0.1 inf -inf 0.3\n", r"line 1: weight 1 'inf' is NaN or infinite"),
    ("sofia", b"0.1 abc 0.2 0.3\n", r"line 1: weight 1 'abc' is not a number"),  # before: float() error
    ("sofia", b"0.1 0.2 0.3\n", r"3 weights for 3 features \+ bias"),
    ("sofia", b"\xff\xfe\x00garbage", r"line 1: not a sofia-ml model"),
    ("svmlight", SVMLIGHT_HEADER + b"abc 1:0.5 #\n-1 2:1 #\n", r"line 12: alpha\*y 'abc' is not a number"),
    ("svmlight", SVMLIGHT_HEADER + b"1 1:0.5 #\n-1 2:nan #\n", r"line 13: value of feature 2 'nan' is NaN or infinite"),
    ("svmlight", SVMLIGHT_HEADER + b"1 1:0.5 #\n-1 2:1e400 #\n", r"line 13: value of feature 2 '1e400' is NaN or infinite"),
    ("svmlight", SVMLIGHT_HEADER + b"1 1:0.5 #\n-1 x:1 #\n", r"line 13: feature index 'x' is not an integer"),
    ("svmlight", SVMLIGHT_HEADER + b"1 1:0.5 #\n", r"1 support vectors, the header says 2"),
    ("svmlight", SVMLIGHT_HEADER.replace(b"0 # threshold", b"zz # threshold") + b"1 1:0.5 #\n-1 2:1 #\n",
     r"line 11: threshold b 'zz' is not a number"),
    ("svmlight", b"garbage\n", r"line 1: not an SVM-light model file"),
]


@pytest.mark.parametrize(("peer", "content", "message"), GARBAGE)
def test_a_garbage_model_is_refused_naming_the_file_and_line(peer, content, message, tmp_path,
                                                             private_tmp, monkeypatch):
    monkeypatch.setenv("RANKBENCH_PEERS", str(install_fakes(tmp_path / "peers", "model", content)))
    X, y, qid = _small()
    folder = re.escape(str(private_tmp))
    with pytest.raises(ValueError, match=rf"{folder}/rankbench-{peer}-[^/]+/model[,:] .*{message}") as err:
        PEERS[peer][0](timeout_s=60).fit(X, y, qid)
    assert "could not convert" not in str(err.value)
    assert _leftovers(private_tmp) == []


def test_the_fake_programs_give_a_model_when_the_output_is_good(tmp_path, private_tmp, monkeypatch):
    """The garbage cases above differ from a good model only in the bytes written."""
    X, y, qid = _small()
    good = {"liblinear": LIBLINEAR_HEADER + b"0.5\n0.25\n-1\n", "sofia": b"9 0.5 0.25 -1\n",
            "svmlight": SVMLIGHT_HEADER + b"2 1:0.25 #\n-1 2:-0.25 3:1 #\n"}
    for peer, content in good.items():
        monkeypatch.setenv("RANKBENCH_PEERS", str(install_fakes(tmp_path / peer, "model", content)))
        est = PEERS[peer][0](timeout_s=60).fit(X, y, qid)
        assert est.coef_.tolist() == [0.5, 0.25, -1.0]
    assert _leftovers(private_tmp) == []


def test_liblinear_is_timed_by_its_timer_line_else_by_wall_minus_a_parse_run(tmp_path, private_tmp,
                                                                            monkeypatch):
    """A train that prints rankbench's timer line is timed by it (one run); one without it (built
    by another Makefile) by its wall time less a parse-and-stop run (two runs)."""
    X, y, qid = _small()
    content = LIBLINEAR_HEADER + b"0.5\n0.25\n-1\n"
    home = install_fakes(tmp_path / "plain", "model", content)
    calls = tmp_path / "calls.txt"
    train = home / "liblinear" / "bin" / "train"
    train.write_text(train.read_text() + f"open({str(calls)!r}, 'a').write('run\\n')\n")
    monkeypatch.setenv("RANKBENCH_PEERS", str(home))
    est = LiblinearRankSVM(timeout_s=60).fit(X, y, qid)
    assert est.timed_by_ == "wall minus parse run" and calls.read_text() == "run\n" * 2
    assert est.fit_time_ == pytest.approx(max(est.wall_total_s_ - est.read_time_, 0.0))
    train.write_text(train.read_text() + "print('rankbench timer: train() 0.012500000 s')\n")
    calls.unlink()
    est = LiblinearRankSVM(timeout_s=60).fit(X, y, qid)
    assert est.timed_by_ == "train() clock" and calls.read_text() == "run\n"
    assert est.fit_time_ == 0.0125 and est.coef_.tolist() == [0.5, 0.25, -1.0]
    assert est.read_time_ == pytest.approx(est.wall_total_s_ - 0.0125)
    assert _leftovers(private_tmp) == []


def test_a_failing_peer_names_its_exit_status_and_leaves_no_folder(tmp_path, private_tmp, monkeypatch):
    home = install_fakes(tmp_path / "peers", "model")
    for peer, (_, programs) in PEERS.items():
        p = home / peer / "bin" / programs[0]
        p.write_text(f"#!{sys.executable}\nimport sys\nsys.stderr.write('out of cheese')\nsys.exit(3)\n")
    monkeypatch.setenv("RANKBENCH_PEERS", str(home))
    X, y, qid = _small()
    for cls, _ in PEERS.values():
        with pytest.raises(RuntimeError, match="exited with status 3: out of cheese"):
            cls(timeout_s=60).fit(X, y, qid)
    assert _leftovers(private_tmp) == []


@pytest.mark.parametrize("bad", [np.nan, 2.5])
def test_nan_or_fractional_qids_are_refused_by_every_peer_wrapper(bad, tmp_path, monkeypatch):
    # before: "cannot convert float NaN to integer" from the file writer, or the ids truncated
    monkeypatch.setenv("RANKBENCH_PEERS", str(install_fakes(tmp_path / "peers", "model")))
    X, y, qid = _small()
    q = qid.astype(np.float64)
    q[3] = bad
    for est in (SVMLightRanker(), LiblinearRankSVM(), SofiaML(), LiblinearPairs()):
        with pytest.raises(ValueError, match="qid must hold integer query ids within int64: entry 3"):
            est.fit(X, y, q)
