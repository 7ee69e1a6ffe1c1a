"""The private-data handle: its queries derive their replace-one sensitivity from their shape, the
handle clips what a method cannot be trusted to bound, and raw reads are recorded."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bench.core.data import Column, ColumnKind, LabelledData, Schema
from bench.privacy.budget import PrivacyBudget
from bench.privacy.independent import independent_epsilon
from bench.privacy.ledger import PrivacyLedger
from bench.privacy.private_data import CountQuery, PrivateData

SCHEMA = Schema(
    columns=(
        Column("a", ColumnKind.CATEGORICAL, categories=("x", "y", "z")),
        Column("b", ColumnKind.NUMERICAL, bounds=(0.0, 1.0)),
    ),
    label="label",
    classes=("no", "yes"),
)


def rows(seed: int = 0, n: int = 200) -> LabelledData:
    rng = np.random.default_rng(seed)
    x = np.c_[rng.integers(0, 3, n), rng.random(n)].astype(np.float32)
    return LabelledData(x, rng.integers(0, 2, n), SCHEMA)


def neighbour(data: LabelledData, value: float) -> LabelledData:
    """Row 0 replaced by an adversarial one (a huge numerical value, another category and class)."""
    x, y = data.x.copy(), data.y.copy()
    x[0] = [(x[0, 0] + 1) % 3, value]
    y[0] = 1 - y[0]
    return LabelledData(x, y, SCHEMA)


def clean(data: LabelledData):
    return PrivateData(data, PrivacyLedger(PrivacyBudget.non_private()))


def features(data: LabelledData) -> np.ndarray:  # a method's feature map, unbounded on purpose
    return np.c_[data.x[:, 1] * 1000.0, data.y.astype(float)]


@pytest.mark.parametrize("mean", [False, True])
def test_a_sum_moves_by_at_most_its_derived_sensitivity_on_adversarial_neighbours(mean):
    bound = 2.5
    private = PrivacyLedger(PrivacyBudget(1.0, 1e-5))
    sigma = private.calibrate_gaussian()
    PrivateData(rows(), private).sum(
        "f", features, norm_bound=bound, noise_multiplier=sigma, rng=np.random.default_rng(0), mean=mean
    )
    (release,) = private.releases
    assert release.sensitivity == pytest.approx(2 * bound / (200 if mean else 1))
    assert independent_epsilon(private.releases, 1e-5).epsilon <= 1.0 * 1.01
    base = clean(rows()).sum("f", features, norm_bound=bound, noise_multiplier=0.0, rng=None, mean=mean)
    for value in (0.0, 1e6, -1e6):
        moved = clean(neighbour(rows(), value)).sum(
            "f", features, norm_bound=bound, noise_multiplier=0.0, rng=None, mean=mean
        )
        assert np.linalg.norm(moved - base) <= release.sensitivity * (1 + 1e-9)
    # without the handle's clipping the same neighbour moves the sum by ~10⁹: the bound is enforced, not trusted
    assert np.linalg.norm(features(neighbour(rows(), 1e6)).sum(0) - features(rows()).sum(0)) > 1e8


def test_counts_move_by_at_most_root_two_and_codes_out_of_range_are_clipped():
    query = [CountQuery("a", lambda r: r.x[:, 0], 3), CountQuery("label", lambda r: r.y, 2)]
    base = clean(rows()).counts(query, noise_multiplier=0.0, rng=None)
    for value in (0.0, 1e6):
        moved = clean(neighbour(rows(), value)).counts(query, noise_multiplier=0.0, rng=None)
        assert all(np.linalg.norm(m - b) <= math.sqrt(2) + 1e-12 for m, b in zip(moved, base))
    wild = clean(rows()).counts([CountQuery("b", lambda r: r.x[:, 1] * 1e9, 4)], noise_multiplier=0.0, rng=None)[0]
    assert wild.sum() == 200 and len(wild) == 4
    private = PrivacyLedger(PrivacyBudget(1.0, 1e-5))
    PrivateData(rows(), private).laplace_counts(query, epsilon=0.5, rng=np.random.default_rng(0))
    assert [r.sensitivity for r in private.releases] == [2.0, 2.0]
    assert independent_epsilon(private.releases, 0.0).epsilon == pytest.approx(1.0, rel=0.01)


def _worst_mutual_information_change(n: int, size: int) -> float:
    """The largest change of I(X; Y) over size × size tables of n rows found by replacing one row
    of a diagonal table (a rows (0,0), b rows (1,1), the rest (size-1, size-1)) by any value pair:
    computed here from the definition, independently of the handle's sensitivity."""

    def information(table):
        p = table / table.sum()
        outer = p.sum(1, keepdims=True) * p.sum(0, keepdims=True)
        return float(np.sum(np.where(p > 0, p * np.log2(np.where(p > 0, p, 1) / np.where(p > 0, outer, 1)), 0)))

    worst = 0.0
    for a in range(0, n + 1):
        for b in range(0, n - a + 1) if size > 2 else (n - a,):
            base = np.zeros((size, size))
            base[0, 0], base[1, 1] = a, b
            base[size - 1, size - 1] += n - a - b
            for source in zip(*np.nonzero(base)):
                for target in np.ndindex(size, size):
                    moved = base.copy()
                    moved[source] -= 1
                    moved[target] += 1
                    worst = max(worst, abs(information(moved) - information(base)))
    return worst


