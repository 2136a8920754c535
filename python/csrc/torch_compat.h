// The one place that knows which torch version the backend is built for.
//
// torch 1.13 (Debian 12) lets a plugin backend subclass c10d::ProcessGroup
// and calls its creator with (store, rank, size, timeout). torch 2.x split
// that class: plugin backends subclass c10d::Backend (Backend.hpp), whose
// collective signatures are the same, and the creator may also receive the
// device list. Only the base class, its constructor and the Python base
// type differ, so they are chosen here; see docs/pytorch.md.
#ifndef BATON_PYTHON_CSRC_TORCH_COMPAT_H_
#define BATON_PYTHON_CSRC_TORCH_COMPAT_H_

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#if defined(BATON_TORCH_2)
#include <torch/csrc/distributed/c10d/Backend.hpp>
#endif

namespace baton::torch_backend {

#if defined(BATON_TORCH_2)
using ProcessGroupBase = c10d::Backend;
// The Python type the extension's class derives from.
inline constexpr const char* kPythonBaseModule = "torch._C._distributed_c10d";
inline constexpr const char* kPythonBaseName = "Backend";
#else
using ProcessGroupBase = c10d::ProcessGroup;
inline constexpr const char* kPythonBaseModule = "torch.distributed";
inline constexpr const char* kPythonBaseName = "ProcessGroup";
#endif

}  // namespace baton::torch_backend

#endif  // BATON_PYTHON_CSRC_TORCH_COMPAT_H_
