// Inside the registry: the entries of models/registry_dense.cpp (pvt_segnet, utnet,
// context_vit, context_swin) and models/registry_classify.cpp (sfree_vit, sima_vit,
// transformer, diff_transformer, dgt), and the option helpers they share.
#pragma once

#include <vector>

#include "models/registry.h"

namespace lumen::models {

std::vector<ModelEntry> dense_model_entries();
std::vector<ModelEntry> classifier_entries();

// Ranges of sizes, counts and rates that every entry uses.
inline nn::Range size_range() { return nn::Range::between(1, 1 << 16); }
inline nn::Range rate_range() { return nn::Range::between(0, 1, true); }

// model.grad_checkpointing, the same key and text in every model that offers it.
inline nn::OptionSpec checkpointing_option() {
    return {"grad_checkpointing",
            int64_t(0),
            "activation checkpointing: every k-th block recomputes its forward in backward (less "
            "memory, one more forward); 0: off",
            {},
            nn::Range::between(0, 1e6)};
}

}  // namespace lumen::models
