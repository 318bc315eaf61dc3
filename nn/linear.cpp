// Linear and Embedding: parameters, initialisation and forward (the ops do the autograd).
#include "nn/linear.h"

#include "core/autograd.h"
#include "nn/init.h"
#include "nn/repr_text.h"
#include "ops/index.h"
#include "ops/matmul.h"

namespace lumen::nn {

Linear::Linear(int64_t in_features, int64_t out_features, bool has_bias)
    : Module("Linear"), in_features(in_features), out_features(out_features) {
    LUMEN_CHECK(in_features > 0 && out_features > 0, "Linear", "sizes must be positive, got in ",
                in_features, ", out ", out_features);
    weight = register_parameter("weight", empty({out_features, in_features}));
    if (has_bias) bias = register_parameter("bias", empty({out_features}));
    init::torch_default_(weight, bias);
}

Tensor Linear::forward(const Tensor& x) {
    LUMEN_CHECK(x.ndim() >= 1 && x.size(-1) == in_features, "Linear", "expects input (..., ",
                in_features, "), got shape ", x.shape());
    return linear(x, weight, bias);
}

std::string Linear::extra_repr() const {
    return "in_features=" + std::to_string(in_features) +
           ", out_features=" + std::to_string(out_features) + ", bias=" + py_bool(bias.defined());
}

Embedding::Embedding(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding)
    : Module("Embedding"), padding_idx(padding) {
    LUMEN_CHECK(num_embeddings > 0 && embedding_dim > 0, "Embedding",
                "sizes must be positive, got ", num_embeddings, " x ", embedding_dim);
    if (padding_idx) {
        LUMEN_CHECK(*padding_idx >= -num_embeddings && *padding_idx < num_embeddings, "Embedding",
                    "padding_idx ", *padding_idx, " is outside [", -num_embeddings, ", ",
                    num_embeddings, ")");
        if (*padding_idx < 0) *padding_idx += num_embeddings;
    }
    weight = register_parameter("weight", empty({num_embeddings, embedding_dim}));
    init::normal_(weight);
    if (padding_idx) {
        NoGradGuard no_grad;
        weight.select(0, *padding_idx).fill_(0.0);
    }
}

Tensor Embedding::forward(const Tensor& indices) { return embedding(weight, indices, padding_idx); }

std::string Embedding::extra_repr() const {
    return std::to_string(weight.size(0)) + ", " + std::to_string(weight.size(1)) +
           (padding_idx ? ", padding_idx=" + std::to_string(*padding_idx) : "");
}

}  // namespace lumen::nn
