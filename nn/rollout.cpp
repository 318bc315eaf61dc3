// attention_rollout: per-layer head mean plus identity, row normalisation, then the product of
// the layers, last layer on the left.
#include "nn/rollout.h"

#include "nn/attention/dgsa.h"
#include "nn/attention/diff_attn.h"
#include "nn/attention/mhsa.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/reduce.h"

namespace lumen::nn {

Tensor attention_rollout(const std::vector<Tensor>& maps) {
    LUMEN_CHECK(!maps.empty(), "attention_rollout", "needs at least one layer's map");
    const Shape& shape = maps[0].shape();
    LUMEN_CHECK(shape.size() == 4 && shape[2] == shape[3], "attention_rollout",
                "expects maps (B, nh, N, N), got shape ", shape);
    Tensor identity = eye(shape[3], -1, maps[0].dtype(), maps[0].device());
    Tensor rollout;
    for (size_t l = 0; l < maps.size(); ++l) {
        LUMEN_CHECK(maps[l].shape() == shape, "attention_rollout", "layer ", l, " has shape ",
                    maps[l].shape(), " but layer 0 has ", shape);
        Tensor layer = add(mean(maps[l], {1}), identity);  // (B, N, N)
        layer = div(layer, sum(layer, {-1}, true));
        rollout = rollout.defined() ? matmul(layer, rollout) : layer;
    }
    return rollout;
}

Tensor attention_rollout(const Tensor& maps) {
    LUMEN_CHECK(maps.ndim() == 5 && maps.size(0) > 0 && maps.size(3) == maps.size(4),
                "attention_rollout", "expects maps (L, B, nh, N, N) with L > 0, got shape ",
                maps.shape());
    std::vector<Tensor> layers;
    for (int64_t l = 0; l < maps.size(0); ++l) layers.push_back(maps.select(0, l));
    return attention_rollout(layers);
}

Tensor rollout_class_token_map(const Tensor& rollout, const std::vector<int64_t>& grid,
                               int64_t prefix_tokens) {
    LUMEN_CHECK(grid.size() == 2 && prefix_tokens >= 1 && rollout.ndim() == 3 &&
                    rollout.size(1) == rollout.size(2) &&
                    rollout.size(1) == prefix_tokens + grid[0] * grid[1],
                "attention_rollout", "expects rollout (B, N, N) with N = ", prefix_tokens,
                " + a 2-D grid ", grid, ", got shape ", rollout.shape());
    return rollout.select(1, 0)
        .narrow(1, prefix_tokens, grid[0] * grid[1])
        .reshape({rollout.size(0), grid[0], grid[1]});
}

Tensor rollout_token_scores(const Tensor& rollout, const Tensor& key_padding_mask) {
    LUMEN_CHECK(rollout.ndim() == 3 && rollout.size(1) == rollout.size(2) &&
                    key_padding_mask.dtype() == DType::bool_ &&
                    key_padding_mask.shape() == Shape({rollout.size(0), rollout.size(1)}),
                "attention_rollout", "expects rollout (B, N, N) and a (B, N) bool mask, got ",
                rollout.shape(), " and ", key_padding_mask.dtype(), " ", key_padding_mask.shape());
    Tensor valid = logical_not(key_padding_mask).to(rollout.dtype());  // (B, N)
    // Mean over valid query rows as one product: valid (B, 1, N) @ rollout (B, N, N).
    Tensor rows = matmul(valid.unsqueeze(1), rollout).squeeze(1);
    return mul(div(rows, sum(valid, {-1}, true)), valid);
}

namespace {

// The store_attn flag and last_attn map of `module` if it is one of the attentions of the DGSA
// paper and its baselines.
std::pair<bool*, Tensor*> attention_slot(Module* module) {
    if (auto* m = dynamic_cast<attention::MHSA*>(module)) return {&m->store_attn, &m->last_attn};
    if (auto* m = dynamic_cast<attention::MultiheadDiffAttn*>(module))
        return {&m->store_attn, &m->last_attn};
    if (auto* m = dynamic_cast<attention::MultiheadDGSA*>(module))
        return {&m->store_attn, &m->last_attn};
    return {nullptr, nullptr};
}

}  // namespace

void store_attention_maps(Module& model, bool enabled) {
    for (auto& [name, module] : model.named_modules()) {
        auto [store, map] = attention_slot(module);
        if (store) {
            *store = enabled;
            *map = Tensor();
        }
    }
}

std::vector<Tensor> stored_attention_maps(Module& model) {
    std::vector<Tensor> maps;
    for (auto& [name, module] : model.named_modules()) {
        auto [store, map] = attention_slot(module);
        if (!store) continue;
        LUMEN_CHECK(map->defined(), "attention_rollout", "attention '", name,
                    "' has no stored map: call store_attention_maps(model) and run a forward");
        maps.push_back(*map);
    }
    LUMEN_CHECK(!maps.empty(), "attention_rollout", "the ", model.type_name(),
                " holds no MHSA, MultiheadDiffAttn or MultiheadDGSA");
    return maps;
}

}  // namespace lumen::nn
