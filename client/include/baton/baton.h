/*
 * libbaton: the client library of Baton, a per-node collective
 * communication service. Names and semantics follow NCCL where they can.
 *
 * A process links libbaton, creates communicators (baton_comm_init*), and
 * calls collectives on host buffers. Buffers from baton_mem_alloc live in
 * shared memory that the local daemon (batond) reads and writes directly;
 * any other pointer works too and is staged through such memory.
 *
 * Every collective takes a `baton_request_t* request`:
 *   - NULL: the call blocks until the operation completed (or failed);
 *   - non-NULL: the call returns once the operation is queued; complete it
 *     with baton_wait or baton_test. Buffers must stay untouched until then.
 * Operations of one communicator complete in the order they were issued.
 *
 * GPU buffers (docs/gpu.md): a pointer to CUDA device memory (cudaMalloc,
 * or baton_mem_alloc_device) works in every collective; the daemon opens
 * the allocation once through CUDA IPC. With the calls above the device
 * data must be ready when the call is made (synchronise first). The
 * *_stream variants below instead order the operation on a CUDA stream,
 * as NCCL does, and never block the host.
 *
 * Errors: every function returns a baton_result_t; baton_get_last_error()
 * returns the message of the calling thread's last failure (which rank,
 * which node, which operation, and what to do).
 */
#ifndef BATON_BATON_H_
#define BATON_BATON_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BATON_VERSION_MAJOR 0
#define BATON_VERSION_MINOR 1
#define BATON_VERSION_PATCH 0

typedef enum {
  baton_success = 0,
  baton_invalid_argument = 1,   /* the call was wrong; fix the call */
  baton_system_error = 2,       /* an OS call failed */
  baton_internal_error = 3,     /* a bug in Baton; please report */
  baton_remote_error = 4,       /* another rank, node or daemon failed */
  baton_timeout = 5,            /* the operation did not complete in time */
  baton_mismatch = 6,           /* ranks called different collectives */
  baton_aborted = 7,            /* the communicator was aborted */
  baton_in_progress = 8,        /* baton_wait timed out; the operation goes on */
  baton_resource_exhausted = 9, /* a limit was reached (memory, in-flight operations) */
  baton_unavailable = 10,       /* the daemon cannot be reached */
  baton_permission_denied = 11  /* another user's job, refused by the daemon's policy */
} baton_result_t;

typedef enum {
  baton_int8 = 0, baton_uint8 = 1, baton_int32 = 2, baton_uint32 = 3, baton_int64 = 4, baton_uint64 = 5,
  baton_float16 = 6, baton_bfloat16 = 7, baton_float32 = 8, baton_float64 = 9
} baton_datatype_t;

typedef enum { baton_sum = 0, baton_prod = 1, baton_min = 2, baton_max = 3, baton_avg = 4 } baton_redop_t;

typedef struct baton_comm* baton_comm_t;
typedef void* baton_stream_t; /* a cudaStream_t (NULL: the legacy default stream) */
typedef struct baton_request* baton_request_t;

/* Communicator settings. Zero/NULL fields take the environment's value
 * (BATON_* variables, see docs/environment.md) or the default. */
typedef struct {
  const char* job_id;         /* BATON_JOB_ID */
  const char* name;           /* communicator name within the job; default "world" */
  const char* daemon_socket;  /* BATON_SOCKET; default /run/baton/batond.sock */
  const char* rendezvous;     /* BATON_RENDEZVOUS (host:port); default: the daemon's */
  const char* secret;         /* BATON_JOB_SECRET */
  const char* algorithm;      /* BATON_ALGO: auto, ring, hd, tree, rd, direct */
  double timeout_seconds;     /* BATON_TIMEOUT; default 300 */
} baton_config_t;

#define BATON_CONFIG_INITIALIZER {NULL, NULL, NULL, NULL, NULL, NULL, 0.0}
#define BATON_SPLIT_NOCOLOR (-1)

/* Creates rank `rank` of `nranks` in job `job_id`; returns when all ranks
 * have joined (collective over the job's processes). */
