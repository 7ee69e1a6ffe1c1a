"""``full-mmd``: the seeds' non-private reference generator (DP-HP (arXiv:2106.05042) Sec. 5.3,
Figs. 3 and 6): a conditional generator trained with the exact biased MMD² estimator
(DP-MERF eq. 2) between a mini-batch of real rows and a generated mini-batch, with the Gaussian
kernel on the inputs times the label-matching kernel,

    k((x, y), (x', y')) = exp(−‖x − x'‖² / (2ℓ²)) · [y = y'],

    MMD² = mean_{i,i'} k(rᵢ, rᵢ') + mean_{j,j'} k(gⱼ, gⱼ') − 2 mean_{i,j} k(rᵢ, gⱼ),

where the generated batch carries the real batch's labels. It reads the real rows at every step
and releases them in effect: it is **not** private, and the grid runs it at ε = ∞ only.

The seeds give no kernel or batch settings (DP-HP (arXiv:2106.05042) Sec. 5.3): ℓ defaults to the same public
choice as DP-MERF (√(d/6) × each coordinate's public range, ℓ² = 130.7 for 28×28 images, close
to the seeds' DP-MERF image values 105/127); the batch, optimiser, epochs and generator are DP-HP's
image settings for the same dataset (Table 9), so the two differ only in the loss.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from bench.privacy.private_data import PrivateData
from bench.core.params import HyperParameters, Setting, batch_rows
from bench.core.data import DataKind
from bench.api.contracts import FitContext
from bench.api.declare import method
from methods.mean_embedding import TrainedConditionalGenerator
from methods.nets import build_generator
from methods.training import Schedule, train_generator
from methods.space import ModelSpace, uniform_median_distance


def _images(dataset: str, architecture: str) -> dict[str, Setting]:
    table = f"DP-HP (arXiv:2106.05042) Table 9 ({dataset}), DP-HP's image settings (full MMD's are not given)"
    return {
        "architecture": Setting(architecture, table),
        "hidden": Setting("500-500" if architecture == "fc" else "500", table),
    }


@dataclass(frozen=True)
class FullMMDParams:
    length_scale: float | None  # None: from the public ranges
    epochs: int
    batch_size: int
    lr: float
    lr_decay: float
    noise_dim: int
    architecture: str
    hidden: str
    conv_channels: str
    conv_kernel: int


HYPERPARAMETERS = HyperParameters(
    FullMMDParams,
    defaults={
        "length_scale": Setting(
            None, "None = √(d/6) × public ranges, as dp-merf (none in DP-HP (arXiv:2106.05042) Sec. 5.3)"
        ),
        "epochs": Setting(10, "DP-HP (arXiv:2106.05042) Table 9: 10 epochs (DP-HP's image setting)"),
        "batch_size": Setting(200, "DP-HP (arXiv:2106.05042) Table 9: mini-batch 200"),
        "lr": Setting(1e-2, "DP-HP (arXiv:2106.05042) Table 9: lr 0.01"),
        "lr_decay": Setting(
            0.9, "github.com/ParkLabML/DP-HP dp_mehp/prod_and_sum_kernel_image.py: StepLR 0.9 per epoch"
        ),
        "noise_dim": Setting(5, "github.com/ParkLabML/DP-HP dp_mehp/prod_and_sum_kernel_image.py: d_code 5"),
        "architecture": Setting("fc", "methods/nets.py: fc or conv (images)"),
        "hidden": Setting(
            "4d-2d", "github.com/ParkLabML/DP-HP dp_mehp/all_aux_files_tab_data.py: tabular hidden widths 4·D, 2·D"
        ),
        "conv_channels": Setting(
            "16-8", "github.com/ParkLabML/DP-HP dp_mehp/prod_and_sum_kernel_image.py: ConvCondGen n_channels 16,8"
        ),
        "conv_kernel": Setting(5, "github.com/ParkLabML/DP-HP dp_mehp/prod_and_sum_kernel_image.py: kernel sizes 5,5"),
    },
    per_dataset={
        "mnist": _images("MNIST", "fc"),
        "fashion-mnist": _images("FashionMNIST", "conv"),
        "gmm2d": {
            "hidden": Setting(
                "200-500-500-200", "github.com/ParkLabML/DP-MERF code_balanced/README.md: the 2-D FCCondGen widths"
            )
        },
    },
    profiles={"smoke": {"epochs": 1, "batch_size": 100, "hidden": "2d-2d"}},
)


def labelled_gaussian_mmd2(
    real: torch.Tensor, real_labels: torch.Tensor, fake: torch.Tensor, fake_labels: torch.Tensor, length_scale: float
) -> torch.Tensor:
    """The biased MMD² estimate (V-statistic) under k((x, y), (x', y')) = exp(−‖x−x'‖²/(2ℓ²))·[y = y']."""

    def mean_kernel(a: torch.Tensor, a_labels: torch.Tensor, b: torch.Tensor, b_labels: torch.Tensor) -> torch.Tensor:
        gram = torch.exp(-torch.cdist(a, b).square() / (2 * length_scale**2))
        same_class = a_labels[:, None] == b_labels[None, :]
        return (gram * same_class).mean()

    return (
        mean_kernel(real, real_labels, real, real_labels)
        + mean_kernel(fake, fake_labels, fake, fake_labels)
        - 2 * mean_kernel(real, real_labels, fake, fake_labels)
    )


@method(
    "full-mmd",
    "non-private reference: generator trained with the exact mini-batch Gaussian-kernel MMD",
    kinds=frozenset(DataKind),
    private=False,
    hyperparameters=HYPERPARAMETERS,
)
def full_mmd(data: PrivateData, context: FitContext[FullMMDParams]) -> TrainedConditionalGenerator:
    train = data.rows(trusted="non-private: the full-MMD generator trains on the rows themselves")
    p, device = context.params, context.device
    m, n_classes = len(train), train.schema.n_classes
    space = ModelSpace.for_data(context.data_kind, train.schema, context.protocol)
    if p.length_scale is not None:
        length_scale = p.length_scale
    else:  # one isotropic kernel: the mean public range stands for every coordinate's
        length_scale = uniform_median_distance(space.width) * float(space.coordinate_spans().mean())

    rows = torch.as_tensor(space.encode(train.x), device=device)
    labels = torch.as_tensor(train.y, device=device)
    proportions = torch.as_tensor(train.class_counts() / m, dtype=torch.float32)  # non-private: exact

    torch.manual_seed(context.stream_seed("torch-global"))  # network init and latents use the global generator
    columns = train.schema.n_features  # the unit of 'c' widths
    net = build_generator(p, n_classes, space.width, space.output_head(), space.image_shape, columns).to(device)
    batch = batch_rows(m, p.batch_size, None, real_rows=True)
    schedule = Schedule.passes(p.epochs, m, batch, p.lr, p.lr_decay)
    order_rng = context.torch_rng("minibatches")
    order = torch.empty(0, dtype=torch.long)

    def shuffle(epoch: int) -> None:
        nonlocal order
        order = torch.randperm(m, generator=order_rng).to(device)

    def loss(epoch: int, step: int) -> torch.Tensor | None:
        index = order[step * batch : (step + 1) * batch]
        if len(index) < 2:  # BatchNorm needs two rows; a last batch of one is skipped
            return None
        real, real_labels = rows[index], labels[index]
        return labelled_gaussian_mmd2(real, real_labels, net(real_labels), real_labels, length_scale)

    train_generator(net, loss, schedule, context, on_epoch=shuffle)
    return TrainedConditionalGenerator(net, proportions, space, device, context.torch_rng("sampling-labels"))
