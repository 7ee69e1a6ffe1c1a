"""The FID Inception-v3 network (pytorch-fid's) and its weights files: found (``resolve_weights``),
checked (``check_known_file``) and built without pytorch-fid's download (``fid_inception_core``).
Public, pretrained on ImageNet; shared by the ``fid`` and ``prdc`` evaluators and DP-MEPF's
Inception encoder, so no plugin imports another for it. Where the weights are looked for, first
found wins: the given path, ``$DPBENCH_FID_WEIGHTS``, the data mirror's
``<data dir>/fid-inception/`` file, pytorch-fid's file in torch hub's cache (downloaded there by
pytorch-fid when ``$DPBENCH_OFFLINE`` is unset)."""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from bench.core.paths import OFFLINE_VARIABLE, data_folder, offline

if TYPE_CHECKING:
    import torch

WEIGHTS_VARIABLE = "DPBENCH_FID_WEIGHTS"
MIRROR_FOLDER = "fid-inception"
MIRROR_WEIGHTS = "pt_inception-2015-12-05-features-only.pth"
MIRROR_SHA256 = "ad1430b732f6c0df8e66fe454ebdfbd7312974437a5caec47fa6db363f205435"
# pytorch-fid's own values, spelled out so that a process that only lists the evaluators (`bench
# table`, a cell without images) does not import pytorch-fid and torchvision (≈ 1.3 s); a test
# checks them against pytorch-fid (tests/test_fid.py)
STANDARD_WEIGHTS = "pt_inception-2015-12-05-6726825d.pth"  # Path(urlparse(FID_WEIGHTS_URL).path).name
STANDARD_SHA256_PREFIX = STANDARD_WEIGHTS.rsplit("-", 1)[1].split(".")[0]  # torch hub's name convention
FC_KEYS = frozenset({"fc.weight", "fc.bias"})  # the 1008-way classifier; pool3 features do not use it


class FidWeightsError(RuntimeError):
    """The Inception weights are missing or wrong; the one-line message says how to fix it."""


@functools.lru_cache(maxsize=8)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def file_sha256(path: Path) -> str:
    """sha256 of a file, remembered per (path, size, mtime) so a weights file is hashed once."""
    stat = path.stat()
    return _sha256(str(path), stat.st_size, stat.st_mtime_ns)


def standard_weights_path() -> Path:
    """Where pytorch-fid's loader (torch hub) keeps its downloaded weights."""
    import torch

    return Path(torch.hub.get_dir()) / "checkpoints" / STANDARD_WEIGHTS


def missing_weights_message(public_folder: Path) -> str:
    return (
        f"the FID Inception weights are missing: put {MIRROR_WEIGHTS} (data mirror) at "
        f"{public_folder / MIRROR_WEIGHTS}, or set {WEIGHTS_VARIABLE}=PATH to a weights file, "
        f"or unset {OFFLINE_VARIABLE} so that pytorch-fid downloads {STANDARD_WEIGHTS}"
    )


def public_weights_folder(data_dir: Path | str | None) -> Path:
    """The data folder's public weights (``fid-inception/``): the one part of the data folder that
    a fit may read (the data wall leaves it readable; a fit's context names nothing else of it)."""
    return data_folder(data_dir) / MIRROR_FOLDER


def resolve_weights(explicit: str | None, data_dir: str | None) -> Path:
    """The weights file to use, in the order of the module docstring; downloads when allowed."""
    return resolve_weights_in(explicit, public_weights_folder(data_dir))


def resolve_weights_in(explicit: str | None, public_folder: Path) -> Path:
    """:func:`resolve_weights` given the public weights folder itself (a fit's ``public_weights``)."""
    chosen = explicit or os.environ.get(WEIGHTS_VARIABLE)
    if chosen:
        if not Path(chosen).is_file():
            raise FidWeightsError(
                f"FID weights file {chosen} does not exist; fix the weights option or ${WEIGHTS_VARIABLE}"
            )
        return Path(chosen)
    for candidate in (public_folder / MIRROR_WEIGHTS, standard_weights_path()):
        if candidate.is_file():
            return candidate
    if offline():
        raise FidWeightsError(missing_weights_message(public_folder))
    from pytorch_fid import inception as fid_inception

    try:  # pytorch-fid's own download of its standard weights into torch hub's cache
        fid_inception.load_state_dict_from_url(fid_inception.FID_WEIGHTS_URL, progress=True)
    except Exception as error:  # network errors come in many types; the fix is the same
        raise FidWeightsError(
            f"downloading {fid_inception.FID_WEIGHTS_URL} failed ({error}); " + missing_weights_message(public_folder)
        ) from None
    return standard_weights_path()


def check_known_file(path: Path, sha256: str) -> None:
    """The two published files have known hashes: refuse a corrupt copy of either."""
    if path.name == MIRROR_WEIGHTS and sha256 != MIRROR_SHA256:
        raise FidWeightsError(
            f"{path} is corrupt (sha256 {sha256[:12]}…, expected {MIRROR_SHA256[:12]}…); "
            "copy it again from the data mirror's fid-inception/ folder"
        )
    if path.name == STANDARD_WEIGHTS and not sha256.startswith(STANDARD_SHA256_PREFIX):
        raise FidWeightsError(
            f"{path} is corrupt (sha256 {sha256[:12]}…); delete it so that pytorch-fid downloads it again"
        )


def fid_inception_core(state_dict: Mapping[str, torch.Tensor], path: Path) -> torch.nn.Module:
    """pytorch-fid's FID Inception-v3 with the given weights, without its download.

    ``pytorch_fid.inception.fid_inception_v3()`` builds this network and then downloads and
    strictly loads its weights; this is the same construction from pytorch-fid's own classes
    (torchvision's Inception3 with the blocks patched to TF's behaviour), loaded with
    ``strict=False`` so that a file without the unused ``fc`` layer is accepted — and only that.
    """
    from pytorch_fid import inception as fid_inception

    core = fid_inception._inception_v3(num_classes=1008, aux_logits=False, weights=None)
    core.Mixed_5b = fid_inception.FIDInceptionA(192, pool_features=32)
    core.Mixed_5c = fid_inception.FIDInceptionA(256, pool_features=64)
    core.Mixed_5d = fid_inception.FIDInceptionA(288, pool_features=64)
    core.Mixed_6b = fid_inception.FIDInceptionC(768, channels_7x7=128)
    core.Mixed_6c = fid_inception.FIDInceptionC(768, channels_7x7=160)
    core.Mixed_6d = fid_inception.FIDInceptionC(768, channels_7x7=160)
    core.Mixed_6e = fid_inception.FIDInceptionC(768, channels_7x7=192)
    core.Mixed_7b = fid_inception.FIDInceptionE_1(1280)
    core.Mixed_7c = fid_inception.FIDInceptionE_2(2048)
    fix = f"use pytorch-fid's {STANDARD_WEIGHTS} or the data mirror's {MIRROR_WEIGHTS}"
    try:
        result = core.load_state_dict(state_dict, strict=False)
    except RuntimeError as error:  # shape mismatches are raised even with strict=False
        first = str(error).strip().splitlines()[-1].strip()
        raise FidWeightsError(f"{path} does not fit the FID Inception network ({first}); {fix}") from None
    missing = set(result.missing_keys) - FC_KEYS
    if missing or result.unexpected_keys:
        raise FidWeightsError(
            f"{path} is not the FID Inception weights ({len(missing)} missing keys besides fc, e.g. "
            f"{sorted(missing)[:2]}; {len(result.unexpected_keys)} unexpected, e.g. {sorted(result.unexpected_keys)[:2]}); {fix}"
        )
    return core