@pytest.mark.parametrize("size", [2, 3])
def test_a_mutual_information_selection_covers_the_worst_replacement(size):
    """The sensitivity the handle records for a selection on I(X; Π) bounds the largest change a
    replaced row can cause (found by search, not by the lemma): a variant that used the binary
    form of PrivBayes' Lemma 4.1 for 3-valued columns would record 0.165 below the 0.283 found."""
    n = 41
    schema = Schema(
        columns=tuple(Column(c, ColumnKind.CATEGORICAL, categories=tuple("uvw"[:size])) for c in "ab"),
        label="label",
        classes=("no", "yes"),
    )
    rng = np.random.default_rng(0)
    data = LabelledData(rng.integers(0, size, (n, 2)).astype(np.float32), rng.integers(0, 2, n), schema)
    joint = CountQuery("a×b", lambda r: r.x[:, 0].astype(np.int64) * size + r.x[:, 1].astype(np.int64), size * size)
    alone = CountQuery("a", lambda r: r.x[:, 0], size)
    ledger = PrivacyLedger(PrivacyBudget(1.0, 1e-5))
    PrivateData(data, ledger).select_by_mutual_information(
        "structure", [(joint, size), (alone, size)], epsilon=1.0, rng=np.random.default_rng(0)
    )
    (release,) = ledger.releases
    worst = _worst_mutual_information_change(n, size)
    assert worst <= release.sensitivity * (1 + 1e-9)
    assert worst >= 0.9 * release.sensitivity  # the search reaches the bound: it is tight, not loose
    if size == 3:
        binary_form = math.log2(n) / n + (n - 1) / n * math.log2(n / (n - 1))
        assert worst > binary_form * 1.3


def test_a_labelled_sum_has_the_same_bits_at_any_thread_count():
    """The runner lends idle cores to thread-invariant fits; the handle's per-class sums must not
    change with them (a CPU product splits its reduction over the rows by the thread count)."""
    import torch

    vectors = torch.as_tensor(np.random.default_rng(0).normal(size=(3000, 1007)))  # adult: 11,077 × 1,007
    row_ids = np.arange(3000)
    data = LabelledData(np.c_[np.zeros(3000), row_ids / 3000].astype(np.float32), row_ids % 2, SCHEMA)

    def row_vectors(rows: LabelledData):  # each row's own vector, found by the id it carries
        return vectors[torch.as_tensor(np.rint(rows.x[:, 1].astype(np.float64) * 3000).astype(np.int64))]

    threads = torch.get_num_threads()
    sums = []
    try:
        for count in (1, 2):
            torch.set_num_threads(count)
            sums.append(
                clean(data).sum("f", row_vectors, norm_bound=1e9, noise_multiplier=0.0, rng=None, by_label=True)
            )
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(sums[0], sums[1])
    assert torch.get_num_threads() == threads


