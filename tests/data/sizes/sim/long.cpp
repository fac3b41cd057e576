// Fixture for Sizes.CatchesANewLongFunction: long_function is 90 lines (the limit is 80), and it is not in
// scripts/size_limits_allowed.txt.
namespace fixture {

struct Small {
  int value = 0;
  int twice() const { return 2 * value; }
};

int long_function(int x) {
  int total = 0;
  total += 1 * x;
  total += 2 * x;
  total += 3 * x;
  total += 4 * x;
  total += 5 * x;
  total += 6 * x;
  total += 7 * x;
  total += 8 * x;
  total += 9 * x;
  total += 10 * x;
  total += 11 * x;
  total += 12 * x;
  total += 13 * x;
  total += 14 * x;
  total += 15 * x;
  total += 16 * x;
  total += 17 * x;
  total += 18 * x;
  total += 19 * x;
  total += 20 * x;
  total += 21 * x;
  total += 22 * x;
  total += 23 * x;
  total += 24 * x;
  total += 25 * x;
  total += 26 * x;
  total += 27 * x;
  total += 28 * x;
  total += 29 * x;
  total += 30 * x;
  total += 31 * x;
  total += 32 * x;
  total += 33 * x;
  total += 34 * x;
  total += 35 * x;
  total += 36 * x;
  total += 37 * x;
  total += 38 * x;
  total += 39 * x;
  total += 40 * x;
  total += 41 * x;
  total += 42 * x;
  total += 43 * x;
  total += 44 * x;
  total += 45 * x;
  total += 46 * x;
  total += 47 * x;
  total += 48 * x;
  total += 49 * x;
  total += 50 * x;
  total += 51 * x;
  total += 52 * x;
  total += 53 * x;
  total += 54 * x;
  total += 55 * x;
  total += 56 * x;
  total += 57 * x;
  total += 58 * x;
  total += 59 * x;
  total += 60 * x;
  total += 61 * x;
  total += 62 * x;
  total += 63 * x;
  total += 64 * x;
  total += 65 * x;
  total += 66 * x;
  total += 67 * x;
  total += 68 * x;
  total += 69 * x;
  total += 70 * x;
  total += 71 * x;
  total += 72 * x;
  total += 73 * x;
  total += 74 * x;
  total += 75 * x;
  total += 76 * x;
  total += 77 * x;
  total += 78 * x;
  total += 79 * x;
  total += 80 * x;
  total += 81 * x;
  total += 82 * x;
  total += 83 * x;
  total += 84 * x;
  total += 85 * x;
  total += 86 * x;
  return total;
}

int short_function(int x) { return x + 1; }

}  // namespace fixture
