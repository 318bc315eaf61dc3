// init_from: the file's keys through prefix, key map and target prefix, matched against the
// model's state_dict; a strict load checks everything before copying anything.
#include "train/pretrained.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/autograd.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/json_strict.h"
#include "core/safetensors.h"
#include "models/pvt_v2.h"

namespace lumen::train {

namespace {

constexpr const char* kWho = "init_from";

std::string shape_text(const Shape& shape) {
    std::ostringstream out;
    out << "[";
    for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
    return out.str() + "]";
}

// A key map from a JSON file: prefix renames and drops; returns "" for a dropped key.
nn::KeyRename json_key_map(const std::string& path) {
    const nlohmann::json j =
        parse_json_strict(read_file(path, kWho, 16 << 20, "a key map"), kWho, path, 8);
    LUMEN_CHECK(j.is_object(), kWho, path,
                ": a key map is an object {\"rename\": {old: new}, \"drop\": [prefix]}");
    for (const auto& [key, value] : j.items())
        LUMEN_CHECK(key == "rename" || key == "drop", kWho, path, ": unknown key '", key,
                    "' (a key map has \"rename\" and \"drop\")");
    std::vector<std::pair<std::string, std::string>> renames;
    std::vector<std::string> drops;
    if (j.contains("rename")) {
        LUMEN_CHECK(j["rename"].is_object(), kWho, path, ": \"rename\" must be an object");
        for (const auto& [from, to] : j["rename"].items()) {
            LUMEN_CHECK(to.is_string(), kWho, path, ": rename '", from, "' must map to a string");
            renames.emplace_back(from, to.get<std::string>());
        }
    }
    if (j.contains("drop")) {
        LUMEN_CHECK(j["drop"].is_array(), kWho, path, ": \"drop\" must be a list of prefixes");
        for (const nlohmann::json& prefix : j["drop"]) {
            LUMEN_CHECK(prefix.is_string(), kWho, path, ": \"drop\" holds strings");
            drops.push_back(prefix.get<std::string>());
        }
    }
    return [renames, drops](const std::string& key) -> std::string {
        for (const std::string& prefix : drops)
            if (key.rfind(prefix, 0) == 0) return "";
        size_t best = renames.size();
        for (size_t i = 0; i < renames.size(); ++i)
            if (key.rfind(renames[i].first, 0) == 0 &&
                (best == renames.size() || renames[i].first.size() > renames[best].first.size()))
                best = i;
        if (best == renames.size()) return key;
        return renames[best].second + key.substr(renames[best].first.size());
    };
}

nn::KeyRename key_map_of(const std::string& name) {
    if (name.empty()) return nullptr;
    if (name == "whai362_pvt_v2") return models::whai362_to_timm();
    LUMEN_CHECK(std::filesystem::is_regular_file(name), kWho, "key_map '", name,
                "' is neither a built-in map (whai362_pvt_v2) nor a JSON file");
    return json_key_map(name);
}

std::string listed(const std::vector<std::string>& keys) {
    std::string text;
    for (size_t i = 0; i < keys.size() && i < 10; ++i) text += (i ? ", " : "") + keys[i];
    if (keys.size() > 10) text += ", ... and " + std::to_string(keys.size() - 10) + " more";
    return text;
}

}  // namespace

std::vector<std::string> key_map_names() { return {"whai362_pvt_v2"}; }

InitReport init_from(nn::Module& model, const InitFromOptions& o) {
    const nn::KeyRename rename = key_map_of(o.key_map);
    SafetensorsFile file = load_safetensors(o.path);
    std::map<std::string, Tensor> own = model.state_dict();
    InitReport report;
    for (const auto& [name, tensor] : own)
        if (name.rfind(o.target_prefix, 0) == 0) ++report.model_keys;
    LUMEN_CHECK(report.model_keys > 0, kWho, o.path, ": the model has no key under '",
                o.target_prefix, "' (model.init_prefix)");
    // The file's keys as the model's.
    std::map<std::string, std::pair<std::string, Tensor>> mapped;
    for (const auto& [key, tensor] : file.tensors) {
        if (key.rfind(o.source_prefix, 0) != 0) continue;
        std::string name = key.substr(o.source_prefix.size());
        if (rename) name = rename(name);
        if (name.empty()) {
            report.dropped.push_back(key);
            continue;
        }
        name = o.target_prefix + name;
        auto [it, fresh] = mapped.try_emplace(name, key, tensor);
        LUMEN_CHECK(fresh, kWho, o.path, ": the file keys '", it->second.first, "' and '", key,
                    "' both map to the model's '", name, "'");
    }
    std::vector<std::pair<Tensor, Tensor>> copies;
    for (const auto& [name, target] : own) {
        if (name.rfind(o.target_prefix, 0) != 0) continue;
        auto it = mapped.find(name);
        if (it == mapped.end()) {
            report.missing.push_back(name);
            continue;
        }
        const Tensor& source = it->second.second;
        if (source.shape() != target.shape() ||
            (!o.allow_cast && source.dtype() != target.dtype())) {
            report.mismatched.push_back(name + ": file " + shape_text(source.shape()) + " " +
                                        dtype_name(source.dtype()) + " vs model " +
                                        shape_text(target.shape()) + " " +
                                        dtype_name(target.dtype()));
            continue;
        }
        report.loaded.push_back(name);
        copies.emplace_back(target, source);
    }
    for (const auto& [name, origin] : mapped)
        if (!own.count(name)) report.unexpected.push_back(origin.first);
    if (o.strict && (!report.missing.empty() || !report.unexpected.empty() ||
                     !report.mismatched.empty()))
        LUMEN_FAIL(kWho, o.path, ": the weights do not fit the model (set model.init_strict "
                   "false to load what fits):\n",
                   format_init_report(report, o));
    NoGradGuard no_grad;
    for (auto& [target, source] : copies) target.copy_(source);
    return report;
}

std::string format_init_report(const InitReport& r, const InitFromOptions& o) {
    std::ostringstream out;
    out << "init_from " << o.path << ": loaded " << r.loaded.size() << " of " << r.model_keys
        << " keys" << (o.target_prefix.empty() ? "" : " under '" + o.target_prefix + "'");
    const std::pair<const char*, const std::vector<std::string>*> parts[] = {
        {"missing", &r.missing},
        {"unexpected", &r.unexpected},
        {"shape-mismatched", &r.mismatched},
        {"dropped by the key map", &r.dropped}};
    for (const auto& [what, keys] : parts)
        if (!keys->empty())
            out << "\n  " << what << " (" << keys->size() << "): " << listed(*keys);
    return out.str();
}

}  // namespace lumen::train
