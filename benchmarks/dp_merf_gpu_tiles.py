"""DP-MERF's training step on a GPU at several tile sizes (``methods.dp_merf.CUDA_TILE_ENTRIES``).

    DPBENCH_DATA_DIR=... PYTHONPATH=. python benchmarks/dp_merf_gpu_tiles.py [--dataset census]
        [--steps 20] [--tiles 18,22,25]

For a machine lent with a GPU. One fit per tile size (log2 of rows × D/2 entries), sound protocol,
paper profile, ε = 1, seed 0, stopped after ``--steps`` training steps: prints the mean step after
the first and the fit it extrapolates to (``method_rows.fit_seconds``). The CPU-tuned tiles
(2^18) leave the GPU waiting on launches; the sweep is what ``CUDA_TILE_ENTRIES`` rests on.
"""

from __future__ import annotations

import argparse
import json

import torch

import methods.dp_merf as dp_merf
from method_rows import fit_seconds  # this folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="census")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--tiles", default="18,22,25", help="log2 of the tile entries, comma-separated")
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.exit(2, "error: no CUDA device here; this sweep is for a machine with a GPU (or pass --device cpu)\n")
    for log2 in (int(t) for t in args.tiles.split(",")):
        entries = 1 << log2
        dp_merf.TILE_ENTRIES = dp_merf.CUDA_TILE_ENTRIES = entries
        step = fit_seconds("dp-merf", args.dataset, "sound", timed_steps=args.steps, per_step=True, device=args.device)
        fit = fit_seconds("dp-merf", args.dataset, "sound", timed_steps=args.steps, device=args.device)
        print(
            json.dumps(
                {
                    "dataset": args.dataset,
                    "device": args.device,
                    "tile_entries": f"2^{log2}",
                    "step_s": round(step, 5),
                    "fit_estimate_s": round(fit, 1),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
