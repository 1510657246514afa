// The safetensors reader and writer of engine/safetensors.h: round trips of every kind of tensor,
// the layout the format prescribes, and an error naming the file and the offender for each
// malformed file and each bad write.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "common/expect_error.h"
#include "engine/json.h"
#include "engine/safetensors.h"
#include "gpuattn/numeric.h"

namespace gpuattn::engine {
namespace {

using gpuattn::testing::expect_invalid_argument;

// A path in the test temp dir, unique to the running test.
std::string temp_path(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return ::testing::TempDir() + "gpuattn_st_" + info->test_suite_name() + "_" + info->name() + "_" +
         name;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

template <typename T>
std::vector<std::byte> bytes_of(const std::vector<T>& v) {
  std::vector<std::byte> out(v.size() * sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

std::vector<std::byte> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  if (!out.empty()) std::memcpy(out.data(), chars.data(), out.size());
  return out;
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string le64(std::uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>(n >> (8 * i));
  return s;
}

// A file of `header` preceded by its length and followed by `data_bytes` bytes of data.
std::string raw_file(const std::string& name, const std::string& header, std::size_t data_bytes) {
  const std::string path = temp_path(name);
  write_bytes(path, le64(header.size()) + header + std::string(data_bytes, '\x5a'));
  return path;
}

// Opening a file of `header` (and `data_bytes` bytes of data) fails naming the file and `words`.
void expect_open_error(const std::string& header, std::size_t data_bytes,
                       const std::string& words) {
  SCOPED_TRACE(header);
  const std::string path = raw_file("bad.safetensors", header, data_bytes);
  try {
    SafetensorsFile::open(path);
    ADD_FAILURE() << "no error; expected one naming '" << words << "'";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << msg;
    EXPECT_EQ(msg.rfind(path, 0), 0u) << msg;  // starts with the file's path
    EXPECT_NE(msg.find(words), std::string::npos) << msg;
  }
}

std::vector<StTensorOut> sample_tensors() {
  std::vector<StTensorOut> t;
  t.push_back({"wte", "F32", {2, 3}, bytes_of(std::vector<float>{1, -2, 3.5f, 0.25f, 1e-3f, 7})});
  t.push_back({"h.0.ln_1.weight",
               "F16",
               {4},
               bytes_of(std::vector<std::uint16_t>{float_to_f16(1.5f), float_to_f16(-2.0f),
                                                   float_to_f16(65504.0f),
                                                   float_to_f16(0.000061035156f)})});
  t.push_back({"bf",
               "BF16",
               {2, 1, 2},
               bytes_of(std::vector<std::uint16_t>{float_to_bf16(3.0f), float_to_bf16(-0.5f),
                                                   float_to_bf16(1e30f), float_to_bf16(0.0f)})});
  t.push_back({"doubles", "F64", {3}, bytes_of(std::vector<double>{0.1, -1e10, 2.5})});
  t.push_back({"ids", "I64", {1, 3}, bytes_of(std::vector<std::int64_t>{-1, 50256, 1LL << 40})});
  t.push_back({"scalar", "F32", {}, bytes_of(std::vector<float>{42.0f})});
  t.push_back({"empty", "F32", {0, 4}, {}});
  t.push_back({"i32", "I32", {2}, bytes_of(std::vector<std::int32_t>{-7, 1 << 30})});
  t.push_back({"mask", "BOOL", {3}, bytes_of(std::vector<std::uint8_t>{1, 0, 1})});
  t.push_back({"u8", "U8", {5}, bytes_of(std::vector<std::uint8_t>{0, 1, 2, 254, 255})});
  t.push_back({"i8", "I8", {1}, bytes_of(std::vector<std::int8_t>{-128})});
  t.push_back({"i16", "I16", {2}, bytes_of(std::vector<std::int16_t>{-300, 300})});
  t.push_back({"fp8", "F8_E4M3", {2}, bytes_of(std::vector<std::uint8_t>{0x38, 0xb8})});
  t.push_back({"fp8b", "F8_E5M2", {1, 1}, bytes_of(std::vector<std::uint8_t>{0x3c})});
  return t;
}

TEST(Safetensors, KnowsTheElementSizes) {
  EXPECT_EQ(st_element_size("F64"), 8u);
  EXPECT_EQ(st_element_size("F32"), 4u);
  EXPECT_EQ(st_element_size("F16"), 2u);
  EXPECT_EQ(st_element_size("BF16"), 2u);
  EXPECT_EQ(st_element_size("I64"), 8u);
  EXPECT_EQ(st_element_size("I32"), 4u);
  EXPECT_EQ(st_element_size("I16"), 2u);
  EXPECT_EQ(st_element_size("I8"), 1u);
  EXPECT_EQ(st_element_size("U8"), 1u);
  EXPECT_EQ(st_element_size("BOOL"), 1u);
  EXPECT_EQ(st_element_size("F8_E4M3"), 1u);
  EXPECT_EQ(st_element_size("F8_E5M2"), 1u);
  EXPECT_EQ(st_element_size("f32"), 0u);
  EXPECT_EQ(st_element_size("U16"), 0u);
}

TEST(Safetensors, RoundTripsEveryDtypeAndShape) {
  const std::string path = temp_path("model.safetensors");
  const std::vector<StTensorOut> in = sample_tensors();
  write_safetensors(path, in);
  EXPECT_FALSE(exists(path + ".tmp"));

  const SafetensorsFile f = SafetensorsFile::open(path);
  EXPECT_EQ(f.path(), path);
  EXPECT_TRUE(f.metadata().empty());
  ASSERT_EQ(f.tensors().size(), in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    SCOPED_TRACE(in[i].name);
    const StTensor& t = f.tensors()[i];  // in the order written
    EXPECT_EQ(t.name, in[i].name);
    EXPECT_EQ(t.dtype, in[i].dtype);
    EXPECT_EQ(t.shape, in[i].shape);
    ASSERT_EQ(t.nbytes, in[i].bytes.size());
    if (t.nbytes > 0) {
      EXPECT_EQ(std::memcmp(t.data, in[i].bytes.data(), t.nbytes), 0);
    }
    EXPECT_EQ(f.find(in[i].name), &t);
  }
  EXPECT_EQ(f.find("missing"), nullptr);
  EXPECT_EQ(f.find("wte")->shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_TRUE(f.find("scalar")->shape.empty());
  EXPECT_EQ(f.find("scalar")->nbytes, 4u);
  EXPECT_EQ(f.find("empty")->nbytes, 0u);
}

TEST(Safetensors, LaysOutTheFileAsTheFormatPrescribes) {
  const std::string path = temp_path("layout.safetensors");
  const std::vector<StTensorOut> in = sample_tensors();
  write_safetensors(path, in, {{"format", "pt"}});
  const std::vector<std::byte> file = read_file(path);
  ASSERT_GE(file.size(), 8u);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | std::to_integer<std::uint64_t>(file[i]);
  EXPECT_EQ(n % 8, 0u);  // padded with spaces: the data section starts 8-byte aligned
  ASSERT_LE(8 + n, file.size());
  const std::string header(reinterpret_cast<const char*>(file.data()) + 8, n);
  EXPECT_EQ(header.front(), '{');
  const std::size_t close = header.find_last_of('}');
  EXPECT_EQ(header.find_first_not_of(' ', close + 1), std::string::npos) << header;
  EXPECT_LT(header.size() - close - 1, 8u);

  // The tensors follow each other in the order given, from offset 0 to the end of the file.
  const Json root = parse_json(header, "header");
  EXPECT_EQ(root.as_object()[0].first, "__metadata__");
  EXPECT_EQ(root.find("__metadata__")->find("format")->as_string(), "pt");
  std::int64_t offset = 0;
  for (const StTensorOut& t : in) {
    const Json* e = root.find(t.name);
    ASSERT_NE(e, nullptr) << t.name;
    EXPECT_EQ(e->find("dtype")->as_string(), t.dtype);
    const auto& offsets = e->find("data_offsets")->as_array();
    ASSERT_EQ(offsets.size(), 2u);
    EXPECT_EQ(offsets[0].as_int(), offset);
    offset += static_cast<std::int64_t>(t.bytes.size());
    EXPECT_EQ(offsets[1].as_int(), offset);
  }
  EXPECT_EQ(file.size(), 8 + n + static_cast<std::uint64_t>(offset));
}

TEST(Safetensors, RoundTripsMetadataAndEscapedNames) {
  const std::string path = temp_path("meta.safetensors");
  const std::vector<std::pair<std::string, std::string>> metadata = {
      {"format", "pt"},
      {"quote\"back\\slash", "line\nbreak\ttab\x01"},
      {"unicode \xc3\xa9", "\xe2\x82\xac \xf0\x9f\x98\x80"},
      {"", ""}};
  std::vector<StTensorOut> in;
  in.push_back({"a\"b\\c\nd", "F32", {1}, bytes_of(std::vector<float>{1})});
  in.push_back({"caf\xc3\xa9", "U8", {2}, bytes_of(std::vector<std::uint8_t>{7, 8})});
  write_safetensors(path, in, metadata);

  const SafetensorsFile f = SafetensorsFile::open(path);
  EXPECT_EQ(f.metadata(), metadata);  // in the order written
  ASSERT_EQ(f.tensors().size(), 2u);
  EXPECT_EQ(f.tensors()[0].name, in[0].name);
  EXPECT_EQ(f.tensors()[1].name, in[1].name);
  ASSERT_NE(f.find("caf\xc3\xa9"), nullptr);
  EXPECT_EQ(std::to_integer<int>(f.find("caf\xc3\xa9")->data[1]), 8);
}

TEST(Safetensors, WritesAndReadsAFileWithoutTensors) {
  const std::string path = temp_path("none.safetensors");
  write_safetensors(path, {});
  EXPECT_EQ(read_file(path).size(), 16u);  // length + "{}" padded to 8
  const SafetensorsFile f = SafetensorsFile::open(path);
  EXPECT_TRUE(f.tensors().empty());
  EXPECT_TRUE(f.metadata().empty());
}

TEST(Safetensors, OverwritesAnExistingFile) {
  const std::string path = temp_path("over.safetensors");
  write_safetensors(path, sample_tensors());
  write_safetensors(path, {{"only", "I32", {1}, bytes_of(std::vector<std::int32_t>{5})}});
  const SafetensorsFile f = SafetensorsFile::open(path);
  ASSERT_EQ(f.tensors().size(), 1u);
  EXPECT_EQ(f.tensors()[0].name, "only");
}

TEST(Safetensors, ReadsAFileOfAnotherWriter) {
  // Header order differs from data order, unknown fields, whitespace, no padding, an empty
  // tensor sitting inside another's bytes.
  const std::string header =
      "{ \"b\" : {\"data_offsets\": [4, 12], \"shape\": [2], \"dtype\": \"F32\", \"x\": 1},\n"
      "  \"a\": {\"dtype\": \"I16\", \"shape\": [2, 1], \"data_offsets\": [0, 4]},\n"
      "  \"e\": {\"dtype\": \"F16\", \"shape\": [3, 0], \"data_offsets\": [10, 10]},\n"
      "  \"__metadata__\": {\"k\": \"v\"} }";
  const std::string path = temp_path("other.safetensors");
  std::string data(12, '\0');
  const float b[2] = {0.5f, -8.0f};
  std::memcpy(&data[4], b, 8);
  write_bytes(path, le64(header.size()) + header + data);
  const SafetensorsFile f = SafetensorsFile::open(path);
  ASSERT_EQ(f.tensors().size(), 3u);
  EXPECT_EQ(f.tensors()[0].name, "b");
  EXPECT_EQ(f.tensors()[1].name, "a");
  EXPECT_EQ(f.tensors()[2].name, "e");
  EXPECT_EQ(f.tensors()[2].nbytes, 0u);
  EXPECT_EQ(f.metadata(), (std::vector<std::pair<std::string, std::string>>{{"k", "v"}}));
  EXPECT_EQ(to_float(*f.find("b")), (std::vector<float>{0.5f, -8.0f}));
}

// The format's rule: the tensors index the whole data section, without holes (bytes nobody reads
// could make a polyglot file). A gap, trailing bytes, or data behind an empty header are named.
TEST(Safetensors, DataBytesOfNoTensorAreRefused) {
  const std::string path = temp_path("holes.safetensors");
  const auto file = [&](const std::string& header, std::size_t data_bytes) {
    write_bytes(path, le64(header.size()) + header + std::string(data_bytes, '\x11'));
  };
  file(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}})", 8);
  expect_invalid_argument(
      [&] { SafetensorsFile::open(path); },
      "data bytes [0, 4) belong to no tensor (before 'a', data_offsets [4, 8])");
  file(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
       R"("b":{"dtype":"U8","shape":[2],"data_offsets":[3,5]}})",
       5);
  expect_invalid_argument([&] { SafetensorsFile::open(path); }, "data bytes [2, 3) belong to no");
  file(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", 804);
  expect_invalid_argument([&] { SafetensorsFile::open(path); },
                          "holds 804 bytes but the tensors cover 4 (800 trailing bytes");
  file("{}", 1000);
  expect_invalid_argument([&] { SafetensorsFile::open(path); },
                          "holds 1000 bytes but the tensors "
                          "cover 0");
  file("{}", 0);
  EXPECT_TRUE(SafetensorsFile::open(path).tensors().empty());
}

// The writer refuses what every reader would: names and metadata that are not UTF-8, a header
// past 100 MB. Nothing is created.
TEST(Safetensors, WriterRefusesWhatReadersRefuse) {
  const std::string path = temp_path("bad_names.safetensors");
  std::remove(path.c_str());
  StTensorOut t;
  t.dtype = "U8";
  t.shape = {1};
  t.bytes = {std::byte{7}};
  for (const std::string& name :
       {std::string("A\xff"
                    "B"),
        std::string("\xed\xa0\x80"), std::string("\xc0\xaf"), std::string("ok\xe2\x82")}) {
    t.name = name;
    expect_invalid_argument([&] { write_safetensors(path, {t}); },
                            "a tensor name is not valid UTF-8");
  }
  t.name = "caf\xc3\xa9 \xf0\x9f\x98\x80";  // two and four bytes: fine
  expect_invalid_argument(
      [&] {
        write_safetensors(path, {t}, {{"k", "\x80"}});
      },
      "the metadata value of key \"k\" is not valid UTF-8 (byte 0 of 1)");
  expect_invalid_argument(
      [&] {
        write_safetensors(path, {t}, {{"k", std::string(100'000'000, 'x')}});
      },
      "over the readers' 100 MB limit");
  EXPECT_NE(access(path.c_str(), F_OK), 0) << "a refused write created " << path;
  write_safetensors(path, {t});
  EXPECT_EQ(SafetensorsFile::open(path).tensors()[0].name, t.name);
}

TEST(Safetensors, ConvertsToFloat) {
  const std::string path = temp_path("float.safetensors");
  write_safetensors(path, sample_tensors());
  const SafetensorsFile f = SafetensorsFile::open(path);
  EXPECT_EQ(to_float(*f.find("wte")), (std::vector<float>{1, -2, 3.5f, 0.25f, 1e-3f, 7}));
  EXPECT_EQ(to_float(*f.find("h.0.ln_1.weight")),
            (std::vector<float>{1.5f, -2.0f, 65504.0f, 0.000061035156f}));
  EXPECT_EQ(to_float(*f.find("bf")),
            (std::vector<float>{3.0f, -0.5f, bf16_to_float(float_to_bf16(1e30f)), 0.0f}));
  EXPECT_EQ(to_float(*f.find("doubles")), (std::vector<float>{0.1f, -1e10f, 2.5f}));
  EXPECT_EQ(to_float(*f.find("scalar")), (std::vector<float>{42.0f}));
  EXPECT_TRUE(to_float(*f.find("empty")).empty());
  expect_invalid_argument([&] { to_float(*f.find("ids")); },
                          "to_float: tensor 'ids' has dtype I64");
  expect_invalid_argument([&] { to_float(*f.find("mask")); }, "tensor 'mask' has dtype BOOL");
}

TEST(Safetensors, ConvertsUnalignedData) {
  // One byte first: every following tensor starts at an odd address.
  const std::string path = temp_path("unaligned.safetensors");
  write_safetensors(path, {{"pad", "U8", {1}, {std::byte{1}}},
                           {"f32", "F32", {3}, bytes_of(std::vector<float>{1.25f, -3, 9})},
                           {"f16", "F16", {1}, bytes_of(std::vector<std::uint16_t>{0x3c00})},
                           {"f64", "F64", {2}, bytes_of(std::vector<double>{-0.5, 1e300})}});
  const SafetensorsFile f = SafetensorsFile::open(path);
  EXPECT_NE(reinterpret_cast<std::uintptr_t>(f.find("f32")->data) % 4, 0u);
  EXPECT_EQ(to_float(*f.find("f32")), (std::vector<float>{1.25f, -3, 9}));
  EXPECT_EQ(to_float(*f.find("f16")), (std::vector<float>{1.0f}));
  const std::vector<float> f64 = to_float(*f.find("f64"));
  ASSERT_EQ(f64.size(), 2u);
  EXPECT_EQ(f64[0], -0.5f);
  EXPECT_TRUE(std::isinf(f64[1]));
}

TEST(Safetensors, MovesKeepTheMappingAlive) {
  const std::string path = temp_path("move.safetensors");
  write_safetensors(path, sample_tensors());
  SafetensorsFile a = SafetensorsFile::open(path);
  const StTensor* wte = a.find("wte");
  const std::byte* data = wte->data;
  SafetensorsFile b = std::move(a);
  EXPECT_EQ(b.find("wte")->data, data);
  EXPECT_EQ(to_float(*b.find("wte"))[2], 3.5f);
  SafetensorsFile c = SafetensorsFile::open(path);
  c = std::move(b);  // unmaps c's own file
  EXPECT_EQ(c.find("wte")->data, data);
  EXPECT_EQ(to_float(*c.find("wte"))[5], 7.0f);
  EXPECT_EQ(c.path(), path);
}

TEST(Safetensors, RejectsUnreadableFiles) {
  const std::string missing = temp_path("missing.safetensors");
  expect_invalid_argument([&] { SafetensorsFile::open(missing); },
                          missing + ": cannot open: No such file or directory");
  const std::string empty = temp_path("empty.safetensors");
  write_bytes(empty, "");
  expect_invalid_argument([&] { SafetensorsFile::open(empty); },
                          empty + ": cannot map: the file is empty (0 bytes)");
  expect_invalid_argument([&] { SafetensorsFile::open(::testing::TempDir()); },
                          "cannot map: not a regular file");
  const std::string tiny = temp_path("tiny.safetensors");
  write_bytes(tiny, "abcde");
  expect_invalid_argument([&] { SafetensorsFile::open(tiny); },
                          tiny + ": the file is 5 bytes, too short for the 8-byte header length");
}

TEST(Safetensors, RejectsBadHeaderLengths) {
  const std::string longer = temp_path("longer.safetensors");
  write_bytes(longer, le64(1000) + "{}");
  expect_invalid_argument(
      [&] { SafetensorsFile::open(longer); },
      longer + ": header length 1000 is larger than the file (2 bytes after the 8-byte length)");
  const std::string huge = temp_path("huge.safetensors");
  write_bytes(huge, le64(100'000'001) + "{}");
  expect_invalid_argument([&] { SafetensorsFile::open(huge); },
                          huge + ": header length 100000001 is over the 100 MB limit");
  write_bytes(huge, le64(~std::uint64_t{0}) + "{}");
  expect_invalid_argument([&] { SafetensorsFile::open(huge); },
                          "header length 18446744073709551615 is over the 100 MB limit");
}

TEST(Safetensors, RejectsHeadersThatAreNotAJsonObject) {
  expect_open_error("{\"a\": ", 0, "(JSON header): invalid JSON at byte 6: expected a value");
  expect_open_error("{} x", 0, "(JSON header): invalid JSON at byte 3");
  expect_open_error("[]", 0, "the JSON header is an array, not an object");
  expect_open_error("\"s\"", 0, "the JSON header is a string, not an object");
  const std::string dup = R"({"w": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},)"
                          R"( "w": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}})";
  expect_open_error(dup, 2, "duplicate key \"w\"");
}

// A header of tiny values is bounded by its values (2^20), not only its bytes (a 99 MB header
// of zeros took 7 GB and half a minute); a shape of more than 32 dimensions is refused (49.5M
// were taken); a zero-element tensor is one whatever its other sizes and their order.
TEST(Safetensors, BoundsTheHeadersValuesAndRank) {
  std::string zeros = "[0";
  for (int i = 1; i < (1 << 20); ++i) zeros += ",0";
  expect_open_error(zeros + "]", 0, "more than 1048576 values");
  std::string shape = "[1";
  for (int i = 1; i < 33; ++i) shape += ",1";
  expect_open_error(R"({"w": {"dtype": "U8", "shape": )" + shape + R"(], "data_offsets": [0, 1]}})",
                    1, "tensor 'w': \"shape\" has 33 dimensions, more than 32");
  for (const char* s : {"[0, 4294967296, 4294967296]", "[4294967296, 4294967296, 0]"}) {
    const std::string path = raw_file(
        "zero.safetensors",
        std::string(R"({"w": {"dtype": "F32", "shape": )") + s + R"(, "data_offsets": [0, 0]}})",
        0);
    const SafetensorsFile f = SafetensorsFile::open(path);
    EXPECT_EQ(f.tensors().size(), 1u) << s;
  }
}

TEST(Safetensors, RejectsEntriesWithMissingOrMistypedFields) {
  expect_open_error(R"({"w": 3})", 0, "tensor 'w': entry is 3, not an object");
  expect_open_error(R"({"w": [1]})", 0, "tensor 'w': entry is an array, not an object");
  expect_open_error(R"({"w": {"shape": [1], "data_offsets": [0, 4]}})", 4,
                    "tensor 'w': missing field \"dtype\"");
  expect_open_error(R"({"w": {"dtype": "F32", "data_offsets": [0, 4]}})", 4,
                    "tensor 'w': missing field \"shape\"");
  expect_open_error(R"({"w": {"dtype": "F32", "shape": [1]}})", 4,
                    "tensor 'w': missing field \"data_offsets\"");
  expect_open_error(R"({"w": {"dtype": 32, "shape": [1], "data_offsets": [0, 4]}})", 4,
                    "tensor 'w': \"dtype\" is 32, not a string");
  expect_open_error(R"({"w": {"dtype": "F32", "shape": "1", "data_offsets": [0, 4]}})", 4,
                    "tensor 'w': \"shape\" is \"1\", not an array");
  expect_open_error(R"({"w": {"dtype": "F32", "shape": [1, 2.5], "data_offsets": [0, 4]}})", 4,
                    "tensor 'w': \"shape\"[1] is 2.5, not an integer");
  expect_open_error(R"({"w": {"dtype": "F32", "shape": [1.0], "data_offsets": [0, 4]}})", 4,
                    "\"shape\"[0] is 1, not an integer");
  expect_open_error(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": {"b": 0}}})", 4,
                    "tensor 'w': \"data_offsets\" is an object, not an array");
  expect_open_error(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, "4"]}})", 4,
                    "tensor 'w': \"data_offsets\"[1] is \"4\", not an integer");
  expect_open_error(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, null]}})", 4,
                    "\"data_offsets\"[1] is null, not an integer");
  expect_open_error(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4, 8]}})", 8,
                    "tensor 'w': \"data_offsets\" [0, 4, 8] has 3 elements, expected 2");
  expect_open_error(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})", 8,
                    "\"data_offsets\" [0] has 1 elements, expected 2");
}

