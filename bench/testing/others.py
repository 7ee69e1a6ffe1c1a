"""``check_dataset`` and ``check_evaluator``: the kits of the other two plugin kinds."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np

from bench.core.data import DataError, DataKind, LabelledData
from bench.api.contracts import dataset_problems, evaluator_problems
from bench.api.registry import DATASETS
from bench.testing.kit import TEST_DATASETS, ConformanceError, ConformanceReport, head_rows
from bench.testing.neighbours import column_codes, same_rows


# ---- datasets and evaluators ----------------------------------------------------------------------------


def check_dataset(
    dataset: Any, *, data_dir: str | Path | None = None, seeds: tuple[int, int] = (0, 1)
) -> ConformanceReport:
    """Named checks of a dataset: ``declaration``; ``deterministic_split`` (a seed's split is the
    same on every load); ``public_size`` (the row counts do not depend on the seed: under
    replace-one the size is public; a random subsample's count must be stated as a caveat); ``schema`` (both splits carry the declared schema);
    ``public_domain`` (category codes are integers inside their public lists, binary values 0/1,
    labels inside the classes); ``protocols`` (the ``paper`` protocol loads too, stating its
    caveats when it differs)."""
    problems = dataset_problems(dataset)
    if problems:
        raise ConformanceError(f"{getattr(dataset, 'name', dataset)!r}: [declaration] " + "; ".join(problems))
    report, failures = ConformanceReport(), []
    folder = Path(data_dir) if data_dir else None
    first, again, other = (dataset.load(folder, seed, "sound") for seed in (seeds[0], seeds[0], seeds[1]))
    results = {
        "deterministic_split": []
        if all(same_rows(a, b) for a, b in ((first.train, again.train), (first.test, again.test)))
        else ["the same seed gave another split (draw the split from the seed)"],
        "public_size": []
        if (len(first.train), len(first.test)) == (len(other.train), len(other.test))
        or any("row count" in caveat for caveat in first.caveats)
        else [
            f"seed {seeds[0]} gives {len(first.train)}/{len(first.test)} rows, seed {seeds[1]} "
            f"{len(other.train)}/{len(other.test)}: a size that depends on the draw depends on the private rows; "
            "make it fixed or state the uncharged row count as a caveat of the split"
        ],
        "schema": []
        if first.train.schema == first.test.schema == dataset.schema
        else ["the splits' schema is not the dataset's declared schema"],
        "public_domain": _domain_problems(first.train) + _domain_problems(first.test),
    }
    try:
        paper = dataset.load(folder, seeds[0], "paper")
        results["protocols"] = (
            []
            if paper.train.schema.columns == dataset.schema.columns or paper.caveats
            else ["the paper protocol changes the columns without a caveat saying so"]
        )
    except Exception as error:  # noqa: BLE001 - reported as the check's failure
        results["protocols"] = [f"loading under the paper protocol raised {type(error).__name__}: {error}"]
    for check, found in results.items():
        failures += [f"[{check}] {p}" for p in found]
        if not found:
            report.checks.setdefault(dataset.name, []).append(check)
    if failures:
        raise ConformanceError(f"{dataset.name!r} fails conformance: " + "; ".join(failures))
    report.passed.append(dataset.name)
    return report


def _domain_problems(data: LabelledData) -> list[str]:
    problems = []
    for j, column in enumerate(data.schema.columns):
        codes = column_codes(data, j)
        values = data.x[:, j]
        if codes is not None and (
            not np.array_equal(values, np.round(values)) or values.min() < 0 or values.max() >= codes
        ):
            problems.append(f"column {column.name!r} holds values outside its {codes} public codes")
    if len(data.y) and not 0 <= data.y.min() <= data.y.max() < data.schema.n_classes:
        problems.append("labels outside the declared classes")
    return problems[:3]


def check_evaluator(
    evaluator: Any,
    *,
    data_dir: str | Path | None = None,
    datasets: Mapping[DataKind, str] | None = None,
    rows: int = 500,
) -> ConformanceReport:
    """Named checks of an evaluator, on the first ``rows`` rows of a test dataset of each kind it
    supports (the real training rows standing in for synthetic ones): ``declaration``;
    ``declared_metrics`` (every returned metric is declared, as ``name`` or ``group.name``, a
    number, and at least one is returned); ``stateless`` (a second evaluation gives the same
    quality metrics: nothing carried between cells); ``settings`` (an evaluator's ``--eval-set``
    settings, if any, apply)."""
    from bench.api.contracts import EvalContext, MetricKind
    from bench.harness.grid import configured, settable_fields

    problems = evaluator_problems(evaluator)
    if problems:
        raise ConformanceError(f"{getattr(evaluator, 'name', evaluator)!r}: [declaration] " + "; ".join(problems))
    report, failures = ConformanceReport(), []
    for kind in sorted(evaluator.data_kinds, key=lambda k: k.value):
        name = (datasets or TEST_DATASETS).get(kind)
        if name is None:
            report.skipped.append(f"{kind.value}: no test dataset")
            continue
        try:
            split = head_rows(DATASETS.get(name).load(Path(data_dir) if data_dir else None, 0), rows)
        except DataError as error:
            report.skipped.append(f"{kind.value} ({name}): {error}")
            continue
        if not evaluator.applies_to(split.train.schema):
            report.skipped.append(f"{kind.value} ({name}): does not apply")
            continue
        context = EvalContext(seed=0, data_dir=Path(data_dir) if data_dir else None, shadow_fit=_copying_shadow_fit)
        first, second = (evaluator.evaluate(split.train, split.train, split.test, context) for _ in range(2))
        undeclared = sorted(m for m in first.metrics if m.rsplit(".", 1)[-1] not in evaluator.metrics)
        quality = {
            m
            for m in first.metrics
            if evaluator.metrics.get(m.rsplit(".", 1)[-1], None) is not None
            and evaluator.metrics[m.rsplit(".", 1)[-1]].kind == MetricKind.QUALITY
        }
        found = {
            "declared_metrics": ([f"returned undeclared metrics {undeclared[:5]}"] if undeclared else [])
            + ([] if first.metrics else ["returned no metric"])
            + [
                f"{m} is not a number"
                for m in first.metrics
                if not isinstance(first.metrics[m], (int, float, np.floating))
            ][:3],
            "stateless": [
                f"{m}: {first.metrics[m]} then {second.metrics.get(m)}"
                for m in sorted(quality)
                if not np.isclose(first.metrics[m], second.metrics.get(m, np.nan), equal_nan=True)
            ][:3],
            "settings": _settings_problems(evaluator, settable_fields, configured),
        }
        for check, listed in found.items():
            failures += [f"[{check}] {name}: {p}" for p in listed]
            if not listed:
                report.checks.setdefault(name, []).append(check)
        if not any(p.split("] ", 1)[1].startswith(f"{name}:") for p in failures):
            report.passed.append(name)
    if failures:
        raise ConformanceError(f"{evaluator.name!r} fails conformance: " + "; ".join(failures))
    if not report.passed:
        raise ConformanceError(f"{evaluator.name!r}: no test dataset could be evaluated: {'; '.join(report.skipped)}")
    return report


def _copying_shadow_fit(rows: Any, seed: int, n: int) -> Any:
    """``EvalContext.shadow_fit`` of a method that returns its training rows (``real``), ``n`` of
    them, cycling: the kit's stand-in for a run's method."""
    index = np.resize(np.arange(len(rows)), n)
    return type(rows)(rows.x[index], rows.y[index], rows.schema)


def _settings_problems(evaluator: Any, settable_fields, configured) -> list[str]:
    try:
        current = settable_fields(evaluator)
        return [] if configured(evaluator, current).name == evaluator.name else ["its settings changed its name"]
    except Exception as error:  # noqa: BLE001 - reported as the check's failure
        return [f"applying its own settings raised {type(error).__name__}: {error}"]
