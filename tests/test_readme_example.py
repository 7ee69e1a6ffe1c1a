"""The README's method, evaluator and dataset examples are each complete in ≤ 15 lines, as black
formats them: they pass their conformance kits and run in a grid through the plugin route, as
written; an incomplete declaration is refused when it is made."""

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


def readme_blocks(section: str) -> list[str]:
    text = (REPO / "README.md").read_text().split(f"## {section}", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", text, re.S)


def evaluator_and_dataset_code() -> tuple[str, str]:
    evaluator_code, dataset_code = readme_blocks("Adding an evaluator or a dataset")
    return evaluator_code, dataset_code


@pytest.mark.parametrize("which", ["method", "evaluator", "dataset"])
def test_the_example_is_short_as_formatted(which):
    code = {
        "method": readme_code(),
        "evaluator": evaluator_and_dataset_code()[0],
        "dataset": evaluator_and_dataset_code()[1],
    }[which]
    assert len(code.splitlines()) <= 15
    black = pytest.importorskip("black")
    assert len(black.format_str(code, mode=black.Mode()).splitlines()) <= 15


def test_incomplete_evaluator_and_dataset_declarations_are_refused_in_one_line():
    from bench.core.data import DataKind, Schema
    from bench.api.declare import dataset, evaluator
    from bench.api.registry import RegistryError

    with pytest.raises(RegistryError, match="'no-metrics' is incomplete") as refused:
        evaluator(
            "no-metrics", "declares no metric specs", kinds={DataKind.TABULAR}, metrics={"x": 1.0}, register=False
        )(lambda *args: {})
    assert "\n" not in str(refused.value)
    with pytest.raises(RegistryError, match="'no-schema' is incomplete"):
        dataset("no-schema", "a schema that is not one", schema="columns a, b", register=False)(lambda *a: None)
    with pytest.raises(RegistryError, match="test_share"):
        dataset("bad-share", "all rows held out", schema=Schema((), "y", ("a",)), test_share=1.0, register=False)(
            lambda *a: None
        )


def test_the_evaluator_and_dataset_examples_pass_their_kits(tmp_path, monkeypatch):
    from bench.api.registry import DATASETS, EVALUATORS
    from bench.testing import check_dataset, check_evaluator

    evaluator_code, dataset_code = evaluator_and_dataset_code()
    (tmp_path / "readme_plugins.py").write_text(evaluator_code + "\n" + dataset_code)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        module = __import__("readme_plugins")
        dataset_report = check_dataset(module.noisy_xor)
        evaluator_report = check_evaluator(module.mean_gap, data_dir=DATA_DIR)
        split = module.noisy_xor.load(None, 3)
    finally:
        EVALUATORS.unregister("mean-gap")
        DATASETS.unregister("noisy-xor")
        sys.modules.pop("readme_plugins", None)
    assert dataset_report.passed == ["noisy-xor"] and evaluator_report.passed
    assert (len(split.train), len(split.test)) == (1600, 400)  # all 2,000 rows, 20% held out by the seed
    assert 0.3 < split.train.y.mean() < 0.7  # the label is the XOR of the signs, not a constant


def test_the_evaluator_and_dataset_examples_run_in_a_grid(workdir, monkeypatch):
    evaluator_code, dataset_code = evaluator_and_dataset_code()
    (workdir / "plugins" / "readme_plugins.py").write_text(evaluator_code + "\n" + dataset_code)
    monkeypatch.setenv("DPBENCH_PLUGINS", "readme_plugins")
    result = run_cli(
        "run",
        "--methods",
        "real,independent",
        "--datasets",
        "noisy-xor",
        "--eps",
        "1",
        "--evaluators",
        "mean-gap",
        "--no-progress",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    table = run_cli("table", "--metric", "mean-gap.gap")
    assert table.returncode == 0 and "noisy-xor" in table.stdout, table.stdout + table.stderr


def test_an_incomplete_declaration_is_refused_in_one_line():
    from bench.core.data import DataKind
    from bench.api.declare import method
    from bench.api.registry import RegistryError

    with pytest.raises(RegistryError, match="'no-kinds' is incomplete") as refused:
        method("no-kinds", "declares no data kind", kinds=(), register=False)(lambda data, context: None)
    assert "\n" not in str(refused.value)
    with pytest.raises(RegistryError, match="valid kinds"):
        method("bad-kind", "a kind that does not exist", kinds=("spreadsheet",), register=False)(lambda d, c: None)
    declared = method("fine", "a complete declaration", kinds={DataKind.DISCRETE}, register=False)(
        lambda d, c: "fitted"
    )
    assert declared.fit(None, None) == "fitted" and declared.private and declared.data_kinds == {DataKind.DISCRETE}


def test_the_example_passes_the_conformance_kit(tmp_path, monkeypatch):
    from bench.api.registry import METHODS
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
    result = run_cli(
        "run",
        "--methods",
        "laplace-marginals",
        "--datasets",
        "adult-discrete",
        "--eps",
        "0.5",
        "--evaluators",
        "marginals",
        "--no-progress",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    ledger = json.loads(next(workdir.glob("mlartifacts/*/artifacts/ledger.json")).read_text())
    releases = ledger["releases"]  # one Laplace histogram per column and the label, each ε/k
    assert len(releases) > 2 and {r["mechanism"] for r in releases} == {"laplace"}
    assert ledger["trusted_reads"] == []  # reached its rows only through the handle's queries
    assert ledger["spent"]["epsilon"] <= 0.5 * (1 + 1e-9)
