// Typed, named options for things built by name from a config: the model registry
// (models/registry.h) and the training config (train/config.h). An OptionSpec gives a key its
// type (through its default), help text and allowed values; Options holds resolved values and
// reads them back with the type checked. Also the edit distance used to suggest a key.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace lumen::nn {

// The JSON types a key may have: true/false, an integer, a number, a string, a list of
// integers, a list of numbers.
using OptionValue =
    std::variant<bool, int64_t, double, std::string, std::vector<int64_t>, std::vector<double>>;

// "bool", "integer", "number", "string", "list of integers", "list of numbers".
const char* option_type_name(const OptionValue& value);
// JSON text: true, 3, 0.0003, "dgvit", [28, 28]. Numbers use the shortest round-trip form.
std::string format_option(const OptionValue& value);

// The values a number key allows (an integer or number key, or each item of a list), e.g.
// Range::at_least(1) for a count, Range::between(0, 1, true) for [0, 1). Numbers must be
// finite whatever the range.
struct Range {
    double min = -std::numeric_limits<double>::infinity();
    double max = std::numeric_limits<double>::infinity();
    bool max_open = false;  // max itself is excluded
    bool min_open = false;  // min itself is excluded

    static Range at_least(double min) { return {min}; }
    static Range above(double min) {
        return {min, std::numeric_limits<double>::infinity(), false, true};
    }
    static Range between(double min, double max, bool max_open = false) {
        return {min, max, max_open};
    }
    bool contains(double x) const;
    // ">= 1", "> 0", "[0, 1)", "[1, 1000000]".
    std::string str() const;
};

struct OptionSpec {
    std::string key;
    OptionValue default_value;  // also fixes the type
    std::string help;
    std::vector<std::string> choices;  // for strings: the allowed values (empty: any)
    Range range;                       // for numbers: the allowed values (default: any finite)
};

// `value` converted to the spec's type: an integer where a number is expected becomes a
// number, a list of integers a list of numbers; a string must be one of spec.choices when
// there are some; a number (or each number of a list) must be finite and in spec.range.
// Throws [<owner>] "option '<where>' expects a <type>, got <value>", "option '<where>' must
// be in [1, 1000000], got 0", or names the allowed values (with the closest one suggested). `where`
// is the key as the user wrote it (e.g. with its section: "model.depth").
OptionValue coerce_option(const OptionSpec& spec, const OptionValue& value,
                          const std::string& owner, const std::string& where);

// Resolved values by key. Getters throw [<owner>] when the key is absent or has another type
// (a program error: configs are validated against their specs before they get here).
class Options {
  public:
    explicit Options(std::string owner = "options") : owner_(std::move(owner)) {}
    void set(const std::string& key, OptionValue value) { values_[key] = std::move(value); }
    bool has(const std::string& key) const { return values_.count(key) > 0; }
    const OptionValue& get(const std::string& key) const;
    bool get_bool(const std::string& key) const;
    int64_t get_int(const std::string& key) const;
    double get_double(const std::string& key) const;  // an integer value is converted
    const std::string& get_string(const std::string& key) const;
    const std::vector<int64_t>& get_ints(const std::string& key) const;
    std::vector<double> get_doubles(const std::string& key) const;
    // The keys under "<prefix>." with the prefix removed (owner becomes `owner`).
    Options section(const std::string& prefix, const std::string& owner) const;
    const std::map<std::string, OptionValue>& values() const { return values_; }
    const std::string& owner() const { return owner_; }

  private:
    template <typename T>
    const T& typed(const std::string& key, const char* type) const;
    std::string owner_;
    std::map<std::string, OptionValue> values_;
};

// Edit distance with insertions, deletions, substitutions and swaps of two neighbouring
// characters, each cost 1 (the optimal string alignment distance: Levenshtein plus typos like
// "dgvti" for "dgvit").
size_t edit_distance(const std::string& a, const std::string& b);
// The candidate closest to `name` by edit distance when it is close enough to be a likely typo
// (distance <= max(2, |name| / 3)), else "". Ties go to the first candidate.
std::string closest_match(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace lumen::nn
