#include "common/text.h"

#include <gtest/gtest.h>

namespace fsdpsim {
namespace {

TEST(Text, SuggestsCloseNames) {
  const std::vector<std::string> keys{"micro_batch_size", "global_batch_size", "seq_length"};
  EXPECT_EQ(closest_match("micro_batch_sise", keys), "micro_batch_size");
  EXPECT_EQ(closest_match("zzz", keys), "");
  EXPECT_EQ(did_you_mean("seq_lenght", keys), " (did you mean 'seq_length'?)");
}

TEST(Text, StrictNumbers) {
  long long v = 0;
  EXPECT_TRUE(parse_int64("-12", &v));
  EXPECT_EQ(v, -12);
  EXPECT_FALSE(parse_int64("12.0", &v));
  EXPECT_FALSE(parse_int64("12x", &v));
  EXPECT_FALSE(parse_int64(" 12", &v));
  EXPECT_TRUE(parse_count("5e8", &v));
  EXPECT_EQ(v, 500'000'000);
  EXPECT_FALSE(parse_count("1.5", &v));
}

TEST(Text, SplitKeepsEmptyFields) {
  EXPECT_EQ(split("a,,b", ','), (std::vector<std::string>{"a", "", "b"}));
}

}  // namespace
}  // namespace fsdpsim
