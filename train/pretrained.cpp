// init_from: each file key through source prefix, key map and target prefix, matched against
// the model's state_dict; everything is checked before nn::Module::load_state_dict copies, so a
// failed load changes nothing.
#include "train/pretrained.h"

#include <filesystem>
#include <map>
#include <set>
#include <system_error>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_io.h"
#include "core/json_strict.h"
#include "core/safetensors.h"
#include "models/pvt_v2.h"

namespace lumen::train {

namespace {

constexpr const char* kWho = "init_from";

bool starts_with(const std::string& text, const std::string& prefix) {
    return text.compare(0, prefix.size(), prefix) == 0;
}

// "a, b, c": the first `limit` names, then ", ... and N more".
std::string listed(const std::vector<std::string>& names, size_t limit) {
    std::string text;
    for (size_t i = 0; i < names.size() && i < limit; ++i) text += (i ? ", " : "") + names[i];
    if (names.size() > limit) text += ", ... and " + std::to_string(names.size() - limit) + " more";
    return text;
}

// The distinct first parts ("backbone.", "head1.") of a map's sorted keys, for a message that
// shows which prefixes exist. Keys sharing a prefix are adjacent in sorted order.
std::string first_parts(const std::map<std::string, Tensor>& named) {
    std::vector<std::string> parts;
    for (const auto& [key, value] : named) {
        const size_t dot = key.find('.');
        std::string part = dot == std::string::npos ? key : key.substr(0, dot + 1);
        if (parts.empty() || parts.back() != part) parts.push_back(std::move(part));
    }
    return listed(parts, 10);
}

// One rule of a JSON key map: a key starting with `prefix` gets `replacement` instead, or is
// dropped.
struct PrefixRule {
    std::string prefix, replacement;
    bool drop = false;
};

std::vector<PrefixRule> read_key_map(const std::string& path) {
    const nlohmann::json j =
        parse_json_strict(read_file(path, kWho, 1 << 20, "a key map"), kWho, path, 4);
    LUMEN_CHECK(j.is_object(), kWho, path,
                ": a key map is an object {\"rename\": {\"old.\": \"new.\"}, \"drop\": "
                "[\"prefix.\"]}, got ",
                json_excerpt(j));
    std::vector<PrefixRule> rules;
    for (const auto& [part, value] : j.items()) {
        if (part == "rename") {
            LUMEN_CHECK(value.is_object(), kWho, path,
                        ": \"rename\" is an object of prefixes, got ", json_excerpt(value));
            for (const auto& [from, to] : value.items()) {
                LUMEN_CHECK(to.is_string(), kWho, path, ": rename '", from, "' maps to ",
                            json_excerpt(to), ", expected a string");
                rules.push_back({from, to.get<std::string>(), false});
            }
        } else if (part == "drop") {
            LUMEN_CHECK(value.is_array(), kWho, path, ": \"drop\" is a list of prefixes, got ",
                        json_excerpt(value));
            for (const nlohmann::json& prefix : value) {
                LUMEN_CHECK(prefix.is_string(), kWho, path, ": \"drop\" holds strings, got ",
                            json_excerpt(prefix));
                rules.push_back({prefix.get<std::string>(), "", true});
            }
        } else {
            LUMEN_FAIL(kWho, path, ": unknown key '", part,
                       "' (a key map has \"rename\" and \"drop\")");
        }
    }
    std::set<std::string> seen;
    for (const PrefixRule& rule : rules)
        LUMEN_CHECK(seen.insert(rule.prefix).second, kWho, path, ": the prefix '", rule.prefix,
                    "' appears twice in the key map");
    return rules;
}

// The longest prefix of `rules` that a key starts with applies; "" means dropped.
nn::KeyRename prefix_rules(std::vector<PrefixRule> rules) {
    return [rules = std::move(rules)](const std::string& key) -> std::string {
        const PrefixRule* best = nullptr;
        for (const PrefixRule& rule : rules)
            if (starts_with(key, rule.prefix) &&
                (!best || rule.prefix.size() > best->prefix.size()))
                best = &rule;
        if (!best) return key;
        if (best->drop) return "";
        return best->replacement + key.substr(best->prefix.size());
    };
}

// whai362_to_timm at the top level (whai362/PVT ImageNet files) and under "backbone." (the
// official PVT-GDLA checkpoints, whose decoder keys pass unchanged).
nn::KeyRename whai362_pvt_v2() {
    const nn::KeyRename top = models::whai362_to_timm(),
                        backbone = models::whai362_to_timm("backbone.");
    return [top, backbone](const std::string& key) {
        return starts_with(key, "backbone.") ? backbone(key) : top(key);
    };
}

nn::KeyRename key_map_of(const InitFromOptions& o) {
    if (o.key_map.empty()) return nullptr;
    if (o.key_map == "whai362_pvt_v2") return whai362_pvt_v2();
    std::error_code error;
    LUMEN_CHECK(std::filesystem::is_regular_file(o.key_map, error), kWho, o.path, ": key_map '",
                o.key_map, "' is neither a built-in map (", listed(key_map_names(), 10),
                ") nor a JSON file");
    return prefix_rules(read_key_map(o.key_map));
}

void check_prefix(const InitFromOptions& o, const char* which, const std::string& prefix) {
    LUMEN_CHECK(prefix.empty() || prefix.back() == '.', kWho, o.path, ": ", which, " '", prefix,
                "' must be empty or end with '.' (e.g. '", prefix, ".')");
}

// The safetensors reader's error as ours: "[init_from] <path>: <reason>".
SafetensorsFile read_weights(const std::string& path) {
    try {
        return load_safetensors(path);
    } catch (const Error& e) {
        std::string message = e.what();
        const std::string reader = "[safetensors] ";
        if (starts_with(message, reader)) message = message.substr(reader.size());
        LUMEN_FAIL(kWho, message);
    }
}

// Model key -> (file key, tensor) for every file key under source_prefix that the key map does
// not drop (those go to report->dropped).
using MappedKeys = std::map<std::string, std::pair<std::string, Tensor>>;

MappedKeys map_file_keys(const SafetensorsFile& file, const InitFromOptions& o,
                         const nn::KeyRename& key_map, InitReport* report) {
    LUMEN_CHECK(!file.tensors.empty(), kWho, o.path, ": the file holds no tensors");
    MappedKeys mapped;
    bool any = false;
    for (const auto& [key, tensor] : file.tensors) {
        if (!starts_with(key, o.source_prefix)) continue;
        any = true;
        std::string name = key.substr(o.source_prefix.size());
        if (key_map && !name.empty()) {
            name = key_map(name);
            if (name.empty()) {
                report->dropped.push_back(key);
                continue;
            }
        }
        name = o.target_prefix + name;
        auto [it, fresh] = mapped.try_emplace(name, key, tensor);
        LUMEN_CHECK(fresh, kWho, o.path, ": the file keys '", it->second.first, "' and '", key,
                    "' both map to the model key '", name, "'");
    }
    LUMEN_CHECK(any, kWho, o.path, ": no key of the file starts with source_prefix '",
                o.source_prefix, "' (its keys start with ", first_parts(file.tensors), ")");
    return mapped;
}

// Sorts the model's keys under target_prefix into loaded, missing and mismatched, and the
// mapped keys the model lacks into unexpected; returns the values to load.
std::map<std::string, Tensor> match_keys(const std::map<std::string, Tensor>& own,
                                         const MappedKeys& mapped, const InitFromOptions& o,
                                         InitReport* report) {
    std::map<std::string, Tensor> values;
    for (const auto& [name, target] : own) {
        if (!starts_with(name, o.target_prefix)) continue;
        auto it = mapped.find(name);
        if (it == mapped.end()) {
            report->missing.push_back(name);
            continue;
        }
        const Tensor& source = it->second.second;
        const bool castable =
            o.allow_cast && is_floating(source.dtype()) && is_floating(target.dtype());
        if (source.shape() != target.shape()) {
            report->mismatched.push_back(
                detail::cat(name, ": file ", source.shape(), " vs model ", target.shape()));
        } else if (source.dtype() != target.dtype() && !castable) {
            report->mismatched.push_back(
                detail::cat(name, ": file ", source.dtype(), " vs model ", target.dtype()));
        } else {
            report->loaded.push_back(name);
            values.emplace(name, source);
        }
    }
    for (const auto& [name, origin] : mapped)
        if (!own.count(name))
            report->unexpected.push_back(
                name == origin.first ? name : name + " (file key '" + origin.first + "')");
    return values;
}

// One indented line per non-empty list of the report.
std::string problem_lines(const InitReport& r, size_t limit) {
    const std::pair<const char*, const std::vector<std::string>*> parts[] = {
        {"missing", &r.missing},
        {"unexpected", &r.unexpected},
        {"mismatched", &r.mismatched},
        {"dropped by the key map", &r.dropped}};
    std::string text;
    for (const auto& [what, keys] : parts)
        if (!keys->empty())
            text += detail::cat("\n  ", what, " (", keys->size(), "): ", listed(*keys, limit));
    return text;
}

std::string under(const InitFromOptions& o) {
    return o.target_prefix.empty() ? "" : " under '" + o.target_prefix + "'";
}

}  // namespace

std::vector<std::string> key_map_names() { return {"whai362_pvt_v2"}; }

InitReport init_from(nn::Module& model, const InitFromOptions& o) {
    LUMEN_CHECK(!o.path.empty(), kWho, "no weights file given (path is empty)");
    check_prefix(o, "source_prefix", o.source_prefix);
    check_prefix(o, "target_prefix", o.target_prefix);
    const nn::KeyRename key_map = key_map_of(o);
    const std::map<std::string, Tensor> own = model.state_dict();
    InitReport report;
    for (const auto& [name, tensor] : own)
        if (starts_with(name, o.target_prefix)) ++report.model_keys;
    LUMEN_CHECK(report.model_keys > 0, kWho, o.path, ": ", model.type_name(), " has no key",
                under(o), " (its keys start with ", first_parts(own), ")");

    // Memory-mapped: the tensors alias the file until load_state_dict copies them.
    const SafetensorsFile file = read_weights(o.path);
    const MappedKeys mapped = map_file_keys(file, o, key_map, &report);
    const std::map<std::string, Tensor> values = match_keys(own, mapped, o, &report);
    const bool fits =
        report.missing.empty() && report.unexpected.empty() && report.mismatched.empty();
    if (o.strict && !fits)
        LUMEN_FAIL(kWho, o.path, ": the weights do not fit ", model.type_name(), under(o),
                   " (nothing was loaded; a non-strict load takes what fits):",
                   problem_lines(report, std::string::npos));
    LUMEN_CHECK(!values.empty(), kWho, o.path, ": no key of the file fits ", model.type_name(),
                under(o), ":", problem_lines(report, 10));
    // Every value has its key's shape and a dtype load_state_dict may cast, so this copies into
    // the model's own tensors and throws nothing.
    model.load_state_dict(values, /*strict=*/false, o.allow_cast);
    return report;
}

std::string format_init_report(const InitReport& report, const InitFromOptions& options) {
    return detail::cat("init_from ", options.path, ": loaded ", report.loaded.size(), " of ",
                       report.model_keys, " keys", under(options), problem_lines(report, 10));
}

}  // namespace lumen::train
