"""AdaBoost (discrete SAMME) over decision stumps, with the stumps found from weighted class
histograms instead of a sort per feature and round: the same classifier as scikit-learn's
``AdaBoostClassifier(n_estimators, learning_rate)`` on data whose every column takes at most
:data:`MAX_LEVELS` distinct values — 8-bit pixels, which is what ``image-downstream`` trains on
(synthetic images are scored as the 8-bit images they are stored as: ``bench/harness/samples.py``).

Why: scikit-learn fits each of the 1,000 stumps of DP-HP Table 10's AdaBoost with a
``DecisionTreeClassifier(max_depth=1)`` that sorts every feature again, ≈ 1.6 s a stump on 60,000
MNIST images (≈ 27 min a fit, one core). With at most 256 levels per feature the best Gini split
of a round follows from one weighted histogram per (feature, level, class): one pass over the
entries that differ from their column's most frequent level (≈ 19% of MNIST's pixels; the mode's
bin is the class totals minus the rest), a cumulative sum over levels and the Gini proxy at every
boundary — ≈ 0.1 s a round.

What is the same as scikit-learn 1.9's SAMME and stump, step by step (``tests/test_stump_boost.py``
compares predictions against it on real and generated MNIST):
- the sample weights: 1/n, clipped below at the float64 epsilon each round, multiplied by
  exp(α) when misclassified, renormalised; α = learning_rate · (log((1 − err)/err) + log(K − 1));
  the stop rules (err = 0: kept with weight 1 and stop; err ≥ 1 − 1/K: dropped and stop);
- the stump: inputs as float32 (as scikit-learn's trees), the Gini proxy Σ_k L_k²/w_L +
  Σ_k R_k²/w_R maximised over every boundary between two consecutive levels of a feature (levels
  closer than 1e-7 are not split, scikit-learn's FEATURE_THRESHOLD), the threshold the float32
  midpoint of the two levels (computed as a/2 + b/2 in double), each side predicting its
  heaviest class (its rows' weights summed per class, as scikit-learn sums them: an exact tie goes
  to the lower class); a node whose Gini impurity is ≤ float64 epsilon stays a leaf;
- the prediction: Σ_t α_t (1 for the stump's class, −1/(K − 1) otherwise), normalised, argmax.
What can differ is the choice among tied splits. scikit-learn visits the features in a random
order and keeps the first strict best, so between features whose sums are bit-equal (a duplicated
column) its choice is random; here a tied feature is drawn from ``random_state`` likewise (before
fit_version 3 the lowest feature index won every tie). Where splits of different pixels tie only
mathematically, scikit-learn's choice is decided by the rounding of its sorted sums, which
histograms (another summation order) cannot reproduce. Measured (``python
benchmarks/stump_ties.py``, docs/measurements/stump_ties_2026-11-30.json; scikit-learn at
random_state 0–2): no round tied on 2,000 real digits (150 rounds) nor on 8 generator samples of
the image campaign (2,000 and 20,000 images, 100 rounds). At 60 real digits (effective-size's
smallest size) 4 of 1,000 rounds tied: scikit-learn's accuracy 0.267–0.270 (its random states agree
with each other on 96.1% of test predictions), ours drawing 0.267–0.270 (96–99% agreement with
scikit-learn at the same random state), the lowest tied feature 0.275. On a degenerate sample (a
DP-MERF smoke fit on 3,000 digits, whose classes many pixels separate exactly) all 150 rounds tied
among up to 39 features: scikit-learn 0.091–0.101 (88% self-agreement), ours drawing 0.093–0.099
(45–54%), the exact argmax of fit_version 2 0.078 (37%).

Columns with more than :data:`MAX_LEVELS` levels (continuous data) are fitted by scikit-learn's
own ``AdaBoostClassifier`` instead, so the classifier is the same on any input; ``fitted_by``
says which path ran.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import check_random_state

MAX_LEVELS = 256
FEATURE_THRESHOLD = 1e-7  # scikit-learn's trees: values closer than this are one level
EPSILON = np.finfo(np.float64).eps
# two splits' Gini proxies this close (relative) are one value: an exact tie whose last bits the
# histogram sums (another summation order than scikit-learn's sorted scan) may still have split
TIE_RTOL = 1e-12


def column_levels(x: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]] | None:
    """(codes, levels): each column's values as indices into its sorted distinct values, or None
    when some column has more than :data:`MAX_LEVELS` of them."""
    codes = np.empty(x.shape, dtype=np.uint8)
    levels = []
    for j in range(x.shape[1]):
        values, inverse = np.unique(x[:, j], return_inverse=True)
        if len(values) > MAX_LEVELS:
            return None
        codes[:, j] = inverse
        levels.append(values)
    return codes, levels


class StumpHistograms:
    """Weighted (feature, level, class) histograms of a coded training set, refilled each round
    from the entries that differ from their column's most frequent level. ``width``: the levels
    kept per feature (at least every column's count; the histogram is d × width × classes, so a
    small training set, whose columns take few levels, is not charged 256 of them a round)."""

    def __init__(self, codes: np.ndarray, y: np.ndarray, n_classes: int, width: int = MAX_LEVELS) -> None:
        n, d = codes.shape
        self.n_features, self.n_classes, self.width = d, n_classes, width
        self.modes = np.array([np.bincount(codes[:, j], minlength=width).argmax() for j in range(d)], dtype=np.int64)
        off_mode = codes != self.modes
        rows, cols = np.nonzero(off_mode)
        self.rows = rows.astype(np.int32)
        key = (cols.astype(np.int64) * width + codes[rows, cols]) * n_classes + y[rows]
        self.keys = key.astype(np.int32 if d * width * n_classes < 2**31 else np.int64)
        self.y = y

    def fill(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(H, totals): H[j, v, k], the weight of class-k rows whose feature j has level v, and
        the class totals."""
        d, k, width = self.n_features, self.n_classes, self.width
        totals = np.bincount(self.y, weights=w, minlength=k)
        h = np.bincount(self.keys, weights=w[self.rows], minlength=d * width * k).reshape(d, width, k)
        off_mode = h.sum(axis=1)  # (d, k); the mode's own bin is still empty here
        h[np.arange(d), self.modes] = totals - off_mode
        return h, totals


