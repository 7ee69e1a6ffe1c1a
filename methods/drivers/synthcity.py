"""The driver of synthcity's DP generators, run by ``bench.api.external`` with the Python of the
synthcity environment (it imports neither bench nor this project's packages).

    python synthcity.py fit FOLDER              # request.json + train.csv → model file + claim.json
    python synthcity.py sample N SEED FOLDER    # model file → sample-N.csv

Nothing is inferred from the rows: every domain, category and bound comes from the request's
public schema, and no ε is spent on preprocessing.

- ``aim``: synthcity's AIM mechanism (``synthcity.plugins.core.models.aim.AIM``) runs once, in the
  fit, on an mbi ``Domain`` of the public category counts (a numerical column: ``bins`` equal-width
  bins of its public range), with the plugin's workload (every ``degree``-way marginal of at most
  ``max_cells`` cells); only the table it releases is kept (``model.csv``), and a sample draws rows
  from it uniformly with replacement — post-processing. The plugin instead builds its domain from
  the rows (``nunique``) and reruns the mechanism on the kept rows at every ``generate``.
- ``dpgan``: the plugin's own model (``DPGANPlugin._fit``: its TabularGAN with opacus), skipping
  ``Plugin.fit``'s relabelling of the codes by the values present and its schema of the rows, with
  a ``TabularEncoder`` fitted on a public frame (one-hot of every public code, min-max of the
  public range), a sampler that shuffles all rows every epoch (the plugin's default draws rows by
  their category frequencies from 80 % of them), and no early stopping (the plugin's default scores
  a detection MLP on the other 20 %, outside the DP accounting). Only the generator and the
  encoder are kept (``model.pkl``); the discriminator, which may hold activations of real rows, is
  dropped.
"""

from __future__ import annotations

import itertools
import json
import random
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

# run as a script, this file's folder comes first on sys.path, where "synthcity" names this file
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]


