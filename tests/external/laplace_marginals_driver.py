"""A small outside generator for the tests of ``bench.api.external``: standard library only, so its
environment is a bare virtual environment (no pip install). It releases every column's histogram
with Laplace noise and samples the columns independently.

Each of the d + 1 columns' histograms (the label's included) moves by 2 in L1 when one row is
replaced, so noise of scale 2(d + 1)/ε on every count is ε-DP by basic composition; the claim says
so. ``LEAK_FACTOR`` (a setting) divides that scale: a deliberately broken generator whose claim is
false, for the black-box audit's tests. ``FAIL`` (a setting) makes the fit fail with a message.
"""

from __future__ import annotations

import csv
import json
import random
import sys
from pathlib import Path


def fit(folder: Path) -> None:
    request = json.loads((folder / "request.json").read_text())
    settings = request["settings"]
    if settings.get("fail"):
        raise SystemExit(f"deliberate failure: {settings['fail']}")
    columns = request["columns"]
    if any(c["kind"] != "categorical" for c in columns):
        raise SystemExit("this test driver takes coded columns only")
    with open(folder / "train.csv", newline="") as source:
        reader = csv.reader(source)
        names = next(reader)
        rows = [[int(v) for v in row] for row in reader]
    rng = random.Random(request["seed"])
    scale = 2 * len(columns) / request["epsilon"] / float(settings.get("leak_factor", 1.0))
    model = {"names": names, "probabilities": []}
    for j, column in enumerate(columns):
        counts = [0.0] * column["categories"]
        for row in rows:
            counts[row[j]] += 1
        noisy = [max(c + rng.expovariate(1 / scale) - rng.expovariate(1 / scale), 0.0) for c in counts]
        total = sum(noisy) or 1.0
        model["probabilities"].append([c / total if sum(noisy) else 1 / len(noisy) for c in noisy])
    (folder / "model.json").write_text(json.dumps(model))
    claim = {"library": "test-laplace-driver 0", "epsilon": request["epsilon"], "delta": 0.0, "what": "histograms"}
    (folder / "claim.json").write_text(json.dumps(claim))


def sample(n: int, seed: int, folder: Path) -> None:
    model = json.loads((folder / "model.json").read_text())
    rng = random.Random(seed)
    columns = [rng.choices(range(len(p)), weights=p, k=n) for p in model["probabilities"]]
    with open(folder / f"sample-{n}.csv", "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(model["names"])
        writer.writerows(zip(*columns))


if __name__ == "__main__":
    command, *rest = sys.argv[1:]
    if command == "fit":
        fit(Path(rest[0]))
    else:
        sample(int(rest[0]), int(rest[1]), Path(rest[2]))
