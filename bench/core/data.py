"""The data types every floor shares: a dataset's public schema, its labelled rows, a seed's
split, the run protocols and the named random streams. The bottom of the harness: nothing here
imports another part of ``bench`` but its errors."""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass
from typing import Any, Protocol, Sequence, runtime_checkable

import numpy as np

from bench.core.errors import UsageError


class RunProtocol(enum.StrEnum):
    """Data and evaluation conventions of a run: ours (sound) or the seeds' (paper). A ``str``, so
    a stored "paper" and ``RunProtocol.PAPER`` are equal and print the same."""

    SOUND = "sound"
    PAPER = "paper"


PROTOCOLS: tuple[str, ...] = tuple(p.value for p in RunProtocol)


class DataError(UsageError, RuntimeError):
    """A dataset's files are missing, corrupt or unusable; the message says the fix. Datasets
    raise subclasses of it (``datasets.files.DataFileError``); the CLI prints it as one line."""  # --protocol: sound default, seeds' conventions


class DataKind(str, enum.Enum):
    """What shape of data a dataset holds; methods and evaluators declare which they support."""

    TWO_D = "2d"
    TABULAR = "tabular"
    DISCRETE = "discrete"  # every column a small public domain of integer codes (α-way marginals)
    IMAGE = "image"


class ColumnKind(str, enum.Enum):
    NUMERICAL = "numerical"
    ORDINAL = "ordinal"
    CATEGORICAL = "categorical"
    BINARY = "binary"


@dataclass(frozen=True)
class Column:
    """One feature column. ``bounds`` and ``categories`` must come from public documentation,
    never from the private rows, because encoders and feature maps rely on them."""

    name: str
    kind: ColumnKind
    bounds: tuple[float, float] | None = None
    categories: tuple[str, ...] | None = None

    def domain_size(self) -> int:
        """How many codes a coded column takes (a binary column: 2; an ordinal or categorical
        one: its public categories); a numerical column has no finite set of codes."""
        if self.kind == ColumnKind.BINARY:
            return 2
        if self.kind in (ColumnKind.ORDINAL, ColumnKind.CATEGORICAL):
            if not self.categories:
                raise ValueError(f"column {self.name!r} needs its public category list in the schema")
            return len(self.categories)
        raise ValueError(f"column {self.name!r} is numerical; it has no finite set of codes")

    def public_bounds(self) -> tuple[float, float]:
        """A numerical column's documented (low, high)."""
        if self.bounds is None:
            raise ValueError(f"numerical column {self.name!r} needs public bounds in the schema")
        return float(self.bounds[0]), float(self.bounds[1])


@dataclass(frozen=True)
class PublicFact:
    """A data-dependent fact that methods may use without paying privacy budget.

    ``why`` states where the fact comes from (documentation, the generating process), so the
    ledger can show a reader why it is not charged.
    """

    name: str
    value: Any
    why: str


@runtime_checkable
class LabelledDensity(Protocol):
    """A known generating density p(x, y), offered by synthetic datasets such as ``gmm2d``."""

    def log_prob(self, x: np.ndarray, y: np.ndarray) -> np.ndarray: ...

    def log_prob_paper(self, x: np.ndarray, y: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True)
class Schema:
    columns: tuple[Column, ...]
    label: str
    classes: tuple[str, ...]
    public_facts: tuple[PublicFact, ...] = ()
    true_density: LabelledDensity | None = None

    @property
    def n_features(self) -> int:
        return len(self.columns)

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    def public_fact(self, name: str) -> PublicFact | None:
        return next((fact for fact in self.public_facts if fact.name == name), None)

    @property
    def pixel_range(self) -> tuple[float, float] | None:
        """An image schema's documented pixel range (every pixel column shares it); None otherwise.
        Methods bound their sensitivities by it, so pixels outside it are refused."""
        if self.public_fact("image_shape") is None or not self.columns or self.columns[0].bounds is None:
            return None
        return self.columns[0].bounds


ALL_ROWS = ("all rows",)
ONE_CLASS = PublicFact("class_proportions", (1.0,), "a discretized dataset has a single class: every row")


