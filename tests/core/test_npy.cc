#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "core/half.h"
#include "kiln/tensor_io.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

// tests/data/npy holds files written by numpy 1.24 (np.save; the v2 one by
// np.lib.format.write_array(version=(2, 0))).
fs::path data_dir() { return fs::path(__FILE__).parent_path().parent_path() / "data" / "npy"; }

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() / ("kiln_test_npy_" + std::to_string(::getpid()) + "_" + name);
}

// Random bytes that are valid for the dtype (bools are 0/1), never all zeros.
Tensor random_of(DataType dt, const Shape& shape, uint32_t seed) {
  Tensor t(dt, shape);
  std::mt19937 gen(seed);
  auto* b = static_cast<unsigned char*>(t.raw());
  for (size_t i = 0; i < t.nbytes(); ++i)
    b[i] = dt == DataType::kBool ? (gen() & 1) : static_cast<unsigned char>(gen() | 1);
  if (dt == DataType::kFloat16)  // keep halves finite so at_double comparisons are meaningful
    for (int64_t i = 0; i < t.numel(); ++i)
      t.data<uint16_t>()[i] = float_to_half_bits(gen() % 1000 / 7.f - 50);
  return t;
}

struct RoundTripCase {
  DataType dtype;
  Shape shape;
};

TEST(Npy, RoundTripsEveryDtypeAndRank) {
  const DataType dtypes[] = {DataType::kFloat16, DataType::kFloat32, DataType::kFloat64,
                             DataType::kInt8,    DataType::kInt16,   DataType::kInt32,
                             DataType::kInt64,   DataType::kUInt8,   DataType::kUInt16,
                             DataType::kUInt32,  DataType::kUInt64,  DataType::kBool};
  const Shape shapes[] = {{}, {7}, {2, 3}, {1, 3, 4, 5}, {2, 0, 3}};
  uint32_t seed = 1;
  for (DataType dt : dtypes) {
    for (const Shape& shape : shapes) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + shape_str(shape));
      Tensor t = random_of(dt, shape, seed++);
      fs::path p = temp_path("rt.npy");
      ASSERT_TRUE(write_npy(p.string(), t).is_ok());
      auto back = read_npy(p.string());
      fs::remove(p);
      ASSERT_TRUE(back.is_ok()) << back.status().to_string();
      EXPECT_EQ(back->dtype(), dt);
      EXPECT_EQ(back->shape(), shape);
      ASSERT_EQ(back->nbytes(), t.nbytes());
      EXPECT_EQ(std::memcmp(back->raw(), t.raw(), t.nbytes()), 0);
      // The header is padded so the data starts on a 64-byte boundary, as numpy does.
      auto bytes = encode_npy(t);
      ASSERT_TRUE(bytes.is_ok());
      EXPECT_EQ((bytes->size() - t.nbytes()) % 64, 0u);
    }
  }
}

TEST(Npy, ReadsFilesWrittenByNumpy) {
  auto f32 = read_npy((data_dir() / "f32_2x3.npy").string());
  ASSERT_TRUE(f32.is_ok()) << f32.status().to_string();
  EXPECT_EQ(f32->dtype(), DataType::kFloat32);
  EXPECT_EQ(f32->shape(), (Shape{2, 3}));
  EXPECT_EQ(f32->to_floats(), (std::vector<float>{1.5f, -2.25f, 3.f, 0.125f, -7.f, 1e-3f}));

  auto i64 = read_npy((data_dir() / "i64_4.npy").string());
  ASSERT_TRUE(i64.is_ok());
  EXPECT_EQ(i64->to_int64s(), (std::vector<int64_t>{-9000000000LL, -1, 0, 123456789012LL}));

  auto u8 = read_npy((data_dir() / "u8_2x2x2.npy").string());
  ASSERT_TRUE(u8.is_ok());
  EXPECT_EQ(u8->dtype(), DataType::kUInt8);
  EXPECT_EQ(u8->shape(), (Shape{2, 2, 2}));
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(u8->at_double(i), 31 * i);

  auto b1 = read_npy((data_dir() / "b1_5.npy").string());
  ASSERT_TRUE(b1.is_ok());
  EXPECT_EQ(b1->dtype(), DataType::kBool);
  EXPECT_EQ(b1->to_int64s(), (std::vector<int64_t>{1, 0, 1, 1, 0}));

  auto f16 = read_npy((data_dir() / "f16_3.npy").string());
  ASSERT_TRUE(f16.is_ok());
  EXPECT_EQ(f16->dtype(), DataType::kFloat16);
  EXPECT_EQ(f16->to_floats(), (std::vector<float>{0.5f, -1.f, 65504.f}));

  auto f64 = read_npy((data_dir() / "f64_scalar.npy").string());
  ASSERT_TRUE(f64.is_ok());
  EXPECT_EQ(f64->shape(), Shape{});
  EXPECT_EQ(f64->at_double(0), 3.141592653589793);

  auto v2 = read_npy((data_dir() / "i16_2x2_v2.npy").string());
  ASSERT_TRUE(v2.is_ok()) << v2.status().to_string();
  EXPECT_EQ(v2->dtype(), DataType::kInt16);
  EXPECT_EQ(v2->to_int64s(), (std::vector<int64_t>{-3, 4, 5, -32768}));
}

