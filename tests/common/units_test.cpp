#include "common/units.h"

#include <gtest/gtest.h>

namespace fsdpsim {
namespace {

TEST(Units, BytesDecimalAndBinary) {
  EXPECT_EQ(parse_bytes("4096"), 4096);
  EXPECT_EQ(parse_bytes("80GB"), 80'000'000'000);
  EXPECT_EQ(parse_bytes("80GiB"), 80 * kGiB);
  EXPECT_EQ(parse_bytes("1.5 KiB"), 1536);  // 1.5 × 1024
  EXPECT_EQ(parse_bytes("4MiB"), 4 * kMiB);
}

TEST(Units, BytesRejectsNegativeFractionalAndUnknown) {
  std::string why;
  EXPECT_FALSE(parse_bytes("-1GB", &why));
  EXPECT_NE(why.find("negative"), std::string::npos);
  EXPECT_FALSE(parse_bytes("1.3B", &why));  // not a whole byte count
  EXPECT_FALSE(parse_bytes("12 parsecs", &why));
  EXPECT_NE(why.find("unknown size unit 'parsecs'"), std::string::npos);
  EXPECT_FALSE(parse_bytes("", &why));
}

TEST(Units, TimeNeedsAUnit) {
  EXPECT_EQ(parse_time_ns("1.5us"), 1500);
  EXPECT_EQ(parse_time_ns("25ns"), 25);
  EXPECT_EQ(parse_time_ns("2ms"), 2'000'000);
  std::string why;
  EXPECT_FALSE(parse_time_ns("15", &why));
  EXPECT_NE(why.find("no unit"), std::string::npos);
}

TEST(Units, BandwidthBitsAndBytes) {
  // 400 Gb/s is 400e9 / 8 = 50e9 bytes/s: one NDR port.
  EXPECT_DOUBLE_EQ(*parse_bandwidth_bytes_per_s("400Gb/s"), 50e9);
  EXPECT_DOUBLE_EQ(*parse_bandwidth_bytes_per_s("450GB/s"), 450e9);
  EXPECT_DOUBLE_EQ(*parse_bandwidth_bytes_per_s("3.35TB/s"), 3.35e12);
  EXPECT_FALSE(parse_bandwidth_bytes_per_s("450"));
}

TEST(Units, Flops) {
  EXPECT_DOUBLE_EQ(*parse_flops_per_s("989TFLOPS"), 989e12);
}

TEST(Units, Formatting) {
  EXPECT_EQ(format_bytes(80 * kGiB), "80.0 GiB");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_time_ns(1500), "1.5 us");
  EXPECT_EQ(format_time_ns(2'500'000), "2.50 ms");
}

}  // namespace
}  // namespace fsdpsim
