// Running one test of this binary again in a fresh process: for behaviour only a process's first
// library call shows (one-time setup), which the tests before it in this process have done.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace gpuattn::testing {

// The outcome of run_in_fresh_process: `ran` when the child exited on its own within the time
// limit, its exit status and everything it printed.
struct FreshRun {
  bool ran = false;
  int status = -1;
  std::string output;
  // Whether the child ran exactly one test and it passed (a filter that matched nothing, or a
  // test that skipped, does not count).
  bool passed_one() const {
    return ran && status == 0 && output.find("[  PASSED  ] 1 test.") != std::string::npos &&
           output.find("[  SKIPPED ]") == std::string::npos;
  }
};

// Runs this test binary with --gtest_filter=`filter`, this process's environment less gtest's
// variables (GTEST_SHARD_INDEX and the others: the child runs its test whatever shard this process
// is) plus `extra_env` ("NAME=value"), its output to a file under ::testing::TempDir(); killed
// after `timeout_s`.
inline FreshRun run_in_fresh_process(const std::string& filter,
                                     const std::vector<std::string>& extra_env,
                                     int timeout_s = 180) {
  FreshRun r;
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return r;
  exe[n] = 0;
  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, "GTEST_", 6) != 0) env_s.emplace_back(*e);
  }
  env_s.insert(env_s.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string flag = "--gtest_filter=" + filter;
  char* argv[] = {exe, flag.data(), nullptr};
  const std::string log = ::testing::TempDir() + "gpuattn-fresh-" + std::to_string(getpid()) + ".log";
  posix_spawn_file_actions_t io;
  posix_spawn_file_actions_init(&io);
  posix_spawn_file_actions_addopen(&io, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&io, 1, 2);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, exe, &io, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&io);
  if (spawned != 0) return r;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  pid_t got = 0;
  while ((got = waitpid(pid, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (got == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  } else {
    r.ran = WIFEXITED(status);
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::ifstream in(log);
  std::ostringstream text;
  text << in.rdbuf();
  r.output = text.str();
  std::remove(log.c_str());
  return r;
}

}  // namespace gpuattn::testing
