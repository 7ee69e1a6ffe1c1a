"""The three contracts of the harness: datasets, method adapters and evaluators — the plugin-facing
API, above the privacy floor (a fit's context holds its budget and ledger).

Everything the runner touches goes through these types, so a new method, dataset or evaluator
only has to satisfy one of the Protocols below and register itself (see ``bench.api.registry``).
The data types they speak of live one floor down, in ``bench.core.data``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Generic, Mapping, Protocol, TypeVar

import numpy as np

from bench.core.data import PROTOCOLS, DataKind, LabelledData, RunProtocol, Schema, Split, stream_seed_sequence
from bench.privacy.budget import PrivacyBudget
from bench.privacy.releases import NEIGHBOURING
from bench.core.params import HyperParameters, NoParameters

if TYPE_CHECKING:  # typing only: importing the contracts must not import torch or the accountants
    import torch

    from bench.privacy.ledger import PrivacyLedger
    from bench.privacy.private_data import PrivateData


P = TypeVar("P")  # a method's parameter dataclass


class Dataset(Protocol):
    """A registered dataset: its schema is public; its rows are private."""

    name: str
    description: str
    kind: DataKind
    schema: Schema

    def load(self, data_dir: Path | None, seed: int, protocol: RunProtocol = RunProtocol.SOUND) -> Split:
        """Read local files (or generate) and return the seed's train/test split under the
        protocol's data conventions (``sound`` or the seeds' ``paper`` conventions)."""
        ...


class FittedModel(Protocol):
    def sample(self, n: int, labels: np.ndarray | None = None) -> LabelledData:
        """Draw ``n`` synthetic rows in the training data's schema. With ``labels`` given
        (length n), generate conditionally on them."""
        ...


@dataclass(frozen=True)
class FitContext(Generic[P]):
    """What a method gets besides the data: the budget, the ledger it must record every
    release in, its resolved hyperparameters (``params``, an instance of the dataclass its
    ``HyperParameters`` declares), the seed, the torch device, and a callback
    ``progress(done, total)`` for long loops. ``protocol`` is ``sound`` or ``paper`` (the seeds'
    conventions, e.g. integer-coded categoricals). ``dataset``: the registered name of the private
    dataset (a method with public inputs checks they never saw it); ``public_weights``: the public
    pretrained-weights folder inside the run's data folder (``fid-inception/``). The context names
    no other part of the data folder: a fit reaches its rows only through the handle (and the
    data wall refuses the loaders and, in a cell's own process, the folder itself).

    Randomness comes from named streams derived from the seed — ``rng("minibatches")``,
    ``torch_rng("latents")`` — so that each use has its own stream and no two names or seeds
    share one; a name is a stable identifier (changing it changes the run's draws)."""

    budget: PrivacyBudget
    ledger: "PrivacyLedger"
    params: P
    seed: int
    device: "torch.device"
    protocol: RunProtocol = RunProtocol.SOUND
    data_kind: DataKind = DataKind.TABULAR
    progress: Callable[[int, int], None] = field(default=lambda done, total: None)
    dataset: str = ""
    public_weights: Path | None = None

    @staticmethod
    def of(
        dataset: Any,
        params: P,
        seed: int,
        ledger: "PrivacyLedger",
        *,
        device: Any = "cpu",
        protocol: RunProtocol = RunProtocol.SOUND,
        progress: Callable[[int, int], None] | None = None,
        data_dir: Path | None = None,
    ) -> "FitContext[P]":
        """The one factory of a fit's context (the worker, `bench evaluate`'s shadow fits, the
        audits, the kit): ``dataset`` is the registered dataset (its name and kind); the budget is
        the ledger's, so the two never disagree; ``data_dir``: the run's data folder (None: the
        default lookup), of which the context keeps the public weights folder only."""
        import torch  # lazily: importing the contracts must not import torch

        from bench.core.inception import public_weights_folder

        return FitContext(
            ledger.budget,
            ledger,
            params,
            seed,
            torch.device(device),
            protocol,
            dataset.kind,
            progress or (lambda done, total: None),
            dataset.name,
            public_weights_folder(data_dir),
        )

    @property
    def neighbouring(self) -> str:
        """The neighbouring relation every sensitivity is stated under (one place:
        ``bench.privacy.releases.NEIGHBOURING``; the helpers there are named by it)."""
        return NEIGHBOURING

    def rng(self, name: str) -> np.random.Generator:
        """A NumPy generator for the stream ``name`` (a fresh one, at its start, on every call)."""
        return np.random.default_rng(stream_seed_sequence(self.seed, name))

    def torch_rng(self, name: str) -> "torch.Generator":
        """A CPU torch generator for the stream ``name`` (a fresh one on every call)."""
        import torch  # lazily: importing the contracts must not import torch

        return torch.Generator().manual_seed(self.stream_seed(name, bits=64))

    def stream_seed(self, name: str, bits: int = 32) -> int:
        """An integer seed for the stream ``name``, for libraries that only take a global seed
        (``torch.manual_seed`` before building a network, ``np.random.seed`` for mbi)."""
        state = stream_seed_sequence(self.seed, name).generate_state(2, np.uint32)
        return (int(state[0]) | int(state[1]) << 32) >> (64 - bits)


@dataclass(frozen=True)
class AuditSpec:
    """How ``bench audit`` audits a method: ``params`` (``--set`` style overrides) that give a small
    configuration whose releases all happen before training, and where to stop. A method with a
    DP-SGD phase gives ``dp_sgd_gradients(train, context)``: the per-row gradients (one tensor per
    parameter, rows × shape) of the real-data loss of the network the phase trains, as ``fit``
    initialises it — the input of the step-level audit (``bench audit --level step``)."""

    params: Mapping[str, str] = field(default_factory=dict)
    stop_after_events: int | None = None  # None: at the fit's first progress report
    dp_sgd_gradients: Callable[[LabelledData, FitContext], list[Any]] | None = None


class MethodAdapter(Protocol):
    """What a method is: any object with these attributes and ``fit``. The optional facts are
    those of :class:`DeclaredMethod` (with its defaults); the registry and the kit read every
    adapter through :meth:`DeclaredMethod.of`, so a class written by hand and a ``@method``
    declaration are held in the same form."""

    name: str
    description: str
    data_kinds: frozenset[DataKind]
    private: bool
    hyperparameters: HyperParameters  # its parameter dataclass and their cited values

    def fit(self, data: "PrivateData", context: FitContext) -> FittedModel:
        """``data``: the private training rows behind a metered handle
        (``bench.privacy.private_data.PrivateData``: the public schema and row count, and queries
        that release only noisy answers through ``context.ledger``); ``context.params`` is an
        instance of ``hyperparameters.params``."""
        ...


FitFunction = Callable[[Any, FitContext], Any]


@dataclass(frozen=True)
class DeclaredMethod:
    """A method adapter in the one form the harness holds: a ``fit(data, context)`` function and
    the facts about it (``@method`` makes one; :meth:`of` reads any adapter into one).

    ``audit``: how ``bench audit`` stops its fit after the releases. ``thread_invariant_kinds``:
    data kinds on which the fit gives the same bits at any torch thread count, so the runner may
    lend it idle cores (the kit's ``thread_invariance`` checks it). ``data_independent``: reads no
    row, so it runs at every ε and spends none. ``label_params``: parameters shown beside the
    method in every table whatever their value (dp-mepf: its encoder). ``declared_in``: the module
    that declared it (a built-in's card names that module). ``external``: an outside library's
    synthesizer (``bench.api.external``), whose privacy is that library's claim. ``prepare``: work
    the runner does once before a grid's first cell of the method, outside the cell's walls (an
    outside library's environment build, which the walls refuse); if it fails, the method's cells
    fail as they run, each with the reason. It may return the folder it prepared (the environment),
    which a resumable audit's checkpoint name then holds."""

    name: str
    description: str
    data_kinds: frozenset[DataKind]
    fit_function: FitFunction = field(repr=False)
    private: bool = True
    hyperparameters: HyperParameters = field(default_factory=lambda: HyperParameters(NoParameters))
    audit: AuditSpec = field(default_factory=AuditSpec)
    thread_invariant_kinds: frozenset[DataKind] = frozenset()
    data_independent: bool = False
    label_params: tuple[str, ...] = ()
    declared_in: str = field(default="", compare=False, repr=False)
    external: str = ""  # the outside library (name and version) whose own claim is the run's (ε, δ)
    prepare: Callable[[], Any] | None = field(default=None, compare=False, repr=False)

    def fit(self, data: "PrivateData", context: FitContext) -> Any:
        return self.fit_function(data, context)

    @staticmethod
    def of(adapter: Any) -> "DeclaredMethod":
        """``adapter`` itself when declared, else its attributes (the optional ones at their
        defaults where it has none) around its bound ``fit``; ``adapter`` must be complete
        (:func:`method_problems`)."""
        if isinstance(adapter, DeclaredMethod):
            return adapter
        optional = {
            name: getattr(adapter, name)
            for name in ("audit", "thread_invariant_kinds", "data_independent", "label_params", "prepare")  # optional
            if hasattr(adapter, name)
        }
        return DeclaredMethod(
            adapter.name,
            getattr(adapter, "description", ""),
            frozenset(adapter.data_kinds),
            adapter.fit,
            adapter.private,
            adapter.hyperparameters,
            declared_in=type(adapter).__module__,
            **optional,
        )


class Direction(str, enum.Enum):
    HIGHER = "higher"
    LOWER = "lower"


class MetricKind(str, enum.Enum):
    """``quality``: a score of the synthetic data, with a better direction (tables bold the best
    private method). ``diagnostic``: a fact about the evaluation itself (timings, counts, sizes,
    failures), with no better direction; never bolded, never ranked."""

    QUALITY = "quality"
    DIAGNOSTIC = "diagnostic"


@dataclass(frozen=True)
class MetricSpec:
    """A declared metric. Quality metrics need a ``direction``; diagnostics must not have one.
    Build them with :meth:`quality` and :meth:`diagnostic`."""

    direction: Direction | None
    description: str
    kind: MetricKind = MetricKind.QUALITY
    # a few seeds far out dominate the mean (NLL sums of a sample that misses a mode): tables show
    # the median and the interquartile range instead of mean ± sd
    heavy_tailed: bool = False

    def __post_init__(self) -> None:
        if (self.kind == MetricKind.QUALITY) != (self.direction is not None):
            raise ValueError(
                f"a {self.kind.value} metric {'needs' if self.direction is None else 'has no'} direction: "
                f"{self.description!r}"
            )

    @staticmethod
    def quality(direction: Direction, description: str, heavy_tailed: bool = False) -> "MetricSpec":
        return MetricSpec(direction, description, MetricKind.QUALITY, heavy_tailed)

    @staticmethod
    def diagnostic(description: str) -> "MetricSpec":
        return MetricSpec(None, description, MetricKind.DIAGNOSTIC)


@dataclass(frozen=True)
class EvalContext:
    """What an evaluator gets besides the data.

    ``seed``: the cell's seed. ``device``: ``"cpu"``, ``"cuda"``, ``"cuda:1"`` or ``"auto"`` (a
    string: ``bench.core`` does not import torch). ``data_dir``: the run's data folder (None: the
    default lookup), e.g. for the FID weights. ``protocol``: ``sound`` or ``paper``.
    ``cache_dir``: a folder shared across cells for results computed from the *real* data only
    (FID statistics of the reference split, encoded test sets), keyed by content; None disables
    the disk cache. It holds derivatives of private data: keep it as private as ``data_dir``.
    ``progress(done, total)``: a callback for long loops. ``shadow_fit(rows, seed, n)``: fits the
    run's method — its settings, ε and δ, a fresh ledger — on ``rows`` (a shadow training set the
    evaluator assembles) and returns ``n`` sampled rows; None where no method is at hand (an
    evaluator that needs it, e.g. ``shadow-mia``, says so)."""

    seed: int = 0
    device: str = "cpu"
    data_dir: Path | None = None
    protocol: RunProtocol = RunProtocol.SOUND
    cache_dir: Path | None = None
    progress: Callable[[int, int], None] = field(default=lambda done, total: None, compare=False)
    shadow_fit: Callable[[LabelledData, int, int], LabelledData] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"unknown protocol {self.protocol!r}; valid: {', '.join(PROTOCOLS)}")


@dataclass(frozen=True)
class Evaluation:
    """What one ``evaluate`` returns. ``metrics``: values by declared name (or
    ``<group>.<declared name>``). ``errors``: what failed inside without failing the evaluation
    (e.g. one classifier of twelve), by part name. ``artifacts``: files describing this
    evaluation (tables, figures), file name (no folders) → contents."""

    metrics: Mapping[str, float]
    errors: Mapping[str, str] = field(default_factory=dict)
    artifacts: Mapping[str, bytes] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in self.artifacts:
            if not name or "/" in name or "\\" in name or name.startswith("."):
                raise ValueError(f"artifact names are plain file names; got {name!r}")


class Evaluator(Protocol):
    """Scores synthetic data against the real splits. Stateless: everything an evaluation
    produces is in the returned :class:`Evaluation`, so one instance can serve any number of
    cells, in any order. ``run_by_default`` (optional, ``getattr``): False for evaluators that
    only run when ``--evaluators`` names them."""

    name: str
    description: str
    data_kinds: frozenset[DataKind]
    metrics: Mapping[str, MetricSpec]

    def applies_to(self, schema: Schema) -> bool:
        """Whether this evaluator can score data of this schema (beyond its data kind)."""
        ...

    def evaluate(
        self, synthetic: LabelledData, real_train: LabelledData, real_test: LabelledData, context: EvalContext
    ) -> Evaluation:
        """Return an :class:`Evaluation`; each metric name is declared in ``metrics``, or is
        ``<group>.<declared name>`` (e.g. a per-classifier ``xgboost.roc_auc``)."""
        ...


def _common_problems(entry: Any, kinds_attribute: str) -> list[str]:
    problems = []
    if not isinstance(getattr(entry, "name", None), str) or not entry.name:
        problems.append("needs a non-empty string attribute 'name'")
    if not isinstance(getattr(entry, "description", ""), str):
        problems.append("'description' must be a string")
    kinds = getattr(entry, kinds_attribute, None)
    kinds = (kinds,) if kinds_attribute == "kind" else kinds
    if not kinds or not all(isinstance(k, DataKind) for k in kinds):
        problems.append(
            f"{kinds_attribute} must be {'a' if kinds_attribute == 'kind' else 'a non-empty set of'} "
            "bench.core.data.DataKind"
        )
    return problems


def method_problems(adapter: Any) -> list[str]:
    """What a method adapter lacks of :class:`MethodAdapter` (empty: complete)."""
    problems = _common_problems(adapter, "data_kinds")
    if not isinstance(getattr(adapter, "private", None), bool):
        problems.append("needs a boolean attribute 'private'")
    if not isinstance(getattr(adapter, "hyperparameters", None), HyperParameters):
        problems.append("hyperparameters must be a bench.core.params.HyperParameters")
    if not callable(getattr(adapter, "fit", None)):
        problems.append("needs a method fit(train, context)")
    return problems


def evaluator_problems(evaluator: Any) -> list[str]:
    """What an evaluator lacks of :class:`Evaluator` (empty: complete)."""
    problems = _common_problems(evaluator, "data_kinds")
    metrics = getattr(evaluator, "metrics", None)
    if not isinstance(metrics, Mapping) or not all(isinstance(v, MetricSpec) for v in metrics.values()):
        problems.append("metrics must be a mapping of name → bench.api.contracts.MetricSpec")
    for method in ("applies_to", "evaluate"):
        if not callable(getattr(evaluator, method, None)):
            problems.append(f"needs a method {method}(...)")
    return problems


def dataset_problems(dataset: Any) -> list[str]:
    """What a dataset lacks of :class:`Dataset` (empty: complete)."""
    problems = _common_problems(dataset, "kind")
    if not isinstance(getattr(dataset, "schema", None), Schema):
        problems.append("schema must be a bench.core.data.Schema")
    if not callable(getattr(dataset, "load", None)):
        problems.append("needs a method load(data_dir, seed, protocol)")
    return problems


def metric_key(evaluator_name: str, metric: str) -> str:
    """The name a metric is logged under: ``<evaluator>.<metric>``."""
    return f"{evaluator_name}.{metric}"