def gini_proxies(h: np.ndarray, totals: np.ndarray, splittable: np.ndarray) -> np.ndarray:
    """The Gini proxy Σ_k L_k²/w_L + Σ_k R_k²/w_R of the split "level ≤ v goes left" at every
    (feature, level); −inf where no split is (no boundary, or an empty side)."""
    left = np.cumsum(h, axis=1)
    right = totals - left
    w_left, w_right = left.sum(axis=2), right.sum(axis=2)
    with np.errstate(divide="ignore", invalid="ignore"):
        proxy = (left * left).sum(axis=2) / w_left + (right * right).sum(axis=2) / w_right
    return np.where(splittable & (w_left > 0) & (w_right > 0), proxy, -np.inf)


def best_stump(
    h: np.ndarray, totals: np.ndarray, splittable: np.ndarray, random_state: np.random.RandomState | None = None
) -> tuple[int, int] | None:
    """(feature, level) of the best Gini split "level ≤ v goes left", or None when there is none
    (every feature constant). ``splittable[j, v]``: a boundary between level v and v + 1 exists.
    Proxies within :data:`TIE_RTOL` of the best are a tie: among tied features one drawn uniformly
    from ``random_state`` (the lowest without one), as scikit-learn's random feature order keeps
    the first it meets; within the feature, its lowest tied level (scikit-learn scans upwards and
    keeps the first strict best). Nothing is drawn in a round without a tie."""
    proxy = gini_proxies(h, totals, splittable)
    best = float(proxy.max())
    if not np.isfinite(best):
        return None
    tied = proxy >= best - abs(best) * TIE_RTOL
    features = np.flatnonzero(tied.any(axis=1))
    feature = int(features[0] if len(features) == 1 or random_state is None else random_state.choice(features))
    return feature, int(np.flatnonzero(tied[feature])[0])


