#include "common/yaml_reader.h"

#include <gtest/gtest.h>
#include "tests/support/error_of.h"

namespace fsdpsim {
namespace {

// Runs `body` and returns the ConfigError message it throws ("" when it throws nothing).
TEST(YamlReader, ReadsTypedValues) {
  auto doc = load_yaml_text("tp: 8\nbw: 450GB/s\nflag: true\nname: x\n", "cfg.yaml");
  YamlMap map(doc.root, doc.source, "");
  EXPECT_EQ(map.get("tp").as_int(1), 8);
  EXPECT_DOUBLE_EQ(map.get("bw").as_bandwidth_bytes_per_s(), 450e9);
  EXPECT_TRUE(map.get("flag").as_bool());
  EXPECT_EQ(map.string_or("name", ""), "x");
  EXPECT_EQ(map.int_or("absent", 3), 3);
  EXPECT_NO_THROW(map.finish());
}

TEST(YamlReader, UnknownKeyNamesFileLineAndSuggestion) {
  auto doc = load_yaml_text("tp: 8\nmicro_batch_sise: 2\n", "cfg.yaml");
  YamlMap map(doc.root, doc.source, "parallel");
  (void)map.int_or("tp", 1);
  (void)map.int_or("micro_batch_size", 1);
  const std::string message = error_of([&] { map.finish(); });
  EXPECT_NE(message.find("cfg.yaml:2:1"), std::string::npos) << message;
  EXPECT_NE(message.find("'parallel.micro_batch_sise': unknown key"), std::string::npos) << message;
  EXPECT_NE(message.find("did you mean 'micro_batch_size'"), std::string::npos) << message;
}

TEST(YamlReader, WrongTypeAndRange) {
  auto doc = load_yaml_text("tp: eight\ncp: -2\n", "cfg.yaml");
  YamlMap map(doc.root, doc.source, "");
  std::string message = error_of([&] { (void)map.get("tp").as_int(1); });
  EXPECT_NE(message.find("cfg.yaml:1:5: 'tp': expected a whole number, got 'eight'"), std::string::npos) << message;
  message = error_of([&] { (void)map.get("cp").as_int(1); });
  EXPECT_NE(message.find("'cp': value -2 is out of range (it must be at least 1)"), std::string::npos) << message;
}

TEST(YamlReader, MalformedYamlNamesTheLine) {
  const std::string message = error_of([] { load_yaml_text("a: 1\nb: [1, 2\n", "broken.yaml"); });
  EXPECT_NE(message.find("broken.yaml:"), std::string::npos) << message;
  EXPECT_NE(message.find("malformed YAML"), std::string::npos) << message;
}

TEST(YamlReader, MissingFile) {
  const std::string message = error_of([] { load_yaml_file("/nonexistent/dir/model.yaml"); });
  EXPECT_NE(message.find("/nonexistent/dir/model.yaml: cannot open file"), std::string::npos) << message;
}

TEST(YamlReader, DuplicateKeyIsAnError) {
  auto doc = load_yaml_text("tp: 1\ntp: 2\n", "cfg.yaml");
  YamlMap map(doc.root, doc.source, "");
  (void)map.int_or("tp", 1);
  EXPECT_NE(error_of([&] { map.finish(); }).find("key appears twice"), std::string::npos);
}

TEST(YamlReader, ChoiceListsValidValues) {
  auto doc = load_yaml_text("strategy: optim_grad\n", "cfg.yaml");
  YamlMap map(doc.root, doc.source, "");
  const std::string message = error_of([&] {
    (void)map.get("strategy").as_choice({"no_shard", "optim", "optim_grads", "optim_grads_params"});
  });
  EXPECT_NE(message.find("did you mean 'optim_grads'"), std::string::npos) << message;
  EXPECT_NE(message.find("valid: no_shard, optim, optim_grads, optim_grads_params"), std::string::npos) << message;
}

}  // namespace
}  // namespace fsdpsim
