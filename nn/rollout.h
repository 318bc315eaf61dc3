// Attention rollout (Abnar & Zuidema 2020) over the fused maps of a stack of attention layers
// (spec diff 2.10, decision D14): signed differential/gated maps are kept signed.
#pragma once

#include <vector>

#include "core/tensor.h"

namespace lumen::nn {

// For l = 1..L: M_l = mean over heads of maps[l] + I, R_l = M_l / rowsum(M_l); returns
// R_L @ ... @ R_1. Shapes: maps (L, B, nh, N, N) -> (B, N, N). For softmax maps this is
// 0.5 A + 0.5 I per layer; for DGSA maps the row sums are 2 mean_h(g) > 0, for Diff 2 - lambda.
// Differentiable in maps. Throws [attention_rollout] for a wrong shape or L = 0.
Tensor attention_rollout(const Tensor& maps);
// The same from a list of per-layer maps (B, nh, N, N), first layer first (e.g. the last_attn
// of every block's attention).
Tensor attention_rollout(const std::vector<Tensor>& maps);

}  // namespace lumen::nn
