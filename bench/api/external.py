"""Outside generators (issue 60): a declared method whose fit runs another library's synthesizer
in that library's own pinned virtual environment, as a subprocess, and whose ledger holds the
library's own claim of (ε, δ) — marked as not independently verified.

    SMARTNOISE = Environment("smartnoise-synth-1.0.8", ("smartnoise-synth==1.0.8",))

    external_method(
        "smartnoise-mst", "smartnoise-synth's MST", kinds={DataKind.DISCRETE},
        environment=SMARTNOISE, driver=Path(__file__).parent / "drivers" / "smartnoise.py",
        synthesizer="mst", library="smartnoise-synth 1.0.8",
    )

**The environment** is built by the harness on first use (``python -m venv``, then ``pip install``
of its pinned requirements; a line on stderr says so, and the folder is
``$DPBENCH_ENV_DIR/<name>-<key>``, default ``~/.cache/dpbench/envs``), under a file lock so that
two cells building it at once build it once; a second run reuses it. With
``inherit_site_packages`` (the default) the environment sees this interpreter's packages (torch,
numpy) where the library's pins allow them and installs its own versions where they do not (e.g.
smartnoise-synth's ``opacus < 0.15``, ``mbi < 2``, ``pandas < 3``) — so the first use downloads
megabytes, not a second torch.

**The exchange** runs through files in a private folder: the fit writes ``train.csv`` (the training
rows, numbers: a coded column's codes, a numerical column's values) and ``request.json`` (the
public schema — every column's kind with its public category count or bounds, never inferred from
the rows —, ε, δ, the seed and the synthesizer's settings); the driver script, run with the
environment's Python, fits, writes ``claim.json`` (the library's name and version and the (ε, δ) it
accounts, preprocessing included) and keeps its fitted model in the folder; each ``sample(n)``
runs the driver again for ``n`` rows (``sample-<n>.csv``). A driver that fails, or runs past
``timeout_s``, fails the cell with one line holding the last line it printed.

The rows leave through ``PrivateData.rows`` (named in the ledger's trusted reads) because the
library, not this harness, is the mechanism; the data folder itself stays walled off (Landlock
is inherited by the subprocess). The record then says what the run's ε is: a claim
(``ClaimedRelease``), which ``bench audit --black-box`` can test from the output alone.
"""

from __future__ import annotations

import csv
import fcntl
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from bench.api.declare import method
from bench.core.data import ColumnKind, DataKind, LabelledData, Schema
from bench.core.errors import UsageError
from bench.core.params import HyperParameters
from bench.core.processes import die_with_parent
from bench.core.walls import inside_fit

ENV_VARIABLE = "DPBENCH_ENV_DIR"
BUILD_TIMEOUT_VARIABLE = "DPBENCH_ENV_BUILD_TIMEOUT_S"
BUILD_TIMEOUT_S = 1800.0  # a step of an environment's build (pip install), unless $DPBENCH_ENV_BUILD_TIMEOUT_S says


def build_timeout_s() -> float:
    """Seconds a build step may take: ``$DPBENCH_ENV_BUILD_TIMEOUT_S``, else :data:`BUILD_TIMEOUT_S`.
    synthcity's ≈ 7 GB took over 1,800 s on a loaded 2-core machine."""
    text = os.environ.get(BUILD_TIMEOUT_VARIABLE, "").strip()
    if not text:
        return BUILD_TIMEOUT_S
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not seconds > 0:
        raise ExternalError(f"${BUILD_TIMEOUT_VARIABLE} is {text!r}; give a number of seconds above 0, e.g. 7200")
    return seconds


class ExternalError(RuntimeError):
    """The outside library's environment could not be built, or its driver failed."""


def environments_root() -> Path:
    return Path(os.environ.get(ENV_VARIABLE) or Path.home() / ".cache" / "dpbench" / "envs")


