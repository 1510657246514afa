#include "engine/files.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "gpuattn/types.h"

namespace gpuattn::engine {

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::string read_text(const std::string& path) {
  // A directory opens as an empty stream on Linux: it would read as an empty file.
  if (exists(path) && !is_file(path)) {
    throw Error(ErrorCode::invalid_argument, path + ": not a regular file (a directory?)");
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    throw Error(ErrorCode::invalid_argument, path + ": cannot open: " + std::strerror(errno));
  }
  std::ostringstream s;
  s << f.rdbuf();
  if (f.bad()) {
    throw Error(ErrorCode::invalid_argument, path + ": read failed: " + std::strerror(errno));
  }
  return s.str();
}

}  // namespace gpuattn::engine
