"""``fid``: Fréchet Inception Distance between synthetic and real images (lower is better).

The network is pytorch-fid's FID Inception-v3 (the TF 2015-12-05 graph, ``use_fid_inception``
structure), its 2048-d pool3 features, with pytorch-fid's own preprocessing: bilinear resize to
299×299 and scaling from [0, 1] to [-1, 1] inside ``InceptionV3``. Greyscale images are
replicated to 3 channels; pixels are clipped to the schema's [0, 1] bounds first (what saving to
an image file, as pytorch-fid's command line expects, would do). The distance is
``pytorch_fid.fid_score.calculate_frechet_distance`` of the two feature Gaussians (mean,
covariance), as in DP-MEPF's code (github.com/ParkLabML/DP-MEPF code/eval_fid.py).

Samples: ``n_samples`` synthetic images (default 5,000, the seeds' ``--fid_dataset_size``), a
seeded random subset when more were generated; the count used is reported as ``n_samples`` (FID
is biased upwards at small counts, so only compare values at equal counts). ``n_real`` real
reference images (default: the whole reference split), reported as ``n_real``.

Reference split: ``--protocol paper`` uses the seeds' reference, the whole real **training** set
(DP-MEPF: statistics over "the entire private training set", github.com/ParkLabML/DP-MEPF code/eval_fid.py; DP-HP reports
no FID). ``--protocol sound`` uses the real **test** split instead: a held-out reference, so a
generator cannot lower its score by reproducing training images. Set ``reference`` to override.

Weights (found and checked by ``bench.core.inception``, shared with DP-MEPF's Inception encoder), first found wins:

1. the ``weights`` attribute, else ``$DPBENCH_FID_WEIGHTS`` (a missing file there is an error);
2. ``<data dir>/fid-inception/pt_inception-2015-12-05-features-only.pth``, the data mirror's
   conversion (data dir: the ``data_dir`` attribute, else ``$DPBENCH_DATA_DIR``, else ``./data``);
   it lacks the unused 1008-way ``fc`` layer, so it is loaded with ``strict=False`` after checking
   that ``fc.weight`` and ``fc.bias`` are the only missing keys;
3. pytorch-fid's standard file ``pt_inception-2015-12-05-6726825d.pth`` in torch hub's cache,
   downloaded there by pytorch-fid's own loader when ``DPBENCH_OFFLINE`` is unset.

Known files are checked: the mirror's file against its pinned sha256, pytorch-fid's file against
the hash prefix in its name. Otherwise a one-line :class:`FidWeightsError` says how to fix it.

Real-data statistics (mean, covariance) are computed once and cached on disk in
``<EvalContext.cache_dir>/fid/`` (the grid passes ``$DPBENCH_CACHE_DIR``, default
``~/.cache/dpbench``; no ``cache_dir``: no disk cache), keyed by the sha256 of the reference
images' float32 bytes (which fixes the split and the subset), their count and shape, the weights
file's sha256 and the preprocessing version (``evaluators.cache``). The cache holds statistics of
private data: keep it as private as the data directory, and never commit it.

Execution: batches of ``batch_size`` (default 50, the seeds') on ``EvalContext.device``
(``auto``: CUDA when available, else CPU; ``cpu`` is honoured), float32; mean and covariance are
accumulated batch by batch (shifted sums, float64), so 60,000 reference images never need 1 GiB
of features at once. For speed, the network's batch norms are folded into the convolutions
(``fuse_conv_bn_eval``: the same affine map, features equal to ≈ 1e-6) and it runs channels-last;
on CPU it uses ``threads`` torch threads (None: every core this process may use), restored
afterwards. Reported as ``seconds_per_image`` (a diagnostic).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import os
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

import numpy as np
import torch
from torch.nn.utils.fusion import fuse_conv_bn_eval

from bench.core.data import DataKind, LabelledData, RunProtocol, Schema, check_same_schema
from bench.api.contracts import Direction, EvalContext, Evaluation, MetricSpec
from bench.core.images import as_images, image_shape, is_image_schema
from bench.core.inception import (
    MIRROR_WEIGHTS,
    STANDARD_WEIGHTS,
    FidWeightsError,
    check_known_file,
    fid_inception_core,
    file_sha256,
    resolve_weights,
)
from evaluators.cache import cached_arrays, content_key

if TYPE_CHECKING:
    from pytorch_fid import inception as fid_inception

POOL3 = 3  # InceptionV3.BLOCK_INDEX_BY_DIM[2048]
# Bump when the preprocessing (clipping, channel replication, network) changes: it keys the cache.
PREPROCESSING_VERSION = "clip01-grey3-pytorch_fid-InceptionV3-pool3-bnfolded-v2"
REFERENCES = ("train", "test")
PROTOCOL_REFERENCE = {"sound": "test", "paper": "train"}


def fid_network(core: torch.nn.Module) -> fid_inception.InceptionV3:
    """pytorch-fid's ``InceptionV3`` (pool3 block, resize to 299, scaling to [-1, 1]) around ``core``.

    ``InceptionV3.__init__`` takes its network from the module function ``fid_inception_v3()``,
    which downloads; that function is swapped for the loaded ``core`` while the wrapper is built.
    """
    from pytorch_fid import inception as fid_inception

    with mock.patch.object(fid_inception, "fid_inception_v3", lambda: core):
        network = fid_inception.InceptionV3([POOL3], resize_input=True, normalize_input=True, use_fid_inception=True)
    return network.eval()


def fold_batch_norms(network: torch.nn.Module) -> torch.nn.Module:
    """A copy of an eval-mode network with each ``BasicConv2d``'s batch norm folded into its
    convolution (the same affine map: w·γ/σ, β − μ·γ/σ), which saves a pass over every
    activation; features change only by float rounding (≈ 1e-6)."""
    folded = copy.deepcopy(network).eval()
    for module in folded.modules():
        if isinstance(getattr(module, "conv", None), torch.nn.Conv2d) and isinstance(
            getattr(module, "bn", None), torch.nn.BatchNorm2d
        ):
            module.conv = fuse_conv_bn_eval(module.conv, module.bn)
            module.bn = torch.nn.Identity()
    return folded


@functools.lru_cache(maxsize=2)
def load_network(path: str, sha256: str, device: str) -> fid_inception.InceptionV3:
    """The network for a weights file (keyed by its hash too, so a replaced file is reloaded),
    batch norms folded, channels-last."""
    try:
        state_dict = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # unpickling errors come in many types
        raise FidWeightsError(
            f"{path} cannot be read as a weights file ({type(error).__name__}: {error}); "
            f"use pytorch-fid's {STANDARD_WEIGHTS} or the data mirror's {MIRROR_WEIGHTS}"
        ) from None
    network = fold_batch_norms(fid_network(fid_inception_core(state_dict, Path(path))))
    return network.to(device=device, memory_format=torch.channels_last)


def resolve_device(device: str) -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


@contextlib.contextmanager
def torch_threads(threads: int) -> Iterator[None]:
    """torch's intra-op threads set to ``threads`` inside the block, restored after it."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def available_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


