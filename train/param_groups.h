// Parameter groups for weight decay: which parameters of a module are exempt (biases, norm
// weights, embeddings) and the two AdamW/SGD groups built from that, as timm's
// param_groups_weight_decay and the DGT recipe (Lygizou et al. 2025, Sec. 5.2) do.
#pragma once

#include <string>
#include <vector>

#include "nn/module.h"
#include "train/optim.h"

namespace lumen::train {

// What is exempt from weight decay. A parameter is
//   a bias:       its name is "bias" or ends in ".bias";
//   a norm weight: it belongs to a LayerNorm, RMSNorm, GroupNorm, BatchNorm or SeqNorm module,
//                 or is named "subln.weight" (the per-head RMSNorm of Diff/DGSA attention);
//   an embedding: cls_token, dist_token, pos_embed, or the weight of an Embedding module.
struct WeightDecayExemptions {
    bool biases = true;
    bool norm_weights = true;
    bool embeddings = true;
    // The official PVT-GDLA rule (its official optimizer.py) instead of the last two: every
    // parameter with fewer than 2 dims is exempt (so its [h, dh] lambdas decay, its 1-D ones do
    // not).
    bool below_2d = false;
};

// The dotted names of the parameters of `module` (in named_parameters order) that `rules`
// exempt from weight decay.
std::vector<std::string> weight_decay_exempt_names(const nn::Module& module,
                                                   const WeightDecayExemptions& rules = {});

// Two groups in parameter order: {every other parameter, lr, weight_decay} then {the exempt
// ones, lr, 0}; a group with no parameter is left out (so one group when nothing is exempt).
// Only parameters with requires_grad are included. Throws [param_groups] when the module has
// no trainable parameter.
std::vector<ParamGroup> weight_decay_groups(const nn::Module& module, double lr,
                                            double weight_decay,
                                            const WeightDecayExemptions& rules = {});

}  // namespace lumen::train
