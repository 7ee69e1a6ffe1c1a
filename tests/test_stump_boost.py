"""``SammeStumpBoost`` (evaluators/stump_boost.py) is scikit-learn's ``AdaBoostClassifier``: the
same stumps round by round, the same estimator weights, and predictions on the real MNIST test
images that agree — on real MNIST training images and on images a DP generator made (8-bit, as
every image evaluator sees them). The default suite uses subsets and fewer rounds (scikit-learn's
side costs ≈ 25 ms a stump at 2,000 images); the slow test runs DP-HP Table 10's 1,000 rounds."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import AdaBoostClassifier

from bench.harness.samples import as_8bit_images, load_synthetic
from evaluators.stump_boost import SammeStumpBoost, column_levels

N_TEST = 10_000


@pytest.fixture(scope="module")
def mnist(data_dir):
    from bench.api.registry import DATASETS

    return DATASETS.get("mnist").load(data_dir, seed=0)


@pytest.fixture(scope="module")
def generated(mnist, data_dir, tmp_path_factory):
    """Images from a DP-MERF fit on MNIST at ε = 1 (smoke profile: a short fit), as the run stores them."""
    import bench
    from bench.harness.samples import SAMPLE_FILE

    out = tmp_path_factory.mktemp("generated")
    result = bench.run_cell("dp-merf", "mnist", epsilon=1.0, evaluators=(), profile="smoke", data_dir=data_dir, out=out)
    assert result.ok, result.error
    images, _ = load_synthetic(out / SAMPLE_FILE, mnist.train.schema)
    return images


def compare(x: np.ndarray, y: np.ndarray, x_test: np.ndarray, y_test: np.ndarray, rounds: int) -> dict:
    ours = SammeStumpBoost(n_estimators=rounds, learning_rate=0.7, random_state=0).fit(x, y)
    theirs = AdaBoostClassifier(n_estimators=rounds, learning_rate=0.7, random_state=0).fit(x, y)
    assert ours.fitted_by == "histograms"
    ours_pred, their_pred = ours.predict(x_test), theirs.predict(x_test)
    features = [stump[0] for stump in ours.stumps_]
    thresholds = [stump[1] for stump in ours.stumps_]
    return {
        "agree": float(np.mean(ours_pred == their_pred)),
        "accuracy_gap": abs(float(np.mean(ours_pred == y_test)) - float(np.mean(their_pred == y_test))),
        "rounds": (len(ours.stumps_), len(theirs.estimators_)),
        "same_stumps": features == [int(t.tree_.feature[0]) for t in theirs.estimators_]
        and thresholds == [float(t.tree_.threshold[0]) for t in theirs.estimators_],
        "weights": (ours.estimator_weights_, theirs.estimator_weights_[: len(theirs.estimators_)]),
    }


def assert_same_classifier(found: dict) -> None:
    assert found["agree"] >= 0.995, found["agree"]
    assert found["accuracy_gap"] <= 0.002, found["accuracy_gap"]
    assert found["rounds"][0] == found["rounds"][1]
    np.testing.assert_allclose(*found["weights"], rtol=1e-9)


def test_real_digits_give_scikit_learns_stumps_weights_and_predictions(mnist):
    x, y = mnist.train.x[:2000], mnist.train.y[:2000]
    found = compare(x, y, mnist.test.x[:N_TEST], mnist.test.y[:N_TEST], rounds=150)
    assert found["same_stumps"]
    assert_same_classifier(found)


def test_generated_digits_give_scikit_learns_predictions(generated, mnist):
    x, y = generated.x[:2000], generated.y[:2000]
    assert column_levels(x) is not None  # 8-bit: the histogram path
    found = compare(x, y, mnist.test.x[:N_TEST], mnist.test.y[:N_TEST], rounds=150)
    assert_same_classifier(found)


def test_a_tie_between_features_is_drawn_at_random_as_scikit_learns_feature_order_draws_it(mnist):
    """Every column twice: each stump's best split has a bit-equal twin, which scikit-learn's
    random feature order picks about half the time. The lowest-index rule (fit_version < 3) took
    the first copy every round; drawn from random_state, both copies are used, the fit and its
    predictions are those of the columns once (the copies hold the same values), and a
    random_state gives the same fit again."""
    x, y = mnist.train.x[:500], mnist.train.y[:500]
    twice = np.hstack([x, x])
    once = SammeStumpBoost(n_estimators=60, learning_rate=0.7, random_state=0).fit(x, y)
    drawn = SammeStumpBoost(n_estimators=60, learning_rate=0.7, random_state=0).fit(twice, y)
    theirs = AdaBoostClassifier(n_estimators=60, learning_rate=0.7, random_state=0).fit(twice, y)
    copies = np.array([stump[0] >= x.shape[1] for stump in drawn.stumps_])
    their_copies = np.array([t.tree_.feature[0] >= x.shape[1] for t in theirs.estimators_])
    assert 0.25 <= copies.mean() <= 0.75 and 0.25 <= their_copies.mean() <= 0.75, (copies.mean(), their_copies.mean())
    assert [(f % x.shape[1], *rest) for f, *rest in drawn.stumps_] == [tuple(s) for s in once.stumps_]
    np.testing.assert_array_equal(drawn.estimator_weights_, once.estimator_weights_)
    test = np.hstack([mnist.test.x[:2000], mnist.test.x[:2000]])
    np.testing.assert_array_equal(drawn.predict(test), theirs.predict(test))
    again = SammeStumpBoost(n_estimators=60, learning_rate=0.7, random_state=0).fit(twice, y)
    assert again.stumps_ == drawn.stumps_


def test_two_classes_and_a_stop_on_a_perfect_stump_are_handled_as_scikit_learn_does():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 5, size=(400, 6)).astype(np.float32) / 4
    y = (x[:, 2] > 0.5).astype(int)  # one stump separates the classes: error 0, boosting stops
    for labels in (y, np.where(rng.random(400) < 0.2, 1 - y, y)):  # separable, then 20% label noise
        ours = SammeStumpBoost(n_estimators=40, learning_rate=0.7).fit(x, labels)
        theirs = AdaBoostClassifier(n_estimators=40, learning_rate=0.7, random_state=0).fit(x, labels)
        assert len(ours.stumps_) == len(theirs.estimators_)
        np.testing.assert_array_equal(ours.predict(x), theirs.predict(x))
        np.testing.assert_allclose(ours.decision_function(x), theirs.decision_function(x), rtol=1e-9, atol=1e-12)


def test_an_exact_tie_between_two_classes_on_a_side_goes_to_the_lower_class_as_in_scikit_learn():
    """Two classes of equal weight on one side of a stump (here 11 rows each at the first round's
    equal weights) are a tie that scikit-learn's argmax gives to the lower class. Read off the
    histograms, whose sums run level by level, the two weights differed by one ulp and the tie went
    the other way, and the boosting followed another path from there (on generated digits: 0.74 of
    the test predictions agreed)."""
    rng = np.random.default_rng(4)
    x = (rng.integers(0, 6, size=(60, 2)) / 5).astype(np.float32)
    y = rng.integers(0, 3, size=60)
    first = AdaBoostClassifier(n_estimators=1, learning_rate=0.7, random_state=0).fit(x, y).estimators_[0].tree_
    left = x[:, first.feature[0]] <= first.threshold[0]
    assert np.bincount(y[left], minlength=3).tolist() == [11, 9, 11]  # the tie this test is about
    found = compare(x, y, x, y, rounds=20)
    assert found["same_stumps"] and found["agree"] == 1.0
    ours = SammeStumpBoost(n_estimators=20, learning_rate=0.7).fit(x, y)
    theirs = AdaBoostClassifier(n_estimators=20, learning_rate=0.7, random_state=0).fit(x, y)
    assert [stump[2:] for stump in ours.stumps_] == [
        (int(tree.tree_.value[1].argmax()), int(tree.tree_.value[2].argmax())) for tree in theirs.estimators_
    ]


def test_continuous_columns_fall_back_to_scikit_learn():
    rng = np.random.default_rng(1)
    x = rng.random((600, 3)).astype(np.float32)  # 600 distinct values a column: over 256 levels
    y = (x[:, 0] + 0.1 * rng.random(600) > 0.5).astype(int)
    ours = SammeStumpBoost(n_estimators=10, learning_rate=0.7, random_state=0).fit(x, y)
    assert ours.fitted_by == "scikit-learn"
    theirs = AdaBoostClassifier(n_estimators=10, learning_rate=0.7, random_state=0).fit(x, y)
    np.testing.assert_array_equal(ours.predict(x), theirs.predict(x))


def test_a_broken_split_rule_is_caught():
    """The comparison can fail: a stump searched on every other feature only is not scikit-learn's."""
    rng = np.random.default_rng(2)
    x = (rng.integers(0, 8, size=(500, 10)) / 7).astype(np.float32)
    y = ((x[:, 1] + x[:, 3] > 1.0) ^ (rng.random(500) < 0.1)).astype(int)

    class EveryOtherFeature(SammeStumpBoost):
        def fit(self, x, y):
            return super().fit(x * np.array([1, 0] * 5, dtype=np.float32), y)

    found_ok = compare(x, y, x, y, rounds=30)
    assert found_ok["same_stumps"] and found_ok["agree"] == 1.0
    broken = EveryOtherFeature(n_estimators=30, learning_rate=0.7).fit(x, y)
    theirs = AdaBoostClassifier(n_estimators=30, learning_rate=0.7, random_state=0).fit(x, y)
    assert np.mean(broken.predict(x) == theirs.predict(x)) < 0.995


