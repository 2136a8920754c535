"""CUDA tensors through the baton backend, checked element by element.

Run as every rank of a job on a machine with a GPU and a backend built
against a torch with CUDA (docs/pytorch.md, "CUDA tensors"):
    PYTHONPATH=build/python baton-run --nodes 1 --ranks-per-node 2 -- \
        python3 tests/python/cuda_test.py
All ranks may share one GPU. `--check` only says whether this machine can
run the test: exit status 77 (with the reason) when it cannot.

Covers every op on CUDA tensors against a reference computed on the host,
host and CUDA collectives mixed on one group (the seed article's NCCL
deadlock, which must not happen here), the stream-ordering contract (a slow
kernel writes the input just before the collective on the same side stream,
another reads the result right after it), and the Work and future of an
async_op as NCCL's behave: wait() orders the caller's stream, never the host.
"""

import datetime
import os
import sys

import torch
import torch.distributed as dist

from checks import FAILURES, check, data, expect_error, reference, run_tests

RANK = 0
WORLD = 1
DEVICE = None


def on_gpu(t):
    return t.to(DEVICE)


def everyone(n, dtype, salt=0):
    return [data(r, n, dtype, salt) for r in range(WORLD)]


def test_allreduce():
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.float64, torch.int64):
        for op in (dist.ReduceOp.SUM, dist.ReduceOp.MIN, dist.ReduceOp.MAX):
            for n in (1, 33, 70000, 1 << 20):
                t = on_gpu(data(RANK, n, dtype))
                dist.all_reduce(t, op=op)
                check(f"allreduce {op} {dtype} n={n}", t, reference(op, everyone(n, dtype)))
    t = on_gpu(data(RANK, 1000, torch.float32))
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    mean = torch.stack(everyone(1000, torch.float64)).mean(0).to(torch.float32)
    if not torch.allclose(t.cpu(), mean, rtol=1e-6, atol=0):
        FAILURES.append("allreduce AVG float32 differs from the mean")
    # Non-contiguous: a column of a matrix; the rest untouched.
    m = torch.full((50, 3), -1.0, device=DEVICE)
    m[:, 1] = on_gpu(data(RANK, 50, torch.float32))
    dist.all_reduce(m[:, 1])
    check("allreduce non-contiguous", m[:, 1], reference(dist.ReduceOp.SUM, everyone(50, torch.float32)))
    check("allreduce non-contiguous leaves the rest", m[:, [0, 2]], torch.full((50, 2), -1.0))
    a, b = on_gpu(data(RANK, 10, torch.float32)), on_gpu(data(RANK, 7, torch.float32, 1).reshape(7, 1))
    dist.all_reduce_coalesced([a, b])
    check("allreduce_coalesced a", a, reference(dist.ReduceOp.SUM, everyone(10, torch.float32)))
    check("allreduce_coalesced b", b, reference(dist.ReduceOp.SUM, everyone(7, torch.float32, 1)).reshape(7, 1))


def test_broadcast_reduce():
    for root in range(WORLD):
        t = on_gpu(data(RANK, 4097, torch.float32) if RANK == root else torch.zeros(4097))
        dist.broadcast(t, src=root)
        check(f"broadcast root={root}", t, data(root, 4097, torch.float32))
        t = on_gpu(data(RANK, 300, torch.int32))
        dist.reduce(t, dst=root, op=dist.ReduceOp.MAX)
        if RANK == root:
            check(f"reduce root={root}", t, reference(dist.ReduceOp.MAX, everyone(300, torch.int32)))


def test_gathers_and_scatters():
    out = [torch.zeros(11, device=DEVICE) for _ in range(WORLD)]
    dist.all_gather(out, on_gpu(data(RANK, 11, torch.float32)))
    for r in range(WORLD):
        check(f"allgather from {r}", out[r], data(r, 11, torch.float32))
    flat = torch.zeros(WORLD * 5, device=DEVICE)
    dist.all_gather_into_tensor(flat, on_gpu(data(RANK, 5, torch.float32)))
    check("all_gather_into_tensor", flat, torch.cat(everyone(5, torch.float32)))
    root = WORLD - 1
    mine = on_gpu(data(RANK, 9, torch.float32))
    if RANK == root:
        got = [torch.zeros(9, device=DEVICE) for _ in range(WORLD)]
        dist.gather(mine, gather_list=got, dst=root)
        for r in range(WORLD):
            check(f"gather from {r}", got[r], data(r, 9, torch.float32))
    else:
        dist.gather(mine, dst=root)
    got = torch.zeros(6, dtype=torch.int64, device=DEVICE)
    if RANK == 0:
        dist.scatter(got, scatter_list=[on_gpu(data(r, 6, torch.int64, 2)) for r in range(WORLD)], src=0)
    else:
        dist.scatter(got, src=0)
    check("scatter", got, data(RANK, 6, torch.int64, 2))
    n = 13
    out = torch.zeros(n, device=DEVICE)
    dist.reduce_scatter(out, [on_gpu(data(RANK, n, torch.float32, salt=b)) for b in range(WORLD)])
    check("reduce_scatter", out, reference(dist.ReduceOp.SUM, everyone(n, torch.float32, salt=RANK)))
    out = torch.zeros(n, dtype=torch.int64, device=DEVICE)
    dist.reduce_scatter_tensor(out, on_gpu(torch.cat([data(RANK, n, torch.int64, salt=b) for b in range(WORLD)])),
                               op=dist.ReduceOp.MIN)
    check("reduce_scatter_tensor min", out, reference(dist.ReduceOp.MIN, everyone(n, torch.int64, salt=RANK)))


