"""The data walls (issue 56, kind 1): a fit that reaches for the data by another door than its
handle — the dataset registry, a dataset's files — fails, with one line naming the wall; the honest
fit beside it runs. ``bench.core.walls``; docs/privacy.md, "The walls"."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.core.walls import DataWallError, fit_wall, landlock_abi, lock_data_folder, refuse_inside_fit
from tests.conftest import run_cli

DATA_DIR = os.environ.get("DPBENCH_DATA_DIR")
pytestmark = pytest.mark.skipif(not DATA_DIR, reason="needs DPBENCH_DATA_DIR (cervical)")

# Two methods a researcher could write in good faith, each copying the training rows into its
# output by a door other than its handle.
DOORS_PLUGIN = '''
import os
from pathlib import Path
from bench.api import DataKind, method
from bench.api.registry import DATASETS
from methods.baselines import uniform


def like_uniform(name, description):
    return method(name, description, kinds={DataKind.TABULAR, DataKind.DISCRETE}, data_independent=True)


@like_uniform("loads-its-own-rows", "loads the private split through the dataset registry")
def loads_its_own_rows(data, context):
    """Loads the private split through the dataset registry and hands it back as its sample."""
    DATASETS.get("cervical").load(None, context.seed)
    return uniform.fit(data, context)


@like_uniform("opens-the-data-files", "opens the dataset's files in the data folder itself")
def opens_the_data_files(data, context):
    """Opens the dataset's files in the data folder itself, below every loader."""
    folder = Path(os.environ["DPBENCH_DATA_DIR"]) / "cervical"
    for path in sorted(folder.iterdir()):
        path.read_bytes()
    return uniform.fit(data, context)
'''


def test_loaders_refuse_inside_a_fit_and_only_there():
    refuse_inside_fit("nothing")  # outside a fit: allowed
    with fit_wall("m"):
        with pytest.raises(DataWallError, match="inside m's fit: the data wall refuses it"):
            refuse_inside_fit("loading x")
        from bench.api.registry import DATASETS

        with pytest.raises(DataWallError, match="the data wall"):
            DATASETS.get("cervical").load(DATA_DIR, 0)
        with pytest.raises(DataWallError, match="the data wall"):
            DATASETS.get("gmm2d").load(None, 0)  # generated from the seed: walled too
    DATASETS.get("gmm2d").load(None, 0)  # lifted when the fit returns: the evaluators read the test split


def test_a_fit_that_loads_or_opens_its_own_rows_fails_with_one_line_naming_the_wall(workdir):
    (workdir / "plugins" / "doors_plugin.py").write_text(DOORS_PLUGIN)
    env = {"DPBENCH_PLUGINS": "dpbench_test_plugins,doors_plugin"}
    result = run_cli(
        "run",
        "--methods",
        "loads-its-own-rows,opens-the-data-files,uniform",
        "--datasets",
        "cervical",
        "--eps",
        "1",
        "--evaluators",
        "none",
        "--no-progress",
        "--experiment",
        "walls",
        env=env,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    lines = {line.split(":", 1)[0].strip(): line for line in result.stdout.splitlines() if "FAILED" in line}
    loads = next(line for key, line in lines.items() if "loads-its-own-rows" in key)
    assert "DataWallError" in loads and "the data wall refuses it" in loads
    opens = next(line for key, line in lines.items() if "opens-the-data-files" in key)
    if landlock_abi() >= 1:
        assert "DataWallError" in opens and "the data wall (Landlock) refused it" in opens, opens
    assert "uniform" not in " ".join(lines), "the honest method beside them must run"
    assert "Traceback" not in result.stdout + result.stderr


@pytest.mark.skipif(landlock_abi() < 1, reason="the kernel has no Landlock: the process-level wall is not available")
def test_the_process_wall_closes_the_data_folder_but_its_public_weights_and_everything_else(tmp_path):
    folder = tmp_path / "data"
    (folder / "private").mkdir(parents=True)
    (folder / "private" / "rows.csv").write_text("secret\n")
    (folder / "fid-inception").mkdir()
    (folder / "fid-inception" / "weights.pth").write_text("public\n")
    (tmp_path / "beside.txt").write_text("fine\n")
    code = f"""
from pathlib import Path
from bench.core.walls import lock_data_folder
assert lock_data_folder(Path({str(folder)!r}))
for path, readable in (({str(folder / "private" / "rows.csv")!r}, False), ({str(folder / "fid-inception" / "weights.pth")!r}, True),
                       ({str(tmp_path / "beside.txt")!r}, True), ("/etc/hostname", True)):
    try:
        Path(path).read_text()
        ok = True
    except PermissionError:
        ok = False
    assert ok == readable, (path, ok)
print("walled")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).parents[1])
    assert done.returncode == 0 and "walled" in done.stdout, done.stdout + done.stderr
    assert Path(folder / "private" / "rows.csv").read_text() == "secret\n"  # this process keeps its access
    assert callable(lock_data_folder)


def test_a_fit_context_names_no_part_of_the_data_folder_but_its_public_weights(tmp_path):
    """The door a context used to leave open: ``context.data_dir`` named the folder holding every
    split. The context now keeps only the public weights subfolder (which the wall leaves readable)."""
    import dataclasses

    from bench.api.contracts import FitContext
    from bench.api.registry import DATASETS
    from bench.privacy.budget import PrivacyBudget
    from bench.privacy.ledger import PrivacyLedger

    folder = tmp_path / "data"
    context = FitContext.of(DATASETS.get("cervical"), None, 0, PrivacyLedger(PrivacyBudget(1.0, 1e-5)), data_dir=folder)
    assert context.public_weights == folder / "fid-inception"
    paths = [v for f in dataclasses.fields(context) if isinstance(v := getattr(context, f.name), (str, Path))]
    assert all(not str(v) or Path(v) != folder and not str(folder).startswith(str(v)) for v in paths), paths
    assert not hasattr(context, "data_dir")
