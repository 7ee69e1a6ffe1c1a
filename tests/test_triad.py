"""``table --layout privacy``: claimed ε, audited ε lower bound and the attack on the output, side by
side per dataset, ε and method (issue 30)."""

from __future__ import annotations

import math

import pytest

from bench.report.frame import TableError, runs_frame
from tests.conftest import cell_record, plain_cell
from bench.report.triad import render_triad, triad_rows


def record(method: str, epsilon: float, seed: int, auc: float, **metrics: float):
    values = {
        "privacy.mia_auc": auc,
        "privacy.mia_auc_low": auc - 0.05,
        "privacy.mia_auc_high": auc + 0.05,
        "privacy.dcr_share": 0.5,
        "downstream.roc_auc": 0.7,
        **metrics,
    }
    if math.isfinite(epsilon):
        values |= {"privacy.epsilon_spent": epsilon, "privacy.epsilon_independent": epsilon * 0.999}
    return cell_record(plain_cell(method, "cervical", epsilon, seed), values, f"{method}-{epsilon}-{seed}", seed)


def test_each_method_and_epsilon_gets_its_claim_audit_and_attack_side_by_side():
    frame = runs_frame(
        [
            record("dp-merf", 1.0, 0, 0.50),
            record("dp-merf", 1.0, 1, 0.52),
            record("real", math.inf, 0, 0.97),
        ]
    )
    header, rows = triad_rows(frame, {("dp-merf", "cervical", 1.0): 0.31})
    by_method = {row[2]: dict(zip(header, row)) for row in rows}
    merf, real = by_method["dp-merf"], by_method["real"]
    assert merf["ledger ε"] == "1.00 (2)" and merf["audited ε ≥"] == "0.310"  # one claim, every seed alike
    assert merf["attack AUC [95% CI]"] == "0.510 ± 0.0141 (2)◦ [0.450, 0.570]"
    assert real["ledger ε"] == "∞ (non-private)" and real["audited ε ≥"] == "not audited"
    assert real["utility"].startswith("roc_auc 0.700")
    assert "claimed ε (ledger)" in render_triad(frame, "md", audits={})


def test_the_shadow_model_attack_gets_a_column_only_where_runs_have_it():
    plain = [record("dp-merf", 1.0, 0, 0.50), record("real", math.inf, 0, 0.97)]
    header, _ = triad_rows(runs_frame(plain), {})
    assert "shadow-model AUC [95% CI]" not in header
    shadow = {"shadow-mia.shadow_auc": 0.6, "shadow-mia.shadow_auc_low": 0.5, "shadow-mia.shadow_auc_high": 0.7}
    header, rows = triad_rows(runs_frame([record("dp-merf", 1.0, 0, 0.50, **shadow), plain[1]]), {})
    by_method = {row[2]: dict(zip(header, row)) for row in rows}
    assert by_method["dp-merf"]["shadow-model AUC [95% CI]"] == "0.600 (1)◦ [0.500, 0.700]"
    assert by_method["real"]["shadow-model AUC [95% CI]"] == "—"


def test_the_dcr_share_shows_the_spread_of_its_draws_where_runs_logged_it():
    old = [record("dp-merf", 1.0, 0, 0.50), record("dp-merf", 1.0, 1, 0.52)]  # one draw each, before issue 61
    header, rows = triad_rows(runs_frame(old), {})
    assert dict(zip(header, rows[0]))["DCR share"] == "0.500 (2 equal)◦"
    new = [record("dp-merf", 1.0, s, 0.50, **{"privacy.dcr_share_sd": sd}) for s, sd in ((0, 0.08), (1, 0.10))]
    header, rows = triad_rows(runs_frame(new), {})
    assert dict(zip(header, rows[0]))["DCR share"] == "0.500 (2 equal)◦ (draw sd 0.0900)"


def test_runs_without_the_privacy_evaluator_say_how_to_add_it():
    frame = runs_frame([cell_record(plain_cell(), {"downstream.roc_auc": 0.8})])
    with pytest.raises(TableError, match="python -m bench evaluate --evaluators privacy,fidelity"):
        triad_rows(frame, {})


