"""The private training rows as a method reaches them: a handle whose queries release only noisy
answers through the run's ledger, each query's sensitivity derived from its shape under the
replace-one relation (:mod:`bench.privacy.releases`) rather than declared by the method.

* :meth:`PrivateData.counts` (Gaussian) and :meth:`PrivateData.laplace_counts`: histograms of one
  integer code per row (a 1-way marginal, a class count): replacing a row moves one count down and
  one up, so the L2 change is √2 and the L1 change 2.
* :meth:`PrivateData.sum`: Σᵢ f(rowᵢ) with each row's vector clipped to ``norm_bound`` by the handle:
  the L2 change of the sum is 2 · norm_bound (of the mean, divided by the public row count); with
  ``by_label``, one such sum per class (C × d): a replaced row takes its vector out of one class's
  sum and puts the new row's into one, so the L2 change is still at most 2 · norm_bound; with
  ``nonnegative``, each entry is also clamped at 0 and the change is √2 · norm_bound.
  :meth:`PrivateData.sums`: several such sums from one pass over the rows (an encoder's moments).
  :meth:`PrivateData.structured_sum`: the same per-class sums as a method's structured path computes
  them (a fused kernel, a factorised Kronecker product), released only when the handle's own sum of
  the clipped per-row features agrees (DP-HP's sum kernel).
* :meth:`PrivateData.kronecker_sum`: per-class sums of row-wise Kronecker products formed by the
  handle from per-row factors it scales to norm ≤ 1 (DP-HP's product kernel): L2 change 2.
* :meth:`PrivateData.select`: the exponential mechanism over candidate histograms, each scored by
  the L1 distance of its true counts from the method's (public) estimate, optionally weighted and
  offset by public constants: a replaced row moves each histogram by at most 2 in L1, so a score
  by at most 2 · its weight (MST's spanning tree, AIM's rounds).
* :meth:`PrivateData.select_by_mutual_information`: the exponential mechanism over candidate
  (attribute, parents) pairs scored by their mutual information, at PrivBayes' Lemma 4.1 sensitivity
  for the public row count (PrivBayes' network).
* :meth:`PrivateData.pair_distance_counts`: noisy counts of disjoint row pairs (a public pairing)
  closer than each public threshold: a replaced row moves one pair, each count by at most 1
  (DP-MERF's private median length scale).
* :meth:`PrivateData.dp_sgd`: a charged DP-SGD phase whose batches, per-sample clipping and noise the
  handle runs (:mod:`bench.privacy.dp_sgd`): a replaced row moves one step's clipped sum by at
  most 2 · the clipping norm, amplified by the phase's Poisson sampling (DP-GAN, DP-CGAN).
* :meth:`PrivateData.uncharged`: a statistic of the rows, exact, for a run without privacy (ε = ∞)
  only — refused at any finite ε; recorded as a trusted read (the seeds' uncharged heuristics, as
  labelled ablations). The method passes the function; it never holds the rows.
* :meth:`PrivateData.rows`: the rows themselves, for what the queries cannot express yet; the reason
  is recorded in the ledger (``trusted_reads``) and the conformance kit's named check
  ``queries_only`` fails a private method that asks.

Both ``sum`` and ``pair_distance_counts`` rest on ``features`` mapping each row on its own (a map
that normalises by statistics of the batch it is given moves every row's vector when one row is
replaced, and the derived sensitivity no longer holds). The handle checks it on each call: the
first and the last row of the first batch, given alone, must come back as they did in the batch
(:func:`_check_row_wise`), and so must the probed rows across the batch: the two extreme ones and a
fixed spread of others, alone and in sub-batches of 64 (:func:`probe_rows`). Count queries' codes are checked the same way, exactly
(:func:`_check_codes_row_wise`), and must give one code per row. A deterministic probe, drawing
nothing from any run's generator, so no released value moves; a method that wanted to evade it
could, but a mistaken one cannot.

The row count, the schema and the data kind are public (the split's size is a public fact of the
benchmark; the datasets' caveats say where it is not).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence, TypeVar

import numpy as np

from bench.core.data import LabelledData, Schema
from bench.core.threads import one_torch_thread

T = TypeVar("T")
from bench.privacy.releases import (
    COUNT_L1_SENSITIVITY,
    COUNT_L2_SENSITIVITY,
    mutual_information_bits,
    mutual_information_sensitivity,
    replace_one_l2,
    replace_one_nonnegative_l2,
)

if TYPE_CHECKING:
    from bench.privacy.dp_sgd import DPSGDTraining


@dataclass(frozen=True)
class CountQuery:
    """The histogram of ``codes(rows)`` (one integer per row; values outside [0, size) are clipped
    to its ends) over ``size`` bins, released as ``what``."""

    what: str
    codes: Callable[[LabelledData], np.ndarray]
    size: int


class PrivateData:
    """What ``fit`` gets of the private training rows (module docstring)."""

    def __init__(self, rows: LabelledData, ledger: Any) -> None:
        self.__rows = rows
        self._ledger = ledger
        self.__histograms: dict[CountQuery, np.ndarray] = {}  # clean counts, never returned

    @property
    def schema(self) -> Schema:
        return self.__rows.schema

    @property
    def n_rows(self) -> int:
        """The public size of the training split."""
        return len(self.__rows)

    def __len__(self) -> int:
        return self.n_rows

    def counts(
        self, queries: Sequence[CountQuery], *, noise_multiplier: float, rng: Any, what: str | None = None
    ) -> list[np.ndarray]:
        """Each query's histogram plus Gaussian noise of std noise_multiplier · √2, drawn in the
        order given: one ledger release per query, or, with ``what``, one release of them all
        (each of L2 change √2) under that description."""
        histograms = [self._histogram(query) for query in queries]
        if what is not None:
            return self._ledger.gaussian_each(
                histograms, sensitivity=COUNT_L2_SENSITIVITY, noise_multiplier=noise_multiplier, what=what, rng=rng
            )
        return [
            self._ledger.gaussian(
                counts, sensitivity=COUNT_L2_SENSITIVITY, noise_multiplier=noise_multiplier, what=query.what, rng=rng
            )
            for query, counts in zip(queries, histograms)
        ]

    def select(
        self,
        what: str,
        queries: Sequence[CountQuery],
        estimates: Sequence[np.ndarray],
        *,
        epsilon: float,
        rng: Any,
        weights: Sequence[float] | None = None,
        offsets: Sequence[float] | None = None,
    ) -> int:
        """The index of one candidate, drawn by the exponential mechanism (ε-DP) with scores
        wᵢ · (‖countsᵢ − estimateᵢ‖₁ − offsetᵢ): the estimates, weights and offsets are public
        (the method's model and constants); the score's sensitivity, 2 · max |wᵢ|, follows (a
        negative weight flips a score, it does not shrink its change)."""
        weights = [1.0] * len(queries) if weights is None else list(weights)
        offsets = [0.0] * len(queries) if offsets is None else list(offsets)
        scores = np.array(
            [
                weight * (np.abs(self._histogram(query) - estimate).sum() - offset)
                for query, estimate, weight, offset in zip(queries, estimates, weights, offsets, strict=True)
            ]
        )
        return self._ledger.exponential(
            scores, epsilon=epsilon, sensitivity=COUNT_L1_SENSITIVITY * max(map(abs, weights)), rng=rng, what=what
        )

    def laplace_counts(
        self, queries: Sequence[CountQuery], *, epsilon: float, rng: Any, what: str | None = None
    ) -> list[np.ndarray]:
        """Each query's histogram plus Laplace noise of scale 2/ε₀ (L1 change 2), ε₀-DP each: one
        ledger release per query, or, with ``what``, one release of them all under that description."""
        histograms = [self._histogram(query) for query in queries]
        if what is not None:
            return self._ledger.laplace_each(
                histograms, l1_sensitivity=COUNT_L1_SENSITIVITY, epsilon=epsilon, what=what, rng=rng
            )
        return [
            self._ledger.laplace(counts, l1_sensitivity=COUNT_L1_SENSITIVITY, epsilon=epsilon, what=query.what, rng=rng)
            for query, counts in zip(queries, histograms)
        ]

    def select_by_mutual_information(
        self, what: str, joints: Sequence[tuple[CountQuery, int]], *, epsilon: float, rng: Any
    ) -> int:
        """The index of one candidate (X, Π), drawn by the exponential mechanism (ε-DP) on I(X; Π)
        in bits. Each candidate is its joint histogram with X's ``size_x`` values leading (row-major:
        code = x·|Π| + π). The sensitivity is PrivBayes' Lemma 4.1 at the public row count, in its
        smaller form only when every candidate has |X| = 2 or |Π| = 2."""
        scores, binary = [], []
        for query, size_x in joints:
            if query.size % size_x:
                raise ValueError(f"{query.what}: {query.size} bins do not split into X's {size_x} values")
            scores.append(mutual_information_bits(self._histogram(query, keep=False).reshape(size_x, -1)))
            binary.append(size_x == 2 or query.size // size_x == 2)
        sensitivity = mutual_information_sensitivity(self.n_rows, all(binary))
        return self._ledger.exponential(np.array(scores), epsilon=epsilon, sensitivity=sensitivity, rng=rng, what=what)

    def sum(
        self,
        what: str,
        features: Callable[[LabelledData], Any],
        *,
        norm_bound: float,
        noise_multiplier: float,
        rng: Any,
        mean: bool = False,
        by_label: bool = False,
        chunk_rows: int | None = None,
        nonnegative: bool = False,
    ) -> Any:
        """Σᵢ f(rowᵢ) (``mean``: divided by the public row count; ``by_label``: one sum per class,
        C × d) plus Gaussian noise, where ``features(rows)`` gives one vector per row (n × d, numpy
        or torch) and the handle clips each to ``norm_bound`` first: the sensitivity follows from
        the bound. ``chunk_rows``: ``features`` sees that many rows at a time (bounded memory).
        ``nonnegative``: the handle also clamps each entry at 0, and the sensitivity is √2·bound
        instead of 2·bound (:func:`bench.privacy.releases.replace_one_nonnegative_l2`)."""
        (noisy,) = self.sums(
            (what,),
            lambda rows: (features(rows),),
            norm_bound=norm_bound,
            noise_multiplier=noise_multiplier,
            rng=rng,
            mean=mean,
            by_label=by_label,
            chunk_rows=chunk_rows,
            nonnegative=nonnegative,
        )
        return noisy

    def sums(
        self,
        whats: Sequence[str],
        features: Callable[[LabelledData], Sequence[Any]],
        *,
        norm_bound: float,
        noise_multiplier: float,
        rng: Any,
        mean: bool = False,
        by_label: bool = False,
        chunk_rows: int | None = None,
        nonnegative: bool = False,
    ) -> list[Any]:
        """Several :meth:`sum` releases computed in one pass over the rows: ``features(rows)`` gives
        one per-row matrix per entry of ``whats`` (each clipped on its own, released as its own
        ledger entry in that order) — for feature maps too costly to run twice (an encoder's
        moments)."""
        totals: list[Any] | None = None
        step = chunk_rows or max(self.n_rows, 1)
        for start in range(0, self.n_rows, step):
            chunk = (
                self.__rows
                if step >= self.n_rows
                else LabelledData(self.__rows.x[start : start + step], self.__rows.y[start : start + step], self.schema)
            )
            outputs = tuple(features(chunk))
            if len(outputs) != len(whats):
                raise ValueError(f"{', '.join(whats)}: features gave {len(outputs)} matrices for {len(whats)} releases")
            if start == 0:
                _check_row_wise(
                    " and ".join(whats), lambda rows: _flat_rows(features(rows)), chunk, _flat_rows(outputs)
                )
            parts = []
            for vectors in outputs:
                clipped = _clip_rows(_clamp_negative(vectors) if nonnegative else vectors, norm_bound)
                parts.append(_label_sums(clipped, chunk.y, self.schema.n_classes) if by_label else clipped.sum(0))
            totals = parts if totals is None else [t + part for t, part in zip(totals, parts)]
        rows = self.n_rows if mean else 1
        sensitivity = (replace_one_nonnegative_l2 if nonnegative else replace_one_l2)(norm_bound, rows)
        return [
            self._ledger.gaussian(
                total / rows if mean else total,
                sensitivity=sensitivity,
                noise_multiplier=noise_multiplier,
                what=what,
                rng=rng,
            )
            for what, total in zip(whats, totals or [])
        ]

    def structured_sum(
        self,
        what: str,
        features: Callable[[LabelledData], Any],
        class_sums: Callable[[LabelledData], Any],
        *,
        norm_bound: float,
        noise_multiplier: float,
        rng: Any,
        mean: bool = False,
        chunk_rows: int | None = None,
        structured_chunk_rows: int | None = None,
    ) -> Any:
        """The per-class sums of :meth:`sum` (``by_label``) as a method's structured path computes
        them — ``class_sums(rows)``, C × d, e.g. a fused kernel or a factorised Kronecker product
        that never forms per-row vectors — released only after the handle has checked them against
        its own sums of the per-row ``features`` (row-wise, clipped to ``norm_bound``; in chunks of
        ``chunk_rows``). Equal to 10⁻⁹ (round-off of a different summation order): the structured
        value is released, so a method keeps its bits. A row above the bound: the handle's clipped
        sum is released instead, with a caveat. Otherwise the query is refused. The sensitivity is
        :meth:`sum`'s, 2·bound. ``structured_chunk_rows``: rows per ``class_sums`` call."""
        n_classes = self.schema.n_classes
        checked = None
        most = 0.0
        step = chunk_rows or max(self.n_rows, 1)
        for start in range(0, self.n_rows, step):
            chunk = self._chunk(start, step)
            vectors = features(chunk)
            if start == 0:
                _check_row_wise(what, features, chunk, vectors)
            most = max(most, float(np.linalg.norm(_as_numpy(vectors), axis=1).max(initial=0.0)))
            part = _label_sums(_clip_rows(vectors, norm_bound), chunk.y, n_classes)
            checked = part if checked is None else checked + part
        structured = None
        step = structured_chunk_rows or max(self.n_rows, 1)
        for start in range(0, self.n_rows, step):
            part = class_sums(self._chunk(start, step))
            structured = part if structured is None else structured + part
        if most > norm_bound * (1 + 1e-9):
            self._ledger.caveats.append(
                f"{what}: a row's features exceeded the norm bound {norm_bound:g} "
                f"(largest {most:.6g}); the handle's clipped sum was released"
            )
            total = checked
        else:
            close = np.allclose(
                _as_numpy(structured),
                _as_numpy(checked),
                rtol=1e-9,
                atol=1e-12 * max(norm_bound, 1e-300) * max(self.n_rows, 1),
            )
            if not close:
                raise NotRowWiseError(
                    f"{what}: the structured class sums differ from the sums of the rows' own "
                    "features: class_sums must be Σ over each class's rows of features(row)"
                )
            total = structured
        rows = self.n_rows if mean else 1
        return self._ledger.gaussian(
            total / rows if mean else total,
            sensitivity=replace_one_l2(norm_bound, rows),
            noise_multiplier=noise_multiplier,
            what=what,
            rng=rng,
        )

    def kronecker_sum(
        self,
        what: str,
        factors: Callable[[LabelledData], Any],
        *,
        noise_multiplier: float,
        rng: Any,
        mean: bool = False,
        chunk_rows: int | None = None,
    ) -> Any:
        """Per-class sums (C × F^k) of the rows' Kronecker products φ₁(x) ⊗ … ⊗ φ_k(x), from the
        per-row factors ``factors(rows)`` (n × k × F, torch) the method gives: the handle scales
        each factor to norm ≤ 1 and forms the sums itself in factorised form
        (:func:`bench.privacy.kronecker.product_class_sums`), so each row's product has norm ≤ 1
        (‖a ⊗ b‖ = ‖a‖·‖b‖) and the sensitivity is 2 (2/m as a mean) by construction — a product
        kernel's release (DP-HP's) without an F^k-wide row. ``chunk_rows``: rows per pass."""
        import torch

        from bench.privacy.kronecker import product_class_sums

        total = None
        step = chunk_rows or max(self.n_rows, 1)
        with torch.no_grad():
            for start in range(0, self.n_rows, step):
                chunk = self._chunk(start, step)
                phi = factors(chunk)
                if start == 0:
                    _check_row_wise(what, lambda rows: _flat_rows([factors(rows)]), chunk, _flat_rows([phi]))
                phi = phi / phi.norm(dim=-1, keepdim=True).clamp(min=1.0)  # a factor within the bound is untouched
                labels = torch.as_tensor(chunk.y, device=phi.device)
                part = product_class_sums(phi, labels, self.schema.n_classes)
                total = part if total is None else total + part
        rows = self.n_rows if mean else 1
        return self._ledger.gaussian(
            total / rows if mean else total,
            sensitivity=replace_one_l2(1.0, rows),
            noise_multiplier=noise_multiplier,
            what=what,
            rng=rng,
        )

    def _chunk(self, start: int, step: int) -> LabelledData:
        if start == 0 and step >= self.n_rows:
            return self.__rows
        return LabelledData(self.__rows.x[start : start + step], self.__rows.y[start : start + step], self.schema)

    def pair_distance_counts(
        self,
        what: str,
        features: Callable[[LabelledData], Any],
        *,
        thresholds: np.ndarray,
        order: np.ndarray,
        noise_multiplier: float,
        rng: Any,
    ) -> np.ndarray:
        """For each public threshold, how many of the disjoint row pairs (order[0], order[1]),
        (order[2], order[3]), … (``order``: a public permutation of the rows) have their ``features``
        at most that far apart (Euclidean), plus Gaussian noise. A replaced row sits in at most one
        pair and moves each count by at most 1: the L2 change is √(number of thresholds)."""
        if sorted(np.asarray(order).tolist()) != list(range(self.n_rows)):
            raise ValueError(f"{what}: order must be a permutation of the {self.n_rows} rows")
        z = features(self.__rows)
        _check_row_wise(what, features, self.__rows, z)
        z = np.asarray(z, dtype=float)
        paired = np.asarray(order)[: self.n_rows // 2 * 2]
        distances = np.sort(np.linalg.norm(z[paired[0::2]] - z[paired[1::2]], axis=1))
        closer = np.searchsorted(distances, thresholds, side="right").astype(float)
        return self._ledger.gaussian(
            closer, sensitivity=float(np.sqrt(len(thresholds))), noise_multiplier=noise_multiplier, what=what, rng=rng
        )

    def dp_sgd(
        self,
        what: str,
        module: Any,
        optimiser: Any,
        encode: Callable[[LabelledData], Sequence[Any]],
        *,
        clipping_norm: float,
        epochs: int,
        steps_per_epoch: int,
        expected_batch: int,
        noise_rng: Any,
        batch_rng: Any,
        device: Any = "cpu",
    ) -> "DPSGDTraining":
        """Charges a DP-SGD phase of ``epochs · steps_per_epoch`` Poisson steps at q =
        1/``steps_per_epoch`` with per-sample gradients clipped to ``clipping_norm`` (replace-one
        sensitivity 2·C, σ calibrated by the ledger), and returns the training loop that runs it on
        the rows' tensors ``encode(rows)`` (row-wise, checked): see :mod:`bench.privacy.dp_sgd`.
        The batches come from the phase — from the secure source when the noise is."""
        from bench.privacy.dp_sgd import DPSGDTraining

        phase = self._ledger.subsampled_phase(what, clipping_norm, 1.0 / steps_per_epoch, epochs * steps_per_epoch)
        tensors = tuple(encode(self.__rows))
        _check_row_wise(what, lambda rows: _flat_rows(encode(rows)), self.__rows, _flat_rows(tensors))
        return DPSGDTraining(
            phase,
            module,
            optimiser,
            tensors,
            epochs=epochs,
            steps_per_epoch=steps_per_epoch,
            expected_batch=expected_batch,
            noise_rng=noise_rng,
            batch_rng=batch_rng,
            device=device,
        )

    def _histogram(self, query: CountQuery, keep: bool = True) -> np.ndarray:
        """A query's clean histogram (the query's codes clipped to its bins), computed once when
        ``keep`` (queries asked again, as MST's and AIM's are)."""
        if query in self.__histograms:
            return self.__histograms[query]
        given = np.asarray(query.codes(self.__rows))
        if given.shape != (self.n_rows,):
            raise ValueError(
                f"{query.what}: codes(rows) must give one code per row ({self.n_rows}); got shape {given.shape}"
            )
        _check_codes_row_wise(query, self.__rows, given)
        codes = np.clip(given, 0, query.size - 1).astype(np.int64)
        histogram = np.bincount(codes, minlength=query.size).astype(np.float64)
        if keep:
            self.__histograms[query] = histogram
        return histogram

    def uncharged(self, what: str, statistic: "Callable[[LabelledData], T]") -> "T":
        """``statistic(rows)``, exact, in a run without privacy only: at a finite ε this raises
        (nothing is computed). For the seeds' uncharged statistics of the private rows (median
        heuristics, an unconditional target), run as labelled ε = ∞ ablations; the ledger records
        ``what`` among its trusted reads."""
        if self._ledger.budget.is_private:
            raise ValueError(
                f"{what} is a statistic of the private rows without privacy; it runs at --eps inf "
                "only (an ablation), not at a finite ε"
            )
        self._ledger.trusted_reads.append(f"ε = ∞, uncharged: {what}")
        return statistic(self.__rows)

    def rows(self, trusted: str) -> LabelledData:
        """The raw rows. ``trusted`` says why this use is sound (a non-private method; a
        computation whose privacy the method accounts itself); the ledger records it."""
        if not trusted or not trusted.strip():
            raise ValueError("data.rows(trusted=...) needs the reason the raw rows may be read")
        self._ledger.trusted_reads.append(trusted)
        return self.__rows


def _label_sums(vectors: Any, labels: np.ndarray, n_classes: int) -> Any:
    """Σ_{i: yᵢ = c} vᵢ for every class c (C × d), as one product with the one-hot labels."""
    if hasattr(vectors, "detach"):  # torch
        import torch

        one_hot = torch.nn.functional.one_hot(torch.as_tensor(labels, device=vectors.device).long(), n_classes)
        if vectors.device.type != "cpu":
            return one_hot.to(vectors.dtype).T @ vectors
        # On one thread: the CPU product splits its reduction over the rows by the thread count,
        # so the released sums (and the whole fit) would change with the cores a cell is lent
        # (DP-MERF adult, paper protocol: different samples at 1 and 2 threads).
        with one_torch_thread():
            return one_hot.to(vectors.dtype).T @ vectors
    return np.eye(n_classes, dtype=np.asarray(vectors).dtype)[labels].T @ np.asarray(vectors)


# A row given alone and within a batch goes through products of different shapes (BLAS blocking,
# float32 tiles, cuDNN's batch-size-dependent algorithms), which leaves round-off: about 1e-7 of
# the vector's norm for one product, 5e-7 through seven blocks of EfficientNet-Lite0 (DP-MEPF's
# ``cpu`` profile), where single small entries differ by 1e-3 of themselves — so the comparison is
# of norms, the scale at which a release's L2 sensitivity is stated. A batch statistic moves a row
# by a sizeable fraction of its norm.
ROW_WISE_RTOL, ROW_WISE_ATOL = 1e-4, 1e-6


class NotRowWiseError(ValueError):
    """A query's ``features`` did not map each row on its own."""


PROBED_RANDOM_ROWS = 4  # single rows, besides the first, the last and the two extreme rows
PROBED_SUBSET_ROWS = 64  # rows of each probed sub-batch: the first, the last and a spread of the batch


def probe_rows(batch: np.ndarray) -> list[np.ndarray]:
    """The row sets a row-wise check maps on their own, as index arrays: single rows — the first,
    the last, the rows of largest and smallest norm (an extreme row is where a clipping or a batch
    statistic shows first), ``PROBED_RANDOM_ROWS`` spread over the batch — and three sub-batches
    of ``PROBED_SUBSET_ROWS`` (the first rows, the last, a spread), whose own statistics differ
    from the whole batch's, so a map that normalises by its batch moves their rows even where a
    single row falls back to a default. A fixed draw: nothing is taken from a run's generators, so
    no released value moves. A map that treats one chosen row apart can still pass; one that
    reads a statistic of its batch is caught."""
    n = len(batch)
    if n <= 1:
        return []
    norms = np.linalg.norm(batch.reshape(n, -1).astype(float), axis=1)
    draw = np.random.default_rng(20261128)
    singles = {
        0,
        n - 1,
        int(np.argmax(norms)),
        int(np.argmin(norms)),
        *(int(i) for i in draw.choice(n, size=min(n, PROBED_RANDOM_ROWS), replace=False)),
    }
    probes = [np.array([i]) for i in sorted(singles)]
    size = min(PROBED_SUBSET_ROWS, n // 2)
    if size >= 2:
        probes += [np.arange(size), np.arange(n - size, n), np.sort(draw.choice(n, size=size, replace=False))]
    return probes


def _subset(rows: LabelledData, index: np.ndarray) -> LabelledData:
    return LabelledData(rows.x[index], rows.y[index], rows.schema)


def _check_codes_row_wise(query: "CountQuery", rows: LabelledData, codes: np.ndarray) -> None:
    """Refuses a count query unless the probed rows (:func:`probe_rows`), given on their own, get
    the codes they got among all rows: a code computed from a statistic of the rows (a mean, a
    quantile) moves many bins when one row is replaced, and the count's L1 change of 2 is gone."""
    for index in probe_rows(np.asarray(codes, dtype=float)):
        alone = np.asarray(query.codes(_subset(rows, index)))
        if alone.shape != index.shape or np.any(alone != codes[index]):
            raise NotRowWiseError(
                f"{query.what}: codes must map each row on its own (rows {_describe_probe(index)} on their own got other "
                "codes than among all rows): a count's sensitivity holds only for a per-row code, so release any "
                "statistic of the rows through its own query first"
            )


def _describe_probe(index: np.ndarray) -> str:
    return str(int(index[0])) if len(index) == 1 else f"{int(index[0])}…{int(index[-1])} ({len(index)} rows)"


def _check_row_wise(what: str, features: Callable[[LabelledData], Any], rows: LabelledData, vectors: Any) -> None:
    """Refuses ``features`` unless the probed rows of ``rows`` (:func:`probe_rows`), given on their
    own, map to the vectors they got within ``rows`` (``vectors``, n × d), each row within
    round-off of its norm."""
    batch = _as_numpy(vectors)
    if batch.ndim != 2 or len(batch) != len(rows):
        raise NotRowWiseError(
            f"{what}: features(rows) must give one vector per row ({len(rows)} × d); got shape {tuple(batch.shape)}"
        )
    for index in probe_rows(batch):
        alone = _as_numpy(features(_subset(rows, index)))
        within = batch[index]
        if alone.shape != within.shape or np.any(
            np.linalg.norm(alone - within, axis=1) > ROW_WISE_RTOL * np.linalg.norm(within, axis=1) + ROW_WISE_ATOL
        ):
            raise NotRowWiseError(
                f"{what}: features must map each row on its own (rows {_describe_probe(index)} on their own gave other "
                "vectors than within the batch): the sensitivity a handle query derives holds only for a per-row map, "
                "so compute any statistic of the rows through its own query first"
            )


def _flat_rows(tensors: Sequence[Any]) -> np.ndarray:
    """Per-row tensors (rows × anything, several) as one rows × d array."""
    return np.concatenate([_as_numpy(t).reshape(len(t), -1) for t in tensors], axis=1)


def _as_numpy(vectors: Any) -> np.ndarray:
    if hasattr(vectors, "detach"):  # torch
        return vectors.detach().cpu().double().numpy()
    return np.asarray(vectors, dtype=float)


def _clamp_negative(vectors: Any) -> Any:
    """Each entry at least 0; vectors already non-negative are returned as they are (same bits)."""
    if hasattr(vectors, "detach"):  # torch
        return vectors if len(vectors) == 0 or float(vectors.min()) >= 0 else vectors.clamp(min=0)
    vectors = np.asarray(vectors)
    return vectors if vectors.size == 0 or float(vectors.min()) >= 0 else np.maximum(vectors, 0)


def _clip_rows(vectors: Any, norm_bound: float) -> Any:
    """Each row scaled to norm ≤ ``norm_bound``; rows already within it are untouched (a factor of
    exactly 1), so when every row is, the multiplication pass is skipped with the same bits."""
    if hasattr(vectors, "detach"):  # torch
        import torch

        norms = torch.linalg.vector_norm(vectors, dim=1, keepdim=True)
        if len(vectors) == 0 or float(norms.max()) <= norm_bound:
            return vectors
        return vectors * torch.clamp(norm_bound / torch.clamp(norms, min=1e-300), max=1.0)
    vectors = np.asarray(vectors)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if len(vectors) == 0 or float(norms.max()) <= norm_bound:
        return vectors
    return vectors * np.minimum(1.0, norm_bound / np.maximum(norms, 1e-300))
