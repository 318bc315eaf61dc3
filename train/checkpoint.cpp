// Checkpoint files (safetensors + JSON metadata) and the keep-last-k / best bookkeeping.
#include "train/checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <type_traits>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_strict.h"
#include "core/random.h"
#include "core/safetensors.h"
#include "train/atomic_file.h"

namespace lumen::train {

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

constexpr const char* kStateKey = "lumen.checkpoint";
// Format 2 added the checksum (safetensors "lumen.crc32") and the best record.
constexpr int64_t kFormat = 2;
constexpr int kMaxStateDepth = 8;    // the state JSON nests 3 levels
constexpr int kMaxConfigDepth = 32;  // as train/config.cpp
constexpr const char* kModelPrefix = "model.";
constexpr const char* kOptimizerPrefix = "optimizer.";

Json state_to_json(const CheckpointState& s, const Optimizer& optimizer) {
    Json groups = Json::array();
    for (const ParamGroup& g : optimizer.param_groups())
        groups.push_back(
            {{"lr", g.lr}, {"weight_decay", g.weight_decay}, {"params", g.params.size()}});
    Json best = nullptr;
    if (s.best_value) best = {{"value", *s.best_value}, {"step", s.best_step}};
    return {{"format", kFormat},
            {"epoch", s.epoch},
            {"step", s.step},
            {"batch_in_epoch", s.batch_in_epoch},
            {"rng_seed", s.rng_seed},
            {"rng_offset", s.rng_offset},
            {"optimizer", optimizer.name()},
            {"param_groups", groups},
            {"schedule", s.schedule},
            {"best", best},
            {"config", s.config_json},
            {"extra", s.extra_json}};
}

// The named tensors of a checkpoint: the model's state_dict and the optimizer's state.
std::map<std::string, Tensor> checkpoint_tensors(const std::string& path, const nn::Module& module,
                                                 const Optimizer& optimizer) {
    std::map<std::string, Tensor> tensors;
    for (auto& [key, tensor] : module.state_dict()) tensors[kModelPrefix + key] = tensor;
    std::unordered_map<const TensorImpl*, std::string> names;
    for (auto& [name, p] : module.named_parameters()) names[p.impl().get()] = name;
    for (const ParamGroup& group : optimizer.param_groups()) {
        for (const Tensor& p : group.params) {
            auto name = names.find(p.impl().get());
            LUMEN_CHECK(name != names.end(), "checkpoint", path, ": the ", optimizer.name(),
                        " holds a parameter of shape ", p.shape(), " that is not in the ",
                        module.type_name());
            if (const ParamState* state = optimizer.find_state(p))
                for (auto& [key, value] : *state)
                    tensors[kOptimizerPrefix + name->second + "." + key] = value;
        }
    }
    return tensors;
}

// Counts (epoch, step, ...) stay below 2^53, so that no arithmetic on them can overflow.
constexpr int64_t kMaxCount = int64_t(1) << 53;

// Reads one field of the state: present, of the right JSON type, and (counts) in [0, 2^53].
template <typename T>
T field(const std::string& path, const Json& j, const char* key) {
    auto it = j.find(key);
    LUMEN_CHECK(it != j.end(), "checkpoint", path, ": the checkpoint state has no '", key, "'");
    bool ok = false;
    if constexpr (std::is_same_v<T, std::string>) ok = it->is_string();
    if constexpr (std::is_same_v<T, int64_t>)
        ok = it->is_number_integer() && it->get<int64_t>() >= 0 && it->get<int64_t>() <= kMaxCount;
    if constexpr (std::is_same_v<T, uint64_t>) ok = it->is_number_unsigned();
    const char* expected = std::is_same_v<T, std::string> ? "a string"
                           : std::is_same_v<T, int64_t>   ? "an integer in [0, 2^53]"
                                                          : "an integer >= 0";
    LUMEN_CHECK(ok, "checkpoint", path, ": the checkpoint state's '", key, "' must be ", expected,
                ", got ", json_excerpt(*it));
    return it->get<T>();
}

// The text must hold a JSON object (the config, the trainer's extra record).
void check_object_text(const std::string& path, const std::string& text, const char* key) {
    Json value = parse_json_strict(text, "checkpoint", path + ": the state's '" + key + "'",
                                   kMaxConfigDepth);
    LUMEN_CHECK(value.is_object(), "checkpoint", path, ": the checkpoint state's '", key,
                "' must hold a JSON object, got ", json_excerpt(value));
}

CheckpointState state_from_json(const std::string& path, const std::string& text) {
    Json j = parse_json_strict(text, "checkpoint", path + ": the checkpoint state", kMaxStateDepth);
    LUMEN_CHECK(j.is_object(), "checkpoint", path, ": the checkpoint state must be a JSON object");
    const int64_t format = field<int64_t>(path, j, "format");
    LUMEN_CHECK(format == kFormat, "checkpoint", path, ": checkpoint format ", format,
                " is not the format ", kFormat, " this lumen reads",
                format < kFormat ? " (written by an older lumen, without a checksum)" : "");
    CheckpointState s;
    s.epoch = field<int64_t>(path, j, "epoch");
    s.step = field<int64_t>(path, j, "step");
    s.batch_in_epoch = field<int64_t>(path, j, "batch_in_epoch");
    s.rng_seed = field<uint64_t>(path, j, "rng_seed");
    s.rng_offset = field<uint64_t>(path, j, "rng_offset");
    s.optimizer = field<std::string>(path, j, "optimizer");
    s.schedule = field<std::string>(path, j, "schedule");
    s.config_json = field<std::string>(path, j, "config");
    s.extra_json = field<std::string>(path, j, "extra");
    check_object_text(path, s.config_json, "config");
    check_object_text(path, s.extra_json, "extra");
    auto best = j.find("best");
    LUMEN_CHECK(best != j.end() && (best->is_null() || best->is_object()), "checkpoint", path,
                ": the checkpoint state's 'best' must be null or {value, step}");
    if (best->is_object()) {
        auto value = best->find("value");
        LUMEN_CHECK(value != best->end() && value->is_number(), "checkpoint", path,
                    ": the checkpoint state's best value must be a number");
        s.best_value = value->get<double>();
        s.best_step = field<int64_t>(path, *best, "step");
        LUMEN_CHECK(s.best_step <= s.step, "checkpoint", path, ": the best checkpoint's step ",
                    s.best_step, " comes after this checkpoint's step ", s.step);
    }
    return s;
}

std::string metadata_text(const std::string& path, const SafetensorsFile& file) {
    auto it = file.metadata.find(kStateKey);
    LUMEN_CHECK(it != file.metadata.end(), "checkpoint", path, ": not a lumen checkpoint (no \"",
                kStateKey, "\" metadata)");
    LUMEN_CHECK(file.checksum_verified, "checkpoint", path,
                ": the checkpoint has no checksum (lumen writes one into every checkpoint), so "
                "its content cannot be trusted");
    return it->second;
}

bool starts_with(const std::string& text, const std::string& prefix) {
    return text.rfind(prefix, 0) == 0;
}

// Replaces the optimizer's state with the file's "optimizer.<param>.<key>" tensors, each
// checked against its parameter (Optimizer::check_state) before anything is replaced.
void restore_optimizer(const std::string& path, const SafetensorsFile& file,
                       const CheckpointState& state, nn::Module& module, Optimizer& optimizer) {
    LUMEN_CHECK(state.optimizer == optimizer.name(), "checkpoint", path, ": saved with optimizer ",
                state.optimizer, " but the run uses ", optimizer.name());
    std::map<std::string, Tensor> params;
    for (auto& [name, p] : module.named_parameters()) params[name] = p;
    std::map<std::string, ParamState> states;
    for (auto& [key, tensor] : file.tensors) {
        if (!starts_with(key, kOptimizerPrefix)) continue;
        // Parameter names contain dots, state names do not: split at the last one.
        std::string rest = key.substr(std::string(kOptimizerPrefix).size());
        size_t dot = rest.rfind('.');
        std::string param = dot == std::string::npos ? rest : rest.substr(0, dot);
        auto p = params.find(param);
        LUMEN_CHECK(dot != std::string::npos && p != params.end(), "checkpoint", path,
                    ": optimizer state '", key, "' belongs to no parameter of the ",
                    module.type_name());
        states[param][rest.substr(dot + 1)] = tensor;
    }
    for (const auto& [name, state_of] : states) {
        std::string problem = optimizer.check_state(params.at(name), state_of);
        LUMEN_CHECK(problem.empty(), "checkpoint", path, ": the ", optimizer.name(),
                    " state of parameter '", name, "' does not fit it: ", problem);
    }
    for (auto& [name, p] : params) {
        if (!states.count(name) && !optimizer.find_state(p)) continue;
        ParamState restored;
        for (auto& [key, value] : states[name])
            restored[key] = key == "step" ? value.clone() : value.to(p.device()).clone();
        optimizer.state(p) = std::move(restored);
    }
}

}  // namespace

