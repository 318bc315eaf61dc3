// Shared first steps of the per-class segmentation losses (UTNet's Dice in loss.cpp, the gdla
// BDoU / soft Dice in loss_seg.cpp): read the class-index target, turn the logits into
// probabilities laid out class-last to line up with one_hot, and name the dims to sum over.
#pragma once

#include <string>

#include "core/tensor.h"
#include "ops/reduce.h"

namespace lumen::train {

// The class indices as (B, *spatial), from a target (B, 1, *spatial) or (B, *spatial) of
// int64/int32 that fits logits (B, C, *spatial). Throws [who] for non-floating logits with
// fewer than 2 dims, a non-integer target or one whose shape does not fit.
Tensor class_indices(const char* who, const Tensor& input, const Tensor& target);

// How logits become per-class scores before the sums.
enum class ClassActivation { softmax, sigmoid, none };
// "softmax", "sigmoid" or "none"; throws [who] naming anything else.
ClassActivation parse_class_activation(const char* who, const std::string& name);

// Scores and one-hot targets, both (B, *spatial, C) and of the input's dtype; `reduce` lists
// every dim but the last, so that sum(x, reduce) gives one value per class.
struct ClassMaps {
    Tensor labels;  // (B, *spatial) int64/int32
    Tensor probs;   // activation(input) permuted class-last (a view, gradient to input)
    Tensor onehot;  // no gradient
    Dims reduce;
};
ClassMaps class_maps(const char* who, const Tensor& input, const Tensor& target,
                     ClassActivation activation = ClassActivation::softmax);

}  // namespace lumen::train
