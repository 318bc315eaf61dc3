// The model registry: every architecture of the five papers built by name from typed options (what
// `lumen models` prints and what a config's "model" section may set; the keys are the reference
// constructors' argument names): vit, dgvit (the DGSA paper, Lygizou et al. 2025), transformer,
// diff_transformer, dgt (the same paper), sfree_vit, sima_vit (Khader et al.), utnet (Gao et al.
// 2021), pvt_segnet (Zheng et al. 2026), context_vit, context_swin (Hooper & Xue). Each entry says
// what input it takes and what it gives, so that a mismatch with the data is reported before
// training.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nn/module.h"
#include "nn/options.h"

namespace lumen::models {

// What a model built from some options consumes and produces.
struct ModelInput {
    // "image": (B, in_chans, *img_size) with 2 or 3 spatial dims; "bag": (B, N, feature_dim)
    // feature bags; "tokens": (B, L) token ids below vocab_size, L <= max_len.
    std::string kind = "image";
    int64_t in_chans = 0;
    // The spatial size the model needs exactly; empty for a fully convolutional model, which
    // takes any size whose every dim is a multiple of size_multiple (spatial_dims of them).
    std::vector<int64_t> img_size;
    int64_t spatial_dims = 2;
    int64_t size_multiple = 1;
    int64_t num_classes = 0;  // classes (logits) or output channels (dense)
    // "logits": (B, num_classes), a classifier; "dense": (B, num_classes, *spatial), a
    // segmentation map or an image (enhancement).
    std::string output = "logits";
    int64_t feature_dim = 0;               // bag
    int64_t vocab_size = 0, max_len = 0;   // tokens (vocab_size 0: taken from the data)
    // The paper's deep-supervision weights of forward_outputs when the options turn the
    // auxiliary outputs on (UTNet {1, 0.4, 0.2, 0.1}, PVT-GDLA {1, 1, 1, 1}); else empty.
    std::vector<double> deep_supervision;
    // The option keys that hold the above, to name them in messages.
    std::string chans_key = "in_chans", size_key = "img_size", classes_key = "num_classes";
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
    // The input and output the options describe.
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