def level_boundaries(values: np.ndarray) -> np.ndarray:
    """Whether a column may be split between each two consecutive levels (not closer than 1e-7)."""
    as_double = values.astype(np.float64)
    return as_double[1:] > as_double[:-1] + FEATURE_THRESHOLD


def histogram_shape(levels: list[np.ndarray], boundaries: list[np.ndarray]) -> tuple[np.ndarray, int]:
    """(columns, width) the histograms keep: the columns with a boundary, in their order, and the
    most levels any of them has. A column without a boundary never wins a split and no level past
    a column's last is ever filled, so the search is the one over every column and 256 levels,
    ties included (lowest feature first); a small training set (effective-size's 60 images) then
    costs ≈ 1/14 of a round of 256 levels (tests/test_stump_boost.py)."""
    active = np.array([j for j, b in enumerate(boundaries) if b.any()], dtype=np.int64)
    return active, max((len(levels[j]) for j in active), default=1)


def side_classes(y: np.ndarray, w: np.ndarray, goes_left: np.ndarray, n_classes: int) -> tuple[int, int]:
    """Each side's heaviest class, its class weights summed row by row into one sum per class as
    scikit-learn's tree criterion sums them, not read off the histograms: those hold the same
    weights summed level by level, which can break an exact tie between two classes (equal counts
    at equal weights, seen on generated digits) by one ulp the other way; scikit-learn's argmax
    gives a tie to the lower class."""
    left = np.bincount(y[goes_left], weights=w[goes_left], minlength=n_classes)
    right = np.bincount(y[~goes_left], weights=w[~goes_left], minlength=n_classes)
    return int(np.argmax(left)), int(np.argmax(right))


