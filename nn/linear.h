// Linear, Identity and Embedding layers with PyTorch's parameter names, shapes and default
// initialisation.
#pragma once

#include <optional>

#include "nn/module.h"

namespace lumen::nn {

// y = x weight^T + bias. Shapes: x (..., in_features) -> (..., out_features);
// weight (out_features, in_features), bias (out_features). Init: PyTorch's default
// (U(+-1/sqrt(in_features)) for both).
class Linear : public Module {
  public:
    Linear(int64_t in_features, int64_t out_features, bool bias = true);
    Tensor forward(const Tensor& x) override;
    std::string extra_repr() const override;

    Tensor weight, bias;  // bias undefined when built without one
    int64_t in_features, out_features;
};

// y = x; no parameters (timm's placeholders: norm layers switched off, drop_path 0).
class Identity : public Module {
  public:
    Identity() : Module("Identity") {}
    Tensor forward(const Tensor& x) override { return x; }
};

// Rows of `weight` (num_embeddings, embedding_dim) picked by integer indices of any shape:
// (...) -> (..., embedding_dim). Init N(0, 1) with the padding row (if any) zeroed; the
// padding row never receives a gradient. Throws [embedding] for an index out of range.
class Embedding : public Module {
  public:
    Embedding(int64_t num_embeddings, int64_t embedding_dim,
              std::optional<int64_t> padding_idx = std::nullopt);
    Tensor forward(const Tensor& indices) override;
    std::string extra_repr() const override;

    Tensor weight;
    std::optional<int64_t> padding_idx;
};

}  // namespace lumen::nn
