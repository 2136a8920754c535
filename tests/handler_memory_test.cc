// HandlerMemory: one reusable block per chain of operations, the heap for
// anything else; and Asio really takes its operations from it.
#include <gtest/gtest.h>

#include "common/asio.h"
#include "transports/tcp/handler_memory.h"

namespace baton::tcp {
namespace {

TEST(HandlerMemory, ReusesItsBlockAndFallsBackToTheHeap) {
  HandlerMemory memory;
  HandlerAllocator<char> alloc(&memory);
  char* first = alloc.allocate(100);
  char* second = alloc.allocate(100);  // the block is taken: from the heap
  EXPECT_NE(first, second);
  alloc.deallocate(second, 100);
  alloc.deallocate(first, 100);
  EXPECT_EQ(alloc.allocate(100), first) << "the block is free again and reused";
  char* big = alloc.allocate(1 << 20);  // larger than the block: from the heap
  EXPECT_NE(big, first);
  big[(1 << 20) - 1] = 1;  // really that large (ASan checks it)
  alloc.deallocate(big, 1 << 20);
  alloc.deallocate(first, 100);
}

TEST(HandlerMemory, AsioAllocatesTheOperationsOfAChainFromIt) {
  boost::asio::io_context io;
  HandlerMemory memory;
  HandlerAllocator<char> alloc(&memory);
  char* block = alloc.allocate(16);
  alloc.deallocate(block, 16);
  int runs = 0;
  int taken = 0;  // times the next operation, once posted, held the block
  // A chain of posted handlers, each posting the next, as a lane's sends do.
  struct Step {
    boost::asio::io_context* io;
    HandlerMemory* memory;
    char* block;
    int* runs;
    int* taken;
    void operator()() {
      if (++*runs == 5) return;
      boost::asio::post(*io, WithMemory<Step>(memory, *this));
      HandlerAllocator<char> a(memory);
      char* p = a.allocate(16);
      *taken += p != block;
      a.deallocate(p, 16);
    }
  };
  boost::asio::post(io, WithMemory<Step>(&memory, Step{&io, &memory, block, &runs, &taken}));
  io.run();
  EXPECT_EQ(runs, 5);
  EXPECT_EQ(taken, 4) << "each posted operation lives in the chain's block";
  // And Asio gave it back at the end.
  EXPECT_EQ(alloc.allocate(16), block);
  alloc.deallocate(block, 16);
}

}  // namespace
}  // namespace baton::tcp
