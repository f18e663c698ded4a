"""The package (issue 25): pyproject.toml's [project] reads the requirements files and ships every
package, `ranklens` is `python -m core`, and `ranklens serve` builds the launcher's and Streamlit's
command lines (nothing started here; .ci/wheel_smoke.sh builds, installs and serves the wheel)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import core
import core.__main__
import core.cli.serve
from pages.common import serve as launcher

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]


def requirement_lines(name: str) -> list[str]:
    lines = [line.strip() for line in (ROOT / name).read_text(encoding="utf-8").splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def test_dependencies_are_exactly_the_requirements_files():
    project = PYPROJECT["project"]
    assert project["name"] == "ranklens" and project["requires-python"] == ">=3.11"
    assert set(project["dynamic"]) == {"version", "dependencies", "optional-dependencies"}
    assert "dependencies" not in project and "optional-dependencies" not in project  # one list each: the files
    dynamic = SETUPTOOLS["dynamic"]
    assert dynamic["version"] == {"attr": "core.__version__"}
    assert dynamic["dependencies"] == {"file": ["requirements.txt"]}
    assert dynamic["optional-dependencies"] == {
        "ray": {"file": ["requirements-ray.txt"]},
        "irds": {"file": ["requirements-irds.txt"]},
    }
    # setuptools reads these files line by line: only plain requirements (no -r, -e, URLs or options)
    for name in ("requirements.txt", "requirements-ray.txt", "requirements-irds.txt"):
        lines = requirement_lines(name)
        assert lines, name
        for line in lines:
            assert not line.startswith("-"), (name, line)
            requirement = Requirement(line)
            assert requirement.url is None and str(requirement.specifier).startswith("=="), (name, line)


def test_every_package_and_its_data_is_shipped():
    listed = set(SETUPTOOLS["packages"])
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("core", "pages")
        for init in (ROOT / top).rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    assert listed == found | {"pages._streamlit"}
    assert SETUPTOOLS["py-modules"] == ["app"]
    assert SETUPTOOLS["package-dir"] == {"pages._streamlit": ".streamlit"}
    package_dirs = {name: ROOT / SETUPTOOLS["package-dir"].get(name, name.replace(".", "/")) for name in listed}
    for package, patterns in SETUPTOOLS["package-data"].items():
        for pattern in patterns:
            assert list(package_dirs[package].glob(pattern)), (package, pattern)
    # app.py's favicon is package data of pages.common (installed beside app.py's pages/)
    assert (ROOT / "pages" / "common" / "icon.png").is_file()
    assert 'with_name("pages") / "common" / "icon.png"' in (ROOT / "app.py").read_text(encoding="utf-8")


def test_ranklens_is_python_m_core(monkeypatch):
    assert PYPROJECT["project"]["scripts"] == {"ranklens": "core.__main__:cli"}
    # `python -m core` runs the same function as the console script
    tree = ast.parse((ROOT / "core" / "__main__.py").read_text(encoding="utf-8"))
    guard = [node for node in tree.body if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)]
    assert len(guard) == 1 and ast.unparse(guard[0].body[0]) == "cli()"
    # which is main, then the fast exit
    seen: list[object] = []
    monkeypatch.setattr(core.__main__, "main", lambda: 7)
    monkeypatch.setattr(core.__main__, "_exit_now", seen.append)
    core.__main__.cli()
    assert seen == [7]


def test_version_from_both_entries(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-m", "core", "--version"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout == f"ranklens {core.__version__}\n"
    script = tmp_path / "ranklens"  # what pip writes for the console script, run from another folder
    script.write_text("import sys\nfrom core.__main__ import cli\nsys.exit(cli())\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script), "evaluate", "--help"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout.startswith("usage: ranklens evaluate"), done.stdout[:200]


def exec_of(monkeypatch, argv: list[str]) -> tuple[str, list[str], dict[str, str]]:
    """What ``python -m core <argv>`` execs (nothing is started)."""
    calls: list[tuple[str, list[str], dict[str, str]]] = []

    def fake_execve(path: str, args: list[str], env: dict[str, str]) -> None:
        calls.append((path, list(args), dict(env)))
        raise SystemExit(0)

    monkeypatch.setattr(core.cli.serve.os, "execve", fake_execve)
    with pytest.raises(SystemExit):
        core.__main__.main(argv)
    assert len(calls) == 1
    return calls[0]


def test_serve_execs_the_launcher_with_the_workspace_and_streamlit_options(monkeypatch, tmp_path):
    monkeypatch.delenv("PYTHONPATH", raising=False)
    path, argv, env = exec_of(
        monkeypatch,
        [
            "serve",
            "--workspace",
            "ws.zip",
            "--server.port",
            "8600",
            "--workspace-dir=wsdir",
            "--server.headless",
            "true",
        ],
    )
    assert path == sys.executable
    assert argv == [
        sys.executable,
        "-P",  # the current folder is not on sys.path: a core/ or pages/ there cannot stand in
        "-m",
        "pages.common.serve",
        "--workspace",
        "ws.zip",
        "--workspace-dir",
        "wsdir",
        "--server.port",
        "8600",
        "--server.headless",
        "true",
    ]
    # a checkout is put on the path; site-packages (an installed package) already is
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(ROOT)
    monkeypatch.setattr(core.cli.serve, "_site_folders", lambda: {ROOT})
    assert "PYTHONPATH" not in exec_of(monkeypatch, ["serve"])[2]
    # the launcher splits the workspace options as `make run WORKSPACE=...` does
    workspace_env, rest = launcher.workspace_options(argv[4:])
    assert rest == ["--server.port", "8600", "--server.headless", "true"]
    assert workspace_env["RANKLENS_WORKSPACE"] == str(Path("ws.zip").resolve())


def test_other_commands_still_refuse_unknown_options(capsys):
    with pytest.raises(SystemExit) as exit_info:
        core.__main__.main(["demo", "out", "--server.port", "1"])
    assert exit_info.value.code == 2
    assert "unrecognized arguments: --server.port 1" in capsys.readouterr().err


def test_serve_needs_the_dashboard_beside_core(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(core.cli.serve, "ROOT", tmp_path)
    assert core.__main__.main(["serve"]) == 2
    assert "the dashboard is not installed beside" in capsys.readouterr().err


def test_streamlit_command_line_in_a_checkout():
    # Streamlit reads .streamlit/config.toml beside app.py itself: nothing added
    assert launcher.SCRIPT_CONFIG.is_file()
    assert launcher.streamlit_argv(["--server.port", "8600"]) == [
        "streamlit",
        "run",
        str(ROOT / "app.py"),
        "--server.port",
        "8600",
    ]


def test_streamlit_command_line_when_installed(monkeypatch, tmp_path):
    # site-packages has no .streamlit/ beside app.py: the packaged copy becomes flags, the caller's win
    monkeypatch.setattr(launcher, "SCRIPT_CONFIG", tmp_path / "absent" / "config.toml")
    monkeypatch.setattr(launcher, "PACKAGED_CONFIG", ROOT / ".streamlit" / "config.toml")
    argv = launcher.streamlit_argv(["--server.port", "8600", "--server.headless=false"])
    assert argv[:3] == ["streamlit", "run", str(ROOT / "app.py")]
    assert argv[-3:] == ["--server.port", "8600", "--server.headless=false"]
    flags = argv[3:-3]
    pairs = dict(zip(flags[::2], flags[1::2], strict=True))
    assert pairs["--server.maxUploadSize"] == "1024"
    assert pairs["--server.fileWatcherType"] == "none"
    assert pairs["--browser.gatherUsageStats"] == "false"
    assert pairs["--theme.light.primaryColor"] == "#3b6ea8"
    assert "--server.headless" not in pairs and "--server.port" not in pairs
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))

    def leaves(table: dict) -> int:
        return sum(leaves(value) if isinstance(value, dict) else 1 for value in table.values())

    assert len(pairs) == leaves(config) - 1  # every setting but server.headless, which the caller gives
    # every flag is a Streamlit option
    from streamlit import config as st_config

    options = st_config.get_config_options()
    assert all(flag[2:] in options for flag in pairs), sorted(set(pairs) - {f"--{o}" for o in options})


def test_config_flags_shapes():
    config = {"a": {"on": True, "n": 3, "names": ["x", "y"], "b": {"c": "#fff"}}}
    assert launcher.config_flags(config, []) == [
        *("--a.on", "true", "--a.n", "3", "--a.names", "x", "--a.names", "y", "--a.b.c", "#fff"),
    ]
    assert launcher.config_flags(config, ["--a.n=4", "--a.b.c", "red"]) == [
        *("--a.on", "true", "--a.names", "x", "--a.names", "y"),
    ]