TEST(Safetensors, RejectsBadDtypesShapesAndOffsets) {
  expect_open_error(R"({"w": {"dtype": "F128", "shape": [1], "data_offsets": [0, 16]}})", 16,
                    "tensor 'w': unknown dtype \"F128\" (known: F64 F32 F16 BF16");
  expect_open_error(R"({"w": {"dtype": "f32", "shape": [1], "data_offsets": [0, 4]}})", 4,
                    "unknown dtype \"f32\"");
  expect_open_error(R"({"w": {"dtype": "F32", "shape": [2, -3], "data_offsets": [0, 4]}})", 4,
                    "tensor 'w': \"shape\" [2, -3] has a negative size -3");
  expect_open_error(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]}})", 4,
                    "tensor 'w': \"data_offsets\" [-4, 0] has a negative offset");
  expect_open_error(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [8, 4]}})", 8,
                    "tensor 'w': \"data_offsets\" [8, 4]: end 4 is before begin 8");
  expect_open_error(R"({"w": {"dtype": "F32", "shape": [25], "data_offsets": [0, 100]}})", 16,
                    "tensor 'w': \"data_offsets\" [0, 100]: end 100 is beyond the data "
                    "section (16 bytes)");
  expect_open_error(
      R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 9223372036854775807]}})", 4,
      "end 9223372036854775807 is beyond the data section (4 bytes)");
  expect_open_error(R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 20]}})", 24,
                    "tensor 'w': \"data_offsets\" [0, 20] hold 20 bytes, but shape [2, 3] of F32 "
                    "needs 24");
  expect_open_error(R"({"w": {"dtype": "BF16", "shape": [], "data_offsets": [0, 4]}})", 4,
                    "hold 4 bytes, but shape [] of BF16 needs 2");
  expect_open_error(R"({"w": {"dtype": "F32", "shape": [0], "data_offsets": [0, 4]}})", 4,
                    "hold 4 bytes, but shape [0] of F32 needs 0");
  expect_open_error(
      R"({"w": {"dtype": "F32", "shape": [4611686018427387904, 4], "data_offsets": [0, 0]}})", 0,
      "shape [4611686018427387904, 4] of F32 needs more than 2^64");
}

