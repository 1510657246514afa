// A replacement global operator new for tests of what an allocation failure leaves behind.
// Include it in exactly one source file of a test binary (it defines operator new and delete).
// Off unless a test arms it on its own thread: then the allocation `fail_in` from now throws
// bad_alloc, as does any of `fail_from` bytes or more; allocations of `count_from` bytes or more
// are counted in `counted`. Otherwise plain malloc / free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace gpuattn::testing::alloc_hook {
inline thread_local long fail_in = -1;
inline thread_local std::size_t fail_from = SIZE_MAX;
inline thread_local std::size_t count_from = SIZE_MAX;
inline thread_local long counted = 0;
}  // namespace gpuattn::testing::alloc_hook

void* operator new(std::size_t n) {
  namespace h = gpuattn::testing::alloc_hook;
  if (h::fail_in >= 0 && h::fail_in-- == 0) throw std::bad_alloc();
  if (n >= h::fail_from) throw std::bad_alloc();
  if (n >= h::count_from) ++h::counted;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
