#include "common/byte_size.h"

#include <cstdlib>

namespace baton {

bool ParseByteSize(const std::string& text, uint64_t* out) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || v < 0) return false;
  const std::string suffix(end);
  double mult = 1;
  if (suffix == "K" || suffix == "k") mult = 1024;
  else if (suffix == "M" || suffix == "m") mult = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "g") mult = 1024.0 * 1024 * 1024;
  else if (!suffix.empty()) return false;
  *out = static_cast<uint64_t>(v * mult);
  return true;
}

}  // namespace baton
