"""DP-SGD as a query of the private-data handle (:meth:`bench.privacy.private_data.PrivateData.dp_sgd`).

The handle, not the method, owns everything that touches a real row: the rows' tensors (from the
method's row-wise ``encode``), the Poisson batches (the ledger phase's, from the secure source
when the noise is), the real-data loss's per-sample gradients (Opacus), their clipping, sum and
noise (the ledger's door). A method sees only the private model and the privatised gradient:

    training = data.dp_sgd("discriminator DP-SGD", critic, optimiser, encode, clipping_norm=C,
                           epochs=E, steps_per_epoch=S, expected_batch=B, noise_rng=..., batch_rng=...)
    for _ in training.steps():
        training.private_gradient(real_loss)      # real_loss(model, *batch) → summed loss
        with training.public():                   # per-sample hooks off: post-processing only
            public_loss(training.model).backward()  # accumulates onto the private gradient
        training.optimiser_step()

The phase (q = 1/S, E·S steps, clipping norm C, σ calibrated by the ledger under replace-one:
sensitivity 2C) is charged when the query is made, before any row is read; ``steps`` checks at
the end that every charged step was taken and noised.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any, Callable, Iterator, Sequence

from bench.privacy.subsampled import SubsampledPhase


# torch warns when a module's full backward hook fires while its inputs (data rows, generated rows)
# need no gradient — always the case here
_INPUTS_NEED_NO_GRADIENT = "Full backward hook is firing"


class DPSGDTraining:
    """One charged DP-SGD phase over the handle's rows (module docstring)."""

    def __init__(
        self,
        phase: SubsampledPhase,
        module: Any,
        optimiser: Any,
        tensors: Sequence[Any],
        *,
        epochs: int,
        steps_per_epoch: int,
        expected_batch: int,
        noise_rng: Any,
        batch_rng: Any,
        device: Any,
    ) -> None:
        import torch
        from opacus import PrivacyEngine

        self._phase, self._tensors, self._device = phase, tuple(tensors), device
        self._epochs, self._steps_per_epoch, self._expected_batch = epochs, steps_per_epoch, expected_batch
        self._batch_rng, self._batch = batch_rng, None
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(*self._tensors), batch_size=expected_batch)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Secure RNG turned off")  # the ledger draws the noise
            engine = PrivacyEngine(accountant="prv")  # the ledger accounts; this engine only wraps
            self.model, self._optimiser, _ = engine.make_private(
                module=module,
                optimizer=optimiser,
                data_loader=loader,
                noise_multiplier=phase.opacus_noise_multiplier,
                max_grad_norm=phase.clipping_norm,
                loss_reduction="sum",
                poisson_sampling=True,
            )
        self._optimiser.add_noise = self._add_noise_through_the_ledger(noise_rng)

    @property
    def n_rows(self) -> int:
        return len(self._tensors[0])

    def steps(self) -> Iterator[int]:
        """The charged steps, each with its Poisson batch drawn by the phase; yields the step index."""
        done = 0
        for _ in range(self._epochs):
            for indices in self._phase.poisson_batches(self.n_rows, self._steps_per_epoch, self._batch_rng):
                self._batch = indices
                yield done
                if self._batch is not None:
                    raise RuntimeError(f"{self._phase.release.what}: step {done + 1} took no private gradient")
                done += 1
        charged = self._phase.release.compositions
        if done != charged or self._phase.steps_done != charged:
            raise RuntimeError(f"DP-SGD ran {done} steps ({self._phase.steps_done} noised) but {charged} were charged")

    def private_gradient(self, loss: Callable[..., Any]) -> None:
        """Sets the model's gradients to the step's privatised real-data gradient: ``loss(model,
        *batch)`` (summed over the batch's rows) per sample, clipped, summed, noised by the ledger,
        divided by the expected batch size. Once per step."""
        if self._batch is None:
            raise RuntimeError("private_gradient is called once inside each step of steps()")
        batch = [t[self._batch].to(self._device) for t in self._tensors]
        self._batch = None
        self._optimiser.zero_grad(set_to_none=True)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_INPUTS_NEED_NO_GRADIENT)
            loss(self.model, *batch).backward()
        self._optimiser.pre_step()  # clip per sample, sum, add the ledger's noise: p.grad is now private
        for p in self.model.parameters():
            p.grad = p.grad / self._expected_batch

    @contextlib.contextmanager
    def public(self) -> Iterator[Any]:
        """Per-sample hooks off, for losses of public inputs (generated rows): their gradients
        accumulate onto the private one as post-processing, never clipped with or charged as real
        rows (Opacus' old DCGAN example double-charged them, opacus#418)."""
        self.model.disable_hooks()
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=_INPUTS_NEED_NO_GRADIENT)
                yield self.model
        finally:
            self.model.enable_hooks()

    def optimiser_step(self) -> None:
        self._optimiser.original_optimizer.step()

    def _add_noise_through_the_ledger(self, noise_rng: Any) -> Callable[[], None]:
        from opacus.optimizers.optimizer import _mark_as_processed

        def add_noise() -> None:
            params = self._optimiser.params
            noisy = self._phase.privatise([p.summed_grad for p in params], noise_rng)
            for p, grad in zip(params, noisy):
                p.grad = grad.view_as(p)
                _mark_as_processed(p.summed_grad)

        return add_noise
