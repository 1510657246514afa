#include "engine/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <unordered_set>

#include "engine/json.h"
#include "engine/utf8.h"
#include "gpuattn/numeric.h"
#include "gpuattn/types.h"

// Tensor data is little-endian in the file and read with memcpy as host values.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors I/O assumes a little-endian host");

namespace gpuattn::engine {
namespace {

// The reference implementation's limit: a larger header is taken for a corrupt file.
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

// The offset of the first byte of `s` that is not part of well-formed UTF-8 (utf8.h), or npos.
std::size_t invalid_utf8_at(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    int good = 0;
    const int len = utf8_prefix(s, i, good);
    if (len == 0 || good < len) return i;
    i += static_cast<std::size_t>(len);
  }
  return std::string_view::npos;
}

constexpr const char* kMetadataKey = "__metadata__";

struct DTypeInfo {
  const char* name;
  std::size_t size;
};
constexpr DTypeInfo kDTypes[] = {{"F64", 8}, {"F32", 4},  {"F16", 2},     {"BF16", 2},
                                 {"I64", 8}, {"I32", 4},  {"I16", 2},     {"I8", 1},
                                 {"U8", 1},  {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};

[[noreturn]] void invalid(const std::string& msg) {
  throw Error(ErrorCode::invalid_argument, msg);
}

std::string known_dtypes() {
  std::string s;
  for (const auto& d : kDTypes) s += std::string(s.empty() ? "" : " ") + d.name;
  return s;
}

std::string shape_str(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string offsets_str(std::uint64_t begin, std::uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
}

// "an array", "a bool", "null", ...
std::string a_type(const Json& v) {
  return (v.is_null() ? "" : v.is_array() || v.is_object() ? "an " : "a ") + v.type_name();
}

// A JSON value as a message shows it: numbers and strings by value, others by type.
std::string describe(const Json& v) {
  if (v.is_int()) return std::to_string(v.as_int());
  if (v.is_number()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v.as_number());
    return buf;
  }
  if (v.is_string()) return json_quote(v.as_string());
  return a_type(v);
}

// The byte count of `shape` elements of `element_size` bytes; false on overflow of 64 bits.
bool byte_count(const std::vector<std::int64_t>& shape, std::size_t element_size,
                std::uint64_t* bytes) {
  std::uint64_t n = element_size;
  // Zero elements whatever the other sizes (the product overflowed first when a 0 came last).
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) {
    *bytes = 0;
    return true;
  }
  for (const std::int64_t d : shape) {
    if (__builtin_mul_overflow(n, static_cast<std::uint64_t>(d), &n)) return false;
  }
  *bytes = n;
  return true;
}

// Reads one tensor entry of the header; `data_size` is the length of the data section.
StTensor parse_entry(const std::string& where, const std::string& name, const Json& entry,
                     const std::byte* data, std::uint64_t data_size) {
  if (!entry.is_object()) invalid(where + "entry is " + describe(entry) + ", not an object");
  auto field = [&](const char* key) -> const Json& {
    const Json* v = entry.find(key);
    if (v == nullptr) invalid(where + "missing field \"" + key + "\"");
    return *v;
  };
  auto ints = [&](const char* key) {
    const Json& v = field(key);
    if (!v.is_array()) invalid(where + "\"" + key + "\" is " + describe(v) + ", not an array");
    std::vector<std::int64_t> out;
    for (std::size_t i = 0; i < v.as_array().size(); ++i) {
      const Json& x = v.as_array()[i];
      if (!x.is_int()) {
        invalid(where + "\"" + key + "\"[" + std::to_string(i) + "] is " + describe(x) +
                ", not an integer");
      }
      out.push_back(x.as_int());
    }
    return out;
  };

  StTensor t;
  t.name = name;
  const Json& dtype = field("dtype");
  if (!dtype.is_string()) invalid(where + "\"dtype\" is " + describe(dtype) + ", not a string");
  t.dtype = dtype.as_string();
  const std::size_t element_size = st_element_size(t.dtype);
  if (element_size == 0) {
    invalid(where + "unknown dtype " + json_quote(t.dtype) + " (known: " + known_dtypes() + ")");
  }

  t.shape = ints("shape");
  constexpr std::size_t kMaxRank = 32;  // no model's tensor comes near; 49.5M dims were taken
  if (t.shape.size() > kMaxRank) {
    invalid(where + "\"shape\" has " + std::to_string(t.shape.size()) + " dimensions, more than " +
            std::to_string(kMaxRank));
  }
  for (const std::int64_t d : t.shape) {
    if (d < 0) {
      invalid(where + "\"shape\" " + shape_str(t.shape) + " has a negative size " +
              std::to_string(d));
    }
  }

  const std::vector<std::int64_t> offsets = ints("data_offsets");
  if (offsets.size() != 2) {
    invalid(where + "\"data_offsets\" " + shape_str(offsets) + " has " +
            std::to_string(offsets.size()) + " elements, expected 2 (begin, end)");
  }
  if (offsets[0] < 0 || offsets[1] < 0) {
    invalid(where + "\"data_offsets\" " + shape_str(offsets) + " has a negative offset");
  }
  const auto begin = static_cast<std::uint64_t>(offsets[0]);
  const auto end = static_cast<std::uint64_t>(offsets[1]);
  if (end < begin) {
    invalid(where + "\"data_offsets\" " + offsets_str(begin, end) + ": end " + std::to_string(end) +
            " is before begin " + std::to_string(begin));
  }
  if (end > data_size) {
    invalid(where + "\"data_offsets\" " + offsets_str(begin, end) + ": end " + std::to_string(end) +
            " is beyond the data section (" + std::to_string(data_size) + " bytes)");
  }
  std::uint64_t needed = 0;
  const bool fits = byte_count(t.shape, element_size, &needed);
  if (!fits || needed != end - begin) {
    invalid(where + "\"data_offsets\" " + offsets_str(begin, end) + " hold " +
            std::to_string(end - begin) + " bytes, but shape " + shape_str(t.shape) + " of " +
            t.dtype + " needs " + (fits ? std::to_string(needed) : "more than 2^64"));
  }
  t.data = data + begin;
  t.nbytes = static_cast<std::size_t>(end - begin);
  return t;
}

}  // namespace

