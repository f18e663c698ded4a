"""The README's command-line block works exactly as printed on a fresh clone (issue 21): every
``python -m core ...`` line of the first ``bash`` block under "## Command line" runs, in order, in an
empty folder holding the clone's tests/data, with exit code 0 and output."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[list[str]]:
    """The runnable block's commands: continuation lines joined, comments dropped, ``source``
    (the environment, which this test's interpreter already is) skipped."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Command line", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block is not None
    joined = block.group(1).replace("\\\n", " ")
    commands = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        if words and words[0] != "source":
            commands.append(words)
    return commands


def test_the_readme_block_is_runnable_as_printed(tmp_path):
    commands = readme_commands()
    assert len(commands) >= 8 and all(c[:3] == ["python", "-m", "core"] for c in commands), commands
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "data").symlink_to(ROOT / "tests" / "data")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for command in commands:
        done = subprocess.run(
            [sys.executable, *command[1:]], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, (command, done.stderr[-2000:])
        assert done.stdout.strip() or "-o" in command, command
    assert (tmp_path / "fused.trec").stat().st_size > 0 and (tmp_path / "reranked.trec").stat().st_size > 0
