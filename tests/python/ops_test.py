"""Every op of the baton backend against a reference computed with torch.

Run as every rank of a job, e.g.
    PYTHONPATH=build/python baton-run --nodes 2 --ranks-per-node 2 -- \
        python3 tests/python/ops_test.py
Each rank derives every other rank's input from the rank number, computes
the expected result locally with torch, and compares element by element.
Exit status 0 only if every check passed.
"""

import datetime
import sys

import torch
import torch.distributed as dist

import baton_torch  # noqa: F401  (registers backend "baton")
from checks import FAILURES, check, data, expect_error, reference, run_tests

RANK = 0
WORLD = 1

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.int8,
          torch.uint8]


def test_allreduce():
    for dtype in DTYPES:
        for op in [dist.ReduceOp.SUM, dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN, dist.ReduceOp.MAX]:
            if op == dist.ReduceOp.PRODUCT and dtype in (torch.int8, torch.uint8, torch.float16, torch.bfloat16):
                continue  # 5**4 overflows them; the kernel is tested in the C++ suite
            for n in (1, 33, 70000):
                t = data(RANK, n, dtype)
                dist.all_reduce(t, op=op)
                check(f"allreduce {op} {dtype} n={n}", t, reference(op, [data(r, n, dtype) for r in range(WORLD)]))
    # AVG (float): the mean, computed in float64 and rounded once.
    t = data(RANK, 1000, torch.float32)
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    mean = torch.stack([data(r, 1000, torch.float64) for r in range(WORLD)]).mean(0).to(torch.float32)
    if not torch.allclose(t, mean, rtol=1e-6, atol=0):
        FAILURES.append("allreduce AVG float32 differs from the mean")
    # Non-contiguous: a column of a matrix; the rest of the matrix untouched.
    m = torch.full((50, 3), -1.0)
    m[:, 1] = data(RANK, 50, torch.float32)
    col = m[:, 1]
    assert not col.is_contiguous()
    dist.all_reduce(col)
    check("allreduce non-contiguous", m[:, 1], reference(dist.ReduceOp.SUM, [data(r, 50, torch.float32)
                                                                             for r in range(WORLD)]))
    check("allreduce non-contiguous leaves the rest", m[:, [0, 2]], torch.full((50, 2), -1.0))
    # Complex: torch passes it as float pairs.
    c = torch.complex(data(RANK, 20, torch.float32), data(RANK, 20, torch.float32, salt=1))
    dist.all_reduce(c)
    check("allreduce complex64", c, torch.complex(*[reference(dist.ReduceOp.SUM, [data(r, 20, torch.float32, s)
                                                                                   for r in range(WORLD)])
                                                    for s in (0, 1)]))
    # Empty tensor.
    e = torch.empty(0)
    dist.all_reduce(e)
    check("allreduce empty", e, torch.empty(0))


def test_allreduce_coalesced():
    a = data(RANK, 10, torch.float32)
    b = data(RANK, 7, torch.float32, salt=1).reshape(7, 1)
    dist.all_reduce_coalesced([a, b])
    check("allreduce_coalesced a", a, reference(dist.ReduceOp.SUM, [data(r, 10, torch.float32) for r in range(WORLD)]))
    check("allreduce_coalesced b", b, reference(dist.ReduceOp.SUM, [data(r, 7, torch.float32, 1).reshape(7, 1)
                                                                    for r in range(WORLD)]))


def test_broadcast_reduce():
    for root in range(WORLD):
        t = data(RANK, 4097, torch.float64) if RANK == root else torch.zeros(4097, dtype=torch.float64)
        dist.broadcast(t, src=root)
        check(f"broadcast root={root}", t, data(root, 4097, torch.float64))
        t = data(RANK, 300, torch.int32)
        dist.reduce(t, dst=root, op=dist.ReduceOp.MAX)
        if RANK == root:
            check(f"reduce root={root}", t, reference(dist.ReduceOp.MAX, [data(r, 300, torch.int32)
                                                                          for r in range(WORLD)]))
    # Non-contiguous broadcast target.
    m = torch.zeros(4, 6)
    if RANK == 1:
        m[:, 2] = torch.tensor([1.0, 2.0, 3.0, 4.0])
    dist.broadcast(m[:, 2], src=1)
    check("broadcast non-contiguous", m[:, 2], torch.tensor([1.0, 2.0, 3.0, 4.0]))


