"""The README's method-adapter example is a complete method in ≤ 25 lines: it passes the
conformance kit and runs in a grid through the plugin route, as written."""

from __future__ import annotations

import json
import os
import re
import sys

import pytest

from tests.conftest import REPO, run_cli

DATA_DIR = os.environ.get("DPBENCH_DATA_DIR")
pytestmark = pytest.mark.skipif(not DATA_DIR, reason="needs DPBENCH_DATA_DIR (adult-discrete)")


def readme_code() -> str:
    section = (REPO / "README.md").read_text().split("## Adding a method adapter", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_example_is_short():
    assert len(readme_code().splitlines()) <= 25


def test_the_example_passes_the_conformance_kit(tmp_path, monkeypatch):
    from bench.core.registry import METHODS
    from bench.testing import check_method

    (tmp_path / "readme_laplace.py").write_text(readme_code())
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        module = __import__("readme_laplace")  # registers laplace-marginals, as DPBENCH_PLUGINS would
        report = check_method(module.LaplaceMarginals(), data_dir=DATA_DIR)
    finally:
        METHODS.unregister("laplace-marginals")
        sys.modules.pop("readme_laplace", None)
    assert report.passed == ["adult-discrete"]


def test_the_example_runs_in_a_grid(workdir, monkeypatch):
    (workdir / "plugins" / "readme_method.py").write_text(readme_code())
    monkeypatch.setenv("DPBENCH_PLUGINS", "readme_method")
    result = run_cli("run", "--methods", "laplace-marginals", "--datasets", "adult-discrete", "--eps", "0.5",
                     "--evaluators", "marginals", "--no-progress")
    assert result.returncode == 0, result.stdout + result.stderr
    ledger = json.loads(next(workdir.glob("mlartifacts/*/artifacts/ledger.json")).read_text())
    releases = ledger["releases"]  # one Laplace histogram per column and the label, each ε/k
    assert len(releases) > 2 and {r["mechanism"] for r in releases} == {"laplace"}
    assert ledger["trusted_reads"] == []  # reached its rows only through the handle's queries
    assert ledger["spent"]["epsilon"] <= 0.5 * (1 + 1e-9)