TEST(Safetensors, RejectsOverlappingTensors) {
  expect_open_error(R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},)"
                    R"( "b": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}})",
                    24,
                    "tensors 'a' (data_offsets [0, 16]) and 'b' (data_offsets [8, 24]) overlap");
  // Listed out of order, and the first by offset holds both others.
  expect_open_error(R"({"c": {"dtype": "U8", "shape": [2], "data_offsets": [20, 22]},)"
                    R"( "b": {"dtype": "U8", "shape": [2], "data_offsets": [4, 6]},)"
                    R"( "a": {"dtype": "U8", "shape": [32], "data_offsets": [0, 32]}})",
                    32, "tensors 'a' (data_offsets [0, 32]) and 'b' (data_offsets [4, 6]) overlap");
  expect_open_error(R"({"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},)"
                    R"( "b": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]}})",
                    4, "tensors 'a' (data_offsets [0, 4]) and 'b' (data_offsets [0, 4]) overlap");
}

TEST(Safetensors, RejectsBadMetadata) {
  expect_open_error(R"({"__metadata__": ["pt"]})", 0,
                    "\"__metadata__\" is an array, not an object");
  expect_open_error(R"({"__metadata__": {"format": "pt", "n": 3}})", 0,
                    "\"__metadata__\" value of key \"n\" is 3, not a string");
}