@dataclass(frozen=True)
class Environment:
    """A pinned virtual environment for one library (module docstring)."""

    name: str
    requirements: tuple[str, ...]
    inherit_site_packages: bool = True

    @property
    def key(self) -> str:
        """Changes with the requirements and this interpreter's version: a new key, a new build."""
        text = json.dumps([self.requirements, self.inherit_site_packages, sys.version_info[:2], sys.prefix])
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    @property
    def folder(self) -> Path:
        return environments_root() / f"{self.name}-{self.key}"

    @property
    def python(self) -> Path:
        return self.folder / "bin" / "python"

    def ready(self) -> bool:
        return (self.folder / "ready.json").is_file()

    @property
    def failure_file(self) -> Path:
        return environments_root() / f".{self.folder.name}.failed"

    def ensure(self) -> Path:
        """The environment's Python, building the environment first if it is not there yet —
        outside a fit only: behind a cell's walls a build fails for reasons of its own (Landlock
        refuses a wheel build's cross-folder renames), so a fit that finds no environment fails at
        once, with the reason the runner's build gave (``DeclaredMethod.prepare``)."""
        if self.ready():
            return self.python
        fit = inside_fit()
        if fit is not None:
            why = self.failure_file.read_text().strip() if self.failure_file.is_file() else "it was not built"
            raise ExternalError(
                f"{fit}: the environment {self.name} is not ready ({why}); the runner builds it before a "
                "grid's first cell, outside the walls that refuse a build inside one"
            )
        root = environments_root()
        root.mkdir(parents=True, exist_ok=True)
        with open(root / f".{self.folder.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building it: wait, then reuse it
            if not self.ready():
                try:
                    self._build()
                except ExternalError as error:
                    self.failure_file.write_text(f"its build failed: {error}\n")
                    raise
                self.failure_file.unlink(missing_ok=True)
        return self.python

    def prepare(self) -> Path:
        """``DeclaredMethod.prepare``: the environment built (:meth:`ensure`), and its folder — what
        the method's numbers depend on beyond this repository, for a resumable computation's name."""
        self.ensure()
        return self.folder

    def _build(self) -> None:
        print(
            f"building the environment {self.name} for its first use: pip install {' '.join(self.requirements) or '(nothing)'} "
            f"(once; kept in {self.folder})",
            file=sys.stderr,
            flush=True,
        )
        partial = self.folder.with_name(self.folder.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        venv = [sys.executable, "-m", "venv", *(["--system-site-packages"] if self.inherit_site_packages else [])]
        _step([*venv, str(partial)], f"python -m venv for {self.name}")
        python = str(partial / "bin" / "python")
        pip = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        if self.requirements:
            _step([*pip, *self.requirements], f"pip install {' '.join(self.requirements)}")
        frozen = _step([python, "-m", "pip", "freeze", "--local"], "pip freeze").splitlines()
        (partial / "ready.json").write_text(
            json.dumps({"requirements": list(self.requirements), "installed": frozen, "python": sys.version}, indent=1)
        )
        partial.rename(self.folder)  # whole or not at all: a killed build leaves only a .partial


def _step(argv: list[str], what: str) -> str:
    timeout_s = build_timeout_s()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise ExternalError(
            f"{what} took over {timeout_s:g} s; on a slow network or a loaded machine give it longer "
            f"(${BUILD_TIMEOUT_VARIABLE}=7200) and run again"
        ) from None
    if done.returncode != 0:
        raise ExternalError(f"{what} failed: {_last_line(done.stderr or done.stdout)}")
    return done.stdout


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else "(no output)"


# --- the exchange with a driver ---------------------------------------------------------------


def public_columns(schema: Schema) -> list[dict[str, Any]]:
    """The request's description of each column, from the public schema only."""
    columns = []
    for column in schema.columns:
        if column.kind == ColumnKind.NUMERICAL:
            lower, upper = column.public_bounds()
            columns.append({"name": column.name, "kind": "numerical", "lower": lower, "upper": upper})
        else:
            columns.append({"name": column.name, "kind": "categorical", "categories": column.domain_size()})
    columns.append({"name": schema.label, "kind": "categorical", "categories": schema.n_classes, "label": True})
    return columns


def write_rows(path: Path, data: LabelledData) -> None:
    header = [c.name for c in data.schema.columns] + [data.schema.label]
    coded = [c.kind != ColumnKind.NUMERICAL for c in data.schema.columns]
    with open(path, "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(header)
        for row, label in zip(data.x, data.y):
            writer.writerow([int(v) if is_code else repr(float(v)) for v, is_code in zip(row, coded)] + [int(label)])


def read_rows(path: Path, schema: Schema) -> LabelledData:
    """The driver's rows in the schema; codes outside a column's public domain are an error."""
    with open(path, newline="") as source:
        reader = csv.reader(source)
        header = next(reader)
        expected = [c.name for c in schema.columns] + [schema.label]
        if header != expected:
            raise ExternalError(f"the driver wrote columns {header[:5]}…, expected {expected[:5]}…")
        table = np.array([[float(v) for v in row] for row in reader], dtype=np.float64).reshape(-1, len(expected))
    x, y = table[:, :-1], table[:, -1].astype(np.int64)
    for j, column in enumerate(schema.columns):
        if column.kind != ColumnKind.NUMERICAL and ((x[:, j] < 0) | (x[:, j] >= column.domain_size())).any():
            raise ExternalError(f"the driver wrote codes outside column {column.name!r}'s public domain")
    if ((y < 0) | (y >= schema.n_classes)).any():
        raise ExternalError("the driver wrote labels outside the schema's classes")
    return LabelledData(x.astype(np.float32), y, schema)


def run_driver(python: Path, driver: Path, folder: Path, args: Iterable[str], timeout_s: float) -> None:
    argv = [str(python), str(driver), *args, str(folder)]
    env = {**os.environ, "PYTHONNOUSERSITE": "1", "PYTHONWARNINGS": "ignore"}
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout_s, env=env, cwd=folder, preexec_fn=die_with_parent
        )
    except subprocess.TimeoutExpired:
        raise ExternalError(f"{driver.name} {' '.join(args)} ran past its {timeout_s:.0f} s timeout") from None
    (folder / f"driver-{next(iter(args), 'run')}.log").write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        raise ExternalError(f"{driver.name} {next(iter(args), '')} failed: {_last_line(done.stderr or done.stdout)}")


class ExternalSampler:
    """A fitted outside model: its folder (removed with the sampler) and the driver to sample it."""

    def __init__(self, python: Path, driver: Path, folder: Path, schema: Schema, timeout_s: float, seed: int):
        self.python, self.driver, self.folder, self.schema = python, driver, folder, schema
        self.timeout_s, self.seed, self.draws = timeout_s, seed, 0
        self._cleanup = weakref.finalize(self, shutil.rmtree, folder, True)

    def sample(self, n: int, labels: np.ndarray | None = None) -> LabelledData:
        if labels is not None:
            raise ExternalError("an outside generator draws its labels itself; it cannot sample given labels")
        self.draws += 1
        run_driver(
            self.python, self.driver, self.folder, ["sample", str(n), str(self.seed + self.draws)], self.timeout_s
        )
        return read_rows(self.folder / f"sample-{n}.csv", self.schema)


def read_claim(folder: Path, library: str) -> tuple[float, float, str, str]:
    """(ε, δ, library and version, what) of the driver's ``claim.json``."""
    try:
        claim = json.loads((folder / "claim.json").read_text())
        return float(claim["epsilon"]), float(claim["delta"]), str(claim.get("library") or library), str(claim["what"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ExternalError(f"the driver's claim.json is missing or unreadable ({error})") from None


def external_method(
    name: str,
    description: str,
    *,
    kinds: Iterable[DataKind | str],
    environment: Environment,
    driver: Path,
    synthesizer: str,
    library: str,
    hyperparameters: HyperParameters | None = None,
    timeout_s: float = 3600.0,
    register: bool = True,
):
    """Declares the outside synthesizer ``synthesizer`` of ``library`` as method ``name`` (module
    docstring); ``hyperparameters``' values reach the driver as the request's ``settings``."""

    def fit(data, context):
        from bench.privacy.releases import ClaimedRelease

        if not context.budget.is_private:
            raise UsageError(f"{name} is an outside DP library's synthesizer: it needs a finite ε")
        python = environment.ensure()
        rows = data.rows(trusted=f"handed to {library}, whose own accounting is the run's claimed (ε, δ)")
        request = {
            "synthesizer": synthesizer,
            "epsilon": context.budget.epsilon,
            "delta": context.budget.delta,
            "seed": context.seed,
            "columns": public_columns(rows.schema),
            "settings": dict(vars(context.params)),
        }
        folder = Path(tempfile.mkdtemp(prefix=f"dpbench-external-{name}-"))  # private to this user (0700)
        try:
            write_rows(folder / "train.csv", rows)
            (folder / "request.json").write_text(json.dumps(request, indent=1))
            run_driver(python, driver, folder, ["fit"], timeout_s)
            epsilon, delta, claimed_by, what = read_claim(folder, library)
            (folder / "train.csv").unlink()  # the private rows do not outlive the fit
        except BaseException:  # a failed fit leaves nothing of the rows behind
            shutil.rmtree(folder, ignore_errors=True)
            raise
        context.ledger.record(ClaimedRelease(what, epsilon, delta, claimed_by))
        return ExternalSampler(python, driver, folder, rows.schema, timeout_s, context.seed)

    # the declaring module (a built-in's card names it), as @method records a decorated function's
    fit.__module__ = sys._getframe(1).f_globals.get("__name__", __name__)
    fit.__name__ = name.replace("-", "_")
    return method(
        name,
        description,
        kinds=kinds,
        hyperparameters=hyperparameters,
        external=library,
        prepare=environment.prepare,  # built by the runner, where no wall refuses a build
        register=register,
    )(fit)
