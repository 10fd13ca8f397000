"""``python -m rankbench.peers build [peer ...]``: build the peer programs, logged, step by step.

Each build unpacks its sources into ``<home>/<peer>/src`` (fresh every time), compiles with
the system's gcc / make, and copies the programs into ``<home>/<peer>/bin``; the commands
and their output go to ``<home>/<peer>/build.log``.  A failing step raises ``BuildError``
naming the peer and the step.  The same sources and compiler give the same programs.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from rankbench.peers import PEERS, home, program, source_dir

SVMLIGHT_SDIST = "svmlight==0.4"   # the package index's copy of SVM-light V6.02's C sources


class BuildError(RuntimeError):
    """A peer build step failed (the message names the peer, the step and the log)."""


def _run(peer: str, step: str, cmd: list[str], cwd: Path, log: Path) -> None:
    with log.open("a") as fh:
        fh.write(f"$ {' '.join(cmd)}   (in {cwd})\n")
        fh.flush()
        proc = subprocess.run(cmd, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        raise BuildError(f"peer {peer}: step '{step}' failed (exit {proc.returncode}); see {log}")


def _fresh(peer: str) -> tuple[Path, Path, Path]:
    root = home() / peer
    src = root / "src"
    shutil.rmtree(src, ignore_errors=True)
    (root / "bin").mkdir(parents=True, exist_ok=True)
    src.mkdir(parents=True)
    log = root / "build.log"
    log.write_text(f"build of {peer}\n")
    return root, src, log


def _untar(peer: str, archive: Path, dest: Path) -> Path:
    if not archive.is_file():
        raise BuildError(f"peer {peer}: step 'sources' failed: {archive} not found (set PEERS_SRC "
                         "to the folder holding it; ../shared/peers/README.md says where each comes from)")
    with tarfile.open(archive) as tf:
        tf.extractall(dest, filter="data")
    (top,) = [p for p in dest.iterdir() if p.is_dir()]
    return top


def build_svmlight() -> None:
    root, src, log = _fresh("svmlight")
    _run("svmlight", "download", [sys.executable, "-m", "pip", "download", "--no-deps",
                                  "--no-binary", ":all:", SVMLIGHT_SDIST, "-d", str(src)], src, log)
    (sdist,) = src.glob("svmlight-*.tar.gz")
    lib = _untar("svmlight", sdist, src / "unpacked") / "lib"
    for name, files in (("svm_learn", ["svm_learn_main.c", "svm_learn.c", "svm_common.c", "svm_hideo.c"]),
                        ("svm_classify", ["svm_classify.c", "svm_common.c"])):
        _run("svmlight", f"compile {name}", ["gcc", "-O3", "-o", str(root / "bin" / name), *files, "-lm"],
             lib, log)


# LIBLINEAR's train prints no timer.  rankbench's own translation unit (not a change to its
# sources) wraps its train() call in a monotonic clock: train.c is compiled with train renamed
# to rankbench_timed_train (its call in main and its declaration in linear.h), and this unit
# times the library's train() -- the solver from problem to model, file reading and model
# writing excluded -- and prints the line LIBLINEAR_TIMER_RE reads.
LIBLINEAR_TIMER = r"""// rankbench: times LIBLINEAR's train() call (rankbench.peers.build.LIBLINEAR_TIMER)
#include <stdio.h>
#include <time.h>
#include "linear.h"