# --- features and statistics ---------------------------------------------------------------------


def feature_batches(
    images: np.ndarray,
    network: Callable[[torch.Tensor], list[torch.Tensor]],
    batch_size: int,
    device: str,
    progress: Callable[[int, int], None] = lambda done, total: None,
) -> Iterator[torch.Tensor]:
    """The pool3 features of ``images`` (n × C × H × W, values in [0, 1]), batch by batch."""
    n = len(images)
    with torch.inference_mode():
        for start in range(0, n, batch_size):
            batch = torch.from_numpy(np.ascontiguousarray(images[start : start + batch_size], dtype=np.float32))
            batch = batch.to(device).clamp(0.0, 1.0)  # not in place: the tensor may share the caller's array
            if batch.shape[1] == 1:  # greyscale: the same plane in R, G and B
                batch = batch.expand(-1, 3, -1, -1)
            batch = batch.contiguous(memory_format=torch.channels_last)
            yield network(batch)[0].flatten(1)
            progress(min(start + batch_size, n), n)


def activation_statistics(
    images: np.ndarray,
    network: Callable[[torch.Tensor], list[torch.Tensor]],
    batch_size: int,
    device: str,
    progress: Callable[[int, int], None] = lambda done, total: None,
) -> tuple[np.ndarray, np.ndarray]:
    """Mean and covariance (as ``np.cov``) of the pool3 features of ``images`` (n × C × H × W).

    Sums are accumulated per batch around the first batch's mean (the shifted-data algorithm),
    in float64, so that the features are never held all at once and the covariance does not
    suffer cancellation.
    """
    n = len(images)
    if n < 2:
        raise ValueError(f"FID needs at least 2 images, got {n}")
    shift = total = outer = None
    for features in feature_batches(images, network, batch_size, device, progress):
        features = features.double()
        if shift is None:
            shift = features.mean(0)
            total = torch.zeros_like(shift)
            outer = torch.zeros(len(shift), len(shift), dtype=torch.float64, device=features.device)
        centred = features - shift
        total += centred.sum(0)
        outer += centred.T @ centred
    mean_offset = total / n
    sigma = (outer - n * torch.outer(mean_offset, mean_offset)) / (n - 1)
    return (shift + mean_offset).cpu().numpy(), sigma.cpu().numpy()


def real_statistics_key(images: np.ndarray, weights_sha256: str) -> str:
    """Content key of the reference statistics: the images' bytes and count, weights, preprocessing."""
    return content_key(PREPROCESSING_VERSION, weights_sha256, images)


def subset_index(n_total: int, n: int | None, rng: np.random.Generator) -> np.ndarray:
    """All rows in order, or a random subset of ``n`` rows (sorted, so the order is stable)."""
    if n is None or n >= n_total:
        return np.arange(n_total)
    return np.sort(rng.choice(n_total, size=n, replace=False))


