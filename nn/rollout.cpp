// attention_rollout: per-layer head mean plus identity, row normalisation, then the product of
// the layers, last layer on the left.
#include "nn/rollout.h"

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

}  // namespace lumen::nn
