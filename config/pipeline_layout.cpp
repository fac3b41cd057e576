#include "config/pipeline_layout.h"

#include <cctype>

#include "common/limits.h"

namespace fsdpsim {
namespace {

// Expanded layouts longer than this are refused before they are built: a real layout has at most a few layers per
// chunk on each of kMaxPipelineStages · 64 virtual stages.
constexpr size_t kMaxExpandedLength = static_cast<size_t>(limits::kMaxLayers) * 4;

const char* const kKey = "pipeline_layout";
const char* const kSyntax =
    "write chunks of E (embedding), t (decoder layer) and L (loss) separated by |, with x*n "
    "or (…)*n to repeat, e.g. Etttt|(tttt|)*14tL";

// Recursive descent over: sequence := { symbol [*n] | '(' sequence ')' *n }; the result is the expanded text.
class Expander {
 public:
  Expander(const std::string& text, const SourceLocation& where) : text_(text), where_(where) {}

  std::string expand() {
    std::string out = sequence(0);
    if (pos_ < text_.size()) fail("unmatched ')' at character " + std::to_string(pos_ + 1));
    return out;
  }

 private:
  std::string sequence(int depth) {
    std::string out;
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == ')') {
        if (depth == 0) fail("unmatched ')' at character " + std::to_string(pos_ + 1));
        return out;
      }
      std::string item;
      if (c == '(') {
        const size_t open = pos_++;
        item = sequence(depth + 1);
        if (pos_ >= text_.size()) fail("the '(' at character " + std::to_string(open + 1) + " is never closed");
        ++pos_;  // ')'
        if (pos_ >= text_.size() || text_[pos_] != '*') {
          fail("a group in parentheses must be repeated: '(…)*n' (character " + std::to_string(pos_ + 1) + ")");
        }
      } else if (c == ',') {
        ++pos_;
        continue;
      } else if (c == 'E' || c == 'L' || c == 't' || c == 'm' || c == '|') {
        item = std::string(1, c);
        ++pos_;
      } else {
        fail("unknown layer character '" + std::string(1, c) + "' at character " + std::to_string(pos_ + 1));
      }
      out += repeated(item);
      if (out.size() > kMaxExpandedLength)
        fail("the layout expands to more than " + std::to_string(kMaxExpandedLength) + " entries");
    }
    return out;
  }

  // An optional "*n" after an item.
  std::string repeated(const std::string& item) {
    if (pos_ >= text_.size() || text_[pos_] != '*') return item;
    ++pos_;
    const size_t start = pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_])) != 0) ++pos_;
    if (pos_ == start) fail("'*' at character " + std::to_string(start) + " is not followed by a count");
    if (pos_ - start > 6) fail("the repeat count at character " + std::to_string(start + 1) + " is too large");
    const size_t count = std::stoul(text_.substr(start, pos_ - start));
    if (item.size() * count > kMaxExpandedLength) {
      fail("the layout expands to more than " + std::to_string(kMaxExpandedLength) + " entries");
    }
    std::string out;
    out.reserve(item.size() * count);
    for (size_t i = 0; i < count; ++i) out += item;
    return out;
  }

  [[noreturn]] void fail(const std::string& problem) const {
    throw ConfigError(where_, kKey, problem + " in '" + text_ + "'", kSyntax);
  }

  const std::string& text_;
  const SourceLocation& where_;
  size_t pos_ = 0;
};

}  // namespace

std::vector<LayoutChunk> parse_pipeline_layout(const std::string& text, const SourceLocation& where) {
  const std::string expanded = Expander(text, where).expand();
  std::vector<LayoutChunk> chunks(1);
  int32_t embeddings = 0;
  int32_t losses = 0;
  for (size_t i = 0; i < expanded.size(); ++i) {
    const char c = expanded[i];
    LayoutChunk& chunk = chunks.back();
    if (c == '|') {
      chunks.emplace_back();
    } else if (c == 'E') {
      if (i != 0) {
        throw ConfigError(where, kKey, "the embedding (E) must be the layout's first entry", kSyntax);
      }
      chunk.embedding = true;
      ++embeddings;
    } else if (c == 'L') {
      if (i + 1 != expanded.size()) {
        throw ConfigError(where, kKey, "the loss (L) must be the layout's last entry", kSyntax);
      }
      chunk.loss = true;
      ++losses;
    } else if (c == 'm') {
      throw ConfigError(where, kKey, "multi-token-prediction layers (m) are not modelled by fsdpsim",
                        "remove the m entries (the layout of a run without MTP)");
    } else {
      ++chunk.decoder_layers;
    }
  }
  if (embeddings != 1 || losses != 1) {
    throw ConfigError(where, kKey,
                      "'" + text + "' must hold the embedding (E) once, first, and the loss (L) once, last", kSyntax);
  }
  if (chunks.size() > static_cast<size_t>(limits::kMaxPipelineStages) * 64) {
    throw ConfigError(where, kKey, "the layout has " + std::to_string(chunks.size()) + " chunks",
                      "use at most " + std::to_string(limits::kMaxPipelineStages * 64) + " (64 stages × 64 chunks)");
  }
  return chunks;
}

}  // namespace fsdpsim