# --- the evaluator -------------------------------------------------------------------------------


@dataclass(frozen=True)
class FrechetInceptionDistance:
    name: str = "fid"
    description: str = (
        "Fréchet Inception Distance (pytorch-fid InceptionV3 pool3; 5,000 synthetic images vs the real "
        "test split, or the training split under --protocol paper); lower is better"
    )
    data_kinds: frozenset[DataKind] = frozenset({DataKind.IMAGE})
    metrics: Mapping[str, MetricSpec] = field(
        default_factory=lambda: {
            "fid": MetricSpec.quality(Direction.LOWER, "Fréchet distance of the Inception pool3 feature Gaussians"),
            "n_samples": MetricSpec.diagnostic("synthetic images used (the seeds use 5,000)"),
            "n_real": MetricSpec.diagnostic("real reference images used"),
            "seconds_per_image": MetricSpec.diagnostic("feature extraction wall time per synthetic image"),
        }
    )
    n_samples: int = 5_000  # DP-MEPF (arXiv:2205.12900) Sec. 6: "5,000 generated samples"
    n_real: int | None = None  # None: the whole reference split (the seeds: the whole training set)
    reference: str | None = None  # "train" or "test"; None: the protocol's (PROTOCOL_REFERENCE)
    batch_size: int = 50  # the seeds' FID batch size (github.com/ParkLabML/DP-MEPF code/eval_fid.py)
    threads: int | None = None  # CPU torch threads while extracting features; None: every available core
    weights: str | None = None
    seed: int = 0
    # ``--profile smoke`` cells: 500 synthetic against 1,000 real images, a number to check that a
    # run works, not one to compare with the papers (their FID uses 5,000 against the whole split)
    profiles: Mapping[str, Mapping[str, Any]] = field(
        default_factory=lambda: {"smoke": {"n_samples": 500, "n_real": 1000}}
    )

    def applies_to(self, schema: Schema) -> bool:
        return is_image_schema(schema) and image_shape(schema)[0] in (1, 3)

    def reference_split(self, protocol: RunProtocol) -> str:
        reference = self.reference or PROTOCOL_REFERENCE.get(protocol)
        if reference not in REFERENCES:
            raise ValueError(
                f"fid: unknown protocol {protocol!r} or reference {self.reference!r}; "
                f"protocols {', '.join(PROTOCOL_REFERENCE)}, references {', '.join(REFERENCES)}"
            )
        return reference

    def network(self, context: EvalContext) -> tuple[fid_inception.InceptionV3, str, str]:
        """The loaded network, the weights file's sha256 and the device."""
        path = resolve_weights(self.weights, str(context.data_dir) if context.data_dir else None)
        sha256 = file_sha256(path)
        check_known_file(path, sha256)
        device = resolve_device(context.device)
        return load_network(str(path), sha256, device), sha256, device

    def real_statistics(
        self, real: LabelledData, network: torch.nn.Module, weights_sha256: str, device: str, context: EvalContext
    ) -> tuple[np.ndarray, np.ndarray, int]:
        """Mean and covariance of the reference images, from the cache when computed before."""
        index = subset_index(len(real), self.n_real, np.random.default_rng([self.seed, 2]))
        images = as_images(real.x[index] if len(index) < len(real) else real.x, real.schema)
        stats = cached_arrays(
            context.cache_dir,
            "fid",
            f"real-{real_statistics_key(images, weights_sha256)}",
            lambda: dict(zip(("mu", "sigma"), activation_statistics(images, network, self.batch_size, device))),
        )
        return stats["mu"], stats["sigma"], len(images)

    def evaluate(
        self, synthetic: LabelledData, real_train: LabelledData, real_test: LabelledData, context: EvalContext
    ) -> Evaluation:
        reference = real_train if self.reference_split(context.protocol) == "train" else real_test
        if not self.applies_to(reference.schema):
            raise ValueError("fid scores image data (a schema with a 1- or 3-channel image_shape) only")
        check_same_schema(synthetic, reference)
        network, weights_sha256, device = self.network(context)
        threads = self.threads or available_cores()
        with torch_threads(threads) if device == "cpu" else contextlib.nullcontext():
            mu_real, sigma_real, n_real = self.real_statistics(reference, network, weights_sha256, device, context)
            index = subset_index(len(synthetic), self.n_samples, np.random.default_rng([self.seed, 1]))
            images = as_images(synthetic.x[index], synthetic.schema)
            started = time.perf_counter()
            mu, sigma = activation_statistics(images, network, self.batch_size, device, context.progress)
            seconds = time.perf_counter() - started
            from pytorch_fid.fid_score import calculate_frechet_distance

            distance = float(calculate_frechet_distance(mu, sigma, mu_real, sigma_real))
        return Evaluation(
            {
                "fid": distance,
                "n_samples": float(len(images)),
                "n_real": float(n_real),
                "seconds_per_image": seconds / len(images),
            }
        )


FID = FrechetInceptionDistance()
