"""The README's and docs' code blocks run, so they cannot drift from the code.

A fenced block's info string says what happens to it:

- ``python``: executed (in a fresh namespace, in a temporary folder);
- ``console``: each ``$ `` line runs in bash in a temporary folder (``results/store`` there is
  the repository's committed store, read only); the lines after a command are its expected
  output, which must appear in what it prints (stdout and stderr together) as consecutive lines
  (trailing blanks ignored; a line ``...`` stands for any lines).  ``RANKBENCH_UPDATE_DOCS=1``
  rewrites those lines from what the commands print now;
- ``sh`` (or ``bash``): each line runs (no output checked), exit status 0;
- any of them with ``skip: <reason>`` is not run (the reason is required); ``needs=OHSUMED,MQ2008``
  skips unless those folders are under RANKBENCH_DATA, ``needs-module=pkg.mod`` unless the
  module imports.  Blocks of other languages (text, yaml, toml) are not run.

Also: every solver and data set config in conf/ is named in the docs, the README stays a short
quickstart, and no link leaves the repository.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
RUNNABLE = ("python", "console", "sh", "bash")
README_MAX_LINES = 160
_FENCE = re.compile(r"^```(\S*)(.*)$")


@dataclass
class Block:
    path: Path
    line: int          # 1-based line of the opening fence
    lang: str
    info: str
    body: list[str]

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"

    @property
    def skip(self) -> str | None:
        _, sep, reason = self.info.partition("skip:")
        return reason.strip() if sep else None

    def option(self, key: str) -> list[str]:
        hit = re.search(rf"(?:^|\s){re.escape(key)}=(\S+)", self.info.partition("skip:")[0])
        return hit.group(1).split(",") if hit else []


def blocks(path: Path) -> list[Block]:
    """The fenced code blocks of a Markdown file."""
    out, cur = [], None
    for i, line in enumerate(path.read_text().splitlines(), start=1):
        hit = _FENCE.match(line)
        if cur is None and hit:
            cur = Block(path, i, hit.group(1), hit.group(2).strip(), [])
        elif cur is not None and line.startswith("```"):
            out.append(cur)
            cur = None
        elif cur is not None:
            cur.body.append(line)
    assert cur is None, f"{path}: a code block opened at line {cur.line} is never closed"
    return out


ALL = [b for p in DOCS for b in blocks(p)]
RUN = [b for b in ALL if b.lang in RUNNABLE]


def _skip_unless_ready(block: Block) -> None:
    if block.skip is not None:
        pytest.skip(block.skip)
    root = os.environ.get("RANKBENCH_DATA")
    for folder in block.option("needs"):
        if not root or not (Path(root) / folder).is_dir():
            pytest.skip(f"needs {folder} under RANKBENCH_DATA")
    for module in block.option("needs-module"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"needs the module {module}")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    # `rankbench` is this interpreter's entry point; the checkout's sources come first
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep)
    env.pop("RANKBENCH_STORE", None)
    env["COLUMNS"] = "250"
    return env


def _workdir(tmp_path: Path) -> Path:
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "store").symlink_to(REPO / "results" / "store")
    return tmp_path


def _commands(body: list[str]) -> list[tuple[str, list[str]]]:
    """(command, expected output lines) of a console block; ``\\`` continues a command."""
    out: list[tuple[str, list[str]]] = []
    lines = iter(body)
    for line in lines:
        if line.startswith("$ "):
            cmd = line[2:]
            while cmd.endswith("\\"):
                cmd = cmd[:-1] + " " + next(lines).strip()
            out.append((cmd, []))
        else:
            assert out, f"output line before any command: {line!r}"
            out[-1][1].append(line)
    return out


def _match_at(actual: list[str], i: int, expected: list[str]) -> bool:
    if not expected:
        return True
    if expected[0] == "...":
        return any(_match_at(actual, j, expected[1:]) for j in range(i, len(actual) + 1))
    return i < len(actual) and actual[i] == expected[0] and _match_at(actual, i + 1, expected[1:])


def _contains(actual: list[str], expected: list[str]) -> bool:
    """Whether ``expected`` (``...`` = any lines) appears as consecutive lines of ``actual``."""
    return any(_match_at(actual, i, expected) for i in range(len(actual) + 1))


@pytest.mark.parametrize("block", RUN, ids=[b.id for b in RUN])
def test_code_block_runs(block: Block, tmp_path, monkeypatch):
    _skip_unless_ready(block)
    work = _workdir(tmp_path)
    if block.lang == "python":
        monkeypatch.chdir(work)
        code = compile("\n".join(block.body), block.id, "exec")
        exec(code, {"__name__": "__docs__"})  # noqa: S102 - the docs' own code, that is the test
        return
    if block.lang in ("sh", "bash"):
        for line in block.body:
            if line.strip() and not line.lstrip().startswith("#"):
                p = subprocess.run(["bash", "-c", line], cwd=work, env=_env(),
                                   capture_output=True, text=True, timeout=600)
                assert p.returncode == 0, f"{block.id}: {line}\n{p.stdout}\n{p.stderr}"
        return
    updated, changed = [], False
    for cmd, expected in _commands(block.body):
        p = subprocess.run(["bash", "-c", cmd], cwd=work, env=_env(), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=600)
        actual = [ln.rstrip() for ln in p.stdout.replace(str(work), ".").splitlines()]
        if os.environ.get("RANKBENCH_UPDATE_DOCS") and expected:
            fresh = [ln for ln in actual if not ln.startswith("rankbench results: reading")]
            changed |= fresh != expected
            updated += [f"$ {cmd}", *fresh]
            continue
        updated += [f"$ {cmd}", *expected]
        if expected:
            assert _contains(actual, [e.rstrip() for e in expected]), (
                f"{block.id}: `{cmd}` printed (exit {p.returncode}):\n" + "\n".join(actual)
                + "\n\nthe docs say:\n" + "\n".join(expected)
                + "\n(RANKBENCH_UPDATE_DOCS=1 rewrites the docs' transcripts)")
        else:
            assert p.returncode == 0, f"{block.id}: `{cmd}` exited {p.returncode}:\n{p.stdout}"
    if changed:
        text = block.path.read_text().splitlines()
        text[block.line:block.line + len(block.body)] = updated
        block.path.write_text("\n".join(text) + "\n")


def test_every_block_that_is_not_run_says_why():
    for b in RUN:
        assert b.skip is None or b.skip, f"{b.id}: `skip:` without a reason"
    untagged = [b.id for b in ALL if b.lang == ""]
    assert not untagged, (f"code blocks without a language: {untagged}; give each one (python, "
                          "console or sh: run by this test, or with `skip: <why>`; text, yaml ...: "
                          "not run)")


def test_every_solver_and_dataset_config_is_in_the_docs():
    text = "\n".join(p.read_text() for p in DOCS)
    conf = REPO / "src" / "rankbench" / "conf"
    for group in ("solver", "dataset"):
        names = sorted(p.stem for p in (conf / group).glob("*.yaml"))
        assert names
        missing = [n for n in names if f"`{n}`" not in text]
        assert not missing, f"conf/{group} configs named in no docs page: {missing}"


def test_the_readme_is_a_quickstart_and_links_stay_in_the_repository():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= README_MAX_LINES
    for path in DOCS:
        for target in re.findall(r"\]\(([^)#\s]+)", path.read_text()):
            if re.match(r"[a-z]+://", target):
                continue
            resolved = (path.parent / target).resolve()
            assert resolved.is_relative_to(REPO), f"{path.name}: link {target} leaves the repository"
            assert resolved.exists(), f"{path.name}: link {target} names nothing"
    # every docs page is named in the README's list
    for page in (REPO / "docs").glob("*.md"):
        assert f"docs/{page.name}" in readme, f"README does not name docs/{page.name}"


def test_console_transcripts_match_by_hand():
    assert _contains(["a", "b", "c", "d"], ["b", "c"])
    assert not _contains(["a", "b", "c"], ["a", "c"])
    assert _contains(["a", "b", "x", "y", "c"], ["b", "...", "c"])
    assert not _contains(["a", "b"], ["b", "...", "c"])
    assert _commands(["$ echo a \\", "  b", "a b", "$ true"]) == [("echo a  b", ["a b"]),
                                                                ("true", [])]
