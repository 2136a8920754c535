"""What the PyTorch backend's test scripts share: rank-derived inputs, a
torch reference for every reduction, and element-by-element checks that
record each failure instead of stopping at the first (every rank must go on
calling collectives, or the others hang).
"""

import torch
import torch.distributed as dist

FAILURES = []


def check(name, got, expected):
    """Element-by-element equality, on the host; records the first difference."""
    got = got.cpu()
    expected = expected.cpu()
    if got.dtype != expected.dtype or got.shape != expected.shape:
        FAILURES.append(f"{name}: got {got.dtype}{tuple(got.shape)}, expected {expected.dtype}{tuple(expected.shape)}")
        return
    diff = (got != expected).reshape(-1).nonzero()
    if diff.numel() > 0:
        i = diff[0].item()
        FAILURES.append(f"{name}: {diff.numel()} wrong elements, first at {i}: got {got.reshape(-1)[i].item()}, "
                        f"expected {expected.reshape(-1)[i].item()}")


def expect_error(name, fn, *fragments):
    """fn() must raise RuntimeError whose message has every fragment; returns the message."""
    try:
        fn()
    except RuntimeError as e:
        msg = str(e)
        missing = [f for f in fragments if f not in msg]
        if missing:
            FAILURES.append(f"{name}: error message lacks {missing}: {msg}")
        return msg
    FAILURES.append(f"{name}: no error raised")
    return None


def data(rank, n, dtype, salt=0):
    """Rank `rank`'s input, on the host: small integers, exact in every dtype and sum."""
    v = (torch.arange(n, dtype=torch.int64) * (rank + 3 + salt) + rank) % 5 + 1
    return v.to(dtype)


def reference(op, tensors):
    """The reduction of `tensors` by `op`, computed in float64 and cast back."""
    stack = torch.stack([t.to(torch.float64) for t in tensors])
    reductions = {dist.ReduceOp.SUM: lambda: stack.sum(0), dist.ReduceOp.PRODUCT: lambda: stack.prod(0),
                  dist.ReduceOp.MIN: lambda: stack.min(0).values, dist.ReduceOp.MAX: lambda: stack.max(0).values}
    if op not in reductions:
        raise ValueError(op)
    return reductions[op]().to(tensors[0].dtype)


def run_tests(tests, rank, after_each=lambda: None):
    """Runs each test, prints ok/FAILED per test and every failure; returns the exit status."""
    for test in tests:
        before = len(FAILURES)
        test()
        after_each()
        print(f"{test.__name__}: {'ok' if len(FAILURES) == before else 'FAILED'}", flush=True)
    for f in FAILURES:
        print(f"FAIL rank {rank}: {f}", flush=True)
    return 1 if FAILURES else 0
