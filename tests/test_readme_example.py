"""The README's method-adapter example works as written, through the plugin route."""

from __future__ import annotations

import json
import re

from tests.conftest import REPO, run_cli


def test_readme_adapter_example_runs_in_a_grid(workdir, monkeypatch):
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Adding a method adapter", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    (workdir / "plugins" / "readme_method.py").write_text(code)
    monkeypatch.setenv("DPBENCH_PLUGINS", "readme_method")
    result = run_cli("run", "--methods", "noisy-mean", "--datasets", "gmm2d", "--eps", "0.5", "--no-progress")
    assert result.returncode == 0, result.stdout + result.stderr
    ledger = json.loads(next(workdir.glob("mlartifacts/*/artifacts/ledger.json")).read_text())
    assert [r["what"] for r in ledger["releases"]] == ["feature mean"]
    assert ledger["spent"]["epsilon"] <= 0.5 * (1 + 1e-9)
