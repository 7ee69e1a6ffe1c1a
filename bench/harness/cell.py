"""One run's typed form and its one codec: a :class:`Cell` is what a grid expands to, what the
worker runs, what the outbox keeps, what ``cell.json`` beside every run and the results record
hold, and what tables read back; ``key`` names its result (versioned, ``KEY_VERSION``)."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

from bench.core.data import RunProtocol
from bench.core.errors import UsageError
from bench.privacy.budget import Calibrator, Delta, epsilon_key, epsilon_text


# The version of a cell's identity and of its JSON form. Version 1 (keys before the one-run-record
# redesign) kept earlier keys by leaving defaults out of the hash; `bench.harness.legacy` reads
# its stored cells once, and `benchmarks/rekey_records.py` re-keyed the committed record with it.
KEY_VERSION = 2
CELL_FILE = "cell.json"  # a run's artifact holding ``Cell.to_json()``: the run's stored form


class CellCodecError(UsageError, ValueError):
    """A stored cell that is not a version-2 cell (see ``bench.harness.legacy`` for version 1)."""


@dataclass(frozen=True)
class Cell:
    """One (method, dataset, ε, seed) run with everything needed to reproduce it. Its one codec:
    ``to_json``/``from_json`` (the worker's argument, the outbox, ``cell.json`` beside every run,
    the results record); its identity: ``key`` (versioned, ``KEY_VERSION``)."""

    method: str
    dataset: str
    epsilon: float  # inf for a non-private method or a non-private run of a private one
    delta: Delta  # fixed, auto (resolved against n_train in the worker) or not applicable (ε = ∞)
    seed: int
    params: dict[str, Any]
    param_sources: dict[str, str]
    evaluators: tuple[str, ...]
    profile: str
    calibrator: Calibrator
    protocol: RunProtocol = RunProtocol.SOUND
    device: str = "cpu"
    data_dir: str | None = None
    evaluator_settings: dict[str, dict[str, Any]] = field(default_factory=dict)  # --eval-set, parsed
    secure_noise: bool = False  # --secure-noise: DP noise from the OS's secure source, not the seed
    # torch intra-op threads of the cell's process (--threads): fixed per cell, never derived from
    # --jobs, because a different thread count can change float reductions and so the results
    threads: int = 1
    # whether the runner may lend the cell's fit idle cores (beyond ``threads``): its method declares
    # results independent of torch's thread count on this dataset's kind (``thread_invariant_kinds``,
    # checked by the kit's ``thread_invariance``); so it is not in the key
    lendable: bool = False

    def __post_init__(self) -> None:
        # typed once here, whichever edge built the cell (grid expansion, cell.json, the outbox)
        object.__setattr__(self, "epsilon", float(self.epsilon))  # JSON holds ∞ as "inf"
        object.__setattr__(self, "delta", Delta.parse(self.delta))
        object.__setattr__(self, "calibrator", Calibrator(self.calibrator))
        object.__setattr__(self, "protocol", RunProtocol(self.protocol))
        object.__setattr__(self, "evaluators", tuple(self.evaluators))
        object.__setattr__(self, "seed", int(self.seed))
        object.__setattr__(self, "threads", int(self.threads))

    @property
    def key(self) -> str:
        """Hash of what determines the result (not where it runs or where the data lies)."""
        return self._hash(self._identity(with_evaluators=True))

    @property
    def setup_key(self) -> str:
        """Hash of what determines the fit and its synthetic sample: the key without the
        evaluators. Cells of one setup share one fit; each adds its evaluators' scores to it."""
        return self._hash(self._identity(with_evaluators=False))

    @staticmethod
    def _hash(identity: dict[str, Any]) -> str:
        blob = json.dumps(identity, sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:20]

    def _identity(self, with_evaluators: bool) -> dict[str, Any]:
        identity: dict[str, Any] = {
            "key_version": KEY_VERSION,
            "method": self.method,
            "dataset": self.dataset,
            "epsilon": epsilon_key(self.epsilon),
            "delta": self.delta.text,
            "seed": self.seed,
            "params": self.params,
            "calibrator": self.calibrator.value,
            "protocol": self.protocol.value,
            "secure_noise": self.secure_noise,
            "threads": self.threads,
        }
        if with_evaluators:
            identity |= {"evaluators": list(self.evaluators), "evaluator_settings": self.evaluator_settings}
        else:
            identity["kind"] = "setup"  # never equal to a cell key
        return identity

    @property
    def label(self) -> str:
        return f"{self.method}/{self.dataset}/ε={epsilon_text(self.epsilon)}/seed={self.seed}"

    def to_json(self) -> dict[str, Any]:
        """The cell as JSON values (ε as a number or "inf", δ as its text, the enums as their
        values), with ``key_version``; ``from_json`` reads it back to an equal cell."""
        plain = {
            **asdict(self),
            "delta": self.delta.text,
            "calibrator": self.calibrator.value,
            "protocol": self.protocol.value,
            "evaluators": list(self.evaluators),
        }
        if not math.isfinite(self.epsilon):
            plain["epsilon"] = epsilon_key(self.epsilon)
        return {"key_version": KEY_VERSION, **plain}

    @staticmethod
    def from_json(data: dict[str, Any]) -> "Cell":
        if not isinstance(data, dict):
            raise CellCodecError(f"not a stored cell: a JSON {type(data).__name__}, not an object")
        version = data.get("key_version")
        if version != KEY_VERSION:
            raise CellCodecError(
                f"a stored cell of key version {version!r}, not {KEY_VERSION}: a run logged before the one-run-record "
                "redesign; read it with bench.harness.legacy.cell_from_v1 (benchmarks/rekey_records.py does a record folder)"
            )
        fields = {name: value for name, value in data.items() if name != "key_version"}
        try:
            return Cell(**fields)
        except (TypeError, ValueError) as error:  # a missing or unknown field; a value of the wrong kind
            raise CellCodecError(f"not a stored cell: {error}") from None

    def mlflow_params(self) -> dict[str, str]:
        """The cell as MLflow params, text for the tracking UI's columns (``hp.*`` the method's
        parameters, ``eval.<evaluator>.*`` --eval-set values); nothing reads a cell back from
        them: ``cell.json`` beside the run is its stored form."""
        params = {
            "method": self.method,
            "dataset": self.dataset,
            "epsilon": epsilon_key(self.epsilon),
            "delta": self.delta.text,
            "seed": str(self.seed),
            "profile": self.profile,
            "calibrator": self.calibrator.value,
            "protocol": self.protocol.value,
            "evaluators": ",".join(self.evaluators),
            "threads": str(self.threads),
        }
        params.update({f"hp.{name}": str(value) for name, value in self.params.items()})
        for evaluator, settings in self.evaluator_settings.items():
            params.update({f"eval.{evaluator}.{name}": str(value) for name, value in settings.items()})
        return params
