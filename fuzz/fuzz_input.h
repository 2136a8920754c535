// Reads typed values off the front of a fuzzer's input (zeros once it runs
// out), so that every byte string is a valid test case.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace baton::fuzz {

class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  template <typename T>
  T Take() {
    T value{};
    const size_t n = sizeof(T) < size_ ? sizeof(T) : size_;
    std::memcpy(&value, data_, n);
    data_ += n;
    size_ -= n;
    return value;
  }
  // Up to `max` bytes, the length taken from the input first.
  std::string String(size_t max) {
    size_t n = Take<uint16_t>() % (max + 1);
    if (n > size_) n = size_;
    std::string s(reinterpret_cast<const char*>(data_), n);
    data_ += n;
    size_ -= n;
    return s;
  }
  std::string Rest() {
    std::string s(reinterpret_cast<const char*>(data_), size_);
    size_ = 0;
    return s;
  }
  size_t left() const { return size_; }

 private:
  const uint8_t* data_;
  size_t size_;
};

}  // namespace baton::fuzz