def discrete_schema(columns: tuple[Column, ...], facts: tuple[PublicFact, ...] = ()) -> Schema:
    for column in columns:
        if column.kind not in (ColumnKind.ORDINAL, ColumnKind.CATEGORICAL) or not column.categories:
            raise ValueError(f"discrete column {column.name!r} needs kind ordinal/categorical and its bin labels")
    return Schema(
        columns=columns, label="(none: all columns are modelled)", classes=ALL_ROWS, public_facts=(ONE_CLASS, *facts)
    )


@dataclass
class LabelledData:
    """Features ``x`` (n × d float32, columns as in ``schema``) and integer labels ``y`` (n,)."""

    x: np.ndarray
    y: np.ndarray
    schema: Schema

    def __post_init__(self) -> None:
        if self.x.ndim != 2 or self.x.shape[1] != self.schema.n_features:
            raise ValueError(
                f"features have shape {self.x.shape}, but the schema has "
                f"{self.schema.n_features} columns; fix the loader or the sampler"
            )
        if self.y.shape != (self.x.shape[0],):
            raise ValueError(f"labels have shape {self.y.shape}; expected ({self.x.shape[0]},)")
        if not np.isfinite(self.x).all():
            raise ValueError("features contain NaN or infinite values; impute or drop them first")
        if len(self.y) and (self.y.min() < 0 or self.y.max() >= self.schema.n_classes):
            raise ValueError(f"labels must lie in 0..{self.schema.n_classes - 1}")
        pixel_range = self.schema.pixel_range
        if pixel_range is not None and self.x.size and (self.x.min() < pixel_range[0] or self.x.max() > pixel_range[1]):
            raise ValueError(
                f"pixels must lie in the schema's range [{pixel_range[0]:g}, {pixel_range[1]:g}] (found "
                f"{self.x.min():g} to {self.x.max():g}); scale 8-bit images by 1/255"
            )

    def __len__(self) -> int:
        return self.x.shape[0]

    def class_counts(self) -> np.ndarray:
        return np.bincount(self.y, minlength=self.schema.n_classes)


PIXEL = 1 / 255  # the resolution of 8-bit images, stored as pixel/255


def row_keys(x: np.ndarray, resolution: float = PIXEL) -> np.ndarray:
    """A content key of each row, in row order: the first 8 bytes of BLAKE2b over the row's values
    in units of ``resolution`` (rounded to integers: exact for 8-bit images at the default), as
    uint64. Equal rows (to the resolution) have equal keys."""
    units = np.rint(np.asarray(x, dtype=np.float64) / resolution).astype(np.int64).reshape(len(x), -1)
    return np.frombuffer(b"".join(hashlib.blake2b(r.tobytes(), digest_size=8).digest() for r in units), dtype="<u8")


def row_fingerprints(x: np.ndarray, resolution: float = PIXEL) -> np.ndarray:
    """The set of the rows' :func:`row_keys` (sorted, unique): what a pretrained checkpoint records
    of its training rows, so that its provenance is checked by content (the same images under
    another dataset's name) and not by a label."""
    return np.unique(row_keys(x, resolution))


@dataclass
class Split:
    """A seed's train/test split. ``caveats`` name any use of private data the loader made
    without charge (only the seeds' paper protocol does), so the run's ledger can show them."""

    train: LabelledData
    test: LabelledData
    caveats: tuple[str, ...] = ()


def stream_key(name: str) -> tuple[int, ...]:
    """A random stream's name as four 32-bit words (the first 16 bytes of its SHA-256): a
    ``SeedSequence`` spawn key that is the same on every machine and Python run."""
    digest = hashlib.sha256(name.encode()).digest()
    return tuple(int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4))


def stream_seed_sequence(seed: int, name: str) -> np.random.SeedSequence:
    """The seed sequence of the stream ``name`` of a run with ``seed``: streams of different names
    or seeds are independent (unlike ``seed + k``, where seed 0's stream 1 is seed 1's stream 0)."""
    return np.random.SeedSequence(entropy=seed, spawn_key=stream_key(name))


def check_same_schema(synthetic: LabelledData, reference: Sequence[LabelledData] | LabelledData) -> None:
    references = [reference] if isinstance(reference, LabelledData) else list(reference)
    for ref in references:
        if synthetic.schema.columns != ref.schema.columns or synthetic.schema.classes != ref.schema.classes:
            raise ValueError("synthetic data does not have the real data's schema")