def test_allgather():
    for dtype in (torch.float32, torch.int64, torch.bool):
        mine = data(RANK, 11, torch.int64).to(dtype) if dtype != torch.bool else torch.tensor([RANK % 2 == 0] * 11)
        out = [torch.zeros(11, dtype=dtype) for _ in range(WORLD)]
        dist.all_gather(out, mine)
        for r in range(WORLD):
            want = data(r, 11, torch.int64).to(dtype) if dtype != torch.bool else torch.tensor([r % 2 == 0] * 11)
            check(f"allgather {dtype} from {r}", out[r], want)
    flat = torch.zeros(WORLD * 5, dtype=torch.float32)
    dist._all_gather_base(flat, data(RANK, 5, torch.float32))
    check("_allgather_base", flat, torch.cat([data(r, 5, torch.float32) for r in range(WORLD)]))
    objs = [None] * WORLD
    dist.all_gather_object(objs, {"rank": RANK, "name": f"r{RANK}" * (RANK + 1)})
    if objs != [{"rank": r, "name": f"r{r}" * (r + 1)} for r in range(WORLD)]:
        FAILURES.append(f"all_gather_object: {objs}")


def test_gather_scatter():
    root = WORLD - 1
    mine = data(RANK, 9, torch.float32)
    if RANK == root:
        out = [torch.zeros(9) for _ in range(WORLD)]
        dist.gather(mine, gather_list=out, dst=root)
        for r in range(WORLD):
            check(f"gather from {r}", out[r], data(r, 9, torch.float32))
    else:
        dist.gather(mine, dst=root)
    got = torch.zeros(6, dtype=torch.int64)
    if RANK == 0:
        dist.scatter(got, scatter_list=[data(r, 6, torch.int64, salt=2) for r in range(WORLD)], src=0)
    else:
        dist.scatter(got, src=0)
    check("scatter", got, data(RANK, 6, torch.int64, salt=2))
    objs = ["x" * 3, {"k": 1}] if RANK == 0 else [None, None]
    dist.broadcast_object_list(objs, src=0)
    if objs != ["xxx", {"k": 1}]:
        FAILURES.append(f"broadcast_object_list: {objs}")


def test_reduce_scatter():
    n = 13
    # Input for rank r's output block b: data(r, n, salt=b).
    inputs = [data(RANK, n, torch.float32, salt=b) for b in range(WORLD)]
    out = torch.zeros(n)
    dist.reduce_scatter(out, inputs)
    check("reduce_scatter", out, reference(dist.ReduceOp.SUM, [data(r, n, torch.float32, salt=RANK)
                                                                for r in range(WORLD)]))
    out = torch.zeros(n, dtype=torch.int64)
    dist._reduce_scatter_base(out, torch.cat([data(RANK, n, torch.int64, salt=b) for b in range(WORLD)]),
                              op=dist.ReduceOp.MIN)
    check("_reduce_scatter_base min", out, reference(dist.ReduceOp.MIN, [data(r, n, torch.int64, salt=RANK)
                                                                          for r in range(WORLD)]))


def block(src, dst, rows):
    """The rows rank src sends to rank dst: value 100*src + dst."""
    return torch.full((rows, 2), 100.0 * src + dst)


def test_alltoall():
    # Equal splits.
    inp = torch.cat([block(RANK, d, 3) for d in range(WORLD)])
    out = torch.zeros(3 * WORLD, 2)
    dist.all_to_all_single(out, inp)
    check("all_to_all_single", out, torch.cat([block(s, RANK, 3) for s in range(WORLD)]))
    # Uneven: src sends (src + dst) % 3 rows to dst (some zero).
    rows = lambda s, d: (s + d) % 3  # noqa: E731
    inp = torch.cat([block(RANK, d, rows(RANK, d)) for d in range(WORLD)])
    out = torch.zeros(sum(rows(s, RANK) for s in range(WORLD)), 2)
    dist.all_to_all_single(out, inp, output_split_sizes=[rows(s, RANK) for s in range(WORLD)],
                           input_split_sizes=[rows(RANK, d) for d in range(WORLD)])
    check("all_to_all_single uneven", out, torch.cat([block(s, RANK, rows(s, RANK)) for s in range(WORLD)]))
    # List form with different sizes per peer.
    outs = [torch.zeros(rows(s, RANK) + 1, 2) for s in range(WORLD)]
    dist.all_to_all(outs, [block(RANK, d, rows(RANK, d) + 1) for d in range(WORLD)])
    for s in range(WORLD):
        check(f"all_to_all list from {s}", outs[s], block(s, RANK, rows(s, RANK) + 1))


