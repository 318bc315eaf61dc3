// Options: typed lookups with messages naming the key; edit distance by the two-row DP.
#include "nn/options.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/error.h"

namespace lumen::nn {

const char* option_type_name(const OptionValue& value) {
    static const char* const kNames[] = {"bool",   "integer",          "number",
                                         "string", "list of integers", "list of numbers"};
    return kNames[value.index()];
}

namespace {

// "a number", "an integer".
std::string with_article(const char* type) {
    return std::string(std::string("aeiou").find(type[0]) == std::string::npos ? "a " : "an ") +
           type;
}

// `bare`: whole numbers print as integers ("1000000"; for ranges), else as numbers ("1.0").
std::string number_text(double x, bool bare = false) {
    char buffer[32];
    if (bare && x == std::floor(x) && std::abs(x) < 1e15) {
        std::snprintf(buffer, sizeof(buffer), "%.0f", x);
        return buffer;
    }
    // %.17g always round-trips; try shorter forms first so 0.0003 prints as 0.0003.
    for (int digits = 6; digits <= 17; ++digits) {
        std::snprintf(buffer, sizeof(buffer), "%.*g", digits, x);
        if (std::stod(buffer) == x) break;
    }
    std::string text = buffer;
    if (text.find_first_of(".eEn") == std::string::npos) text += ".0";  // keep it a number
    return text;
}

}  // namespace

std::string format_option(const OptionValue& value) {
    std::ostringstream out;
    if (auto* b = std::get_if<bool>(&value)) out << (*b ? "true" : "false");
    if (auto* i = std::get_if<int64_t>(&value)) out << *i;
    if (auto* d = std::get_if<double>(&value)) out << number_text(*d);
    if (auto* s = std::get_if<std::string>(&value)) out << '"' << *s << '"';
    if (auto* list = std::get_if<std::vector<int64_t>>(&value)) {
        out << '[';
        for (size_t k = 0; k < list->size(); ++k) out << (k ? ", " : "") << (*list)[k];
        out << ']';
    }
    if (auto* list = std::get_if<std::vector<double>>(&value)) {
        out << '[';
        for (size_t k = 0; k < list->size(); ++k) out << (k ? ", " : "") << number_text((*list)[k]);
        out << ']';
    }
    return out.str();
}

bool Range::contains(double x) const {
    return std::isfinite(x) && (min_open ? x > min : x >= min) && (max_open ? x < max : x <= max);
}

std::string Range::str() const {
    const bool low = std::isfinite(min), high = std::isfinite(max);
    if (!low && !high) return "finite";
    if (!high) return std::string(min_open ? "> " : ">= ") + number_text(min, true);
    if (!low) return std::string(max_open ? "< " : "<= ") + number_text(max, true);
    return std::string(min_open ? "(" : "[") + number_text(min, true) + ", " +
           number_text(max, true) + (max_open ? ")" : "]");
}

namespace {

// The numbers of a value (one, or a list's items) must lie in the spec's range.
void check_range(const OptionSpec& spec, const OptionValue& value, const std::string& owner,
                 const std::string& where) {
    std::vector<double> numbers;
    if (auto* i = std::get_if<int64_t>(&value)) numbers = {double(*i)};
    if (auto* d = std::get_if<double>(&value)) numbers = {*d};
    if (auto* list = std::get_if<std::vector<int64_t>>(&value))
        numbers.assign(list->begin(), list->end());
    if (auto* list = std::get_if<std::vector<double>>(&value)) numbers = *list;
    const bool is_list = value.index() >= 4;
    const std::string range = spec.range.str();
    const bool interval = range[0] == '[' || range[0] == '(';
    for (double x : numbers) {
        if (spec.range.contains(x)) continue;
        LUMEN_FAIL(owner, is_list ? "each value of " : "", "option '", where, "' must be ",
                   !std::isfinite(x) || range == "finite" ? "a finite number"
                   : interval                             ? "in " + range
                                                          : range,
                   ", got ", format_option(value));
    }
}

}  // namespace

OptionValue coerce_option(const OptionSpec& spec, const OptionValue& value,
                          const std::string& owner, const std::string& where) {
    const OptionValue& want = spec.default_value;
    OptionValue converted = value;
    if (std::holds_alternative<double>(want))
        if (auto* i = std::get_if<int64_t>(&value)) converted = double(*i);
    if (std::holds_alternative<std::vector<double>>(want))
        if (auto* ints = std::get_if<std::vector<int64_t>>(&value))
            converted = std::vector<double>(ints->begin(), ints->end());
    LUMEN_CHECK(converted.index() == want.index(), owner, "option '", where, "' expects ",
                with_article(option_type_name(want)), ", got ", format_option(value));
    check_range(spec, converted, owner, where);
    if (auto* text = std::get_if<std::string>(&value); text && !spec.choices.empty()) {
        const auto& choices = spec.choices;
        if (std::find(choices.begin(), choices.end(), *text) == choices.end()) {
            std::string guess = closest_match(*text, choices), allowed;
            for (size_t i = 0; i < choices.size(); ++i) allowed += (i ? ", " : "") + choices[i];
            LUMEN_FAIL(owner, "option '", where, "' must be one of ", allowed, ", got \"", *text,
                       "\"", guess.empty() ? "" : "; did you mean \"" + guess + "\"?");
        }
    }
    return converted;
}

const OptionValue& Options::get(const std::string& key) const {
    auto it = values_.find(key);
    LUMEN_CHECK(it != values_.end(), owner_, "has no option '", key, "'");
    return it->second;
}

template <typename T>
const T& Options::typed(const std::string& key, const char* type) const {
    const OptionValue& value = get(key);
    const T* typed_value = std::get_if<T>(&value);
    LUMEN_CHECK(typed_value != nullptr, owner_, "option '", key, "' is ",
                with_article(option_type_name(value)), ", not ", with_article(type));
    return *typed_value;
}

bool Options::get_bool(const std::string& key) const { return typed<bool>(key, "bool"); }

int64_t Options::get_int(const std::string& key) const { return typed<int64_t>(key, "integer"); }

double Options::get_double(const std::string& key) const {
    if (auto* i = std::get_if<int64_t>(&get(key))) return double(*i);
    return typed<double>(key, "number");
}

const std::string& Options::get_string(const std::string& key) const {
    return typed<std::string>(key, "string");
}

const std::vector<int64_t>& Options::get_ints(const std::string& key) const {
    return typed<std::vector<int64_t>>(key, "list of integers");
}

std::vector<double> Options::get_doubles(const std::string& key) const {
    if (auto* ints = std::get_if<std::vector<int64_t>>(&get(key)))
        return std::vector<double>(ints->begin(), ints->end());
    return typed<std::vector<double>>(key, "list of numbers");
}

Options Options::section(const std::string& prefix, const std::string& owner) const {
    Options out(owner);
    const std::string head = prefix + ".";
    for (const auto& [key, value] : values_)
        if (key.rfind(head, 0) == 0) out.set(key.substr(head.size()), value);
    return out;
}

size_t edit_distance(const std::string& a, const std::string& b) {
    // Rows i - 2, i - 1 and i of the distance table.
    std::vector<size_t> before(b.size() + 1), previous(b.size() + 1), current(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) previous[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        current[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            size_t substitute = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
            current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitute});
            // Two neighbours swapped ("dgvti" for "dgvit") cost one edit.
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                current[j] = std::min(current[j], before[j - 2] + 1);
        }
        std::swap(before, previous);
        std::swap(previous, current);
    }
    return previous[b.size()];
}

std::string closest_match(const std::string& name, const std::vector<std::string>& candidates) {
    const size_t limit = std::max<size_t>(2, name.size() / 3);
    std::string best;
    size_t best_distance = limit + 1;
    for (const std::string& candidate : candidates) {
        size_t d = edit_distance(name, candidate);
        if (d < best_distance) {
            best = candidate;
            best_distance = d;
        }
    }
    return best;
}

}  // namespace lumen::nn