// A write that fails leaves neither the file nor its temporary.
void expect_write_error(const std::vector<StTensorOut>& tensors,
                        const std::vector<std::pair<std::string, std::string>>& metadata,
                        const std::string& words) {
  const std::string path = temp_path("bad_write.safetensors");
  expect_invalid_argument([&] { write_safetensors(path, tensors, metadata); },
                          "write_safetensors " + path + ": " + words);
  EXPECT_FALSE(exists(path));
  EXPECT_FALSE(exists(path + ".tmp"));
}

TEST(Safetensors, WriterRejectsBadTensorsBeforeCreatingTheFile) {
  const auto f32 = [](std::size_t n) { return bytes_of(std::vector<float>(n, 1.0f)); };
  expect_write_error({{"w", "F32", {2, 3}, f32(5)}}, {},
                     "tensor 'w': has 20 bytes, but shape [2, 3] of F32 needs 24");
  expect_write_error({{"s", "F16", {}, {}}}, {},
                     "tensor 's': has 0 bytes, but shape [] of F16 needs 2");
  expect_write_error(
      {{"w", "F32", {1}, f32(1)}, {"v", "F32", {1}, f32(1)}, {"w", "F32", {1}, f32(1)}}, {},
      "tensor 'w': duplicate tensor name");
  expect_write_error({{"w", "float32", {1}, f32(1)}}, {},
                     "tensor 'w': unknown dtype \"float32\" (known: F64 F32");
  expect_write_error({{"w", "F32", {-1, 2}, {}}}, {},
                     "tensor 'w': shape [-1, 2] has a negative size -1");
  expect_write_error({{"w", "U8", {1LL << 62, 1LL << 62}, {std::byte{0}}}}, {},
                     "tensor 'w': has 1 bytes, but shape [4611686018427387904, "
                     "4611686018427387904] of U8 needs more than 2^64");
  expect_write_error({{"__metadata__", "F32", {1}, f32(1)}}, {},
                     "tensor '__metadata__': the name is reserved for the metadata");
  expect_write_error({{"w", "F32", {1}, f32(1)}}, {{"k", "1"}, {"k", "2"}},
                     "duplicate metadata key \"k\"");
}

TEST(Safetensors, WriterNamesAPathItCannotCreate) {
  const std::string path = temp_path("no_such_dir") + "/x.safetensors";
  expect_invalid_argument([&] { write_safetensors(path, {}); },
                          "cannot create " + path + ".tmp: No such file or directory");
}

}  // namespace
}  // namespace gpuattn::engine
