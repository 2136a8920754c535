// Names the calling thread as `top -H`, `ps -L`, gdb and perf show it, so
// that an operator sees which of batond's threads is busy: batond-comm (a
// communicator's worker), batond-reduce, batond-gate, and so on
// (docs/architecture.md, "Threads in batond").
#pragma once

#include <string_view>

namespace baton {

// Linux keeps 15 bytes of a thread's name: a longer `name` is cut there.
void NameThisThread(std::string_view name);

}  // namespace baton