def test_raw_reads_need_a_reason_and_are_recorded():
    ledger = PrivacyLedger(PrivacyBudget(1.0, 1e-5))
    data = PrivateData(rows(), ledger)
    with pytest.raises(ValueError, match="needs the reason"):
        data.rows(trusted=" ")
    assert len(data.rows(trusted="a documented non-private use")) == data.n_rows == 200
    assert ledger.to_dict()["trusted_reads"] == ["a documented non-private use"]
    assert not hasattr(data, "x") and not hasattr(data, "y")  # no side door to the rows by attribute


def batch_standardised(data: LabelledData) -> np.ndarray:
    """A mistaken feature map: each row z-scored by the statistics of the batch it is given."""
    x = data.x[:, 1].astype(np.float64)
    return ((x - x.mean()) / max(x.std(), 1e-12))[:, None]


def test_a_feature_map_that_reads_the_batch_is_refused_because_it_breaks_the_derived_sensitivity():
    """The sensitivity a handle sum derives (2 · bound) assumes each row is mapped on its own. An
    independent check of why that matters: with batch z-scoring, replacing one row moves every
    clipped vector, and the clipped sum moves by far more than 2 · bound — so the handle refuses
    the map instead of releasing it (and likewise for the paired distances)."""
    from bench.privacy.row_wise import NotRowWiseError, clip_rows

    bound = 0.5
    moved = clip_rows(batch_standardised(neighbour(rows(), 1e6)), bound).sum(0)
    base = clip_rows(batch_standardised(rows()), bound).sum(0)
    assert np.linalg.norm(moved - base) > 10 * 2 * bound
    for query in (
        lambda data: data.sum("z-scored", batch_standardised, norm_bound=bound, noise_multiplier=0.0, rng=None),
        lambda data: data.sum(
            "z-scored", batch_standardised, norm_bound=bound, noise_multiplier=0.0, rng=None, chunk_rows=64
        ),
        lambda data: data.pair_distance_counts(
            "z-scored",
            batch_standardised,
            thresholds=np.array([0.1, 1.0]),
            order=np.arange(200),
            noise_multiplier=0.0,
            rng=None,
        ),
    ):
        ledger = PrivacyLedger(PrivacyBudget(1.0, 1e-5))
        with pytest.raises(NotRowWiseError, match="map each row on its own"):
            query(PrivateData(rows(), ledger))
        assert not ledger.releases  # nothing released
    with pytest.raises(NotRowWiseError, match="one vector per row"):
        clean(rows()).sum("constant", lambda data: np.ones((3, 2)), norm_bound=1.0, noise_multiplier=0.0, rng=None)


def test_a_row_wise_map_passes_the_probe_with_torch_float32_tiles():
    """Round-off between a row alone and in a batch (float32 products of different shapes) is not
    mistaken for a batch statistic."""
    import torch

    weights = torch.as_tensor(np.random.default_rng(3).normal(size=(2, 4000)), dtype=torch.float32)
    summed = clean(rows(n=1000)).sum(
        "cosines",
        lambda data: torch.cos(torch.as_tensor(data.x) @ weights),
        norm_bound=100.0,
        noise_multiplier=0.0,
        rng=None,
    )
    assert summed.shape == (4000,)


