// f(i) for i in [0, parts) on threads of their own (part 0 on the calling thread), shared by the
// CPU backend's loops: a part whose thread cannot be started runs on the calling thread, and
// every thread is joined before the first part's exception (in part order) is rethrown. (A
// vector of joinable threads destroyed by an exception called std::terminate.)
#pragma once

#include <exception>
#include <thread>
#include <vector>

namespace gpuattn::engine {

template <typename F>
void run_parts(int parts, const F& f) {
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(parts > 0 ? parts : 0));
  const auto run = [&](int i) {
    try {
      f(i);
    } catch (...) {
      errors[static_cast<std::size_t>(i)] = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (int i = 1; i < parts; ++i) {
    try {  // emplace_back's strong guarantee: a failure starts no thread
      pool.emplace_back(run, i);
    } catch (...) {
      run(i);
    }
  }
  if (parts > 0) run(0);
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace gpuattn::engine
