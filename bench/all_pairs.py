"""One round's all-pairs work at 20 clients with LeNet-5: batched vs the per-pair loop.

Run ``python bench/all_pairs.py [--device cuda] [--repeats N] [--reference]``; prints, for
Federated-Clustering's gradient table and CoBo's midpoint inner products, the best seconds
of each path, their ratio and the largest difference of the outputs
(:mod:`learning.benchmarks.all_pairs`). ``--reference`` also times the table's arithmetic
as one plain ``nn.Module`` at several batch sizes (CPU), what plain PyTorch does at best.
"""

from __future__ import annotations

import argparse

from learning.benchmarks.all_pairs import measure_all_pairs, single_model_reference


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--reference", action="store_true", help="one model, same arithmetic")
    args = parser.parse_args()
    for method in ("fc", "cobo"):
        r = measure_all_pairs(
            method=method, clients=args.clients, repeats=args.repeats, device=args.device
        )
        print(
            f"{method:5s} {r.clients} clients {r.model} batch {r.batch_size} on {r.device} "
            f"({r.threads} threads): batched {r.batched_s:.3f} s, loop {r.loop_s:.3f} s, "
            f"ratio {r.ratio:.2f}x, max difference {r.max_difference:.2e}"
        )
    if args.reference:
        n = args.clients**2 * 32
        for size, seconds in single_model_reference(
            clients=args.clients, batch_sizes=(32, 640, n), repeats=args.repeats
        ).items():
            print(f"one lenet5 on {n} examples in batches of {size}: {seconds:.3f} s")


if __name__ == "__main__":
    main()