std::size_t st_element_size(std::string_view dtype) {
  for (const auto& d : kDTypes) {
    if (dtype == d.name) return d.size;
  }
  return 0;
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  SafetensorsFile f;
  f.path_ = path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) invalid(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    invalid(path + ": cannot stat: " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    invalid(path + ": cannot map: not a regular file");
  }
  if (st.st_size == 0) {
    ::close(fd);
    invalid(path + ": cannot map: the file is empty (0 bytes)");
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);
  if (map == MAP_FAILED) invalid(path + ": cannot map: " + std::strerror(err));
  f.map_ = map;
  f.map_size_ = size;  // from here on f's destructor unmaps, also when a check below throws

  const auto* bytes = static_cast<const std::byte*>(map);
  if (size < 8) {
    invalid(path + ": the file is " + std::to_string(size) +
            " bytes, too short for the 8-byte header length");
  }
  std::uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i)
    header_len = header_len << 8 | std::to_integer<std::uint64_t>(bytes[i]);
  if (header_len > kMaxHeaderBytes) {
    invalid(path + ": header length " + std::to_string(header_len) + " is over the 100 MB limit");
  }
  if (header_len > size - 8) {
    invalid(path + ": header length " + std::to_string(header_len) + " is larger than the file (" +
            std::to_string(size - 8) + " bytes after the 8-byte length)");
  }
  const std::string_view header(reinterpret_cast<const char*>(bytes + 8), header_len);
  // A few values a tensor: 2^20 is thousands of tensors' worth (GPT-2 1558m has 581), and keeps
  // a 100 MB header of tiny values ("[0,0,...]") from a multi-GB tree.
  const Json root = parse_json(header, path + " (JSON header)", std::int64_t{1} << 20);
  if (!root.is_object()) invalid(path + ": the JSON header is " + a_type(root) + ", not an object");

  const std::byte* data = bytes + 8 + header_len;
  const std::uint64_t data_size = size - 8 - header_len;
  for (const auto& [name, entry] : root.as_object()) {
    if (name == kMetadataKey) {
      if (!entry.is_object()) {
        invalid(path + ": \"__metadata__\" is " + describe(entry) + ", not an object");
      }
      for (const auto& [key, value] : entry.as_object()) {
        if (!value.is_string()) {
          invalid(path + ": \"__metadata__\" value of key " + json_quote(key) + " is " +
                  describe(value) + ", not a string");
        }
        f.metadata_.emplace_back(key, value.as_string());
      }
      continue;
    }
    f.index_.emplace(name, f.tensors_.size());
    f.tensors_.push_back(
        parse_entry(path + ": tensor '" + name + "': ", name, entry, data, data_size));
  }

  // No two tensors share a byte: by begin, each starts at or after the furthest end so far. And
  // the tensors cover the data section without a gap or trailing bytes, as the format requires
  // (bytes no tensor accounts for could carry anything: a polyglot file).
  std::vector<const StTensor*> by_begin;
  for (const StTensor& t : f.tensors_) {
    if (t.nbytes > 0) by_begin.push_back(&t);
  }
  std::sort(by_begin.begin(), by_begin.end(),
            [](const StTensor* a, const StTensor* b) { return a->data < b->data; });
  auto offsets = [&](const StTensor* x) {
    const auto b = static_cast<std::uint64_t>(x->data - data);
    return offsets_str(b, b + x->nbytes);
  };
  const StTensor* furthest = nullptr;
  for (const StTensor* t : by_begin) {
    if (furthest != nullptr && t->data < furthest->data + furthest->nbytes) {
      invalid(path + ": tensors '" + furthest->name + "' (data_offsets " + offsets(furthest) +
              ") and '" + t->name + "' (data_offsets " + offsets(t) + ") overlap");
    }
    const std::uint64_t end =
        furthest == nullptr ? 0
                            : static_cast<std::uint64_t>(furthest->data - data) + furthest->nbytes;
    const auto begin = static_cast<std::uint64_t>(t->data - data);
    if (begin != end) {
      invalid(path + ": data bytes [" + std::to_string(end) + ", " + std::to_string(begin) +
              ") belong to no tensor (before '" + t->name + "', data_offsets " + offsets(t) +
              "): the tensors must cover the data section without gaps");
    }
    furthest = t;
  }
  const std::uint64_t covered =
      furthest == nullptr ? 0
                          : static_cast<std::uint64_t>(furthest->data - data) + furthest->nbytes;
  if (covered != data_size) {
    invalid(path + ": the data section holds " + std::to_string(data_size) +
            " bytes but the tensors cover " + std::to_string(covered) + " (" +
            std::to_string(data_size - covered) + " trailing bytes belong to no tensor)");
  }
  return f;
}

