"""``prdc``: precision, recall, density and coverage of synthetic images (higher is better).

Fidelity and diversity measured separately, where FID folds them into one number:

* precision / recall — Kynkäänniemi et al. 2019 (arXiv:1904.06991): the share of synthetic
  images inside the k-nearest-neighbour balls of the real images, and of real images inside the
  balls of the synthetic ones;
* density / coverage — Naeem et al. 2020 (arXiv:2002.09797), which they show to be robust to
  outliers: how many real balls contain each synthetic image (divided by k; it can exceed 1),
  and the share of real images whose ball contains at least one synthetic image.

Computed by the ``prdc`` package (Naeem et al.'s reference implementation) with their default
k = 5, on the same features as ``fid`` (pytorch-fid's Inception-v3 pool3, the offline weights,
``evaluators.fid``), so it needs no other network. Both sets have ``n_samples`` images (Naeem
et al. use 10,000; 5,000 here, as FID, to bound the k-NN cost on a CPU), a seeded subset of each;
the reference is the real test split under ``--protocol sound`` and the training split under
``--protocol paper``, as for FID. The real features are cached by content key
(``evaluators.cache``; they are computed from private images: keep the cache private).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from bench.core.data import DataKind, LabelledData, Schema, check_same_schema
from bench.api.contracts import Direction, EvalContext, Evaluation, MetricSpec
from bench.core.images import as_images, image_shape, is_image_schema
from evaluators.cache import cached_arrays, content_key
from evaluators.fid import (
    PREPROCESSING_VERSION,
    FrechetInceptionDistance,
    available_cores,
    feature_batches,
    subset_index,
    torch_threads,
)

NEAREST_K = 5  # Naeem et al. 2020, Sec. 4: k = 5 throughout


def features_of(
    images: np.ndarray, network, batch_size: int, device: str, progress=lambda done, total: None
) -> np.ndarray:
    return torch.cat([f.float().cpu() for f in feature_batches(images, network, batch_size, device, progress)]).numpy()


@dataclass(frozen=True)
class PrecisionRecallDensityCoverage:
    name: str = "prdc"
    description: str = (
        "precision/recall (Kynkäänniemi et al. 2019) and density/coverage (Naeem et al. 2020), k = 5, on "
        "FID's Inception pool3 features: fidelity and diversity separately; higher is better"
    )
    data_kinds: frozenset[DataKind] = frozenset({DataKind.IMAGE})
    metrics: Mapping[str, MetricSpec] = field(
        default_factory=lambda: {
            "precision": MetricSpec.quality(Direction.HIGHER, "share of synthetic images inside the real k-NN balls"),
            "recall": MetricSpec.quality(Direction.HIGHER, "share of real images inside the synthetic k-NN balls"),
            "density": MetricSpec.quality(
                Direction.HIGHER, "mean count of real k-NN balls holding a synthetic image, / k"
            ),
            "coverage": MetricSpec.quality(Direction.HIGHER, "share of real k-NN balls holding a synthetic image"),
            "n_samples": MetricSpec.diagnostic("images per set"),
        }
    )
    n_samples: int = 5_000
    nearest_k: int = NEAREST_K
    reference: str | None = None  # "train" or "test"; None: the protocol's, as fid
    batch_size: int = 50
    threads: int | None = None  # CPU torch threads while extracting features; None: every available core
    weights: str | None = None
    seed: int = 0
    run_by_default: bool = False  # a second pass over the synthetic images: run when --evaluators names it
    profiles: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: {"smoke": {"n_samples": 500}})

    def applies_to(self, schema: Schema) -> bool:
        return is_image_schema(schema) and image_shape(schema)[0] in (1, 3)

    def evaluate(
        self, synthetic: LabelledData, real_train: LabelledData, real_test: LabelledData, context: EvalContext
    ) -> Evaluation:
        import prdc

        fid = FrechetInceptionDistance(reference=self.reference, batch_size=self.batch_size, weights=self.weights)
        reference = real_train if fid.reference_split(context.protocol) == "train" else real_test
        if not self.applies_to(reference.schema):
            raise ValueError("prdc scores image data (a schema with a 1- or 3-channel image_shape) only")
        check_same_schema(synthetic, reference)
        n = min(self.n_samples, len(synthetic), len(reference))
        if n <= self.nearest_k:
            raise ValueError(f"prdc needs more than k = {self.nearest_k} images per set, got {n}")
        network, weights_sha256, device = fid.network(context)
        real_index = subset_index(len(reference), n, np.random.default_rng([self.seed, 4]))
        real_images = as_images(reference.x[real_index], reference.schema)
        synthetic_images = as_images(
            synthetic.x[subset_index(len(synthetic), n, np.random.default_rng([self.seed, 3]))], synthetic.schema
        )
        with torch_threads(self.threads or available_cores()) if device == "cpu" else contextlib.nullcontext():
            real = cached_arrays(
                context.cache_dir,
                "prdc",
                f"real-{content_key(PREPROCESSING_VERSION, weights_sha256, real_images)}",
                lambda: {"features": features_of(real_images, network, self.batch_size, device)},
            )["features"]
            fake = features_of(synthetic_images, network, self.batch_size, device, context.progress)
        values = prdc.compute_prdc(real_features=real, fake_features=fake, nearest_k=self.nearest_k)
        return Evaluation({**{k: float(v) for k, v in values.items()}, "n_samples": float(n)})


PRDC = PrecisionRecallDensityCoverage()
