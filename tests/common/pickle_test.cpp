// The plain-data pickle codec: pickles written by CPython's pickle module (protocols 2 and 4) read to the same
// data; our own writer round-trips; anything that would import or call code, truncation and absurd nesting are
// refused with the byte offset.
#include "common/pickle.h"

#include <gtest/gtest.h>

#include "common/error.h"
#include "tests/support/error_of.h"

namespace fsdpsim {
namespace {

std::string unhex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

// pickle.dumps(d, protocol=P) of CPython 3 for
//   x = []; d = {'a': x, 'b': x, 'neg': -5, 'big': 2**40, 'negbig': -(2**40), 'f': 1.5, 'u': 'é', 't': (1, 2, 3),
//              'n': None, 'yes': True}; x.append(1)
const char* const kProtocol2 =
    "80027d71002858010000006171015d71024b01615801000000627103680258030000006e656771044afbffffff580300000062696771058a"
    "0600000000000158060000006e656762696771068a060000000000ff5801000000667107473ff80000000000005801000000757108580200"
    "0000c3a97109580100000074710a4b014b024b0387710b58010000006e710c4e5803000000796573710d88752e";
const char* const kProtocol4 =
    "8004956c000000000000007d94288c0161945d944b01618c01629468028c036e6567944afbffffff8c03626967948a060000000000018c06"
    "6e6567626967948a060000000000ff8c016694473ff80000000000008c0175948c02c3a9948c0174944b014b024b0387948c016e944e8c03"
    "7965739488752e";

void expect_the_data(const PickleValue& d) {
  ASSERT_NE(d.dict(), nullptr);
  EXPECT_EQ(d.dict()->size(), 10u);
  for (const char* key : {"a", "b"}) {  // the same list, fetched from the memo the second time
    const PickleValue* list = d.find(key);
    ASSERT_NE(list, nullptr);
    ASSERT_NE(list->list(), nullptr);
    ASSERT_EQ(list->list()->size(), 1u);
    EXPECT_EQ(*list->list()->front().integer(), 1);
  }
  EXPECT_EQ(*d.find("neg")->integer(), -5);
  EXPECT_EQ(*d.find("big")->integer(), int64_t{1} << 40);
  EXPECT_EQ(*d.find("negbig")->integer(), -(int64_t{1} << 40));
  EXPECT_DOUBLE_EQ(*d.find("f")->real(), 1.5);
  EXPECT_EQ(*d.find("u")->string(), "\xc3\xa9");
  ASSERT_EQ(d.find("t")->list()->size(), 3u);  // a tuple reads as a list
  EXPECT_EQ(*d.find("t")->list()->back().integer(), 3);
  EXPECT_TRUE(d.find("n")->is_none());
  EXPECT_TRUE(std::get<bool>(d.find("yes")->value));
}

TEST(Pickle, ReadsWhatCPythonWritesInProtocols2And4) {
  expect_the_data(read_pickle(unhex(kProtocol2), "p2.pickle"));
  expect_the_data(read_pickle(unhex(kProtocol4), "p4.pickle"));
}

TEST(Pickle, OwnWriterRoundTrips) {
  const PickleValue v = read_pickle(unhex(kProtocol4), "p4.pickle");
  const std::string bytes = write_pickle(v);
  EXPECT_EQ(bytes.substr(0, 2), std::string("\x80\x02", 2));  // protocol 2, which every Python 3 reads
  expect_the_data(read_pickle(bytes, "ours.pickle"));
  // Integers at every encoding boundary.
  for (const int64_t i : {int64_t{0}, int64_t{255}, int64_t{256}, int64_t{65535}, int64_t{65536}, int64_t{-1},
                          int64_t{INT32_MIN}, int64_t{INT32_MAX} + 1, INT64_MAX, INT64_MIN}) {
    EXPECT_EQ(*read_pickle(write_pickle(pickle_int(i)), "i.pickle").integer(), i) << i;
  }
}

// PyTorch 2.11 writes a frame's unknown line as 2^64 - 1 (seen in a real FSDP2 snapshot, bench/results): an integer
// beyond 64 bits reads as the nearest real rather than refusing the whole file.
TEST(Pickle, IntegersBeyond64BitsReadAsReals) {
  // pickle.dumps([2**64 - 1, -(2**64), 2**100], protocol=2) of CPython 3.
  const PickleValue v =
      read_pickle(unhex("80025d7100288a09ffffffffffffffff008a090000000000000000ff8a0d00000000000000000000000010652e"),
                  "big.pickle");
  ASSERT_EQ(v.list()->size(), 3u);
  EXPECT_EQ(v.list()->at(0).integer(), nullptr);
  EXPECT_DOUBLE_EQ(*v.list()->at(0).real(), 18446744073709551615.0);
  EXPECT_DOUBLE_EQ(*v.list()->at(1).real(), -18446744073709551616.0);
  EXPECT_DOUBLE_EQ(*v.list()->at(2).real(), 1267650600228229401496703205376.0);
  // LONG4 with a length of 2^31 - 1: refused before anything is read.
  EXPECT_HAS(error_of([] { (void)read_pickle(std::string("\x80\x02\x8b\xff\xff\xff\x7f.", 8), "l.pickle"); }),
             "an integer of 2147483647 bytes");
}

TEST(Pickle, ACodeRunningPickleIsRefusedAtItsOpcode) {
  // pickle.dumps of an object whose __reduce__ returns (os.system, ('true',)): GLOBAL 'posix system' at byte 2.
  const std::string evil = unhex("800263706f7369780a73797374656d0a710058040000007472756571018571025271032e");
  const std::string m = error_of([&] { (void)read_pickle(evil, "evil.pickle"); });
  EXPECT_HAS(m, "evil.pickle: 'pickle': at byte 2: opcode GLOBAL would import or call Python code");
}

TEST(Pickle, TruncatedCorruptAndAbsurdPicklesAreRefused) {
  const std::string good = unhex(kProtocol2);
  EXPECT_HAS(error_of([&] { (void)read_pickle(good.substr(0, 40), "t.pickle"); }), "(the file is truncated)");
  EXPECT_HAS(error_of([&] {
               (void)read_pickle(std::string("\x80\x02"
                                             "e.",
                                             4),
                                 "c.pickle");
             }),
             "at byte 2: has no MARK to pop to");
  EXPECT_HAS(error_of([&] { (void)read_pickle(std::string("\x80\x02h\x07.", 5), "m.pickle"); }),
             "fetches memo entry 7, which was never stored");
  EXPECT_HAS(error_of([&] { (void)read_pickle(std::string("\x80\x02\x8f.", 4), "s.pickle"); }),
             "opcode 0x8f is not one fsdpsim reads");
  // 100 nested lists against a depth limit of 64.
  std::string deep = "\x80\x02";
  for (int i = 0; i < 100; ++i) deep += "]";
  for (int i = 0; i < 99; ++i) deep += "a";
  deep += ".";
  EXPECT_HAS(error_of([&] { (void)read_pickle(deep, "d.pickle"); }), "containers nested deeper than 64");
  // A list that holds itself (EMPTY_LIST, BINPUT 0, BINGET 0, APPEND): refused, and nothing leaks (the fuzz
  // target runs under LeakSanitizer).
  EXPECT_HAS(error_of([] {
               (void)read_pickle(std::string("\x80\x02]q\x00h\x00"
                                             "a.",
                                             9),
                                 "cycle.pickle");
             }),
             "or a container that holds itself");
  PickleLimits small;
  small.max_bytes = 10;
  EXPECT_HAS(error_of([&] { (void)read_pickle(good, "big.pickle", small); }), "more than the 10 fsdpsim reads");
}

}  // namespace
}  // namespace fsdpsim
