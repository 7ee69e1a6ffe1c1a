"""``gmm2d``: the DP-HP paper's 2-D Gaussian mixture (DP-HP (arXiv:2106.05042) Sec. 5.1, Fig. 2).

25 Gaussians with standard deviation 0.2 per coordinate centred on the 5×5 integer grid; the
class of cell (row r, column c) is (s_r + c) mod 5 with row starts s = 0, 2, 4, 1, 3 (authors'
code), so each of the 5 classes owns 5 Gaussians. 4,000 points are drawn per Gaussian and 10%
of them held out for testing (paper), leaving 90,000 training rows. The draw is a deterministic
function of the seed.

The generating process is public (it is the benchmark's definition); the drawn rows are the
private data. Hence class proportions (uniform) and the density are public facts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.special import logsumexp

from bench.core.data import Column, ColumnKind, DataKind, LabelledData, PublicFact, RunProtocol, Schema, Split
from bench.core.walls import refuse_inside_fit

GRID = 5
STD = 0.2  # standard deviation per coordinate (covariance 0.04·I), as
# github.com/ParkLabML/DP-HP dp_mehp/dp_mehp_synth_data_2d.py
PER_GAUSSIAN = 4000
TEST_FRACTION = 0.1
ROW_STARTS = (0, 2, 4, 1, 3)


def mixture_centres() -> tuple[np.ndarray, np.ndarray]:
    """Centres (25 × 2) and their classes (25,)."""
    rows, cols = np.meshgrid(np.arange(GRID), np.arange(GRID), indexing="ij")
    centres = np.stack([rows.ravel(), cols.ravel()], axis=1).astype(np.float64)
    classes = (np.asarray(ROW_STARTS)[rows.ravel()] + cols.ravel()) % GRID
    return centres, classes


@dataclass(frozen=True)
class GaussianMixtureDensity:
    """p(x, y) = Σ_{j ∈ C_y} (1/25) N(x | μ_j, σ² I₂)."""

    centres: np.ndarray
    classes: np.ndarray
    std: float

    def _log_terms(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """−‖x − μ_j‖²/(2σ²) + log(1/25), masked to the Gaussians of each row's class."""
        sq = ((x[:, None, :] - self.centres[None, :, :]) ** 2).sum(-1)
        terms = -sq / (2 * self.std**2) - np.log(len(self.centres))
        return np.where(self.classes[None, :] == y[:, None], terms, -np.inf)

    def log_prob(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The correct 2-D log density, per row."""
        norm = -np.log(2 * np.pi * self.std**2)
        return logsumexp(self._log_terms(np.asarray(x, np.float64), np.asarray(y)), axis=1) + norm

    def log_prob_paper(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The authors' code's value: the same sum with the 1-D normaliser 1/(√(2π)σ)
        (github.com/ParkLabML/DP-HP dp_mehp/dp_mehp_synth_data_2d.py), kept to compare with Fig. 2."""
        norm = -np.log(np.sqrt(2 * np.pi) * self.std)
        return logsumexp(self._log_terms(np.asarray(x, np.float64), np.asarray(y)), axis=1) + norm


_CENTRES, _CLASSES = mixture_centres()

SCHEMA = Schema(
    columns=(Column("x1", ColumnKind.NUMERICAL), Column("x2", ColumnKind.NUMERICAL)),
    label="class",
    classes=tuple(f"class_{k}" for k in range(GRID)),
    public_facts=(
        PublicFact(
            "class_proportions",
            tuple([1.0 / GRID] * GRID),
            "uniform by construction: 5 Gaussians of 4,000 draws per class (DP-HP (arXiv:2106.05042) Sec. 5.1)",
        ),
    ),
    true_density=GaussianMixtureDensity(_CENTRES, _CLASSES, STD),
)


def draw_split(seed: int, per_gaussian: int = PER_GAUSSIAN) -> Split:
    rng = np.random.default_rng([seed, 2_020_005])  # second word: keeps this stream distinct
    n_test = int(round(per_gaussian * TEST_FRACTION))
    train_x, train_y, test_x, test_y = [], [], [], []
    for centre, label in zip(_CENTRES, _CLASSES):
        points = rng.normal(centre, STD, size=(per_gaussian, 2)).astype(np.float32)
        labels = np.full(per_gaussian, label, dtype=np.int64)
        test_x.append(points[:n_test]), test_y.append(labels[:n_test])
        train_x.append(points[n_test:]), train_y.append(labels[n_test:])
    order = rng.permutation(len(_CENTRES) * (per_gaussian - n_test))
    train = LabelledData(np.concatenate(train_x)[order], np.concatenate(train_y)[order], SCHEMA)
    test = LabelledData(np.concatenate(test_x), np.concatenate(test_y), SCHEMA)
    return Split(train, test)


@dataclass(frozen=True)
class GaussianMixture2D:
    name: str = "gmm2d"
    description: str = "DP-HP's 2-D mixture: 25 Gaussians (σ=0.2) on a 5×5 grid, 5 classes, 90,000 train rows"
    kind: DataKind = DataKind.TWO_D
    schema: Schema = SCHEMA

    def load(self, data_dir: Path | None, seed: int, protocol: RunProtocol = RunProtocol.SOUND) -> Split:
        refuse_inside_fit("loading gmm2d")  # its rows follow from the seed: the wall covers them too
        return draw_split(seed)  # a generated dataset: both protocols draw it the same way


GMM2D = GaussianMixture2D()
