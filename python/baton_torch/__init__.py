"""Baton's torch.distributed backend.

    import baton_torch  # registers the backend
    torch.distributed.init_process_group(backend="baton")

Every process group gets its own Baton communicator. Rank 0 of the group
chooses the job id, communicator name, rendezvous address and job secret and
publishes them in torch's store; the other ranks read them from there. Under
baton-run the job id, secret and rendezvous come from BATON_* variables
instead (and the secret never enters the store). See docs/pytorch.md.
"""

import inspect
import os
import secrets

import torch.distributed as dist

from . import _C

ProcessGroupBaton = _C.ProcessGroupBaton

__all__ = ["ProcessGroupBaton", "daemon_rendezvous"]

_CONFIG_KEY = "baton/config"


def daemon_rendezvous():
    """host:port of the local batond's rendezvous service."""
    return _C.daemon_rendezvous()


def _create_process_group(store, rank, world_size, timeout):
    """Called by torch.distributed for backend="baton", once per group."""
    env_secret = os.environ.get("BATON_JOB_SECRET", "")
    if rank == 0:
        job = os.environ.get("BATON_JOB_ID") or "torch-" + secrets.token_hex(8)
        rendezvous = os.environ.get("BATON_RENDEZVOUS") or _C.daemon_rendezvous()
        name = "pg-" + secrets.token_hex(8)
        # A secret from the environment stays out of the store (which is not
        # authenticated); otherwise the store carries a fresh one.
        secret = "" if env_secret else secrets.token_hex(16)
        store.set(_CONFIG_KEY, "\n".join([job, name, rendezvous, secret]))
    job, name, rendezvous, secret = store.get(_CONFIG_KEY).decode().split("\n")
    return ProcessGroupBaton(
        rank=rank,
        size=world_size,
        job_id=job,
        comm_name=name,
        rendezvous=rendezvous,
        secret=secret or env_secret,
        daemon_socket="",
        timeout=timeout,
    )


# torch 2.x asks which devices a backend serves; 1.13 has no such argument.
# One group serves both (docs/pytorch.md, "CUDA tensors").
if "devices" in inspect.signature(dist.Backend.register_backend).parameters:
    dist.Backend.register_backend(
        "baton", _create_process_group, devices=["cpu", "cuda"] if _C.has_cuda else ["cpu"]
    )
else:
    dist.Backend.register_backend("baton", _create_process_group)