def _seed(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    import torch

    torch.manual_seed(seed)


def _public_frame(columns: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows that enumerate every column's public domain (codes 0 … k−1; a numerical column's bounds)."""
    size = max(2, *(c.get("categories", 2) for c in columns))
    data: dict[str, Any] = {}
    for column in columns:
        if column["kind"] == "numerical":
            data[column["name"]] = np.linspace(column["lower"], column["upper"], size)
        else:
            data[column["name"]] = np.arange(size) % column["categories"]
    return pd.DataFrame(data)


def _to_bins(values: pd.Series, column: dict[str, Any], bins: int) -> np.ndarray:
    lower, upper = column["lower"], column["upper"]
    scaled = (values.to_numpy(dtype=float) - lower) / max(upper - lower, 1e-12) * bins
    return np.clip(np.floor(scaled), 0, bins - 1).astype(np.int64)


def _from_bins(codes: np.ndarray, column: dict[str, Any], bins: int, rng: np.random.Generator) -> np.ndarray:
    width = (column["upper"] - column["lower"]) / bins
    return column["lower"] + (codes + rng.uniform(size=len(codes))) * width


def fit_aim(request: dict[str, Any], train: pd.DataFrame, folder: Path) -> float:
    from synthcity.plugins.core.models.aim import AIM
    from synthcity.plugins.core.models.mbi.dataset import Dataset
    from synthcity.plugins.core.models.mbi.domain import Domain

    columns, settings = request["columns"], request["settings"]
    bins = int(settings["bins"])
    codes = pd.DataFrame(
        {
            c["name"]: _to_bins(train[c["name"]], c, bins) if c["kind"] == "numerical" else train[c["name"]]
            for c in columns
        }
    )
    domain = Domain([c["name"] for c in columns], [c.get("categories", bins) for c in columns])
    cliques = itertools.combinations(domain.attrs, int(settings["degree"]))
    workload = [(clique, 1.0) for clique in cliques if domain.size(clique) <= int(settings["max_cells"])]
    if not workload:
        raise SystemExit(f"no {settings['degree']}-way marginal has at most {settings['max_cells']} cells")
    rounds = int(settings["rounds_per_column"]) * len(columns)
    if rounds < len(columns):  # AIM first measures every column at the noise it plans for one round: 0.9 ρ / rounds
        raise SystemExit("AIM needs at least one round per column: with fewer its one-way measurements overspend ρ")
    mechanism = AIM(request["epsilon"], request["delta"], rounds=rounds, max_model_size=int(settings["max_model_size"]))
    released = mechanism.run(Dataset(codes, domain), workload).df
    if released.empty:
        raise SystemExit("AIM released an empty table (its noisy total rounded to no rows)")
    released.to_csv(folder / "model.csv", index=False)
    return request["delta"]


def fit_dpgan(request: dict[str, Any], train: pd.DataFrame, folder: Path) -> float:
    import cloudpickle
    import torch
    from synthcity.plugins import Plugins
    from synthcity.plugins.core.dataloader import GenericDataLoader
    from synthcity.plugins.core.models.tabular_encoder import TabularEncoder
    from synthcity.utils.samplers import BaseSampler

    class Shuffled(BaseSampler):
        """Every row once an epoch, in a fresh random order; no conditional vectors."""

        def __init__(self, n: int) -> None:
            self.n = n

        def __iter__(self):
            return iter(torch.randperm(self.n).tolist())

        def __len__(self) -> int:
            return self.n

    columns, settings = request["columns"], request["settings"]
    coded = [c["name"] for c in columns if c["kind"] != "numerical"]
    encoder = TabularEncoder(continuous_encoder="minmax", cont_encoder_params={})
    encoder.fit(_public_frame(columns)[train.columns], discrete_columns=coded)
    plugin = Plugins().get(
        "dpgan",
        epsilon=request["epsilon"],
        delta=request["delta"],
        n_iter=int(settings["n_iter"]),
        batch_size=int(settings["batch_size"]),
        lr=float(settings["lr"]),
        dp_max_grad_norm=float(settings["dp_max_grad_norm"]),
        random_state=int(request["seed"]),
        encoder=encoder,
        dataloader_sampler=Shuffled(len(train)),
        workspace=folder / "workspace",
    )
    plugin.patience_metric = None  # no early stopping on held-out private rows
    plugin._fit(GenericDataLoader(train))
    model = plugin.model  # the TabularGAN
    model.model.discriminator = None
    model.dataloader_sampler = model.model.dataloader_sampler = BaseSampler()
    with open(folder / "model.pkl", "wb") as out:
        cloudpickle.dump(model, out)
    return float(model.model.dp_delta)


FIT = {"aim": fit_aim, "dpgan": fit_dpgan}


def fit(folder: Path) -> None:
    request = json.loads((folder / "request.json").read_text())
    name = request["synthesizer"]
    if name not in FIT:
        raise SystemExit(f"unknown synthcity generator {name!r}: {', '.join(FIT)}")
    if not request["delta"] > 0:
        raise SystemExit(f"synthcity's {name} needs δ > 0: AIM converts ρ-zCDP to (ε, δ), opacus accounts (ε, δ)")
    _seed(int(request["seed"]))
    train = pd.read_csv(folder / "train.csv")
    delta = FIT[name](request, train, folder)
    library = f"synthcity {version('synthcity')}"
    claim = {
        "library": library,
        "epsilon": request["epsilon"],
        "delta": delta,
        "what": f"{library} {name}: the whole fit, as its own accounting claims it (preprocessing: 0, every "
        f"domain, category and bound public)",
    }
    (folder / "claim.json").write_text(json.dumps(claim, indent=1))


def sample(n: int, seed: int, folder: Path) -> None:
    request = json.loads((folder / "request.json").read_text())
    columns = request["columns"]
    names = [c["name"] for c in columns]
    _seed(seed)
    rng = np.random.default_rng(seed)
    if request["synthesizer"] == "aim":
        released = pd.read_csv(folder / "model.csv")
        frame = released.iloc[rng.integers(0, len(released), n)].reset_index(drop=True)
        bins = int(request["settings"]["bins"])
        for c in columns:
            if c["kind"] == "numerical":
                frame[c["name"]] = _from_bins(frame[c["name"]].to_numpy(), c, bins, rng)
    else:
        import cloudpickle

        with open(folder / "model.pkl", "rb") as source:
            model = cloudpickle.load(source)
        frame = model.generate(n)
    frame = frame[names].copy()
    for c in columns:
        if c["kind"] == "numerical":
            frame[c["name"]] = frame[c["name"]].astype(float).clip(c["lower"], c["upper"])
        else:
            frame[c["name"]] = frame[c["name"]].round().astype(int).clip(0, c["categories"] - 1)
    frame.to_csv(folder / f"sample-{n}.csv", index=False)


if __name__ == "__main__":
    command, *rest = sys.argv[1:]
    if command == "fit":
        fit(Path(rest[0]))
    elif command == "sample":
        sample(int(rest[0]), int(rest[1]), Path(rest[2]))
    else:
        raise SystemExit(f"unknown command {command!r}: fit or sample")
