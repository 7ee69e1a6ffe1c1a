"""The shape of the code: layers, import arrows, and the lazy registry behind ``bench list``."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.api.registry import DATASETS, EVALUATORS, METHODS, PRETRAINERS, Plugin, Registry, RegistryError

REPO = Path(__file__).resolve().parents[1]
PLUGIN_PACKAGES = ("methods", "datasets", "evaluators")
HEAVY = ("torch", "jax", "opacus", "sklearn", "pandas", "matplotlib", "mlflow", "scipy")


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at the top or inside a function, and every string passed to
    ``importlib.import_module``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module":
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                found.add(node.args[0].value)
    return found


def imported_names(path: Path) -> set[str]:
    """Every module a file imports and every ``module.name`` it imports from one (lazy ones too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_the_tree_shows_the_layers():
    layers = sorted(p.name for p in (REPO / "bench").iterdir() if p.is_dir() and (p / "__init__.py").exists())
    assert layers == sorted(name for name in FLOORS if "." not in name and (REPO / "bench" / name).is_dir())
    loose = sorted(p.name for p in (REPO / "bench").glob("*.py"))
    assert loose == ["__init__.py", "__main__.py"]


# bench/'s floors, bottom first: a module imports only from its own floor and the floors below it
FLOORS = ("core", "privacy", "api", "harness", "report", "testing", "cli", "__main__")


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")


def floor_of(module: str) -> int | None:
    """The floor of a ``bench`` module (None: ``bench`` itself, whose ``run_cell`` is a lazy door)."""
    parts = module.split(".")
    return FLOORS.index(parts[1]) if parts[0] == "bench" and len(parts) > 1 and parts[1] in FLOORS else None


def bench_arrows() -> list[tuple[str, str]]:
    """Every (importer, imported) pair of modules inside bench/, lazy imports included."""
    modules = {module_name(p) for p in (REPO / "bench").rglob("*.py")}
    arrows = []
    for path in sorted((REPO / "bench").rglob("*.py")):
        for imported in imported_modules(path):
            if imported in modules:
                arrows.append((module_name(path), imported))
    return arrows


def test_bench_floors_import_only_downwards():
    """core < privacy < api < harness < report < testing < cli: no arrow runs up (the review of
    e5ccc90 found core ↔ privacy tied and the layers unpinned)."""
    upward = [
        f"{a} (floor {FLOORS[floor_of(a)]}) imports {b} (floor {FLOORS[floor_of(b)]})"
        for a, b in bench_arrows()
        if floor_of(a) is not None and floor_of(b) is not None and floor_of(b) > floor_of(a)
    ]
    assert upward == []


def test_no_import_circle_in_the_tree():
    """No two modules of bench/ or the plugin folders reach each other through imports (lazy ones
    included), and no plugin folder imports another: shared vocabulary lives in bench/."""
    import networkx as nx

    graph = nx.DiGraph()
    folders = ("bench", *PLUGIN_PACKAGES)
    paths = [p for folder in folders for p in sorted((REPO / folder).rglob("*.py"))]
    modules = {module_name(p) for p in paths}
    for path in paths:
        for imported in imported_names(path):
            # `from package import submodule` reaches the submodule; `from m import name`, m
            target = next((m for m in (imported, imported.rsplit(".", 1)[0]) if m in modules), None)
            if target is not None and target != module_name(path):
                graph.add_edge(module_name(path), target)
    circles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert circles == []
    crossing = sorted(
        {
            (a.split(".")[0], b.split(".")[0])
            for a, b in graph.edges
            if a.split(".")[0] in PLUGIN_PACKAGES
            and b.split(".")[0] in PLUGIN_PACKAGES
            and a.split(".")[0] != b.split(".")[0]
        }
    )
    assert crossing == []


def test_no_import_arrow_from_bench_to_the_plugin_folders():
    arrows = [
        f"{path.relative_to(REPO)} imports {module}"
        for path in sorted((REPO / "bench").rglob("*.py"))
        for module in imported_modules(path)
        if module.split(".")[0] in PLUGIN_PACKAGES
    ]
    assert arrows == []


def test_only_the_entry_point_imports_the_command_line():
    """Issue 29: presets expanded their grids through ``bench.cli``'s parser (a cli → presets → cli
    circle); the grid options now live in ``bench.harness.runargs``, below both."""
    arrows = [
        f"{path.relative_to(REPO)} imports bench.cli"
        for path in sorted((REPO / "bench").rglob("*.py"))
        if not module_name(path).startswith(("bench.cli", "bench.__main__"))
        and any(m == "bench.cli" or m.startswith("bench.cli.") for m in imported_modules(path))
    ]
    assert arrows == []


def test_the_scan_would_see_a_lazy_import(tmp_path):
    """The arrow test is not vacuous: imports inside functions and import_module strings count."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import importlib\ndef f():\n    from methods.pretrain import x\n    importlib.import_module('evaluators')\n"
    )
    assert {"methods.pretrain", "evaluators"} <= imported_modules(probe)


def heavy_modules_after(code: str) -> list[str]:
    """The heavy packages a fresh interpreter has imported after running ``code``."""
    probe = f"import sys\n{code}\nprint('HEAVY:' + ','.join(m for m in {HEAVY!r} if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=True)
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("HEAVY:")]
    return [name for name in line.removeprefix("HEAVY:").split(",") if name]


@pytest.mark.parametrize("argv", [["list"], ["list", "methods"], ["--help"], ["run", "--help"], ["run", "--eps", "x"]])
def test_listing_help_and_argument_errors_import_no_heavy_package(argv):
    code = f"from bench.cli import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n    pass"
    assert heavy_modules_after(code) == []


def test_planning_a_grid_of_light_methods_does_not_import_torch():
    """`run`'s process expands the grid and picks its worker count before any cell starts: for
    methods that need no torch, on a machine without a GPU driver, neither step imports it (a
    second or more of every such CLI run; the cells' own processes import what they fit with)."""
    from bench.cli.run import gpu_driver_present

    code = (
        "from bench.harness.grid import GridSpec, expand\nfrom bench.cli.run import default_jobs\n"
        "cells, _ = expand(GridSpec(['uniform', 'independent'], ['cervical', 'adult'], [1.0], [0]))\n"
        "assert len(cells) == 4 and {c.evaluators for c in cells} == {('downstream',)}\n"
        "assert default_jobs(cells, 1) >= 1"
    )
    if gpu_driver_present():
        pytest.skip("a GPU driver is present: planning asks torch whether CUDA works")
    assert "torch" not in heavy_modules_after(code)


def test_plugin_packages_and_core_contracts_are_light():
    code = "import methods, datasets, evaluators, bench.core.data, bench.api.contracts, bench.api.registry, bench.core.params"
    assert heavy_modules_after(code) == []


def test_listing_names_everything_without_loading_it():
    assert "dp-merf" in METHODS.names() and "adult" in DATASETS.names() and "fid" in EVALUATORS.names()
    assert PRETRAINERS.names() == ["resnet18-cifar"]
    assert "torch" not in heavy_modules_after("from bench.api.registry import METHODS\nMETHODS.cards()")


@pytest.mark.parametrize(
    "registry,name",
    [(METHODS, "dp-merf"), (METHODS, "real"), (METHODS, "uniform"), (EVALUATORS, "prdc"), (EVALUATORS, "downstream")],
)
def test_an_object_registered_directly_gets_the_card_its_builtin_declares(registry, name):
    """A plugin module registers objects, not cards: `bench list` must tag them as a card would."""
    fresh: Registry = Registry(registry.kind, "dpbench.test-none")
    fresh.register(registry.get(name))
    assert fresh.card(name).tags == registry.card(name).tags and fresh.card(name).kinds == registry.card(name).kinds


def test_a_card_that_names_the_wrong_object_is_refused():
    registry: Registry = Registry("method", "dpbench.test-none")
    registry.register(Plugin("not-real", "methods.real:real", "a card whose object is named 'real'"))
    with pytest.raises(RegistryError, match="named 'real', but its card says 'not-real'"):
        registry.get("not-real")
    registry.register(Plugin("missing", "methods.no_such_module:X", "a card naming nothing"))
    with pytest.raises(RegistryError, match="cannot load methods.no_such_module:X"):
        registry.get("missing")


def test_citations_point_at_the_papers_not_at_notes_outside_the_repository():
    """A user of the package has the papers (arXiv ids) and the authors' code, not our research notes."""
    files = [p for folder in ("bench", "methods", "datasets", "evaluators") for p in (REPO / folder).rglob("*.py")]
    files += [REPO / "README.md", REPO / "results" / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    pattern = re.compile(r"seed-(dphp|dpmerf|dpmepf|dissertation)\.md|shared/research|anchors-[a-z-]+\.md")
    found = [
        f"{p.relative_to(REPO)}:{i}"
        for p in files
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert found == []


# Continuous random draws are how DP noise is made; in the methods they may only be the public
# randomness listed here (why each is not a release's noise). Every DP noise sample comes from the
# ledger (bench/privacy/ledger.py) through the private-data handle.
NOISE_DRAWS = {"normal", "normal_", "randn", "randn_like", "standard_normal", "laplace", "exponential", "gumbel"}
PUBLIC_DRAWS = {
    ("dp_gan.py", "_fake_batch"): "the generator's latent input",
    ("nets.py", "forward"): "the generators' latent input",
    ("dp_merf.py", "draw_frequencies"): "random Fourier feature frequencies, drawn before any row is read",
}


# mbi's synthetic_data draws from numpy's global generator: seeded from the run, its state restored
GLOBAL_GENERATOR_USES = {("pgm.py", "model_marginals"), ("pgm.py", "sample")}


def test_no_method_draws_noise_outside_the_ledger_or_from_numpy_s_global_generator():
    # methods/drivers/ is not scanned: a driver runs inside an outside library's own environment
    # (bench.api.external), where that library's mechanisms draw the noise its claimed (ε, δ) covers
    found = {}
    for path in sorted((REPO / "methods").glob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for function in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            for node in ast.walk(function):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                    continue
                called = ast.unparse(node.func)
                global_generator = ast.unparse(node.func.value) in (
                    "np.random",
                    "numpy.random",
                ) and node.func.attr not in ("default_rng", "Generator", "SeedSequence", "PCG64")
                assert not global_generator or (path.name, function.name) in GLOBAL_GENERATOR_USES, (
                    f"{path.name}:{node.lineno} {called}: numpy's global generator"
                )
                if node.func.attr in NOISE_DRAWS:
                    found.setdefault((path.name, function.name), []).append(node.lineno)
    unexpected = {where: lines for where, lines in found.items() if where not in PUBLIC_DRAWS}
    assert not unexpected, f"noise drawn outside the ledger (route it through data/ledger queries): {unexpected}"
    assert set(found) == set(PUBLIC_DRAWS), "a listed public draw is gone: drop it from PUBLIC_DRAWS"


def test_no_file_in_bench_is_over_450_lines():
    """Issue 57: 13 files had grown past 450 lines; the redesign split them, and this keeps it so."""
    long = {
        str(p.relative_to(REPO)): n
        for p in sorted((REPO / "bench").rglob("*.py"))
        if (n := len(p.read_text().splitlines())) > 450
    }
    assert long == {}