void save_checkpoint(const std::string& path, const nn::Module& module, const Optimizer& optimizer,
                     CheckpointState state) {
    state.rng_seed = default_generator().seed();
    state.rng_offset = default_generator().offset();
    std::map<std::string, Tensor> tensors = checkpoint_tensors(path, module, optimizer);
    std::map<std::string, std::string> metadata{
        {kStateKey, state_to_json(state, optimizer).dump()}};
    write_atomically(path,
                     [&](const std::string& temp) { save_safetensors(temp, tensors, metadata); });
}

CheckpointState read_checkpoint_state(const std::string& path) {
    SafetensorsFile file = load_safetensors(path);
    return state_from_json(path, metadata_text(path, file));
}

CheckpointState load_checkpoint(const std::string& path, nn::Module& module, Optimizer* optimizer) {
    SafetensorsFile file = load_safetensors(path);
    CheckpointState state = state_from_json(path, metadata_text(path, file));
    std::map<std::string, Tensor> weights;
    for (auto& [key, tensor] : file.tensors)
        if (starts_with(key, kModelPrefix)) weights[key.substr(6)] = tensor;
    try {
        module.load_state_dict(weights, true);
    } catch (const Error& e) {
        LUMEN_FAIL("checkpoint", path, ": ", e.what());
    }
    if (optimizer) restore_optimizer(path, file, state, module, *optimizer);
    default_generator().manual_seed(state.rng_seed);
    default_generator().set_offset(state.rng_offset);
    return state;
}

void load_checkpoint_weights(const std::string& path, nn::Module& module) {
    SafetensorsFile file = load_safetensors(path);
    std::map<std::string, Tensor> weights;
    bool is_checkpoint = file.metadata.count(kStateKey) > 0;
    if (is_checkpoint) state_from_json(path, metadata_text(path, file));
    for (auto& [key, tensor] : file.tensors) {
        if (!is_checkpoint)
            weights[key] = tensor;
        else if (starts_with(key, kModelPrefix))
            weights[key.substr(6)] = tensor;
    }
    try {
        module.load_state_dict(weights, true);
    } catch (const Error& e) {
        LUMEN_FAIL("checkpoint", path, ": ", e.what());
    }
}

}  // namespace lumen::train
