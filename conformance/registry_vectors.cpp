// build_registry_model: a vector's config as a registry entry's options. The JSON leaves are
// read by train::RawConfig (the config files' reader), the keys checked by models::model_options.
#include "conformance/registry_vectors.h"

#include <algorithm>
#include <iterator>
#include <variant>

#include "conformance/module_vectors.h"
#include "models/registry.h"
#include "train/config.h"

namespace lumen::conformance {

namespace {

// Python's None leaves an argument at its default; RawConfig refuses null.
void drop_nulls(nlohmann::json& object) {
    for (auto it = object.begin(); it != object.end();) {
        if (it->is_object()) drop_nulls(*it);
        it = it->is_null() ? object.erase(it) : std::next(it);
    }
}

// PyTorch's int-or-tuple arguments (window_size=4): an integer for a list option is one item.
nn::OptionValue as_option(const models::ModelEntry& entry, const std::string& key,
                          nn::OptionValue value) {
    for (const nn::OptionSpec& spec : entry.options) {
        const bool list = std::holds_alternative<std::vector<int64_t>>(spec.default_value) ||
                          std::holds_alternative<std::vector<double>>(spec.default_value);
        if (spec.key == key && list && std::holds_alternative<int64_t>(value))
            return std::vector<int64_t>{std::get<int64_t>(value)};
    }
    return value;
}

std::shared_ptr<nn::Module> build(VectorCall& call, const RegistryModel& model,
                                  const nn::Options& derived) {
    const models::ModelEntry& entry = models::find_model(model.name);
    nlohmann::json config = call.config.all();
    config.erase("mode");
    for (const std::string& key : model.adapter_keys) config.erase(key);
    drop_nulls(config);
    nn::Options overrides;
    for (const auto& [key, value] : model.reference_defaults) overrides.set(key, value);
    // RawConfig joins nested keys with '.' as config sections do ("encoder.depths").
    const train::RawConfig raw = train::RawConfig::parse(config.dump(), "the vector's config");
    for (const auto& [dotted, value] : raw.values()) {
        std::string key = dotted;
        std::replace(key.begin(), key.end(), '.', '_');
        auto renamed = model.renamed.find(key);
        if (renamed != model.renamed.end()) key = renamed->second;
        overrides.set(key, as_option(entry, key, value));
    }
    for (const auto& [key, value] : derived.values()) overrides.set(key, value);
    return models::build_model(model.name, models::model_options(model.name, overrides));
}

}  // namespace

std::shared_ptr<nn::Module> build_registry_model(VectorCall& call, const RegistryModel& model,
                                                 const nn::Options& derived) {
    std::shared_ptr<nn::Module> built;
    try {
        built = build(call, model, derived);
    } catch (const Error& e) {
        LUMEN_FAIL(call.module, e.what());
    }
    bind_module(call, *built);
    return built;
}

}  // namespace lumen::conformance
