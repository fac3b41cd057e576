#include "config/layer_pattern.h"

#include <cctype>
#include <variant>

#include "common/error.h"

namespace fsdpsim {
namespace {

// A value of the expression: an integer or a list of integers (what megatron/training/arguments.py _eval_pattern
// admits: digits, commas, brackets, parentheses, + and *).
using Value = std::variant<int64_t, std::vector<int64_t>>;

class PatternParser {
 public:
  PatternParser(const std::string& text, const std::string& flag, int64_t max_length)
      : text_(text), flag_(flag), max_length_(max_length) {}

  std::vector<int64_t> parse() {
    const Value v = sum();
    skip_spaces();
    if (pos_ != text_.size()) fail("unexpected '" + std::string(1, text_[pos_]) + "'");
    if (!std::holds_alternative<std::vector<int64_t>>(v)) fail("the pattern is a number, not a list");
    return std::get<std::vector<int64_t>>(v);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw ConfigError(
        SourceLocation{"<megatron-args>", 0, 0}, flag_,
        "cannot read the layer pattern '" + text_ + "': " + what + " at character " + std::to_string(pos_ + 1),
        "write an integer N (every N-th layer) or a list expression such as ([0]*3+[1]*58)");
  }
  void skip_spaces() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool accept(char c) {
    skip_spaces();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  int64_t number() {
    skip_spaces();
    int64_t v = 0;
    const size_t start = pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      v = v * 10 + (text_[pos_++] - '0');
      if (v > max_length_) fail("a number above " + std::to_string(max_length_));
    }
    if (pos_ == start) fail("expected a number, a list or '('");
    return v;
  }
  // sum := product ('+' product)*: lists concatenate, integers add.
  Value sum() {
    Value left = product();
    while (accept('+')) {
      Value right = product();
      if (left.index() != right.index()) fail("'+' between a list and a number");
      if (auto* l = std::get_if<std::vector<int64_t>>(&left)) {
        const auto& r = std::get<std::vector<int64_t>>(right);
        if (static_cast<int64_t>(l->size() + r.size()) > max_length_)
          fail("a list longer than " + std::to_string(max_length_));
        l->insert(l->end(), r.begin(), r.end());
      } else {
        std::get<int64_t>(left) += std::get<int64_t>(right);
      }
    }
    return left;
  }
  // product := atom ('*' atom)*: a list times a count repeats it.
  Value product() {
    Value left = atom();
    while (accept('*')) {
      Value right = atom();
      if (std::holds_alternative<std::vector<int64_t>>(left) && std::holds_alternative<std::vector<int64_t>>(right)) {
        fail("'*' between two lists");
      }
      if (std::holds_alternative<int64_t>(left) && std::holds_alternative<int64_t>(right)) {
        const int64_t product = std::get<int64_t>(left) * std::get<int64_t>(right);
        if (product > max_length_) fail("a number above " + std::to_string(max_length_));
        left = product;
        continue;
      }
      const auto& list = std::holds_alternative<std::vector<int64_t>>(left) ? std::get<std::vector<int64_t>>(left)
                                                                            : std::get<std::vector<int64_t>>(right);
      const int64_t times = std::holds_alternative<int64_t>(left) ? std::get<int64_t>(left) : std::get<int64_t>(right);
      if (!list.empty() && times > max_length_ / static_cast<int64_t>(list.size())) {
        fail("a list longer than " + std::to_string(max_length_));
      }
      std::vector<int64_t> repeated;
      for (int64_t i = 0; i < times; ++i) repeated.insert(repeated.end(), list.begin(), list.end());
      left = std::move(repeated);
    }
    return left;
  }
  // atom := number | '[' number (',' number)* ']' | '(' sum ')'
  Value atom() {
    if (accept('(')) {
      Value inner = sum();
      if (!accept(')')) fail("expected ')'");
      return inner;
    }
    if (accept('[')) {
      std::vector<int64_t> list;
      if (accept(']')) return list;
      do {
        list.push_back(number());
        if (static_cast<int64_t>(list.size()) > max_length_) fail("a list longer than " + std::to_string(max_length_));
      } while (accept(','));
      if (!accept(']')) fail("expected ']'");
      return list;
    }
    return number();
  }

  const std::string& text_;
  const std::string& flag_;
  int64_t max_length_;
  size_t pos_ = 0;
};

}  // namespace

std::vector<int64_t> eval_layer_pattern(const std::string& text, const std::string& flag, int64_t max_length) {
  return PatternParser(text, flag, max_length).parse();
}

}  // namespace fsdpsim
