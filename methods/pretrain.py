"""``python -m bench pretrain-encoder``: train a CIFAR-style ResNet18 on PUBLIC images, for
``dp-mepf``'s ``resnet18-cifar`` encoder (the paper's MNIST/FashionMNIST encoders are ResNet18s
trained on SVHN / CIFAR-10, whose checkpoints and recipe are not published: DP-MEPF (arXiv:2205.12900) Sec. 6;
not in github.com/ParkLabML/DP-MEPF).

Architecture (the authors' code,
github.com/ParkLabML/DP-MEPF code/old_code/models/resnet.py): 3×3 stem conv with stride 1, no max-pool, BasicBlocks
[2, 2, 2, 2] with 64/128/256/512 channels, global average pool, 10-way head. Input: 28×28, scaled
to [−1, 1] (their ``Normalize(0.5, 0.5)`` on centre-cropped 28×28 colour images; greyscale private
images are replicated to 3 channels by the encoder).

Recipe — a documented choice, the paper gives none: SGD (momentum 0.9, weight decay 5e-4),
learning rate 0.1 with a cosine schedule, batch 128, random 28×28 crops of the 32×32 training
images and horizontal flips; test accuracy on the centre crops of the public test split is
stored with the weights. The public data must be a dataset that is *public for the private
task*: CIFAR-10 for FashionMNIST as the paper; never the private dataset itself. For MNIST the
paper used SVHN, which is not in the data mirror: ``--public fashion-mnist`` (greyscale, replicated
to 3 channels) or ``--public cifar10-jpeg --grey`` (luma, replicated) stand in, a named deviation.

Checkpoints are cached by content key: the key hashes the architecture, the public dataset (its
loader pins its files' sha256, so the name fixes the content), ``--grey``, the epochs, ``--limit``
and :data:`RECIPE`; a checkpoint already at the path with the same key is reused, not retrained.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from bench.core.data import DataKind, row_fingerprints

CROP = 28
# the training recipe, hashed into every checkpoint's key: change it and old checkpoints no longer match
RECIPE = {
    "optimiser": "sgd",
    "lr": 0.1,
    "momentum": 0.9,
    "weight_decay": 5e-4,
    "schedule": "cosine",
    "batch": 128,
    "crop": CROP,
    "flip": 0.5,
    "seed": 0,
    "input": "[-1, 1]",
    "version": 1,
}


class BasicBlock(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_channels != out_channels:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride, bias=False), nn.BatchNorm2d(out_channels)
            )

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The block's output and its first ReLU (both post-ReLU: the encoder's two taps)."""
        relu1 = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(relu1)) + self.shortcut(x)), relu1


class ResNet18Cifar(nn.Module):
    """CIFAR-style ResNet18; ``taps(x)`` gives the 17 post-ReLU tensors (stem, then relu1 and relu2
    of each of the 8 blocks) in forward order, ``forward`` the logits."""

    def __init__(self, n_classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64))
        blocks, width = [], 64
        for out, stride in ((64, 1), (64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1)):
            blocks.append(BasicBlock(width, out, stride))
            width = out
        self.blocks = nn.ModuleList(blocks)
        self.head = nn.Linear(512, n_classes)

    def taps(self, x: torch.Tensor, n_taps: int = 17) -> list[torch.Tensor]:
        out = [F.relu(self.stem(x))]
        x = out[0]
        for block in self.blocks:
            if len(out) >= n_taps:
                break
            x, relu1 = block(x)
            out += [relu1, x]
        return out[:n_taps]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.stem(x))
        for block in self.blocks:
            x, _ = block(x)
        return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))


def _scale(images: torch.Tensor) -> torch.Tensor:
    return images * 2 - 1  # [0, 1] → [−1, 1], the authors' Normalize(0.5, 0.5)


def _centre(images: torch.Tensor) -> torch.Tensor:
    top = (images.shape[-1] - CROP) // 2
    return images[..., top : top + CROP, top : top + CROP]


def as_three_channels(x: np.ndarray, shape: tuple[int, int, int], grey: bool) -> np.ndarray:
    """Rows (n × C·H·W) as 3-channel rows: greyscale replicated (the encoder replicates grey private
    images the same way); colour kept, or with ``grey`` turned into its luma (ITU-R 601) replicated."""
    images = x.reshape(len(x), *shape)
    if shape[0] == 1:
        images = np.repeat(images, 3, axis=1)
    elif grey:
        luma = np.tensordot(np.array([0.299, 0.587, 0.114], dtype=images.dtype), images, axes=([0], [1]))
        images = np.repeat(luma[:, None], 3, axis=1)
    return images.reshape(len(x), -1)