def test_a_kronecker_sum_holds_its_derived_sensitivity_against_an_explicit_product_on_adversarial_neighbours():
    """The handle scales each factor to norm ≤ 1 itself: with wild factors (a replaced row's of norm
    10⁶), the per-class sums move by at most the derived 2 — checked against sums of explicit
    Kronecker products (numpy's kron), not the handle's factorised form."""
    import torch

    def factors(data: LabelledData):  # three factors of width 3 from the row's values, unbounded
        b = torch.as_tensor(data.x[:, 1], dtype=torch.float64)[:, None]
        return torch.stack([torch.cat([b, b**2, 1 + 0 * b], 1) * s for s in (1.0, 3.0, 1e6)], 1)

    def explicit(data: LabelledData) -> np.ndarray:
        out = np.zeros((2, 27))
        for row, label in zip(factors(data).numpy(), data.y):
            unit = [f / max(np.linalg.norm(f), 1.0) for f in row]
            out[label] += np.kron(np.kron(unit[0], unit[1]), unit[2])
        return out

    private = PrivacyLedger(PrivacyBudget(1.0, 1e-5))
    PrivateData(rows(), private).kronecker_sum(
        "k", factors, noise_multiplier=private.calibrate_gaussian(), rng=torch.Generator().manual_seed(0), chunk_rows=64
    )
    assert private.releases[0].sensitivity == pytest.approx(2.0)
    base = clean(rows()).kronecker_sum("k", factors, noise_multiplier=0.0, rng=None, chunk_rows=64).numpy()
    np.testing.assert_allclose(base, explicit(rows()), rtol=1e-10, atol=1e-12)
    for value in (0.0, 1e6, -1e6):
        moved = clean(neighbour(rows(), value)).kronecker_sum("k", factors, noise_multiplier=0.0, rng=None).numpy()
        np.testing.assert_allclose(moved, explicit(neighbour(rows(), value)), rtol=1e-10, atol=1e-12)
        assert np.linalg.norm(moved - base) <= 2.0 * (1 + 1e-9)


def test_a_structured_sum_is_released_only_when_it_is_the_sum_of_its_rows_clipped_features():
    import torch

    def features(data: LabelledData):
        return torch.as_tensor(np.c_[data.x[:, 1], 1 - data.x[:, 1]] / 2, dtype=torch.float64)

    def honest(data: LabelledData):
        return _label_sums_torch(features(data), data.y)

    ledger = PrivacyLedger(PrivacyBudget.non_private())
    released = PrivateData(rows(), ledger).structured_sum(
        "s", features, honest, norm_bound=1.0, noise_multiplier=0.0, rng=None, chunk_rows=50, structured_chunk_rows=64
    )
    assert torch.allclose(released, honest(rows())) and not ledger.caveats
    with pytest.raises(ValueError, match="structured class sums differ"):  # a sum that is not the rows' own
        clean(rows()).structured_sum(
            "s", features, lambda data: 2 * honest(data), norm_bound=1.0, noise_multiplier=0.0, rng=None
        )
    # features above the bound: the handle releases its own clipped sum and says so
    ledger = PrivacyLedger(PrivacyBudget.non_private())
    wide = PrivateData(rows(), ledger).structured_sum(
        "s", lambda d: 10 * features(d), lambda d: 10 * honest(d), norm_bound=1.0, noise_multiplier=0.0, rng=None
    )
    clipped = features(rows()) * 10
    clipped = clipped / clipped.norm(dim=1, keepdim=True).clamp(min=1.0)
    assert torch.allclose(wide, _label_sums_torch(clipped, rows().y)) and "exceeded the norm bound" in ledger.caveats[0]


def _label_sums_torch(vectors, labels):
    import torch

    return torch.nn.functional.one_hot(torch.as_tensor(labels), 2).to(vectors.dtype).T @ vectors


def test_an_uncharged_statistic_runs_at_infinite_epsilon_only_and_is_recorded():
    from bench.privacy.budget import PrivacyBudget
    from bench.privacy.ledger import PrivacyLedger
    from bench.privacy.private_data import PrivateData

    data = rows(n=50)
    private = PrivacyLedger(PrivacyBudget(1.0, 1e-5))
    with pytest.raises(ValueError, match="--eps inf only"):
        PrivateData(data, private).uncharged("a median", lambda r: pytest.fail("computed at a finite ε"))
    assert private.trusted_reads == [] and private.releases == []
    open_ledger = PrivacyLedger(PrivacyBudget.non_private())
    assert PrivateData(data, open_ledger).uncharged("the row count", lambda r: len(r)) == 50
    assert open_ledger.trusted_reads == ["ε = ∞, uncharged: the row count"]


def _mean_but_first(column: np.ndarray) -> float:
    """A statistic of every row but row 0 (the audit's kind 2): invisible to a probe of row 0 alone."""
    return float(column[1:].mean()) if len(column) > 1 else 0.5