def test_images_are_scored_as_the_8bit_pixels_they_are_stored_as(mnist):
    from bench.core.data import LabelledData

    x = np.zeros((1, mnist.train.schema.n_features), dtype=np.float32)
    x[0, :6] = [0.5, 1.0, 0.0, 0.0019, 0.0020, 254.4 / 255]  # a generator's output lies in [0, 1]
    quantized = as_8bit_images(LabelledData(x, np.array([0]), mnist.train.schema))
    np.testing.assert_array_equal(quantized.x[0, :6] * 255, np.float32([128, 255, 0, 0, 1, 254]))
    assert quantized.x.dtype == np.float32


@pytest.mark.slow
def test_table_10s_thousand_rounds_on_real_and_generated_digits(mnist, generated):
    for x, y in ((mnist.train.x[:10_000], mnist.train.y[:10_000]), (generated.x[:10_000], generated.y[:10_000])):
        assert_same_classifier(compare(x, y, mnist.test.x, mnist.test.y, rounds=1000))


@pytest.mark.parametrize("n", [60, pytest.param(600, marks=pytest.mark.slow)])  # 600: ≈ 1 min
def test_histograms_of_the_splittable_columns_and_present_levels_are_the_full_search(mnist, monkeypatch, n):
    """effective-size trains on as few as 60 images, whose columns take few levels: the histograms
    keep only the splittable columns and the levels present. The same 1,000 rounds with every
    column at 256 levels give the same stumps and weights, bit for bit, ties included (at 60 images
    some rounds tie: the same random_state draws the same tied feature from the same candidates)."""
    from evaluators import stump_boost

    x, y = mnist.train.x[:n], mnist.train.y[:n]
    narrow = SammeStumpBoost(n_estimators=1000, learning_rate=0.7, random_state=0).fit(x, y)
    monkeypatch.setattr(
        stump_boost,
        "histogram_shape",
        lambda levels, boundaries: (np.arange(len(levels)), stump_boost.MAX_LEVELS),
    )
    full = SammeStumpBoost(n_estimators=1000, learning_rate=0.7, random_state=0).fit(x, y)
    assert narrow.stumps_ == full.stumps_
    assert np.array_equal(narrow.estimator_weights_, full.estimator_weights_)


def test_the_evaluation_cache_keys_a_stump_boost_fit_by_its_fit_version(monkeypatch):
    """A fit cached before a change that moves the boost's predictions is not read back after it;
    scikit-learn's estimators, which declare no version, keep the keys they had."""
    from sklearn.linear_model import LogisticRegression

    from evaluators.cache import content_key
    from evaluators.image_downstream import fit_key

    boost = SammeStumpBoost(n_estimators=1000, learning_rate=0.7, random_state=0)
    before = fit_key(boost, "data", None)
    monkeypatch.setattr(SammeStumpBoost, "fit_version", SammeStumpBoost.fit_version + 1)
    assert fit_key(boost, "data", None) != before
    logistic = LogisticRegression(max_iter=10)
    settings = repr(sorted((name, repr(value)) for name, value in logistic.get_params(deep=True).items()))
    assert fit_key(logistic, "data", None) == content_key(
        "data", "sklearn.linear_model._logistic", "LogisticRegression", settings, np.arange(0)
    )