def checkpoint_key(arch: str, public: str, grey: bool, epochs: int, limit: int | None) -> str:
    """The content key of a pretrained checkpoint (module docstring)."""
    text = json.dumps(
        {"arch": arch, "public": public, "grey": grey, "epochs": epochs, "limit": limit, "recipe": RECIPE},
        sort_keys=True,
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def pretrain_resnet18(
    train_x: np.ndarray,
    train_y: np.ndarray,
    test_x: np.ndarray,
    test_y: np.ndarray,
    shape: tuple[int, int, int],
    epochs: int,
    batch: int = RECIPE["batch"],
    lr: float = RECIPE["lr"],
    seed: int = RECIPE["seed"],
    device: str = "cpu",
    log=print,
) -> tuple[ResNet18Cifar, float]:
    """Train on the public images (n × 3·H·W in [0, 1]); returns the network and its test accuracy."""
    if shape[0] != 3 or shape[1] < CROP or shape[2] < CROP:
        raise ValueError(f"pretrain-encoder needs 3-channel images of at least {CROP}×{CROP} (got {shape})")
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    net = ResNet18Cifar(int(max(train_y.max(), test_y.max())) + 1).to(device)
    steps = epochs * math.ceil(len(train_x) / batch)
    optimiser = torch.optim.SGD(
        net.parameters(), lr=lr, momentum=RECIPE["momentum"], weight_decay=RECIPE["weight_decay"]
    )
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, max(steps, 1))
    images = torch.from_numpy(np.ascontiguousarray(train_x, dtype=np.float32)).view(len(train_x), *shape)
    labels = torch.as_tensor(train_y, dtype=torch.long)
    started = time.time()
    for epoch in range(epochs):
        net.train()
        order = torch.randperm(len(images), generator=generator)
        for start in range(0, len(order), batch):
            index = order[start : start + batch]
            x = images[index]
            dy, dx = (int(v) for v in torch.randint(0, shape[1] - CROP + 1, (2,), generator=generator))
            x = x[..., dy : dy + CROP, dx : dx + CROP]
            if torch.rand(1, generator=generator) < 0.5:
                x = x.flip(-1)
            loss = F.cross_entropy(net(_scale(x).to(device)), labels[index].to(device))
            optimiser.zero_grad(set_to_none=True)
            loss.backward()
            optimiser.step()
            schedule.step()
        log(f"epoch {epoch + 1}/{epochs}: last loss {loss.item():.3f} ({time.time() - started:.0f} s)")
    return net, test_accuracy(net, test_x, test_y, shape, device)


@torch.no_grad()
def test_accuracy(net: nn.Module, x: np.ndarray, y: np.ndarray, shape, device: str) -> float:
    net.eval()
    correct = 0
    for start in range(0, len(x), 500):
        batch = torch.from_numpy(np.ascontiguousarray(x[start : start + 500], dtype=np.float32)).view(-1, *shape)
        correct += int(
            (net(_scale(_centre(batch)).to(device)).argmax(1).cpu() == torch.as_tensor(y[start : start + 500])).sum()
        )
    return correct / max(len(x), 1)


def state_sha256(state: dict) -> str:
    """A content hash of a state dict: its names, dtypes, shapes and values, in name order."""
    digest = hashlib.sha256()
    for name in sorted(state):
        tensor = state[name].detach().cpu().contiguous()
        digest.update(f"{name}:{tensor.dtype}:{tuple(tensor.shape)};".encode())
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def save_checkpoint(
    net: ResNet18Cifar,
    path: Path,
    public: str,
    accuracy: float,
    epochs: int,
    key: str = "",
    *,
    trained_on: tuple[str, ...],
    trained_rows: np.ndarray,
) -> None:
    """``trained_on``: the registered datasets the weights saw (dp-mepf refuses the checkpoint for
    a private dataset among them, or its images under another name); ``trained_rows``: the
    content fingerprints of every row they saw (:func:`bench.core.data.row_fingerprints`), by which
    dp-mepf refuses them for a private split holding any of those rows, whatever its name;
    ``public``: the label shown in ledgers. Both are required: a checkpoint that does not say what
    it saw is refused (or declared public with :func:`declare_public`). The weights' content hash
    is stored beside them, so an edited checkpoint is refused."""
    if not trained_on or len(trained_rows) == 0:
        raise ValueError("save_checkpoint needs the datasets (trained_on) and the row fingerprints the weights saw")
    path.parent.mkdir(parents=True, exist_ok=True)
    state = net.state_dict()
    torch.save(
        {
            "arch": "resnet18-cifar",
            "public_data": public,
            "trained_on": list(trained_on),
            "trained_rows": torch.from_numpy(np.asarray(trained_rows, dtype=np.uint64).view(np.int64).copy()),
            "test_accuracy": accuracy,
            "epochs": epochs,
            "key": key,
            "recipe": RECIPE,
            "weights_sha256": state_sha256(state),
            "state_dict": state,
        },
        path,
    )


