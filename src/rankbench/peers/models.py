"""The peers' model files, read strictly: every malformed or non-finite entry is a ValueError
naming the file and the line (a garbage model never becomes a weight vector).

- LIBLINEAR (``train -s 8``): a header of ``key value`` lines (``solver_type``, ``nr_class``,
  ``nr_feature``, ``bias``; ``label`` ...), a ``w`` line, then one weight per line.
- SVM-light: ``SVM-light Version ...``, ten ``value # description`` header lines ending with
  the threshold b, then one support vector per line: ``alpha*y index:value ... #``.
- sofia-ml: one line of ``dimensionality`` weights, the first the bias.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_NON_FINITE = re.compile(r"[+-]?(?:nan|inf|infinity)", re.IGNORECASE)


def text_lines(path: Path, program: str) -> list[str]:
    """The lines of a model file that must be ASCII text; ValueError naming the first other byte."""
    raw = path.read_bytes()
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ValueError(f"{path}, line {line}: not a {program} model (byte {raw[exc.start]:#04x} "
                         f"at offset {exc.start} is not text)") from None
    return text.splitlines()


def number(token: str, path: Path, line: int, what: str) -> float:
    """``token`` as a finite float (a plain decimal, as the peers print them); ValueError naming ``what``."""
    if _DECIMAL.fullmatch(token):
        value = float(token)
        if np.isfinite(value):
            return value
    if _NON_FINITE.fullmatch(token) or _DECIMAL.fullmatch(token):  # nan, inf, 1e400
        raise ValueError(f"{path}, line {line}: {what} {token!r} is NaN or infinite")
    raise ValueError(f"{path}, line {line}: {what} {token!r} is not a number")


def integer(token: str, path: Path, line: int, what: str) -> int:
    """``token`` as a decimal integer; ValueError naming ``what``."""
    if not re.fullmatch(r"[+-]?\d{1,18}", token):
        raise ValueError(f"{path}, line {line}: {what} {token!r} is not an integer")
    return int(token)


def read_liblinear_model(path: Path, n_features: int) -> np.ndarray:
    """w of a LIBLINEAR ranksvm model (no bias), padded with zeros to ``n_features``."""
    lines = text_lines(path, "LIBLINEAR")
    try:
        w_line = next(i for i, ln in enumerate(lines) if ln.strip() == "w")
    except StopIteration:
        raise ValueError(f"{path}: no 'w' line in the LIBLINEAR model") from None
    nr_feature = None
    for no, ln in enumerate(lines[:w_line], 1):
        key, _, value = ln.strip().partition(" ")
        if key == "bias":
            if number(value.strip(), path, no, "bias") >= 0:
                raise ValueError(f"{path}, line {no}: a bias term is not expected for ranking")
        elif key == "nr_feature":
            nr_feature = integer(value.strip(), path, no, "nr_feature")
        elif key not in ("solver_type", "nr_class", "label", "rho"):
            raise ValueError(f"{path}, line {no}: unknown LIBLINEAR model header {ln!r}")
    w = []
    for no, ln in enumerate(lines[w_line + 1:], w_line + 2):
        tokens = ln.split()
        if not tokens:
            continue
        if len(tokens) != 1:
            raise ValueError(f"{path}, line {no}: {len(tokens)} weights on one line (ranksvm writes one)")
        w.append(number(tokens[0], path, no, "weight"))
    if nr_feature is not None and len(w) != nr_feature:
        raise ValueError(f"{path}: {len(w)} weights, the header says nr_feature {nr_feature}")
    if len(w) > n_features:
        raise ValueError(f"{path}: {len(w)} weights for {n_features} features")
    return np.concatenate([np.asarray(w, dtype=np.float64), np.zeros(n_features - len(w))])


def read_svmlight_model(path: Path, n_features: int) -> np.ndarray:
    """w = sum_i alpha_i y_i x_i over the support vectors of a linear SVM-light model."""
    lines = text_lines(path, "SVM-light")
    if not lines or not lines[0].startswith("SVM-light"):
        raise ValueError(f"{path}, line 1: not an SVM-light model file")
    if len(lines) < 2 or integer(lines[1].split("#")[0].strip(), path, 2, "kernel type") != 0:
        raise ValueError(f"{path}, line 2: kernel type {lines[1].split('#')[0].strip()} is not linear (0)")
    header = {}
    for no, ln in enumerate(lines[1:], 2):
        value, sep, what = ln.partition("#")
        if not sep:
            raise ValueError(f"{path}, line {no}: header line without '# description': {ln[:80]!r}")
        header[what.strip()] = (value.strip(), no)
        if what.strip().startswith("threshold b"):
            break
    else:
        raise ValueError(f"{path}: no 'threshold b' line in the SVM-light model")
    b_value, start = header[next(k for k in header if k.startswith("threshold b"))]
    number(b_value, path, start, "threshold b")
    n_sv = None
    if "number of support vectors plus 1" in header:
        value, no = header["number of support vectors plus 1"]
        n_sv = integer(value, path, no, "number of support vectors plus 1") - 1
    w = np.zeros(n_features)
    seen = 0
    for no, ln in enumerate(lines[start:], start + 1):
        body = ln.split("#", 1)[0].split()
        if not body:
            continue
        seen += 1
        coef = number(body[0], path, no, "alpha*y")
        for tok in body[1:]:
            j, sep, v = tok.partition(":")
            if not sep:
                raise ValueError(f"{path}, line {no}: token {tok!r} is not index:value")
            j = integer(j, path, no, "feature index")
            if not 1 <= j <= n_features:
                raise ValueError(f"{path}, line {no}: feature {j} beyond the data's {n_features}")
            w[j - 1] += coef * number(v, path, no, f"value of feature {j}")
    if n_sv is not None and seen != n_sv:
        raise ValueError(f"{path}: {seen} support vectors, the header says {n_sv}")
    if not np.all(np.isfinite(w)):
        raise ValueError(f"{path}: the support vectors sum to a non-finite weight vector")
    return w


def read_sofia_model(path: Path, n_features: int) -> np.ndarray:
    """The feature weights of a sofia-ml model (its first weight, the bias, dropped)."""
    lines = [(no, ln) for no, ln in enumerate(text_lines(path, "sofia-ml"), 1) if ln.strip()]
    if len(lines) != 1:
        raise ValueError(f"{path}: {len(lines)} non-empty lines in a sofia-ml model (one expected)")
    no, ln = lines[0]
    w = np.array([number(t, path, no, f"weight {k}") for k, t in enumerate(ln.split())])
    if w.shape[0] != n_features + 1:
        raise ValueError(f"{path}: sofia-ml wrote {w.shape[0]} weights for {n_features} features + bias")
    return w[1:]