extern "C" struct model* rankbench_timed_train(const struct problem* prob,
                                               const struct parameter* param) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    struct model* m = train(prob, param);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("rankbench timer: train() %.9f s\n",
           (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec));
    fflush(stdout);
    return m;
}
"""
LIBLINEAR_CFLAGS = ["-Wall", "-O3", "-fPIC"]  # its Makefile's CFLAGS less -Wconversion


def build_liblinear() -> None:
    root, src, log = _fresh("liblinear")
    srcs = source_dir()
    top = _untar("liblinear", (srcs or Path("PEERS_SRC-unset")) / "liblinear-ranksvm.tar.gz", src)
    _run("liblinear", "make", ["make", "-s"], top, log)
    (top / "rankbench_timer.cpp").write_text(LIBLINEAR_TIMER)
    _run("liblinear", "compile the train() timer",
         ["g++", *LIBLINEAR_CFLAGS, "-c", "-o", "rankbench_timer.o", "rankbench_timer.cpp"], top, log)
    # the Makefile's link of train, with main's call going through the timer
    _run("liblinear", "link train with the timer",
         ["g++", *LIBLINEAR_CFLAGS, "-Dtrain=rankbench_timed_train", "-o", "train", "train.c",
          "rankbench_timer.o", "tron.o", "linear.o", "ranksvm.o", "blas/blas.a"], top, log)
    for name in PEERS["liblinear"]:
        shutil.copy2(top / name, root / "bin" / name)


# The two changes sofia-ml needs under g++ >= 12 at -O3 (../shared/peers/README.md), as exact
# text replacements in src/sf-sparse-vector.cc; each must apply exactly once.
SOFIA_PATCHES = (
    # (1) the feature loop advanced with strchr(...) + 1 and tested `position - 1 != NULL`,
    # undefined behaviour the optimizer removes: a line without a trailing '#' comment ran past
    # its end.  Advance through a helper that returns NULL at the last token, and test for NULL.
    ("void SfSparseVector::Init(const char* in_string) {",
     "static const char* SfNextToken(const char* p) {\n"
     "  const char* s = strchr(p, ' ');\n"
     "  return s == NULL ? NULL : s + 1;\n"
     "}\n\n"
     "void SfSparseVector::Init(const char* in_string) {"),
    ("       (position < in_string + length \n\t&& position - 1 != NULL\n\t&& position[0] != '#');\n"
     "       position = strchr(position, ' ') + 1) {",
     "       (position != NULL && position < in_string + length\n\t&& position[0] != '#');\n"
     "       position = SfNextToken(position)) {"),
    # (2) the qid value was copied without a terminating NUL: queries could be grouped wrongly.
    ("    strncpy(group_id_c_string, position, end - position);\n",
     "    strncpy(group_id_c_string, position, end - position);\n"
     "    group_id_c_string[end - position] = '\\0';\n"),
)


def build_sofia() -> None:
    root, src, log = _fresh("sofia")
    srcs = source_dir()
    top = _untar("sofia", (srcs or Path("PEERS_SRC-unset")) / "sofia-ml.tar.gz", src)
    target = top / "src" / "sf-sparse-vector.cc"
    text = target.read_text()
    for old, new in SOFIA_PATCHES:
        if text.count(old) != 1:
            raise BuildError(f"peer sofia: step 'patch sf-sparse-vector.cc' failed: the text "
                             f"{old[:60]!r} occurs {text.count(old)} times (expected once)")
        text = text.replace(old, new)
    target.write_text(text)
    with log.open("a") as fh:
        fh.write(f"patched {target}: {len(SOFIA_PATCHES)} replacements (rankbench.peers.build.SOFIA_PATCHES)\n")
    _run("sofia", "make", ["make", "-s", "sofia-ml"], top / "src", log)
    shutil.copy2(top / "src" / "sofia-ml", root / "bin" / "sofia-ml")


BUILDERS = {"svmlight": build_svmlight, "liblinear": build_liblinear, "sofia": build_sofia}


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    cmd = args.pop(0) if args else "status"
    names = args or list(BUILDERS)
    unknown = [n for n in names if n not in BUILDERS]
    if cmd not in ("build", "status") or unknown:
        print(f"usage: python -m rankbench.peers build|status [{'|'.join(BUILDERS)} ...]"
              + (f"; unknown peers {unknown}" if unknown else ""), file=sys.stderr)
        return 2
    failed = 0
    for n in names:
        if cmd == "build":
            try:
                BUILDERS[n]()
            except BuildError as exc:
                print(f"rankbench.peers: {exc}", file=sys.stderr)
                failed += 1
                continue
        state = "built" if all(program(n, p).is_file() for p in PEERS[n]) else "not built"
        print(f"{n}: {state} ({home() / n / 'bin'})")
    return 1 if failed else 0