baton_result_t baton_comm_init(baton_comm_t* comm, const char* job_id, int nranks, int rank);
baton_result_t baton_comm_init_config(baton_comm_t* comm, int nranks, int rank, const baton_config_t* config);
/* Reads BATON_JOB_ID, BATON_WORLD_SIZE and BATON_RANK (set by baton-run). */
baton_result_t baton_comm_init_from_env(baton_comm_t* comm);
/* Collective over `comm`: ranks passing the same color form a new
 * communicator, ordered by key then by rank in `comm`. A negative color
 * (BATON_SPLIT_NOCOLOR) yields *newcomm == NULL. */
baton_result_t baton_comm_split(baton_comm_t comm, int color, int key, baton_comm_t* newcomm);
/* Leaves the communicator after its operations finished and frees it. */
baton_result_t baton_comm_destroy(baton_comm_t comm);
/* Fails the communicator on every rank (they get baton_aborted naming this
 * rank) and frees it. */
baton_result_t baton_comm_abort(baton_comm_t comm);
/* baton_success, or the error that failed an operation of this communicator. */
baton_result_t baton_comm_get_async_error(baton_comm_t comm, baton_result_t* error);
baton_result_t baton_comm_count(baton_comm_t comm, int* count);
baton_result_t baton_comm_user_rank(baton_comm_t comm, int* rank);

const char* baton_get_error_string(baton_result_t result);
/* The rendezvous address (host:port) of the daemon at BATON_SOCKET (or the
 * default socket): what the other ranks of a job must use as their
 * rendezvous when this rank's daemon hosts it. Launchers without baton-run
 * (e.g. torch's store) publish it from rank 0. */
baton_result_t baton_get_daemon_rendezvous(char* address, size_t size);
/* Message of the calling thread's last failed call ("" if none). */
const char* baton_get_last_error(baton_comm_t comm);

/* Shared memory the daemon can use without staging (fastest path).
 * baton_mem_alloc uses the daemon this process already talks to (or
 * BATON_SOCKET); baton_comm_mem_alloc the daemon serving `comm`. */
baton_result_t baton_mem_alloc(void** ptr, size_t size);
baton_result_t baton_comm_mem_alloc(baton_comm_t comm, void** ptr, size_t size);
/* Device memory on CUDA device `device` (this process's ordinal), from
 * cudaMalloc and registered with the daemon at once, so that the first
 * collective on it pays no registration. Free with baton_mem_free. The
 * comm_ form registers with the daemon serving `comm`, as above. */
baton_result_t baton_mem_alloc_device(void** ptr, size_t size, int device);
baton_result_t baton_comm_mem_alloc_device(baton_comm_t comm, void** ptr, size_t size, int device);
baton_result_t baton_mem_free(void* ptr);

/* Collectives. Counts are in elements. In-place: pass the same pointer
 * (AllReduce, Broadcast, Reduce, AllToAll), or the input at its place in
 * the output (AllGather/Gather: send == recv + rank*count; ReduceScatter/
 * Scatter: recv == send + rank*count). */
baton_result_t baton_allreduce(const void* sendbuf, void* recvbuf, size_t count, baton_datatype_t datatype,
                               baton_redop_t op, baton_comm_t comm, baton_request_t* request);
baton_result_t baton_broadcast(const void* sendbuf, void* recvbuf, size_t count, baton_datatype_t datatype, int root,
                               baton_comm_t comm, baton_request_t* request);
baton_result_t baton_reduce(const void* sendbuf, void* recvbuf, size_t count, baton_datatype_t datatype,
                            baton_redop_t op, int root, baton_comm_t comm, baton_request_t* request);
baton_result_t baton_allgather(const void* sendbuf, void* recvbuf, size_t sendcount, baton_datatype_t datatype,
                               baton_comm_t comm, baton_request_t* request);
baton_result_t baton_reducescatter(const void* sendbuf, void* recvbuf, size_t recvcount, baton_datatype_t datatype,
                                   baton_redop_t op, baton_comm_t comm, baton_request_t* request);
baton_result_t baton_scatter(const void* sendbuf, void* recvbuf, size_t recvcount, baton_datatype_t datatype, int root,
                             baton_comm_t comm, baton_request_t* request);
