// Strict JSON for text from files anyone may write (safetensors headers, checkpoints, configs,
// run logs). nlohmann::json::parse accepts any nesting depth, which the recursive code that
// walks or prints a value (dump(), a config flattener) turns into a stack overflow, and keeps
// the last of two equal keys without a word. parse_json_strict refuses both while parsing
// (the parser itself is iterative), in time and memory linear in the text.
// An internal header: it includes nlohmann/json, which lumen does not export.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace lumen {

// Parses `text`. Throws lumen::Error "[<owner>] <source>: <problem>" where problem is "not
// valid JSON: <parser message>", "JSON nested deeper than <max_depth> levels" or "duplicate
// key 'a.b'" (the key's path through the enclosing objects).
nlohmann::json parse_json_strict(std::string_view text, const std::string& owner,
                                 const std::string& source, int max_depth);

// value.dump() for a message, cut to about `max_chars` characters with "..." (a hostile
// value may be megabytes long).
std::string json_excerpt(const nlohmann::json& value, size_t max_chars = 80);

}  // namespace lumen