def block(src, dst, rows):
    return torch.full((rows, 2), 100.0 * src + dst)


def test_alltoall_and_p2p():
    out = torch.zeros(3 * WORLD, 2, device=DEVICE)
    dist.all_to_all_single(out, on_gpu(torch.cat([block(RANK, d, 3) for d in range(WORLD)])))
    check("all_to_all_single", out, torch.cat([block(s, RANK, 3) for s in range(WORLD)]))
    rows = lambda s, d: (s + d) % 3  # noqa: E731
    out = torch.zeros(sum(rows(s, RANK) for s in range(WORLD)), 2, device=DEVICE)
    dist.all_to_all_single(out, on_gpu(torch.cat([block(RANK, d, rows(RANK, d)) for d in range(WORLD)])),
                           output_split_sizes=[rows(s, RANK) for s in range(WORLD)],
                           input_split_sizes=[rows(RANK, d) for d in range(WORLD)])
    check("all_to_all_single uneven", out, torch.cat([block(s, RANK, rows(s, RANK)) for s in range(WORLD)]))
    outs = [torch.zeros(rows(s, RANK) + 1, 2, device=DEVICE) for s in range(WORLD)]
    dist.all_to_all(outs, [on_gpu(block(RANK, d, rows(RANK, d) + 1)) for d in range(WORLD)])
    for s in range(WORLD):
        check(f"all_to_all list from {s}", outs[s], block(s, RANK, rows(s, RANK) + 1))
    nxt, prv = (RANK + 1) % WORLD, (RANK - 1) % WORLD
    got = torch.zeros(1000, dtype=torch.float64, device=DEVICE)
    for r in [dist.isend(on_gpu(data(RANK, 1000, torch.float64)), nxt), dist.irecv(got, prv)]:
        r.wait()
    check("isend/irecv ring", got, data(prv, 1000, torch.float64))


def test_mixed_host_and_cuda():
    # One group, host and CUDA collectives in turn (NCCL would need two
    # groups, and a CPU tensor on the NCCL one deadlocks or fails).
    for i in range(3):
        h = data(RANK, 257, torch.float32, salt=i)
        d = on_gpu(data(RANK, 257, torch.float32, salt=i + 1))
        dist.all_reduce(h)
        dist.all_reduce(d)
        check(f"mixed round {i}: host", h, reference(dist.ReduceOp.SUM, everyone(257, torch.float32, i)))
        check(f"mixed round {i}: cuda", d, reference(dist.ReduceOp.SUM, everyone(257, torch.float32, i + 1)))
    expect_error("host and cuda tensors in one call",
                 lambda: dist.all_gather([torch.zeros(2) for _ in range(WORLD)], torch.zeros(2, device=DEVICE)),
                 "all tensors of one call must be on one device")


def test_stream_order():
    # On a side stream: a slow kernel, then the input written, then the
    # collective, then a kernel reading its result. Nothing synchronises in
    # between on the host; the result must include the write and the reader
    # must see the reduction.
    n = 1 << 20
    side = torch.cuda.Stream(device=DEVICE)
    with torch.cuda.stream(side):
        x = torch.zeros(n, device=DEVICE)
        torch.cuda._sleep(100_000_000)  # about 50 ms of GPU time before the input exists
        x.fill_(RANK + 1)
        dist.all_reduce(x)
        y = x * 10
    side.synchronize()
    check("stream order", y, torch.full((n,), 10.0 * sum(r + 1 for r in range(WORLD))))


def test_async_work_orders_the_waiting_stream():
    n = 1 << 18
    x = on_gpu(data(RANK, n, torch.float32))
    work = dist.all_reduce(x, async_op=True)
    other = torch.cuda.Stream(device=DEVICE)
    with torch.cuda.stream(other):
        work.wait()  # the other stream waits; the host does not
        z = x + 0
    other.synchronize()
    check("work.wait orders another stream", z, reference(dist.ReduceOp.SUM, everyone(n, torch.float32)))
    torch.cuda.synchronize(DEVICE)
    if not work.is_completed():
        FAILURES.append("async allreduce: not completed after the device synchronised")
    fut = dist.all_reduce(torch.ones(4, device=DEVICE), async_op=True).get_future()
    doubled = fut.then(lambda f: f.value()[0] * 2)
    check("future.then on a CUDA future", doubled.wait(), torch.full((4,), 2.0 * WORLD))


def can_run():
    """Why this machine cannot run the test, or None."""
    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    try:
        import baton_torch
    except ImportError as e:
        return f"cannot import baton_torch: {e}"
    if not baton_torch._C.has_cuda:
        return "this baton_torch was built against a torch without CUDA"
    return None


def main():
    global RANK, WORLD, DEVICE
    reason = can_run()
    if "--check" in sys.argv:
        if reason:
            print(f"cuda_test: skipped: {reason}")
            return 77
        return 0
    if reason:
        print(f"cuda_test: cannot run: {reason}", flush=True)
        return 1
    dist.init_process_group(backend="baton", timeout=datetime.timedelta(seconds=120))
    RANK, WORLD = dist.get_rank(), dist.get_world_size()
    DEVICE = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
    torch.cuda.set_device(DEVICE)
    tests = [test_allreduce, test_broadcast_reduce, test_gathers_and_scatters, test_alltoall_and_p2p,
             test_mixed_host_and_cuda, test_stream_order, test_async_work_orders_the_waiting_stream]
    status = run_tests(tests, RANK, after_each=lambda: torch.cuda.synchronize(DEVICE))
    dist.barrier()
    dist.destroy_process_group()
    return status


if __name__ == "__main__":
    sys.exit(main())
