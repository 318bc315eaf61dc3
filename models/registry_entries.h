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

}  // namespace lumen::models