def test_codes_from_a_statistic_of_the_rows_are_refused_and_move_many_bins_when_one_row_is_replaced():
    """Issue 56, kind 2: codes standardised by a mean of the rows are not a count query. An
    independent check of why: replacing one row moves the histogram by far more than a count's L1 2;
    the handle refuses the query (it probes rows across the table, not only row 0)."""
    from bench.privacy.row_wise import NotRowWiseError

    def codes(data: LabelledData) -> np.ndarray:
        return (data.x[:, 1] > _mean_but_first(data.x[:, 1])).astype(int)

    def histogram(data: LabelledData) -> np.ndarray:  # computed here, not by the handle
        return np.bincount(codes(data), minlength=2)

    data = rows(n=2000)
    shifted = LabelledData(data.x.copy(), data.y, SCHEMA)
    shifted.x[1, 1] = 1e4  # replace row 1: the mean moves, and with it many rows' codes
    assert np.abs(histogram(shifted) - histogram(data)).sum() > 100 * 2
    ledger = PrivacyLedger(PrivacyBudget(1.0, 1e-5))
    with pytest.raises(NotRowWiseError, match="codes must map each row on its own"):
        PrivateData(data, ledger).laplace_counts(
            [CountQuery("centred", codes, 2)], epsilon=1.0, rng=np.random.default_rng(0)
        )
    assert not ledger.releases
    # the row-wise version of the same query, with a public threshold, passes
    PrivateData(data, ledger).laplace_counts(
        [CountQuery("public threshold", lambda r: (r.x[:, 1] > 0.5).astype(int), 2)],
        epsilon=1.0,
        rng=np.random.default_rng(0),
    )
    assert len(ledger.releases) == 1


def test_codes_must_be_one_per_row():
    for wrong in (lambda r: r.y[:-1], lambda r: np.c_[r.y, r.y]):
        with pytest.raises(ValueError, match="one code per row"):
            clean(rows()).counts([CountQuery("short", wrong, 2)], noise_multiplier=0.0, rng=None)


def test_a_feature_map_that_reads_the_batch_except_at_its_ends_is_refused():
    """Row-wise at the first and last row only (the old probe's rows), batch-normalised elsewhere."""
    from bench.privacy.row_wise import NotRowWiseError

    def sly(data: LabelledData) -> np.ndarray:
        out = np.c_[data.x[:, 1], data.y.astype(float)]
        if len(out) > 2:
            out[1:-1] -= out[1:-1].mean(axis=0)
        return out

    with pytest.raises(NotRowWiseError, match="map each row on its own"):
        clean(rows()).sum("sly", sly, norm_bound=1.0, noise_multiplier=0.0, rng=None)


def test_a_selection_with_a_negative_weight_charges_its_absolute_value():
    """The exponential mechanism's score wᵢ·‖countsᵢ − estimateᵢ‖₁ moves by |wᵢ|·2 under replace-one,
    checked here by replacing rows, independently of the handle's bound."""
    query = CountQuery("label", lambda r: r.y, 2)
    weights = [0.5, -3.0]
    estimates = [np.array([100.0, 100.0]), np.array([0.0, 0.0])]

    def scores(data: LabelledData) -> np.ndarray:
        counts = np.bincount(data.y, minlength=2).astype(float)
        return np.array([w * np.abs(counts - e).sum() for w, e in zip(weights, estimates)])

    base = rows()
    worst = 0.0
    for i in range(0, 200, 7):
        moved = LabelledData(base.x, base.y.copy(), SCHEMA)
        moved.y[i] = 1 - moved.y[i]
        worst = max(worst, np.abs(scores(moved) - scores(base)).max())
    ledger = PrivacyLedger(PrivacyBudget(1.0, 1e-5))
    PrivateData(base, ledger).select(
        "pick", [query, query], estimates, epsilon=0.5, rng=np.random.default_rng(0), weights=weights
    )
    (release,) = ledger.releases
    assert worst <= release.sensitivity == pytest.approx(2 * 3.0)
