#pragma once
/// Small string helpers shared by the parsers and reports.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fsdpsim {

/// The candidate closest to `word` by edit distance, or "" when none is close enough to be a likely typo.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

/// " (did you mean 'x'?)" or "" — appended to unknown-name errors.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

/// "a, b, c" for listing valid choices in an error.
std::string join(const std::vector<std::string>& items, std::string_view separator = ", ");

/// Splits on a single character; empty fields are kept.
std::vector<std::string> split(std::string_view text, char separator);

/// Removes leading and trailing white space.
std::string trim_copy(std::string_view text);

/// Strict integer parse of the whole text ("12", "-3"; not "12.0", "1e3", " 12x"); false on failure or overflow.
bool parse_int64(std::string_view text, long long* out);

/// Strict floating-point parse of the whole text ("1.5", "1e9"); false on failure.
bool parse_double(std::string_view text, double* out);

/// The shortest decimal that reads back as `value` ("1.5", "1.1", "2"): the same every run, for keys and messages.
std::string shortest_decimal(double value);

/// True when `text` is valid UTF-8 without control characters other than tab and newline; otherwise false with
/// `bad_byte` set to the offset of the first offending byte. Names and descriptions must be such text: the YAML
/// writers cannot round-trip anything else.
bool is_plain_text(std::string_view text, size_t* bad_byte);

/// Parses a parameter or element count: an integer, or scientific notation that is a whole number ("1e9", "5e8").
bool parse_count(std::string_view text, long long* out);

/// Splits a pasted shell command line into words: white space separates them, single or double quotes group them, a
/// backslash-newline joins lines. Nothing is expanded. nullopt when a quote is left open.
std::optional<std::vector<std::string>> split_shell_words(std::string_view text);

}  // namespace fsdpsim
