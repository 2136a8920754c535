// Python bindings: baton_torch._C.ProcessGroupBaton (a subclass of torch's
// ProcessGroup type), whether it takes CUDA tensors, and the daemon's
// rendezvous address.
#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>
#include <torch/csrc/utils/pybind.h>

#include <array>

#include "cuda_stream.h"
#include "process_group_baton.h"

namespace py = pybind11;
using baton::torch_backend::GroupConfig;
using baton::torch_backend::ProcessGroupBaton;

namespace {

std::string DaemonRendezvous() {
  std::array<char, 512> buf{};
  const baton_result_t r = baton_get_daemon_rendezvous(buf.data(), buf.size());
  if (r != baton_success) {
    throw std::runtime_error(std::string("baton: cannot ask the local batond for its rendezvous address: ") +
                             baton_get_last_error(nullptr));
  }
  return buf.data();
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "Baton's torch.distributed backend (C++ part)";
  const py::object base =
      py::module::import(baton::torch_backend::kPythonBaseModule).attr(baton::torch_backend::kPythonBaseName);
  py::class_<ProcessGroupBaton, c10::intrusive_ptr<ProcessGroupBaton>>(m, "ProcessGroupBaton", base)
      .def(py::init([](int rank, int size, const std::string& job_id, const std::string& comm_name,
                       const std::string& rendezvous, const std::string& secret, const std::string& daemon_socket,
                       std::chrono::milliseconds timeout) {
             GroupConfig c{job_id, comm_name, rendezvous, secret, daemon_socket, timeout};
             return c10::make_intrusive<ProcessGroupBaton>(rank, size, c);
           }),
           py::arg("rank"), py::arg("size"), py::arg("job_id"), py::arg("comm_name"), py::arg("rendezvous"),
           py::arg("secret"), py::arg("daemon_socket"), py::arg("timeout"),
           py::call_guard<py::gil_scoped_release>());
  m.attr("has_cuda") = baton::torch_backend::BuiltWithCuda();
  m.def("daemon_rendezvous", &DaemonRendezvous,
        "host:port of the local batond's rendezvous service (BATON_SOCKET or the default socket)");
}