SafetensorsFile::SafetensorsFile(SafetensorsFile&& other) noexcept
    : path_(std::move(other.path_)),
      map_(std::exchange(other.map_, nullptr)),
      map_size_(std::exchange(other.map_size_, 0)),
      tensors_(std::move(other.tensors_)),
      index_(std::move(other.index_)),
      metadata_(std::move(other.metadata_)) {}

SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&& other) noexcept {
  if (this != &other) {
    unmap();
    path_ = std::move(other.path_);
    map_ = std::exchange(other.map_, nullptr);
    map_size_ = std::exchange(other.map_size_, 0);
    tensors_ = std::move(other.tensors_);
    index_ = std::move(other.index_);
    metadata_ = std::move(other.metadata_);
  }
  return *this;
}

SafetensorsFile::~SafetensorsFile() {
  unmap();
}

void SafetensorsFile::unmap() noexcept {
  if (map_ != nullptr) ::munmap(map_, map_size_);
  map_ = nullptr;
  map_size_ = 0;
}

const StTensor* SafetensorsFile::find(std::string_view name) const {
  const auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

void write_safetensors(const std::string& path, const std::vector<StTensorOut>& tensors,
                       const std::vector<std::pair<std::string, std::string>>& metadata) {
  const std::string where = "write_safetensors " + path + ": ";
  // Names, keys and values go into the JSON header as they are: they must be UTF-8, as the reader
  // (and every other one) requires.
  const auto check_utf8 = [&](const std::string& s, const std::string& what) {
    const std::size_t bad = invalid_utf8_at(s);
    if (bad != std::string::npos) {
      invalid(where + what + " is not valid UTF-8 (byte " + std::to_string(bad) + " of " +
              std::to_string(s.size()) + ")");
    }
  };
  for (const auto& [key, value] : metadata) {
    check_utf8(key, "a metadata key");
    check_utf8(value, "the metadata value of key " + json_quote(key));
  }
  for (const StTensorOut& t : tensors) check_utf8(t.name, "a tensor name");

  // Everything is checked, and the header built, before the file is created.
  std::string header = "{";
  if (!metadata.empty()) {
    std::unordered_set<std::string> keys;
    header += std::string("\"") + kMetadataKey + "\":{";
    for (std::size_t i = 0; i < metadata.size(); ++i) {
      const auto& [key, value] = metadata[i];
      if (!keys.insert(key).second) invalid(where + "duplicate metadata key " + json_quote(key));
      header += (i ? "," : "") + json_quote(key) + ":" + json_quote(value);
    }
    header += "}";
  }
  std::unordered_set<std::string> names;
  std::uint64_t offset = 0;
  for (const StTensorOut& t : tensors) {
    const std::string what = where + "tensor '" + t.name + "': ";
    if (t.name == kMetadataKey) invalid(what + "the name is reserved for the metadata");
    if (!names.insert(t.name).second) invalid(what + "duplicate tensor name");
    const std::size_t element_size = st_element_size(t.dtype);
    if (element_size == 0) {
      invalid(what + "unknown dtype " + json_quote(t.dtype) + " (known: " + known_dtypes() + ")");
    }
    for (const std::int64_t d : t.shape) {
      if (d < 0) {
        invalid(what + "shape " + shape_str(t.shape) + " has a negative size " + std::to_string(d));
      }
    }
    std::uint64_t needed = 0;
    const bool fits = byte_count(t.shape, element_size, &needed);
    if (!fits || needed != t.bytes.size()) {
      invalid(what + "has " + std::to_string(t.bytes.size()) + " bytes, but shape " +
              shape_str(t.shape) + " of " + t.dtype + " needs " +
              (fits ? std::to_string(needed) : "more than 2^64"));
    }
    header += (header.size() > 1 ? "," : "") + json_quote(t.name) +
              ":{\"dtype\":" + json_quote(t.dtype) + ",\"shape\":" + shape_str(t.shape) +
              ",\"data_offsets\":" + offsets_str(offset, offset + needed) + "}";
    offset += needed;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');  // the data section starts 8-byte aligned
  if (header.size() > kMaxHeaderBytes) {
    invalid(where + "the JSON header would take " + std::to_string(header.size()) +
            " bytes, over the readers' 100 MB limit");
  }

  const std::string tmp = path + ".tmp";
  std::FILE* file = std::fopen(tmp.c_str(), "wb");
  if (file == nullptr) invalid(where + "cannot create " + tmp + ": " + std::strerror(errno));
  auto fail = [&](const std::string& doing) {
    const int err = errno;
    if (file != nullptr) std::fclose(file);
    std::remove(tmp.c_str());
    invalid(where + doing + ": " + std::strerror(err));
  };
  auto write = [&](const void* p, std::size_t n) {
    if (n > 0 && std::fwrite(p, 1, n, file) != n) fail("cannot write " + tmp);
  };
  unsigned char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(header.size() >> (8 * i));
  write(len, sizeof len);
  write(header.data(), header.size());
  for (const StTensorOut& t : tensors) write(t.bytes.data(), t.bytes.size());
  const int closed = std::fclose(file);
  file = nullptr;
  if (closed != 0) fail("cannot close " + tmp);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail("cannot rename " + tmp + " to " + path);
}

std::vector<float> to_float(const StTensor& t) {
  const std::size_t element_size = st_element_size(t.dtype);
  const std::size_t n = element_size == 0 ? 0 : t.nbytes / element_size;
  std::vector<float> out(n);
  if (t.dtype == "F32") {
    if (n > 0) std::memcpy(out.data(), t.data, n * 4);
  } else if (t.dtype == "F16" || t.dtype == "BF16") {
    const bool f16 = t.dtype == "F16";
    for (std::size_t i = 0; i < n; ++i) {
      std::uint16_t h;
      std::memcpy(&h, t.data + 2 * i, 2);
      out[i] = f16 ? f16_to_float(h) : bf16_to_float(h);
    }
  } else if (t.dtype == "F64") {
    for (std::size_t i = 0; i < n; ++i) {
      double d;
      std::memcpy(&d, t.data + 8 * i, 8);
      out[i] = static_cast<float>(d);
    }
  } else {
    invalid("to_float: tensor '" + t.name + "' has dtype " + t.dtype +
            "; only F32, F16, BF16 and F64 convert to float");
  }
  return out;
}

}  // namespace gpuattn::engine
