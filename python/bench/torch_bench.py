"""baton vs gloo inside torch.distributed, in one run.

    PYTHONPATH=build/python build/bin/baton-run --nodes 2 --ranks-per-node 2 -- \
        python3 python/bench/torch_bench.py [--sizes 4K,1M,16M] [--reps 10] [--steps 20]

Both backends live in the same processes (the default group is baton, a
second group is gloo) and are measured alternately, so the machine's noise
hits both alike. Reports medians; rank 0 prints the table. Results are
checked: every allreduce's value is compared with the expected sum.
"""

import argparse
import datetime
import statistics
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import baton_torch  # noqa: F401


def parse_size(s):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * units[s[-1]] if s[-1] in units else int(s)


def time_allreduce(group, nbytes, reps, world):
    t = torch.ones(nbytes // 4, dtype=torch.float32)
    dist.all_reduce(t, group=group)  # warm-up
    samples = []
    for _ in range(reps):
        t.fill_(1.0)
        dist.barrier(group=group)
        start = time.perf_counter()
        dist.all_reduce(t, group=group)
        samples.append(time.perf_counter() - start)
        if not torch.all(t == world):
            raise RuntimeError(f"allreduce of {nbytes} bytes gave a wrong result")
    return statistics.median(samples)


def make_model():
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(1024, 1024), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers, torch.nn.Linear(1024, 10))


def time_ddp(group, steps, rank):
    torch.manual_seed(0)
    model = DDP(make_model(), process_group=group)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(rank)
    x, y = torch.randn(32, 1024, generator=g), torch.randint(0, 10, (32,), generator=g)
    samples = []
    for step in range(steps + 2):
        dist.barrier(group=group)
        start = time.perf_counter()
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        if step >= 2:  # the first steps build buckets
            samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4K,64K,1M,16M,64M")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()

    dist.init_process_group(backend="baton", timeout=datetime.timedelta(seconds=600))
    rank, world = dist.get_rank(), dist.get_world_size()
    groups = {"baton": dist.group.WORLD, "gloo": dist.new_group(backend="gloo")}

    rows = []
    for size in [parse_size(s) for s in args.sizes.split(",")]:
        times = {name: time_allreduce(g, size, args.reps, world) for name, g in groups.items()}
        rows.append((size, times))
    ddp = {name: time_ddp(g, args.steps, rank) for name, g in groups.items()}

    if rank == 0:
        factor = 2 * (world - 1) / world
        print(f"# torch.distributed all_reduce, float32 sum, {world} ranks, median of {args.reps}")
        print(f"# {'bytes':>10} {'baton us':>10} {'baton busbw':>12} {'gloo us':>10} {'gloo busbw':>11} "
              f"{'gloo/baton':>10}")
        for size, t in rows:
            bw = {n: factor * size / t[n] / 1e9 for n in t}
            print(f"  {size:>10} {t['baton'] * 1e6:>10.1f} {bw['baton']:>10.2f}GB/s {t['gloo'] * 1e6:>10.1f} "
                  f"{bw['gloo']:>9.2f}GB/s {t['gloo'] / t['baton']:>10.2f}")
        params = sum(p.numel() for p in make_model().parameters())
        print(f"# DDP step (MLP, {params / 1e6:.1f}M parameters, batch 32), median of {args.steps}")
        print(f"  baton {ddp['baton'] * 1e3:.1f} ms   gloo {ddp['gloo'] * 1e3:.1f} ms   "
              f"gloo/baton {ddp['gloo'] / ddp['baton']:.2f}")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
