"""Results that do not depend on torch's thread count, and the runner lending idle cores to them.

A cell's fit may use the cores no other cell uses (the README's one-cell grid uses both cores)
only because its numbers are the same bits at any thread count: these tests compare 1 and 2
threads on the paper-sized DP-MERF step, on the pieces that used to differ (batch norm, the small-K
projection, the column softmax, the class sums' gemv), and through the runner."""

from __future__ import annotations

import os

import pytest
import torch

from methods.dp_merf import draw_frequencies, rff_class_sums
from methods.nets import FullyConnectedConditionalGenerator, ThreadInvariantBatchNorm1d
from methods.space import column_softmax


def at_threads(threads: int, compute):
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        torch.manual_seed(0)
        return compute()
    finally:
        torch.set_num_threads(before)


def paper_gmm2d_steps(steps: int = 3) -> list[torch.Tensor]:
    """The README's DP-MERF cell at its real size (30,000 features, batch 500, the authors'
    200-500-500-200 generator): every parameter after ``steps`` Adam steps."""
    frequencies = draw_frequencies(30_000, torch.full((2,), 0.5**0.5), torch.Generator().manual_seed(0)).float()
    net = FullyConnectedConditionalGenerator(5, 5, (200, 500, 500, 200), 2)
    optimiser = torch.optim.Adam(net.parameters(), lr=3e-3)
    target = torch.randn(5, 30_000) * 1e-3
    labels_rng = torch.Generator().manual_seed(1)
    for _ in range(steps):
        labels = torch.randint(0, 5, (500,), generator=labels_rng)
        loss = ((target - rff_class_sums(net(labels), labels, 5, frequencies) / 500) ** 2).sum()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    return [p.detach().clone() for p in net.parameters()]


def test_the_paper_sized_dp_merf_step_gives_the_same_bits_at_one_and_two_threads():
    one, two = at_threads(1, paper_gmm2d_steps), at_threads(2, paper_gmm2d_steps)
    assert all(torch.equal(a, b) for a, b in zip(one, two))


@pytest.mark.parametrize("rows", [95, 300, 2_097])
def test_the_class_sums_of_many_rows_a_class_give_the_same_bits_at_one_and_two_threads(rows):
    """A class's column sum over hundreds of rows (the smoke profile's tiles hold 1,048 rows of
    250 frequencies): MKL's gemv on an Intel AVX-512 Xeon splits that reduction at 2 threads from
    257 rows (the conformance kit's gmm2d fit gave other samples), so it runs on one thread."""
    frequencies = draw_frequencies(500, torch.full((2,), 0.5**0.5), torch.Generator().manual_seed(0)).float()

    def sums_and_gradient():
        x = (torch.randn(rows, 2) * 3).requires_grad_()
        labels = torch.randint(0, 3, (rows,))
        sums = rff_class_sums(x, labels, 3, frequencies)
        (sums * torch.linspace(-1, 1, sums.shape[1])).pow(2).sum().backward()
        return sums.detach(), x.grad

    one, two = at_threads(1, sums_and_gradient), at_threads(2, sums_and_gradient)
    assert all(torch.equal(a, b) for a, b in zip(one, two))


@pytest.mark.parametrize("rows", [5, 7, 11, 500, 11_077])
def test_batch_norm_and_column_softmax_are_thread_invariant_where_torch_s_fused_kernels_are_not(rows):
    """torch's fused batch norm and dim-0 softmax differ at 2 threads from 1 for these batch
    sizes (the reason for the replacements); ours agree bit for bit, and with torch's to float
    rounding."""
    x = torch.randn(rows, 300, generator=torch.Generator().manual_seed(rows)) * 3 + 1

    def batch_norm():
        norm = ThreadInvariantBatchNorm1d(300)
        y = x.clone().requires_grad_()
        out = norm(y)
        out.pow(2).mul(torch.linspace(0, 1, 300)).sum().backward()
        return out.detach(), y.grad, norm.running_var

    def softmax():
        y = x[:, :7].T.contiguous().requires_grad_()
        out = column_softmax(y)
        out.pow(3).sum().backward()
        return out.detach(), y.grad

    for compute in (batch_norm, softmax):
        one, two = at_threads(1, compute), at_threads(2, compute)
        assert all(torch.equal(a, b) for a, b in zip(one, two))
    reference = torch.nn.BatchNorm1d(300)(x)
    assert torch.allclose(ThreadInvariantBatchNorm1d(300)(x), reference, atol=1e-5)
    assert torch.allclose(column_softmax(x[:, :7].T), torch.softmax(x[:, :7].T, 0), atol=1e-6)


class NoForeignLoad:
    def cores_taken(self) -> int:
        return 0


def test_the_runner_lends_a_lone_lendable_cell_the_idle_core_and_its_numbers_do_not_move(tmp_path, monkeypatch):
    """One DP-MERF cell on gmm2d run with 1 core and with 2: the second fit used 2 threads
    (logged), and every metric is the same."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 cores")
    from bench.harness import tracking
    from bench.harness.grid import GridSpec, expand
    from bench.harness.runner import run_grid

    runs = {}
    for cores in (1, 2):
        monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/cores{cores}.db")
        cells, _ = expand(
            GridSpec(
                methods=["dp-merf"], datasets=["gmm2d"], epsilons=[1.0], seeds=[0], profile="smoke", evaluators=["nll"]
            )
        )
        assert cells[0].lendable
        # other programs on the machine would rightly hold the lent core back (test_cpuload)
        report = run_grid(cells, "lend", jobs=1, show_progress=False, cores=cores, foreign_load=NoForeignLoad())
        assert len(report.finished) == 1, report.failed
        (run,) = tracking.client().search_runs([tracking.client().get_experiment_by_name("lend").experiment_id])
        runs[cores] = run
    assert runs[1].data.tags["threads.fit_most"] == "1" and runs[2].data.tags["threads.fit_most"] == "2"
    quality = {k: v for k, v in runs[1].data.metrics.items() if not k.startswith(("time.", "peak_"))}
    assert quality and quality == {k: runs[2].data.metrics[k] for k in quality}
