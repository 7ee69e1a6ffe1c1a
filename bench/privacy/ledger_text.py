"""A ledger as text (``python -m bench show``), from ``PrivacyLedger.to_dict`` or its JSON."""

from __future__ import annotations

from typing import Any


def _format_release(r: dict[str, Any]) -> str:
    if r.get("kind") == "claimed":
        return (
            f"  - {r['what']}: CLAIMED by {r['library']}, ε = {r['epsilon']:.6g}, δ = {r['delta']:g} "
            f"(the library's own accounting, not independently verified; relation: {r['neighbouring']})"
        )
    if r.get("kind") == "pure":
        return (
            f"  - {r['what']}: {r['mechanism']} mechanism, ε₀ = {r['epsilon']:.6g} each, "
            f"sensitivity {r['sensitivity']:.4g}, ×{r['compositions']}, {r['neighbouring']}"
        )
    return (
        f"  - {r['what']}: {r['mechanism']}, L2 sensitivity {r['sensitivity']:.4g}, "
        f"σ = {r['noise_multiplier']:.6g} (noise std {r['noise_std']:.4g}), "
        f"×{r['compositions']}"
        + (
            f", Poisson sampling rate {r['sampling_rate']:.4g} (Opacus noise multiplier {r['opacus_noise_multiplier']:.4g})"
            if r.get("sampling_rate", 1.0) < 1
            else ""
        )
        + f", {r['neighbouring']}"
    )


def format_ledger(ledger: dict[str, Any]) -> str:
    """Human-readable ledger (from ``PrivacyLedger.to_dict`` or its JSON artifact)."""
    target, spent = ledger["target"], ledger["spent"]
    lines = [
        f"target      ε = {target['epsilon']:g}, δ = {target['delta']:g}  ({ledger['neighbouring']})",
        f"spent       ε = {spent['epsilon']:.6g}, δ = {spent['delta']:g}",
        f"calibrator  {ledger['calibrator']}",
        f"accountant  {ledger['accountant']}",
    ]
    independent = ledger.get("independent")
    if independent:
        lines.append(f"independent ε = {independent['epsilon']:.6g} ({independent['method']})")
    if ledger.get("noise"):
        lines.append(f"noise       {ledger['noise']}")
    if ledger.get("zcdp_rho") is not None:
        lines.append(f"zCDP ρ      {ledger['zcdp_rho']:.6g}")
    lines.append(f"releases ({len(ledger['releases'])}):")
    lines.extend(_format_release(r) for r in ledger["releases"])
    lines.append(f"public facts used without charge ({len(ledger['public_facts'])}):")
    for f in ledger["public_facts"]:
        lines.append(f"  - {f['name']} = {f['value']}: {f['why']}")
    for caveat in ledger.get("caveats", []):
        lines.append(f"CAVEAT: {caveat}")
    for why in ledger.get("trusted_reads", []):
        lines.append(f"RAW ROWS READ outside the metered queries: {why}")
    return "\n".join(lines)