def test_the_privacy_utility_section_of_the_report_shows_the_triad_once_its_runs_are_scored(tmp_path):
    from bench.report.presets import PRESETS
    from bench.report.figures import triad_blocks
    from bench.report.source import RecordSource

    (tmp_path / "none").mkdir()
    source = RecordSource(tmp_path)
    preset = PRESETS["privacy-utility"]
    scored = runs_frame([record("dp-merf", 1.0, seed, 0.5 + seed / 100) for seed in range(3)])
    blocks = triad_blocks(preset, scored, source)
    assert [b.kind for b in blocks] == ["p", "table"] and blocks[1].rows[0][2] == "dp-merf"
    unscored = runs_frame([cell_record(plain_cell(), {"downstream.roc_auc": 0.8})])
    assert triad_blocks(preset, unscored, source) == []  # nothing to show, nothing claimed
    assert triad_blocks(PRESETS["dphp-table2"], scored, source) == []  # only where the preset asks for it


def test_an_audit_logged_by_bench_audit_is_found_by_its_target_epsilon(tmp_path, monkeypatch):
    """The triad keys an audit by (method, dataset, ε) read from its typed metric, the ε it was
    asked at, not from a string param; a DP-SGD step audit's qualified names are its method's."""
    from bench.cli import main
    from bench.harness.auditing import log_audit
    from bench.privacy.audit import AuditResult
    from bench.report.source import MlflowSource
    from bench.report.triad import audit_bounds

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    for bound, method in ((0.4, "dp-gan (DP-SGD step)"), (0.7, "dp-gan (DP-SGD step)"), (0.2, "mst")):
        result = AuditResult(method, "cervical (first 100 rows)", 50, 3.9, 1e-5, bound, 1.0, None, 1.0, ("r",))
        log_audit(result, "audit", {"epsilon": 4.0, "delta": 1e-5, "runs": 50})
    assert audit_bounds(source=MlflowSource()) == {("dp-gan", "cervical", 4.0): 0.7, ("mst", "cervical", 4.0): 0.2}
    # exported to a record folder, each audit names its code and is read back alike (REPORT's triad)
    from bench.harness.record import load_records
    from bench.report.source import RecordSource

    monkeypatch.chdir(tmp_path)
    assert main(["export", "--experiment", "audit", "--out", str(tmp_path / "runs"), "--allow-dirty"]) == 0
    records = load_records(tmp_path / "runs")
    assert len(records) == 3 and all(r.kind == "audit" and len(r.code.commit) == 40 for r in records)
    assert all(
        path.name.startswith("audit_") and "audit_audit" not in path.name
        for path in (tmp_path / "runs" / "audit").iterdir()
    )
    assert audit_bounds(source=RecordSource(tmp_path / "runs")) == audit_bounds(source=MlflowSource())


def test_an_audit_whose_runs_could_not_exceed_its_claim_is_shown_as_inconclusive(tmp_path, monkeypatch):
    """20 runs a side can bound ε at most at ≈ 0.60: a bound of 0 under a claim of 1 is no evidence,
    and the triad says so (an audit logged before its attainable bound was a metric: computed
    from its runs and δ); 100 runs a side could have shown 2.4, so their 0 is shown as it is."""
    from bench.harness.auditing import log_audit
    from bench.privacy.audit import AuditResult
    from bench.report.source import MlflowSource
    from bench.report.triad import audit_bounds

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    for runs, method in ((20, "small"), (100, "large")):
        result = AuditResult(method, "adult-discrete", runs, 1.0, 1e-5, 0.0, float("nan"), None, 1.0, ("r",))
        log_audit(result, "audit", {"epsilon": 1.0, "delta": 1e-5, "runs": runs})
    bounds = audit_bounds(source=MlflowSource())
    assert bounds[("small", "adult-discrete", 1.0)].text() == "0 (inconclusive: its runs could show at most 0.598)"
    assert bounds[("large", "adult-discrete", 1.0)].text() == "0"
