// Config parsing with nlohmann::json (kept out of the header), flattening, and validation
// against option specs.
#include "train/config.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_io.h"
#include "core/json_strict.h"

namespace lumen::train {

using Json = nlohmann::json;

namespace {

// A config nests two or three levels; deeper text is refused while parsing, before the
// recursive flattening below could overflow the stack.
constexpr int kMaxConfigDepth = 32;
constexpr uint64_t kMaxConfigBytes = 16ull << 20;

nn::OptionValue list_value(const Json& list, const std::string& source, const std::string& key) {
    bool all_integers = true;
    for (const Json& item : list) {
        LUMEN_CHECK(item.is_number(), "config", source, ": '", key,
                    "' must be a list of numbers, got ", json_excerpt(list));
        all_integers = all_integers && item.is_number_integer();
    }
    if (all_integers) return list.get<std::vector<int64_t>>();
    return list.get<std::vector<double>>();
}

// A JSON leaf as an option value.
nn::OptionValue leaf_value(const Json& j, const std::string& source, const std::string& key) {
    if (j.is_boolean()) return j.get<bool>();
    if (j.is_number_integer()) return j.get<int64_t>();
    if (j.is_number()) return j.get<double>();
    if (j.is_string()) return j.get<std::string>();
    if (j.is_array()) return list_value(j, source, key);
    LUMEN_FAIL("config", source, ": '", key, "' has an unsupported value ", json_excerpt(j));
}

void flatten(const Json& j, const std::string& prefix, const std::string& source,
             std::map<std::string, nn::OptionValue>* out) {
    for (auto it = j.begin(); it != j.end(); ++it) {
        LUMEN_CHECK(!it.key().empty(), "config", source, ": empty key in ",
                    prefix.empty() ? "the top level" : "'" + prefix + "'");
        std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
        if (it->is_object()) {
            flatten(*it, key, source, out);
        } else {
            // {"optim": {"lr": 1}} and {"optim.lr": 2} name the same key.
            LUMEN_CHECK(!out->count(key), "config", source, ": key '", key,
                        "' is given twice (nested and dotted)");
            (*out)[key] = leaf_value(*it, source, key);
        }
    }
}

// Re-throws a [config] error with the config's source after the bracket.
[[noreturn]] void rethrow_with_source(const Error& e, const std::string& source) {
    std::string message = e.what();
    const std::string head = "[config] ";
    if (message.rfind(head, 0) == 0) message = message.substr(head.size());
    LUMEN_FAIL("config", source, ": ", message);
}

}  // namespace

RawConfig RawConfig::parse(const std::string& text, const std::string& source) {
    Json j = parse_json_strict(text, "config", source, kMaxConfigDepth);
    LUMEN_CHECK(j.is_object(), "config", source, ": the top level must be a JSON object, got ",
                j.type_name());
    RawConfig raw;
    raw.source_ = source;
    flatten(j, "", source, &raw.values_);
    return raw;
}

RawConfig RawConfig::read(const std::string& path) {
    return parse(read_file(path, "config", kMaxConfigBytes, "a config"), path);
}

void RawConfig::assign(const std::string& assignment, const std::string& source) {
    size_t eq = assignment.find('=');
    LUMEN_CHECK(eq != std::string::npos && eq > 0, "config", source, " expects key=value, got '",
                assignment, "'");
    const std::string key = assignment.substr(0, eq), text = assignment.substr(eq + 1);
    Json j;
    try {
        j = parse_json_strict(text, "config", source, kMaxConfigDepth);
    } catch (const Error&) {
        j = Json();  // not JSON: a bare word
    }
    if (j.is_object() || j.is_null())
        set(key, text, source);  // the string itself
    else
        set(key, leaf_value(j, source, key), source);
}

void RawConfig::set(const std::string& key, nn::OptionValue value, const std::string& source) {
    values_[key] = std::move(value);
    overridden_[key] = source;
}

const std::string& RawConfig::source_of(const std::string& key) const {
    auto it = overridden_.find(key);
    return it == overridden_.end() ? source_ : it->second;
}

std::optional<nn::OptionValue> RawConfig::find(const std::string& key) const {
    auto it = values_.find(key);
    if (it == values_.end()) return std::nullopt;
    return it->second;
}

nn::Options resolve_config(const RawConfig& raw, const std::vector<nn::OptionSpec>& specs) {
    nn::Options options("config");
    std::map<std::string, const nn::OptionSpec*> by_key;
    std::vector<std::string> keys;
    for (const nn::OptionSpec& spec : specs) {
        by_key[spec.key] = &spec;
        keys.push_back(spec.key);
        options.set(spec.key, spec.default_value);
    }
    for (const auto& [key, value] : raw.values()) {
        auto spec = by_key.find(key);
        if (spec == by_key.end()) {
            std::string guess = nn::closest_match(key, keys);
            LUMEN_FAIL("config", raw.source_of(key), ": unknown key '", key, "'",
                       guess.empty() ? " (run 'lumen models' for the model keys)"
                                     : "; did you mean '" + guess + "'?");
        }
        try {
            options.set(key, nn::coerce_option(*spec->second, value, "config", key));
        } catch (const Error& e) {
            rethrow_with_source(e, raw.source_of(key));
        }
    }
    return options;
}

namespace {

Json option_json(const nn::OptionValue& value) {
    return std::visit([](const auto& v) { return Json(v); }, value);
}

}  // namespace

std::string config_to_json(const nn::Options& options, int indent) {
    Json root = Json::object();
    for (const auto& [key, value] : options.values()) {
        // Dotted keys become nested objects through a JSON pointer ("/optim/lr").
        std::string pointer = "/" + key;
        std::replace(pointer.begin(), pointer.end(), '.', '/');
        root[Json::json_pointer(pointer)] = option_json(value);
    }
    return root.dump(indent);
}

}  // namespace lumen::train
