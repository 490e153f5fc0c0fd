"""The course names one oracle version, and the install pins exactly it."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib

import jax
import jaxlib

from shared.exercises import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _pins() -> dict[str, str]:
    project = PYPROJECT["project"]
    reqs = project["dependencies"] + project["optional-dependencies"]["torch"]
    return dict(re.fullmatch(r"([\w-]+)==([\w.+]+)", r).groups() for r in reqs if "==" in r)


def test_jax_jaxlib_and_torch_are_pinned_to_one_version_each():
    pins = _pins()
    assert pins["jax"] == pins["jaxlib"] == "0.10.2"
    assert pins["torch"] == "2.13.0"


def test_the_installed_oracle_is_the_pinned_one():
    assert jax.__version__ == _pins()["jax"]
    assert jaxlib.__version__ == _pins()["jaxlib"]


def test_readme_names_the_pinned_versions():
    readme = (ROOT / "README.md").read_text()
    pins = _pins()
    assert f"jax and jaxlib {pins['jax']}" in readme
    assert f"torch {pins['torch']}" in readme


def test_setup_refuses_an_unsupported_python_with_a_message(tmp_path):
    script = ROOT / "shared" / "check_python.py"
    ok = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    # A virtual environment made by another Python version is refused, naming both versions.
    fake = tmp_path / "bin" / "python"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 3.10\n")
    fake.chmod(0o755)
    bad = subprocess.run([sys.executable, str(script), str(fake)], capture_output=True, text=True)
    assert bad.returncode == 1
    here = "{}.{}".format(*sys.version_info[:2])
    assert "was made with Python 3.10" in bad.stderr
    assert f"({here})" in bad.stderr and "rm -rf" in bad.stderr


def test_setup_names_the_supported_range_for_an_old_python(monkeypatch, capsys):
    sys.path.insert(0, str(ROOT / "shared"))
    try:
        import check_python
    finally:
        sys.path.remove(str(ROOT / "shared"))
    monkeypatch.setattr(check_python.sys, "version_info", (3, 10, 13, "final", 0))
    assert check_python.main(["check_python.py"]) == 1
    err = capsys.readouterr().err
    assert "needs CPython 3.11 to 3.14" in err and "is 3.10" in err
    assert "PYTHON=python3.12" in err
