// DeviceSteps: a single-node schedule run on the ranks' GPU memory.
//
// Within one node a schedule is only local steps (copy, reduce, divide).
// When every rank's buffers are GPU memory, those same steps can run on the
// GPUs instead of on staged host copies: the schedule, its order of
// operations and so its results (bit for bit, the kernels having the host
// kernels' semantics) stay the ones the host path has; only the memory and
// the engine change.
//
// Each step runs on a stream of the GPU that holds its destination (a
// reduction kernel there reads the source through peer access; a copy goes
// through the copy engines). One stream per GPU keeps that GPU's steps in
// schedule order. A step that touches memory an earlier step on another GPU
// wrote or read (or writes memory it read) waits for it (a CUDA event), so
// the whole runs with the effect of running the steps one after another,
// while steps on different GPUs without such a conflict run at once: the
// folds of a ReduceScatter, for example, one per GPU.
//
// This file is the plan: pure logic, no CUDA, tested on any machine
// (tests/device_steps_test.cc). gpu/step_runner.h runs it.
#pragma once

#include <cstdint>
#include <vector>

#include "collectives/schedule.h"
#include "common/status.h"

namespace baton {

// One local rank's buffers in GPU memory (pointers in this process), with
// the device that holds each. A buffer of zero bytes may be null.
struct DeviceRankBuffers {
  uint8_t* send = nullptr;
  uint64_t send_bytes = 0;
  int send_device = -1;
  uint8_t* recv = nullptr;
  uint64_t recv_bytes = 0;
  int recv_device = -1;
};

// Folds into one destination fused into one step (see PlanDeviceSteps): at
// most this many operands, the first included.
inline constexpr size_t kMaxFusedOperands = 16;

struct DeviceStep {
  StepKind kind = StepKind::kCopy;  // kCopy, kReduce or kDivide
  const uint8_t* src = nullptr;     // null for kDivide
  uint8_t* dst = nullptr;
  uint64_t bytes = 0;
  uint64_t divisor = 0;             // kDivide
  int device = -1;                  // the GPU holding dst: the step runs on its stream
  std::vector<uint32_t> waits;      // earlier steps, on other GPUs, that must finish first
  bool signals = false;             // a later step on another GPU waits for this one
  // A kReduce fused from a chain of the schedule's steps into dst: `more`
  // are folded in after src, in order, and with `from_src` the chain began
  // with a copy of src into dst (dst = src op more[0] op ...) rather than
  // with dst's own contents (dst = dst op src op more[0] op ...). Empty:
  // dst = dst op src.
  std::vector<const uint8_t*> more;
  bool from_src = false;
};

// The operands a kReduce step folds into its destination, in order: dst
// itself first unless from_src, then src, then `more`.
std::vector<const uint8_t*> FoldOperands(const DeviceStep& step);

// A range of the scratch space in one GPU's memory: scratch offsets
// [offset, offset + bytes) lie at `ptr` on `device`.
struct ScratchPiece {
  uint64_t offset = 0;
  uint64_t bytes = 0;
  uint8_t* ptr = nullptr;
  int device = -1;
};

struct DeviceMemory {
  const std::vector<DeviceRankBuffers>* buffers = nullptr;  // indexed by global rank; local ranks filled
  // The scratch space: pieces in offset order that cover it from 0, at
  // least the schedule's scratch_bytes. Usually one, on one GPU; a fold
  // spread over the GPUs (spread_scratch_fold.h) gives each GPU the piece
  // it folds. A step's region lies within one piece.
  std::vector<ScratchPiece> scratch;
};

// The end of what `pieces` cover from offset 0 without a gap.
uint64_t ScratchCovered(const std::vector<ScratchPiece>& pieces);

// Resolves `schedule`'s steps onto `memory` and orders them across GPUs.
// Fails with kInvalidArgument, leaving the collective to the host path, for
// a schedule this cannot run exactly as the host would: a network step, a
// region outside its buffer, or a copy or reduction whose source and
// destination partly overlap (the host runs those in memmove's order; a
// kernel's threads have none).
//
// A chain of steps into one destination (a copy or a fold, then folds of
// the same region, one after another in the schedule: how every fold of
// several ranks' inputs is written) becomes one step, whose kernel reads
// every operand once and writes the destination once, combining element by
// element in the chain's order, so the result is the same bits: for a
// copy and n-1 folds, n+1 passes over memory and one launch instead of
// 2+3(n-1) passes and n launches (up to kMaxFusedOperands operands a step;
// longer chains take several). A fold whose source overlaps the
// destination ends a chain.
Status PlanDeviceSteps(const Schedule& schedule, const DeviceMemory& memory, std::vector<DeviceStep>* out);

// The GPUs `steps` run on, each once, in order of first use.
std::vector<int> DevicesOf(const std::vector<DeviceStep>& steps);

}  // namespace baton
