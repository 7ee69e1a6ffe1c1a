"""The README's method-adapter example is a complete method in ≤ 15 lines, as black formats it: it
passes the conformance kit and runs in a grid through the plugin route, as written; an incomplete
declaration is refused when it is made."""

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


def test_the_example_is_short_as_formatted():
    code = readme_code()
    assert len(code.splitlines()) <= 15
    black = pytest.importorskip("black")
    assert len(black.format_str(code, mode=black.Mode()).splitlines()) <= 15


def test_an_incomplete_declaration_is_refused_in_one_line():
    from bench.core.contracts import DataKind
    from bench.core.declare import method
    from bench.core.registry import RegistryError

    with pytest.raises(RegistryError, match="'no-kinds' is incomplete") as refused:
        method("no-kinds", "declares no data kind", kinds=(), register=False)(lambda data, context: None)
    assert "\n" not in str(refused.value)
    with pytest.raises(RegistryError, match="valid kinds"):
        method("bad-kind", "a kind that does not exist", kinds=("spreadsheet",), register=False)(lambda d, c: None)
    declared = method("fine", "a complete declaration", kinds={DataKind.DISCRETE}, register=False)(lambda d, c: "fitted")
    assert declared.fit(None, None) == "fitted" and declared.private and declared.data_kinds == {DataKind.DISCRETE}


def test_the_example_passes_the_conformance_kit(tmp_path, monkeypatch):
    from bench.core.registry import METHODS
    from bench.testing import check_method

    (tmp_path / "readme_laplace.py").write_text(readme_code())
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        module = __import__("readme_laplace")  # registers laplace-marginals, as DPBENCH_PLUGINS would
        report = check_method(module.laplace_marginals, data_dir=DATA_DIR)
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
