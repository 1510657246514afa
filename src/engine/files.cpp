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

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    throw Error(ErrorCode::invalid_argument, path + ": cannot open: " + std::strerror(errno));
  }
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace gpuattn::engine
