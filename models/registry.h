// The model registry: models built by name from typed options ("vit", "dgvit": the ViT and
// DGViT of spec diff §3.1-3.2, parameter names as in the spec). Each entry lists its option keys
// with defaults (what `lumen models` prints and what a config's "model" section may set) and
// says which input it expects, so that a mismatch with the data can be reported.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nn/module.h"
#include "nn/options.h"

namespace lumen::models {

// What an image classifier built from some options consumes and produces.
struct ModelInput {
    int64_t in_chans = 0;
    std::vector<int64_t> img_size;  // (H, W)
    int64_t num_classes = 0;
};

// The rough size of training a model, from its options alone (nothing is allocated), so that
// a config asking for more than the machine has is refused before building.
struct ModelCost {
    double parameters = 0;        // number of parameters
    double activation_bytes = 0;  // kept for the backward pass, per example of a batch
};

struct ModelEntry {
    std::string name;
    std::string description;              // one line
    std::vector<nn::OptionSpec> options;  // keys and defaults, in display order
    // Builds the model from options that hold every key of `options` (validated types).
    std::function<std::shared_ptr<nn::Module>(const nn::Options&)> build;
    // The input and classes the options describe (in_chans, img_size, num_classes keys).
    std::function<ModelInput(const nn::Options&)> input;
    // The estimate above (may be empty: then no check is made).
    std::function<ModelCost(const nn::Options&)> cost;
};

// Adds an entry; throws [models] if the name is taken or the entry has no build function.
void register_model(ModelEntry entry);
// The entry for `name`; throws [models] listing the registered names, with the closest one
// suggested, for an unknown name.
const ModelEntry& find_model(const std::string& name);
// Registered names, sorted.
std::vector<std::string> model_names();

// The options of `name` with every default, then `overrides` on top (keys must be the entry's;
// throws [models] with the closest key otherwise). For code that builds a model without a
// config file.
nn::Options model_options(const std::string& name, const nn::Options& overrides = nn::Options());

// find_model(name).build(options); the options must hold every key (see model_options).
std::shared_ptr<nn::Module> build_model(const std::string& name, const nn::Options& options);

}  // namespace lumen::models
