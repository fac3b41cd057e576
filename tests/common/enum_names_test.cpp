// The one table that names enum values (common/enum_names.h): name, parse, the list an error offers, and the first
// entry winning where a value has several spellings.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/enum_names.h"

namespace fsdpsim {
namespace {

enum class Fruit : uint8_t { apple, pear, plum };

constexpr EnumNames<Fruit, 4> kFruits{
    {{{Fruit::apple, "apple"}, {Fruit::pear, "pear"}, {Fruit::plum, "plum"}, {Fruit::apple, "malus"}}}};

// Usable at compile time: tables cost nothing at start-up.
static_assert(kFruits.name(Fruit::pear) == "pear");
static_assert(kFruits.parse("plum") == Fruit::plum);

TEST(EnumNames, NamesParsesAndListsInTableOrder) {
  EXPECT_EQ(kFruits.name(Fruit::apple), "apple");    // the first spelling is the one written
  EXPECT_EQ(kFruits.parse("malus"), Fruit::apple);   // every spelling is read
  EXPECT_FALSE(kFruits.parse("Apple").has_value());  // names are exact
  EXPECT_EQ(kFruits.names(), (std::vector<std::string>{"apple", "pear", "plum", "malus"}));
  EXPECT_EQ(kFruits.values(), (std::vector<Fruit>{Fruit::apple, Fruit::pear, Fruit::plum, Fruit::apple}));
}

TEST(EnumNames, AValueTheTableDoesNotListIsNamedQuestionMark) {
  constexpr EnumNames<Fruit, 1> only_apple{{{{Fruit::apple, "apple"}}}};
  EXPECT_EQ(only_apple.name(Fruit::plum), "?");
}

}  // namespace
}  // namespace fsdpsim