def test_send_recv():
    nxt, prv = (RANK + 1) % WORLD, (RANK - 1) % WORLD
    got = torch.zeros(1000, dtype=torch.float64)
    reqs = [dist.isend(data(RANK, 1000, torch.float64), nxt), dist.irecv(got, prv)]
    for r in reqs:
        r.wait()
    check("isend/irecv ring", got, data(prv, 1000, torch.float64))
    # Blocking, two messages in a row: matched in order.
    if RANK == 0:
        dist.send(torch.tensor([1, 2, 3]), 1)
        dist.send(torch.tensor([4, 5, 6]), 1)
    elif RANK == 1:
        a, b = torch.zeros(3, dtype=torch.int64), torch.zeros(3, dtype=torch.int64)
        dist.recv(a, 0)
        dist.recv(b, 0)
        check("recv order first", a, torch.tensor([1, 2, 3]))
        check("recv order second", b, torch.tensor([4, 5, 6]))
    expect_error("recv any source", lambda: dist.recv(torch.zeros(1)), "any source is not supported")


def test_async():
    t = data(RANK, 100000, torch.float32)
    work = dist.all_reduce(t, async_op=True)
    fut = work.get_future()
    value = fut.wait()
    if not work.is_completed():
        FAILURES.append("async allreduce: work not completed after its future")
    check("async allreduce (tensor)", t, reference(dist.ReduceOp.SUM, [data(r, 100000, torch.float32)
                                                                       for r in range(WORLD)]))
    check("async allreduce (future value)", value[0], t)
    chained = dist.all_reduce(torch.ones(4), async_op=True).get_future().then(lambda f: f.value()[0] * 2)
    check("future.then", chained.wait(), torch.full((4,), 2.0 * WORLD))
    dist.barrier()


def test_errors():
    expect_error("bitwise reduce", lambda: dist.all_reduce(torch.ones(2, dtype=torch.int32), op=dist.ReduceOp.BAND),
                 "not supported")
    expect_error("bool sum", lambda: dist.all_reduce(torch.ones(2, dtype=torch.bool)), "bool")
    expect_error("uint16-like type", lambda: dist.all_reduce(torch.ones(2, dtype=torch.int16)), "not supported")
    expect_error("allgather list size", lambda: dist.all_gather([torch.zeros(2)], torch.zeros(2)),
                 f"list of {WORLD} tensors")
    # Ranks calling different collectives: every rank gets the mismatch as
    # an exception. It fails that communicator, so it runs on its own group.
    group = dist.new_group(backend="baton")
    t = torch.ones(8)
    if RANK == 0:
        call = lambda: dist.broadcast(t, src=0, group=group)  # noqa: E731
    else:
        call = lambda: dist.all_reduce(t, group=group)  # noqa: E731
    expect_error("mismatched collectives", call, "mismatch", "baton")
    # Count mismatch on another group.
    group2 = dist.new_group(backend="baton")
    expect_error("mismatched counts", lambda: dist.all_reduce(torch.ones(8 + (RANK == 1)), group=group2),
                 "mismatch")


def test_timeout():
    # The group's timeout reaches Baton: rank 0 never calls, the others get
    # an exception naming it once 3 s have passed.
    group = dist.new_group(backend="baton", timeout=datetime.timedelta(seconds=3))
    if RANK != 0:
        msg = expect_error("timeout", lambda: dist.all_reduce(torch.ones(4), group=group), "rank 0")
        print(f"timeout message: {msg}", flush=True)


def test_subgroup():
    evens = dist.new_group(ranks=[r for r in range(WORLD) if r % 2 == 0], backend="baton")
    odds = dist.new_group(ranks=[r for r in range(WORLD) if r % 2 == 1], backend="baton")
    mine = evens if RANK % 2 == 0 else odds
    t = torch.tensor([float(RANK)])
    dist.all_reduce(t, group=mine)
    want = float(sum(r for r in range(WORLD) if r % 2 == RANK % 2))
    check("subgroup allreduce", t, torch.tensor([want]))


def main():
    global RANK, WORLD
    dist.init_process_group(backend="baton", timeout=datetime.timedelta(seconds=60))
    RANK, WORLD = dist.get_rank(), dist.get_world_size()
    tests = [test_allreduce, test_allreduce_coalesced, test_broadcast_reduce, test_allgather, test_gather_scatter,
             test_reduce_scatter, test_alltoall, test_send_recv, test_async, test_subgroup, test_errors,
             test_timeout]
    if "--quick" in sys.argv:
        tests = [test_allreduce_coalesced, test_broadcast_reduce, test_allgather, test_async]
    status = run_tests(tests, RANK)
    # Rank 0 hosts torch's store: it must not exit while others still use it.
    dist.barrier()
    dist.destroy_process_group()
    return status


if __name__ == "__main__":
    sys.exit(main())
