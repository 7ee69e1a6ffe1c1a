"""What every run records about the code and the machine it ran on: the commit (``-dirty`` when
the code had uncommitted changes outside ``results/``, with the diff's hash), package versions,
the platform and whether compiled kernels can run."""

from __future__ import annotations

import hashlib
import os
import subprocess
from importlib.metadata import PackageNotFoundError, version
from collections.abc import Iterable
from pathlib import Path

PACKAGES = ("torch", "numpy", "autodp", "opacus", "scikit-learn", "xgboost", "pandas", "mlflow", "pytorch-fid")


def package_versions() -> dict[str, str]:
    found = {}
    for name in PACKAGES:
        try:
            found[f"version.{name}"] = version(name)
        except PackageNotFoundError:
            found[f"version.{name}"] = "not installed"
    return found


def git_commit() -> str:
    source = Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=source, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        # results/ is the record the runs write (results/runs), not code: a change there
        # does not make the code that produced a number unnamed
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ":/", ":(top,exclude)results"],
            cwd=source,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        return head + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def git_diff_sha256() -> str | None:
    """SHA-256 of the uncommitted change to the code (``git diff HEAD`` outside results/), so two
    dirty runs can at least be told apart; None on a clean tree or without git."""

    try:
        diff = subprocess.run(
            ["git", "diff", "HEAD", "--", ":/", ":(top,exclude)results"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            timeout=30,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return hashlib.sha256(diff).hexdigest() if diff else None


def installed_distributions() -> list[str]:
    """``name==version`` of every distribution this interpreter sees (mbi, jax, numba… as well as
    the few :data:`PACKAGES` a run's tags name)."""
    from importlib.metadata import distributions

    return sorted({f"{d.metadata['Name']}=={d.version}" for d in distributions()})


def plugin_sources() -> dict[str, str]:
    """The SHA-256 of each module ``$DPBENCH_PLUGINS`` names (a package: of its .py files), which
    may live outside the repository and so outside git's tree."""
    import importlib.util

    found = {}
    for name in filter(None, (m.strip() for m in os.environ.get("DPBENCH_PLUGINS", "").split(","))):
        spec = importlib.util.find_spec(name)
        origin = Path(spec.origin) if spec is not None and spec.origin else None
        if origin is None or not origin.is_file():
            found[name] = "not found"
            continue
        files = sorted(origin.parent.rglob("*.py")) if origin.name == "__init__.py" else [origin]
        digest = hashlib.sha256()
        for path in files:
            digest.update(path.read_bytes())
        found[name] = digest.hexdigest()
    return found


def outside_environments(folders: Iterable[Path]) -> list[str]:
    """What each of these built environments of an outside library holds (its ready.json: the
    requirements and ``pip freeze``), as a rebuild under the same key may resolve other versions;
    "not built" for one without it."""
    return [
        (folder / "ready.json").read_text() if (folder / "ready.json").is_file() else f"{folder.name}: not built"
        for folder in sorted(Path(f) for f in folders)
    ]


def code_identity(environments: Iterable[Path] = ()) -> str | None:
    """Everything the numbers of a resumable computation depend on, for its checkpoint's name: the
    repository's top-level tree entries but results/ (each a hash of all below it; commits of
    results alone keep it), the uncommitted diff's hash, every installed distribution's version,
    the plugin modules' sources and the outside environments it runs in (``environments``: their
    folders; another library's environment, built or not, leaves the name as it is). None without
    git. Untracked files inside the repository are not in it."""
    try:
        entries = subprocess.run(
            ["git", "ls-tree", "--full-tree", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return None
    tree = [entry for entry in entries if entry.split("\t")[-1] != "results"]
    identity = {
        "tree": tree,
        "diff": git_diff_sha256(),
        "packages": installed_distributions(),
        "plugins": plugin_sources(),
        "environments": outside_environments(environments),
    }
    return hashlib.sha256(repr(sorted(identity.items())).encode()).hexdigest()


def compiled_kernels_state() -> str:
    """Whether torch.compile's C++ kernels can run here (a method may use them for long fits, e.g.
    DP-MERF's class sums: the same numbers to float rounding as its eager kernels): the compiler
    found, or why none is used."""
    if os.environ.get("DPBENCH_COMPILE", "1") == "0":
        return "off (DPBENCH_COMPILE=0)"
    import shutil

    compiler = next(
        filter(None, (shutil.which(name) for name in (os.environ.get("CXX") or "", "g++", "c++", "clang++") if name)),
        None,
    )
    return compiler or "none (no C++ compiler)"


def run_context_tags() -> dict[str, str]:
    """What every run of a grid records about the code and the machine it ran on: the commit
    (``-dirty`` when the code had uncommitted changes, with the diff's hash), the platform and the
    package versions (the worker adds the CPU: ``cpu``)."""
    import platform

    commit = git_commit()
    tags = {
        "git_commit": commit,
        **package_versions(),
        "machine.cores": str(os.cpu_count()),
        "machine.platform": platform.platform(),
        "machine.python": platform.python_version(),
        "machine.compiled_kernels": compiled_kernels_state(),
    }
    if commit.endswith("-dirty"):
        tags["git_diff_sha256"] = git_diff_sha256() or "unknown"
    return tags
