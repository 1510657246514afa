#include "core/env_switch.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "gpuattn/types.h"

namespace gpuattn {

int env_choice(const char* name, std::initializer_list<const char*> choices) {
  const char* v = std::getenv(name);
  if (v == nullptr) return 0;
  int i = 0;
  std::string list;
  for (const char* c : choices) {
    if (std::strcmp(v, c) == 0) return i;
    list += (i == 0 ? "" : i + 1 == static_cast<int>(choices.size()) ? " or " : ", ");
    list += c;
    ++i;
  }
  throw Error(ErrorCode::invalid_argument,
              std::string(name) + " is \"" + v + "\": expected " + list);
}

bool env_flag(const char* name, bool unset) {
  return std::getenv(name) == nullptr ? unset : env_choice(name, {"0", "1"}) == 1;
}

}  // namespace gpuattn
