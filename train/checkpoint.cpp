// Checkpoint files (safetensors + JSON metadata) and the keep-last-k / best bookkeeping.
#include "train/checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/random.h"
#include "core/safetensors.h"
#include "train/atomic_file.h"

namespace lumen::train {

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

constexpr const char* kStateKey = "lumen.checkpoint";
constexpr const char* kModelPrefix = "model.";
constexpr const char* kOptimizerPrefix = "optimizer.";

Json state_to_json(const CheckpointState& s, const Optimizer& optimizer) {
    Json groups = Json::array();
    for (const ParamGroup& g : optimizer.param_groups())
        groups.push_back(
            {{"lr", g.lr}, {"weight_decay", g.weight_decay}, {"params", g.params.size()}});
    return {{"format", 1},
            {"epoch", s.epoch},
            {"step", s.step},
            {"batch_in_epoch", s.batch_in_epoch},
            {"rng_seed", s.rng_seed},
            {"rng_offset", s.rng_offset},
            {"optimizer", optimizer.name()},
            {"param_groups", groups},
            {"schedule", s.schedule},
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

CheckpointState state_from_json(const std::string& path, const std::string& text) {
    try {
        Json j = Json::parse(text);
        CheckpointState s;
        s.epoch = j.at("epoch").get<int64_t>();
        s.step = j.at("step").get<int64_t>();
        s.batch_in_epoch = j.at("batch_in_epoch").get<int64_t>();
        s.rng_seed = j.at("rng_seed").get<uint64_t>();
        s.rng_offset = j.at("rng_offset").get<uint64_t>();
        s.schedule = j.at("schedule").get<std::string>();
        s.config_json = j.at("config").get<std::string>();
        s.extra_json = j.at("extra").get<std::string>();
        return s;
    } catch (const Json::exception& e) {
        LUMEN_FAIL("checkpoint", path, ": the checkpoint metadata is not valid: ", e.what());
    }
}

std::string metadata_text(const std::string& path, const SafetensorsFile& file) {
    auto it = file.metadata.find(kStateKey);
    LUMEN_CHECK(it != file.metadata.end(), "checkpoint", path, ": not a lumen checkpoint (no \"",
                kStateKey, "\" metadata)");
    return it->second;
}

bool starts_with(const std::string& text, const std::string& prefix) {
    return text.rfind(prefix, 0) == 0;
}

// Replaces the optimizer's state with the file's "optimizer.<param>.<key>" tensors.
void restore_optimizer(const std::string& path, const SafetensorsFile& file, nn::Module& module,
                       Optimizer& optimizer) {
    const std::string saved = Json::parse(metadata_text(path, file)).at("optimizer");
    LUMEN_CHECK(saved == optimizer.name(), "checkpoint", path, ": saved with optimizer ", saved,
                " but the run uses ", optimizer.name());
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
        const std::string name = rest.substr(dot + 1);
        Tensor value = name == "step" ? tensor.clone() : tensor.to(p->second.device()).clone();
        states[param][name] = value;
    }
    for (auto& [name, p] : params)
        if (states.count(name) || optimizer.find_state(p)) optimizer.state(p) = states[name];
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
    if (optimizer) restore_optimizer(path, file, module, *optimizer);
    default_generator().manual_seed(state.rng_seed);
    default_generator().set_offset(state.rng_offset);
    return state;
}

void load_checkpoint_weights(const std::string& path, nn::Module& module) {
    SafetensorsFile file = load_safetensors(path);
    std::map<std::string, Tensor> weights;
    bool is_checkpoint = file.metadata.count(kStateKey) > 0;
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