baton_result_t baton_gather(const void* sendbuf, void* recvbuf, size_t sendcount, baton_datatype_t datatype, int root,
                            baton_comm_t comm, baton_request_t* request);
/* `count` elements go to (and come from) each rank. */
baton_result_t baton_alltoall(const void* sendbuf, void* recvbuf, size_t count, baton_datatype_t datatype,
                              baton_comm_t comm, baton_request_t* request);
/* Point-to-point: matched by (sender, receiver) in issue order; counts and
 * types must agree. A send completes when its data left this process's
 * daemon, not when it was received. */
baton_result_t baton_send(const void* sendbuf, size_t count, baton_datatype_t datatype, int peer, baton_comm_t comm,
                          baton_request_t* request);
baton_result_t baton_recv(void* recvbuf, size_t count, baton_datatype_t datatype, int peer, baton_comm_t comm,
                          baton_request_t* request);
baton_result_t baton_barrier(baton_comm_t comm, baton_request_t* request);

/* Stream-ordered collectives (buffers in GPU memory, or from baton_mem_alloc).
 * The call returns at once; the operation is ordered on `stream`:
 *   - it reads its input only after all work queued on `stream` before the
 *     call has completed;
 *   - work queued on `stream` after the call starts only after the
 *     operation completed and its output is in place;
 *   - the host thread never waits.
 * Failures surface through baton_comm_get_async_error (the stream is
 * released either way; the output is then undefined). Operations of one
 * communicator, stream-ordered or not, still run in issue order. */
baton_result_t baton_allreduce_stream(const void* sendbuf, void* recvbuf, size_t count, baton_datatype_t datatype,
                                      baton_redop_t op, baton_comm_t comm, baton_stream_t stream);
baton_result_t baton_broadcast_stream(const void* sendbuf, void* recvbuf, size_t count, baton_datatype_t datatype,
                                      int root, baton_comm_t comm, baton_stream_t stream);
baton_result_t baton_reduce_stream(const void* sendbuf, void* recvbuf, size_t count, baton_datatype_t datatype,
                                   baton_redop_t op, int root, baton_comm_t comm, baton_stream_t stream);
baton_result_t baton_allgather_stream(const void* sendbuf, void* recvbuf, size_t sendcount,
                                      baton_datatype_t datatype, baton_comm_t comm, baton_stream_t stream);
baton_result_t baton_reducescatter_stream(const void* sendbuf, void* recvbuf, size_t recvcount,
                                          baton_datatype_t datatype, baton_redop_t op, baton_comm_t comm,
                                          baton_stream_t stream);
baton_result_t baton_scatter_stream(const void* sendbuf, void* recvbuf, size_t recvcount, baton_datatype_t datatype,
                                    int root, baton_comm_t comm, baton_stream_t stream);
baton_result_t baton_gather_stream(const void* sendbuf, void* recvbuf, size_t sendcount, baton_datatype_t datatype,
                                   int root, baton_comm_t comm, baton_stream_t stream);
baton_result_t baton_alltoall_stream(const void* sendbuf, void* recvbuf, size_t count, baton_datatype_t datatype,
                                     baton_comm_t comm, baton_stream_t stream);
baton_result_t baton_send_stream(const void* sendbuf, size_t count, baton_datatype_t datatype, int peer,
                                 baton_comm_t comm, baton_stream_t stream);
baton_result_t baton_recv_stream(void* recvbuf, size_t count, baton_datatype_t datatype, int peer, baton_comm_t comm,
                                 baton_stream_t stream);

/* Waits up to timeout_ms (negative: no limit). On completion (success or
 * failure) the request is released; on baton_in_progress it stays valid. */
baton_result_t baton_wait(baton_request_t request, int timeout_ms);
/* *done = 1 and the request is released when it completed; else *done = 0. */
baton_result_t baton_test(baton_request_t request, int* done);

/* Batches the operations issued between start and end into one submission
 * to the daemon. Blocking calls (request == NULL) inside a group complete
 * at baton_group_end, so a send and a receive between two ranks can be
 * issued from one thread without deadlock. Groups nest. */
baton_result_t baton_group_start(void);
baton_result_t baton_group_end(void);

#ifdef __cplusplus
}
#endif

#endif /* BATON_BATON_H_ */
