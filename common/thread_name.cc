#include "common/thread_name.h"

#include <pthread.h>

#include <string>

namespace baton {

void NameThisThread(std::string_view name) {
  constexpr size_t kMaxName = 15;  // TASK_COMM_LEN less the terminating NUL
  const std::string cut(name.substr(0, kMaxName));
  ::pthread_setname_np(::pthread_self(), cut.c_str());
}

}  // namespace baton
