// Target parsing and the class-last probability / one-hot maps of the segmentation losses.
#include "train/class_maps.h"

#include "ops/elementwise.h"
#include "ops/index.h"
#include "ops/softmax.h"

namespace lumen::train {

Tensor class_indices(const char* who, const Tensor& input, const Tensor& target) {
    LUMEN_CHECK(input.ndim() >= 2 && input.is_floating_point(), who,
                "expects floating logits (B, C, ...), got ", input.shape(), " ", input.dtype());
    LUMEN_CHECK(target.dtype() == DType::int64 || target.dtype() == DType::int32, who,
                "expects an integer target, got ", target.dtype());
    Tensor labels =
        target.ndim() == input.ndim() && target.size(1) == 1 ? target.squeeze(1) : target;
    Shape want = input.shape();
    want.erase(want.begin() + 1);
    LUMEN_CHECK(labels.shape() == want, who, "target ", target.shape(), " does not fit input ",
                input.shape(), " (expected (B, 1, ...) or (B, ...) with the input's sizes)");
    return labels;
}

ClassActivation parse_class_activation(const char* who, const std::string& name) {
    if (name == "softmax") return ClassActivation::softmax;
    if (name == "sigmoid") return ClassActivation::sigmoid;
    if (name == "none") return ClassActivation::none;
    LUMEN_FAIL(who, "activation must be softmax, sigmoid or none, got '", name, "'");
}

ClassMaps class_maps(const char* who, const Tensor& input, const Tensor& target,
                     ClassActivation activation) {
    ClassMaps maps;
    maps.labels = class_indices(who, input, target);
    const int64_t nd = input.ndim();
    // Class last, (B, *spatial, C), to line up with one_hot's layout; sums over all the rest.
    std::vector<int64_t> class_last{0};
    for (int64_t d = 2; d < nd; ++d) class_last.push_back(d);
    class_last.push_back(1);
    for (int64_t d = 0; d < nd - 1; ++d) maps.reduce.push_back(d);
    Tensor scores = activation == ClassActivation::softmax   ? softmax(input, 1)
                    : activation == ClassActivation::sigmoid ? sigmoid(input)
                                                             : input;
    maps.probs = scores.permute(class_last);
    maps.onehot = one_hot(maps.labels, input.size(1)).to(input.dtype());
    return maps;
}

}  // namespace lumen::train
