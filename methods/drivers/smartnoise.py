"""The driver of smartnoise-synth's synthesizers, run by ``bench.api.external`` with the Python of
the smartnoise-synth environment (it imports neither torch nor bench unless the library does).

    python smartnoise.py fit FOLDER              # request.json + train.csv → model.pkl + claim.json
    python smartnoise.py sample N SEED FOLDER    # model.pkl → sample-N.csv

Every column's transformer is built from the request's public schema and fitted on a public
frame that enumerates the domain (codes 0 … k−1; a numerical column's public bounds), so the
library spends no ε on preprocessing and infers nothing from the rows (its ``preprocessor_eps``
is 0, and a transformer that still wanted ε would stop the fit). Cube-style synthesizers (MST,
AIM, MWEM, PAC-Synth) see numerical columns in ``bins`` equal-width bins of the public range;
GAN-style ones (DP-CTGAN, PATE-CTGAN, DP-GAN, PATE-GAN) min-max scaled to it, categorical columns
one-hot.
"""

from __future__ import annotations

import importlib
import inspect
import json
import random
import sys
from importlib.metadata import version
from pathlib import Path

import dill  # pickles what pickle cannot (MST's lambdas)
import numpy as np
import pandas as pd

CUBE = {"mst", "aim", "mwem", "pacsynth"}


def _transformer(columns: list[dict], cube: bool, bins: int):
    from snsynth.transform import TableTransformer
    from snsynth.transform.bin import BinTransformer
    from snsynth.transform.chain import ChainTransformer
    from snsynth.transform.label import LabelTransformer
    from snsynth.transform.minmax import MinMaxTransformer
    from snsynth.transform.onehot import OneHotEncoder

    parts = []
    for column in columns:
        if column["kind"] == "numerical":
            lower, upper = column["lower"], column["upper"]
            parts.append(
                BinTransformer(lower=lower, upper=upper, bins=bins, nullable=False)
                if cube
                else MinMaxTransformer(lower=lower, upper=upper, nullable=False)
            )
        elif cube:
            parts.append(LabelTransformer(nullable=False))
        else:
            parts.append(ChainTransformer([LabelTransformer(nullable=False), OneHotEncoder()]))
    return TableTransformer(parts)


def _public_frame(columns: list[dict]) -> pd.DataFrame:
    """Rows that enumerate every column's public domain: what the transformers are fitted on."""
    size = max(2, *(c.get("categories", 2) for c in columns))
    data = {}
    for column in columns:
        if column["kind"] == "numerical":
            data[column["name"]] = np.linspace(column["lower"], column["upper"], size)
        else:
            data[column["name"]] = np.arange(size) % column["categories"]
    return pd.DataFrame(data)


def _synthesizer_class(name: str) -> type:
    """The class ``Synthesizer.create(name)`` makes (its ``synth_map``, as ``create`` reads it)."""
    from snsynth.base import synth_map

    module, attribute = synth_map[name]["class"].rsplit(".", 1)
    return getattr(importlib.import_module(module), attribute)


def _seed(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    try:
        import torch

        torch.manual_seed(seed)
    except ImportError:
        pass


def fit(folder: Path) -> None:
    from snsynth import Synthesizer

    request = json.loads((folder / "request.json").read_text())
    columns, settings = request["columns"], dict(request["settings"])
    name = request["synthesizer"]
    cube = name in CUBE
    bins = int(settings.pop("bins", 10))
    _seed(int(request["seed"]))
    train = pd.read_csv(folder / "train.csv")
    coded = [c["name"] for c in columns if c["kind"] != "numerical"]
    train[coded] = train[coded].astype(int)
    transformer = _transformer(columns, cube, bins)
    transformer.fit(_public_frame(columns)[train.columns])
    # a pure ε-DP synthesizer (MWEM) takes no δ, and claims none
    delta = request["delta"] if "delta" in inspect.signature(_synthesizer_class(name)).parameters else 0.0
    synthesizer = Synthesizer.create(
        name, epsilon=request["epsilon"], **({"delta": delta} if delta else {}), **settings
    )
    synthesizer.fit(train, transformer=transformer, preprocessor_eps=0.0)
    with open(folder / "model.pkl", "wb") as out:
        dill.dump({"synthesizer": synthesizer, "columns": list(train.columns), "coded": coded}, out)
    library = f"smartnoise-synth {version('smartnoise-synth')}"
    claim = {
        "library": library,
        "epsilon": request["epsilon"],
        "delta": delta,
        "what": f"{library} {name}: the whole fit, as its own accounting claims it (preprocessing: 0, every "
        f"bound and category public)",
    }
    (folder / "claim.json").write_text(json.dumps(claim, indent=1))


def sample(n: int, seed: int, folder: Path) -> None:
    with open(folder / "model.pkl", "rb") as source:
        model = dill.load(source)
    _seed(seed)
    rows = model["synthesizer"].sample(n)
    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows), columns=model["columns"])
    frame = frame[model["columns"]]
    frame[model["coded"]] = frame[model["coded"]].round().astype(int)
    frame.to_csv(folder / f"sample-{n}.csv", index=False)


if __name__ == "__main__":
    command, *rest = sys.argv[1:]
    if command == "fit":
        fit(Path(rest[0]))
    elif command == "sample":
        sample(int(rest[0]), int(rest[1]), Path(rest[2]))
    else:
        raise SystemExit(f"unknown command {command!r}: fit or sample")
