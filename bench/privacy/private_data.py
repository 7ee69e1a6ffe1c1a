"""The private training rows as a method reaches them: a handle whose queries release only noisy
answers through the run's ledger, each query's sensitivity derived from its shape under the
replace-one relation (:mod:`bench.privacy.releases`) rather than declared by the method.

* :meth:`PrivateData.counts` (Gaussian) and :meth:`PrivateData.laplace_counts`: histograms of one
  integer code per row (a 1-way marginal, a class count): replacing a row moves one count down and
  one up, so the L2 change is √2 and the L1 change 2.
* :meth:`PrivateData.sum`: Σᵢ f(rowᵢ), each row's vector clipped to ``norm_bound`` by the handle: L2
  change 2 · norm_bound (the mean: over the public row count); ``by_label``, one sum per class (a
  replaced row leaves one class's sum and enters one: still 2 · norm_bound); ``nonnegative``, entries
  clamped at 0: √2 · norm_bound. :meth:`PrivateData.sums`: several from one pass (an encoder's
  moments). :meth:`PrivateData.structured_sum`: the per-class sums as a method's structured path
  computes them (a fused kernel), released only when the handle's own clipped sums agree (DP-HP).
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
* Releasing nothing, each recorded in the ledger: :meth:`PrivateData.recoded`, the rows through a public
  row-wise map; :meth:`PrivateData.uncharged`, an exact statistic at ε = ∞ only (the seeds' uncharged
  heuristics, as labelled ablations); :meth:`PrivateData.check_disjoint`, which refuses a public input (a
  pretrained encoder) trained on a private row, by content; and :meth:`PrivateData.rows`, the rows
  themselves, with the reason (the kit's ``queries_only`` fails a private method that asks).

Every ``features`` map and count query must map each row on its own; the handle checks it on each
call (:mod:`bench.privacy.row_wise`). The row count, the schema and the data kind are public (the
split's size is a public fact of the benchmark; the datasets' caveats say where it is not).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Sequence, TypeVar

import numpy as np

from bench.core.data import LabelledData, Schema, row_fingerprints
from bench.core.errors import UsageError
from bench.privacy.releases import (
    COUNT_L1_SENSITIVITY,
    COUNT_L2_SENSITIVITY,
    mutual_information_bits,
    mutual_information_sensitivity,
    replace_one_l2,
    replace_one_nonnegative_l2,
)
from bench.privacy import row_wise
from bench.privacy.row_wise import (  # CountQuery: the handle's histogram queries, defined beside their check
    CountQuery,
    as_numpy,
    check_row_wise,
    clean_histogram,
    checked_structured_sums,
    clamp_negative,
    clip_rows,
    flat_rows,
    label_sums,
    paired_distances,
)

if TYPE_CHECKING:
    from bench.privacy.dp_sgd import DPSGDTraining

T = TypeVar("T")


class PublicInputError(UsageError, ValueError):
    """A method's public input (pretrained weights) saw private rows."""


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
        instead of 2·bound (:func:`bench.privacy.replace_one_nonnegative_l2`)."""
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
                check_row_wise(" and ".join(whats), lambda rows: flat_rows(features(rows)), chunk, flat_rows(outputs))
            parts = []
            for vectors in outputs:
                clipped = clip_rows(clamp_negative(vectors) if nonnegative else vectors, norm_bound)
                parts.append(label_sums(clipped, chunk.y, self.schema.n_classes) if by_label else clipped.sum(0))
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
                check_row_wise(what, features, chunk, vectors)
            most = max(most, float(np.linalg.norm(as_numpy(vectors), axis=1).max(initial=0.0)))
            part = label_sums(clip_rows(vectors, norm_bound), chunk.y, n_classes)
            checked = part if checked is None else checked + part
        structured = None
        step = structured_chunk_rows or max(self.n_rows, 1)
        for start in range(0, self.n_rows, step):
            part = class_sums(self._chunk(start, step))
            structured = part if structured is None else structured + part
        total, caveat = checked_structured_sums(what, structured, checked, most, norm_bound, self.n_rows)
        if caveat:
            self._ledger.caveats.append(caveat)
        return self._release_sum(what, total, norm_bound, mean, noise_multiplier, rng)

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
                    check_row_wise(what, lambda rows: flat_rows([factors(rows)]), chunk, flat_rows([phi]))
                phi = phi / phi.norm(dim=-1, keepdim=True).clamp(min=1.0)  # a factor within the bound is untouched
                labels = torch.as_tensor(chunk.y, device=phi.device)
                part = product_class_sums(phi, labels, self.schema.n_classes)
                total = part if total is None else total + part
        return self._release_sum(what, total, 1.0, mean, noise_multiplier, rng)

    def _release_sum(
        self, what: str, total: Any, norm_bound: float, mean: bool, noise_multiplier: float, rng: Any
    ) -> Any:
        """A sum (or, with ``mean``, the mean over the public row count) of rows clipped to
        ``norm_bound``, through the ledger at its replace-one L2 sensitivity."""
        rows = self.n_rows if mean else 1
        value, sensitivity = (total / rows if mean else total), replace_one_l2(norm_bound, rows)
        return self._ledger.gaussian(
            value, sensitivity=sensitivity, noise_multiplier=noise_multiplier, what=what, rng=rng
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
        distances = paired_distances(what, features, self.__rows, order)
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
        check_row_wise(what, lambda rows: flat_rows(encode(rows)), self.__rows, flat_rows(tensors))
        loop = {"epochs": epochs, "steps_per_epoch": steps_per_epoch, "expected_batch": expected_batch}
        draws = {"noise_rng": noise_rng, "batch_rng": batch_rng, "device": device}
        return DPSGDTraining(phase, module, optimiser, tensors, **loop, **draws)

    def _histogram(self, query: CountQuery, keep: bool = True) -> np.ndarray:
        """A query's clean histogram (the query's codes clipped to its bins), computed once when
        ``keep`` (queries asked again, as MST's and AIM's are)."""
        if query in self.__histograms:
            return self.__histograms[query]
        histogram = clean_histogram(query, self.__rows)
        if keep:
            self.__histograms[query] = histogram
        return histogram

    def check_disjoint(self, what: str, fingerprints: np.ndarray) -> None:
        """Refuses (:class:`PublicInputError`) a public input ``what`` (a pretrained encoder) whose
        training rows, as content fingerprints (:func:`bench.core.data.row_fingerprints`), include a
        private row, whatever their dataset's name. Releases nothing: the run stops before any release
        or goes on, a fact of the user's setup; the ledger records the check among its public facts."""
        shared = int(np.isin(row_fingerprints(self.__rows.x), np.asarray(fingerprints, dtype=np.uint64)).sum())
        if shared:
            raise PublicInputError(  # not how many: that count of private rows would reach the run's record
                f"{what} was trained on private training rows (found by content): it is not public for "
                "this run; pretrain it on other data"
            )
        self._ledger.use_public_fact(
            f"{what}: training rows",
            f"{len(fingerprints):,} row fingerprints",
            "disjoint from the private training rows (checked by content before any release)",
        )

    def recoded(self, what: str, recode: Callable[[LabelledData], LabelledData]) -> "PrivateData":
        """A handle on this ledger of the rows through ``recode``, a public row-wise map (checked)."""
        recoded = row_wise.check_recoding_row_wise(what, recode, self.__rows)
        self._ledger.use_public_fact(f"recoding: {what}", f"{recoded.schema.n_features} columns", row_wise.RECODING_WHY)
        return PrivateData(recoded, self._ledger)

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