def declare_public(path: Path, reason: str) -> None:
    """Marks a checkpoint that records no training rows (written elsewhere) as public, with the
    user's ``reason`` — dp-mepf then accepts it and its ledger records the reason as the grounds
    for treating the weights as public. The weights' hash is kept (the weights are unchanged)."""
    if not reason or not reason.strip():
        raise ValueError("declare_public needs the reason the checkpoint's weights are public")
    stored = torch.load(path, map_location="cpu", weights_only=True)
    stored["public_reason"] = reason.strip()
    torch.save(stored, path)


@dataclass(frozen=True)
class PretrainedCheckpoint:
    path: Path
    key: str
    public: str  # as recorded in the checkpoint and, through the encoder, in every run's ledger
    test_accuracy: float
    epochs: int
    cached: bool  # True: an existing checkpoint with the same key was reused


def cached_checkpoint(path: Path, key: str) -> dict | None:
    if not path.is_file():
        return None
    stored = torch.load(path, map_location="cpu", weights_only=True)
    return stored if stored.get("key") == key and "weights_sha256" in stored else None


def run_pretraining(
    public: str,
    data_dir: Path | None,
    out: Path | None,
    epochs: int,
    limit: int | None,
    device: str,
    grey: bool = False,
    log=print,
) -> PretrainedCheckpoint:
    """Load the public dataset from the registry, train, save (or reuse a checkpoint with the
    same content key at the path); ``out`` None: ``encoders/resnet18-cifar-<public>[-grey]-<key>.pt``."""
    from bench.api.registry import DATASETS

    key = checkpoint_key("resnet18-cifar", public, grey, epochs, limit)
    label = f"{public} (greyscale)" if grey else public
    path = out or Path("encoders") / f"resnet18-cifar-{public}{'-grey' if grey else ''}-{key}.pt"
    stored = cached_checkpoint(path, key)
    if stored is not None:
        log(
            f"cached: {path} has key {key} (public data {stored['public_data']}, test accuracy "
            f"{stored['test_accuracy']:.3f}); not retrained"
        )
        return PretrainedCheckpoint(path, key, stored["public_data"], stored["test_accuracy"], stored["epochs"], True)
    if path.exists():
        log(f"{path} exists with another key; overwriting it with key {key}")
    split = DATASETS.get(public).load(data_dir, 0)
    shape = tuple(int(v) for v in split.train.schema.public_fact("image_shape").value)
    train, test = split.train, split.test
    rng = np.random.default_rng(0)
    # a random subset for --limit: some loaders order the rows by class (cifar10-jpeg)
    rows = np.sort(rng.permutation(len(train))[:limit]) if limit else slice(None)
    test_rows = np.sort(rng.permutation(len(test))[:limit]) if limit else slice(None)
    colour = (3, *shape[1:])
    net, accuracy = pretrain_resnet18(
        as_three_channels(train.x[rows], shape, grey),
        train.y[rows],
        as_three_channels(test.x[test_rows], shape, grey),
        test.y[test_rows],
        colour,
        epochs,
        device=device,
        log=log,
    )
    trained_rows = row_fingerprints(train.x[rows])
    save_checkpoint(net, path, label, accuracy, epochs, key, trained_on=(public,), trained_rows=trained_rows)
    log(
        f"saved {path} (public data {label}, test accuracy {accuracy:.3f}); use it with "
        f"--set dp-mepf.encoder=resnet18-cifar --set dp-mepf.weights={path}"
    )
    return PretrainedCheckpoint(path, key, label, accuracy, epochs, False)


@dataclass(frozen=True)
class EncoderPretrainer:
    """The ``bench pretrain-encoder --arch resnet18-cifar`` entry (registry ``PRETRAINERS``)."""

    name: str = "resnet18-cifar"
    description: str = (
        "ResNet18 (CIFAR variant) trained by the harness on a declared public colour image dataset; "
        "DP-MEPF's encoder for FashionMNIST (arXiv:2205.12900 Sec. 5)"
    )
    data_kinds: frozenset[DataKind] = frozenset({DataKind.IMAGE})

    def pretrain(
        self,
        public: str,
        data_dir: Path | None,
        out: Path | None,
        epochs: int,
        limit: int | None,
        device: str,
        grey: bool = False,
    ) -> PretrainedCheckpoint:
        return run_pretraining(public, data_dir, out, epochs, limit, device, grey)


RESNET18_CIFAR = EncoderPretrainer()