class SammeStumpBoost(ClassifierMixin, BaseEstimator):
    """``AdaBoostClassifier(n_estimators, learning_rate)`` with its default stump, fitted from
    histograms when every column has at most 256 levels (module docstring)."""

    # the evaluation cache's key holds it (evaluators/image_downstream.py fit_key): 2 = each side's
    # class from its rows' sums (an exact class tie went the other way when read off the histograms);
    # 3 = a tie between features drawn from random_state, no longer the lowest index
    fit_version = 3

    def __init__(self, n_estimators: int = 50, learning_rate: float = 1.0, random_state: Any = None) -> None:
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.random_state = random_state  # breaks ties between features; scikit-learn's path draws from it too

    def fit(self, x: np.ndarray, y: np.ndarray) -> "SammeStumpBoost":
        x = np.asarray(x, dtype=np.float32)
        self.classes_, y_codes = np.unique(np.asarray(y), return_inverse=True)
        coded = column_levels(x)
        if coded is None:
            from sklearn.ensemble import AdaBoostClassifier

            self.fallback_ = AdaBoostClassifier(
                n_estimators=self.n_estimators, learning_rate=self.learning_rate, random_state=self.random_state
            ).fit(x, y)
            self.fitted_by = "scikit-learn"
            return self
        self.fallback_ = None
        self.fitted_by = "histograms"
        codes, levels = coded
        self._boost(codes, levels, y_codes.astype(np.int64), check_random_state(self.random_state))
        return self

    def _boost(
        self, all_codes: np.ndarray, all_levels: list[np.ndarray], y: np.ndarray, random_state: np.random.RandomState
    ) -> None:
        n = len(all_codes)
        k = len(self.classes_)
        boundaries = [level_boundaries(values) for values in all_levels]
        active, width = histogram_shape(all_levels, boundaries)
        codes, levels = all_codes[:, active], [all_levels[j] for j in active]
        histograms = StumpHistograms(codes, y, k, width)
        splittable = np.zeros((len(active), width), dtype=bool)
        for i, j in enumerate(active):
            splittable[i, : len(boundaries[j])] = boundaries[j]
        stumps: list[tuple[int, float, int, int]] = []  # (feature, threshold, left class, right class)
        weights: list[float] = []
        w = np.full(n, 1.0 / n)
        for round_ in range(self.n_estimators):
            w = np.clip(w, EPSILON, None)
            h, totals = histograms.fill(w)
            split = self._split(h, totals, splittable, levels, random_state)
            if split is None:  # a leaf: every row gets the heaviest class
                heaviest = int(np.argmax(totals))
                stump, predicted = (-1, math.inf, heaviest, heaviest), np.full(n, heaviest)
            else:
                feature, level, threshold = split
                goes_left = codes[:, feature] <= level
                left_class, right_class = side_classes(y, w, goes_left, k)
                stump = (int(active[feature]), threshold, left_class, right_class)
                predicted = np.where(goes_left, left_class, right_class)
            incorrect = predicted != y
            error = float(np.average(incorrect, weights=w))
            if error <= 0:
                stumps.append(stump)
                weights.append(1.0)
                break
            if error >= 1.0 - 1.0 / k:
                if not stumps:
                    raise ValueError(
                        "BaseClassifier in AdaBoostClassifier ensemble is worse than random, ensemble can not be fit."
                    )
                break
            alpha = self.learning_rate * (math.log((1.0 - error) / error) + math.log(k - 1.0))
            stumps.append(stump)
            weights.append(alpha)
            if round_ == self.n_estimators - 1:
                break
            w = np.exp(np.log(w) + alpha * incorrect * (w > 0))
            total = float(np.sum(w))
            if not np.isfinite(total) or total <= 0:
                break
            w /= total
        self.stumps_ = stumps
        self.estimator_weights_ = np.asarray(weights)

    @staticmethod
    def _split(
        h: np.ndarray,
        totals: np.ndarray,
        splittable: np.ndarray,
        levels: list[np.ndarray],
        random_state: np.random.RandomState,
    ) -> tuple[int, int, float] | None:
        """(feature, level, threshold) of the round's stump, rows whose feature code is ≤ level going
        left; None when the node stays a leaf."""
        weight = totals.sum()
        impurity = 1.0 - float(np.sum((totals / weight) ** 2))
        found = None if impurity <= EPSILON else best_stump(h, totals, splittable, random_state)
        if found is None:
            return None
        feature, level = found
        below, above = float(levels[feature][level]), float(levels[feature][level + 1])
        threshold = below / 2.0 + above / 2.0
        if threshold == above or math.isinf(threshold):
            threshold = below
        return feature, level, threshold

    def decision_function(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float32)
        k = len(self.classes_)
        scores = np.zeros((len(x), k))
        rows = np.arange(len(x))
        for (feature, threshold, left_class, right_class), alpha in zip(self.stumps_, self.estimator_weights_):
            if feature < 0:
                predicted = np.full(len(x), left_class)
            else:
                predicted = np.where(x[:, feature].astype(np.float64) <= threshold, left_class, right_class)
            vote = np.full((len(x), k), -alpha / (k - 1) if k > 1 else 0.0)
            vote[rows, predicted] = alpha
            scores += vote
        scores /= self.estimator_weights_.sum()
        if k == 2:
            scores[:, 0] *= -1
            return scores.sum(axis=1)
        return scores

    def predict(self, x: np.ndarray) -> np.ndarray:
        if self.fallback_ is not None:
            return self.fallback_.predict(np.asarray(x, dtype=np.float32))
        scores = self.decision_function(x)
        if len(self.classes_) == 2:
            return self.classes_.take((scores > 0).astype(int))
        return self.classes_.take(np.argmax(scores, axis=1))
