"""DDP trains the same model with backend "baton" and backend "gloo".

Run as every rank of a job (4 ranks: 2 simulated nodes x 2):
    PYTHONPATH=build/python baton-run --nodes 2 --ranks-per-node 2 -- \
        python3 tests/python/ddp_test.py
One process group of each backend lives in the same processes. Both
replicas start from the same weights, see the same batches and use the same
optimizer; after every step their parameters must agree within
ATOL + RTOL * |value| (the sums are associated differently, so they are
not bit-identical), and the baton replica must be identical on every rank.
"""

import copy
import datetime
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import baton_torch  # noqa: F401

STEPS = 12
ATOL = 1e-5
RTOL = 1e-4


def make_model():
    return torch.nn.Sequential(
        torch.nn.Linear(32, 64), torch.nn.ReLU(),
        torch.nn.Linear(64, 64), torch.nn.ReLU(),
        torch.nn.Linear(64, 8))


def main():
    dist.init_process_group(backend="baton", timeout=datetime.timedelta(seconds=120))
    rank, world = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    failures = []

    # Different weights on every rank: DDP's constructor must broadcast rank 0's.
    torch.manual_seed(100 + rank)
    base = make_model()
    ddp_baton = DDP(copy.deepcopy(base), bucket_cap_mb=0.005)  # several buckets
    ddp_gloo = DDP(copy.deepcopy(base), process_group=gloo, bucket_cap_mb=0.005)
    torch.manual_seed(100)
    rank0 = make_model()
    for (name, p), q in zip(ddp_baton.module.named_parameters(), rank0.parameters()):
        if not torch.equal(p, q):
            failures.append(f"after DDP construction, {name} is not rank 0's")

    opts = [torch.optim.SGD(d.parameters(), lr=0.05, momentum=0.9) for d in (ddp_baton, ddp_gloo)]
    worst = 0.0
    for step in range(STEPS):
        g = torch.Generator().manual_seed(1000 * step + rank)
        x = torch.randn(16, 32, generator=g)
        y = torch.randn(16, 8, generator=g)
        for ddp, opt in zip((ddp_baton, ddp_gloo), opts):
            opt.zero_grad()
            torch.nn.functional.mse_loss(ddp(x), y).backward()
            opt.step()
        for (name, a), b in zip(ddp_baton.module.named_parameters(), ddp_gloo.module.parameters()):
            diff = (a - b).abs()
            worst = max(worst, diff.max().item())
            if not torch.allclose(a, b, atol=ATOL, rtol=RTOL):
                failures.append(f"step {step}: {name} differs from gloo's by up to {diff.max().item():.3g}")
        # Replicas agree exactly across ranks (checked over gloo).
        flat = torch.cat([p.detach().reshape(-1) for p in ddp_baton.module.parameters()])
        ref = flat.clone()
        dist.broadcast(ref, src=0, group=gloo)
        if not torch.equal(flat, ref):
            failures.append(f"step {step}: rank {rank}'s baton replica differs from rank 0's")
    print(f"{STEPS} DDP steps on {world} ranks: largest baton-gloo parameter difference {worst:.3g}", flush=True)
    for f in failures:
        print(f"FAIL rank {rank}: {f}", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
