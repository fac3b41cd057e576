// The table of a struct's YAML keys (common/key_table.h): one row per key drives the allowed keys, the reader in
// table order and the writer in the same order, leaving out optional keys at their default.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/key_table.h"
#include "tests/support/error_of.h"

namespace fsdpsim {
namespace {

struct Link {
  std::string name;
  int64_t lanes = 0;
  double scale = 1.0;  // optional, written only when not 1
};

const std::vector<KeyRow<Link>>& link_rows() {
  static const std::vector<KeyRow<Link>> rows{
      {"name", KeyPresence::required, [](Link& l, const YamlValue& v) { l.name = v.as_string(); },
       [](YAML::Emitter& o, const std::string& k, const Link& l) { o << YAML::Key << k << YAML::Value << l.name; }},
      {"lanes", KeyPresence::required, [](Link& l, const YamlValue& v) { l.lanes = v.as_int(1, 64); },
       [](YAML::Emitter& o, const std::string& k, const Link& l) { o << YAML::Key << k << YAML::Value << l.lanes; }},
      {"scale", KeyPresence::optional, [](Link& l, const YamlValue& v) { l.scale = v.as_double(0.0, 2.0); },
       [](YAML::Emitter& o, const std::string& k, const Link& l) {
         if (l.scale != 1.0) o << YAML::Key << k << YAML::Value << l.scale;
       }},
  };
  return rows;
}

Link read(const std::string& text) {
  const YamlDocument doc = load_yaml_text(text, "link.yaml");
  YamlMap map(doc.root, doc.source, "");
  map.allow(keys_of(link_rows()));
  map.finish();
  Link l;
  read_keys(map, link_rows(), l);
  return l;
}

std::string write(const Link& l) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  write_keys(out, link_rows(), l);
  out << YAML::EndMap;
  return out.c_str();
}

TEST(KeyTable, ReadsRequiredAndOptionalKeysAndWritesThemBackInTableOrder) {
  EXPECT_EQ(keys_of(link_rows()), (std::vector<std::string>{"name", "lanes", "scale"}));
  const Link l = read("lanes: 18\nname: nvlink\n");
  EXPECT_EQ(l.name, "nvlink");
  EXPECT_EQ(l.lanes, 18);
  EXPECT_EQ(l.scale, 1.0);                         // absent optional key: the default
  EXPECT_EQ(write(l), "name: nvlink\nlanes: 18");  // table order, the default left out
  EXPECT_EQ(read("name: x\nlanes: 2\nscale: 0.5\n").scale, 0.5);
}

TEST(KeyTable, AMissingRequiredKeyAndAMisspelledOneAreErrorsNamingThem) {
  EXPECT_HAS(error_of([] { (void)read("name: x\n"); }), "lanes");
  EXPECT_HAS(error_of([] { (void)read("name: x\nlanes: 2\nscal: 0.5\n"); }), "did you mean 'scale'");
  EXPECT_HAS(error_of([] { (void)read("name: x\nlanes: 99\n"); }), "link.yaml:2");
}

}  // namespace
}  // namespace fsdpsim
