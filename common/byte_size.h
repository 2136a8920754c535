// Sizes as benchmarks take them on the command line: "8", "64K", "1.5M",
// "2G" (binary units; K/M/G in either case).
#pragma once

#include <cstdint>
#include <string>

namespace baton {

// False (and *out untouched) unless `text` is a non-negative number with an
// optional K, M or G suffix.
bool ParseByteSize(const std::string& text, uint64_t* out);

}  // namespace baton