TEST(Npy, WritesTheSameBytesAsNumpy) {
  for (const char* name :
       {"f32_2x3.npy", "i64_4.npy", "u8_2x2x2.npy", "b1_5.npy", "f16_3.npy", "f64_scalar.npy"}) {
    SCOPED_TRACE(name);
    std::string want = slurp(data_dir() / name);
    auto t = parse_npy(want, name);
    ASSERT_TRUE(t.is_ok()) << t.status().to_string();
    auto got = encode_npy(*t);
    ASSERT_TRUE(got.is_ok());
    EXPECT_EQ(*got, want);
  }
}

TEST(Npy, RefusesWhatItCannotRepresent) {
  struct Case {
    const char* file;
    StatusCode code;
    const char* says;
  };
  const Case cases[] = {
      {"f32_big_endian.npy", StatusCode::kUnsupported, "big-endian"},
      {"f32_fortran.npy", StatusCode::kUnsupported, "Fortran"},
      {"object.npy", StatusCode::kUnsupported, "object"},
  };
  for (const Case& c : cases) {
    auto r = read_npy((data_dir() / c.file).string());
    ASSERT_FALSE(r.is_ok()) << c.file;
    EXPECT_EQ(r.status().code(), c.code) << c.file;
    EXPECT_NE(r.status().message().find(c.says), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(c.file), std::string::npos) << r.status().message();
  }
  Tensor bf(DataType::kBFloat16, {2});
  EXPECT_EQ(write_npy(temp_path("bf.npy").string(), bf).code(), StatusCode::kUnsupported);
}

// A v1 file with `dict` as its header (unpadded) followed by `data`.
std::string make_v1(const std::string& dict, const std::string& data = "") {
  std::string s("\x93NUMPY\x01\x00", 8);
  s += static_cast<char>(dict.size() & 0xff);
  s += static_cast<char>(dict.size() >> 8);
  return s + dict + data;
}

TEST(Npy, ReadsVersion3Headers) {
  std::string dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }\n";
  std::string s("\x93NUMPY\x03\x00", 8);
  for (int i = 0; i < 4; ++i) s += static_cast<char>((dict.size() >> (8 * i)) & 0xff);
  int32_t vals[2] = {-5, 77};
  s += dict + std::string(reinterpret_cast<char*>(vals), 8);
  auto t = parse_npy(s);
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_EQ(t->to_int64s(), (std::vector<int64_t>{-5, 77}));
}

TEST(Npy, MalformedFilesAreErrorsNotCrashes) {
  const std::string good = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  const std::string data(8, '\x01');
  ASSERT_TRUE(parse_npy(make_v1(good, data)).is_ok());
  std::string bad_version = make_v1(good, data);
  bad_version[6] = 7;
  std::string short_len("\x93NUMPY\x01\x00\x50", 9);
  struct Case {
    std::string name, bytes, says;
  };
  const Case cases[] = {
      {"empty", "", "bad magic"},
      {"bad magic", "PK\x03\x04 not numpy at all", "bad magic"},
      {"version 7", bad_version, "version 7"},
      {"header length cut", short_len, "truncated header"},
      {"header cut", make_v1(good).substr(0, 30), "truncated header"},
      {"data cut", make_v1(good, data.substr(0, 5)), "truncated data"},
      {"no shape", make_v1("{'descr': '<f4', 'fortran_order': False}"), "lacks"},
      {"structured", make_v1("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': ()}"),
       "structured"},
      {"unknown key", make_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (), 'x': 1}"),
       "unexpected key"},
      {"bad order", make_v1("{'descr': '<f4', 'fortran_order': 0, 'shape': ()}"), "fortran_order"},
      {"negative dim", make_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}"),
       "non-negative"},
      {"huge dims",
       make_v1("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296)}"),
       "truncated data"},
      {"complex", make_v1("{'descr': '<c8', 'fortran_order': False, 'shape': ()}"), "<c8"},
      {"unicode", make_v1("{'descr': '<U3', 'fortran_order': False, 'shape': ()}"), "<U3"},
      {"not a dict", make_v1("['descr']"), "expected '{'"},
      {"unterminated", make_v1("{'descr: '<f4'"), "expected ':'"},
  };
  for (const Case& c : cases) {
    auto r = parse_npy(c.bytes, "x.npy");
    ASSERT_FALSE(r.is_ok()) << c.name;
    EXPECT_NE(r.status().message().find(c.says), std::string::npos)
        << c.name << ": " << r.status().message();
  }
  auto missing = read_npy("/nonexistent/dir/file.npy");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace kiln
