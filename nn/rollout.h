// Attention rollout (Abnar & Zuidema 2020) over the fused maps of a stack of attention layers
// (as Lygizou et al. 2025 visualize, Sec. 5.3): signed differential/gated maps are kept signed.
#pragma once

#include <vector>

#include "nn/module.h"

namespace lumen::nn {

// For l = 1..L: M_l = mean over heads of maps[l] + I, R_l = M_l / rowsum(M_l); returns
// R_L @ ... @ R_1. Shapes: maps (L, B, nh, N, N) -> (B, N, N). For softmax maps this is
// 0.5 A + 0.5 I per layer; for DGSA maps the row sums are 2 mean_h(g) > 0, for Diff 2 - lambda.
// Differentiable in maps. Throws [attention_rollout] for a wrong shape or L = 0.
Tensor attention_rollout(const Tensor& maps);
// The same from a list of per-layer maps (B, nh, N, N), first layer first (e.g. the last_attn
// of every block's attention).
Tensor attention_rollout(const std::vector<Tensor>& maps);

// Vision heatmap (before upsampling and display scaling): the class token's row over the
// patches, rollout[b, 0, prefix_tokens:] viewed as the grid. Shapes: rollout (B, N, N) with
// N = prefix_tokens + gh * gw -> (B, gh, gw). Throws [attention_rollout] for other sizes.
Tensor rollout_class_token_map(const Tensor& rollout, const std::vector<int64_t>& grid,
                               int64_t prefix_tokens = 1);
// Text (no class token): the mean of the rollout rows of the non-pad queries, 0 at
// pad keys. Shapes: rollout (B, N, N), key_padding_mask (B, N) bool (true = pad) -> (B, N).
Tensor rollout_token_scores(const Tensor& rollout, const Tensor& key_padding_mask);

// Sets store_attn of every MHSA, MultiheadDiffAttn and MultiheadDGSA inside `model`, so that
// each forward keeps its fused map (detached) for stored_attention_maps.
void store_attention_maps(Module& model, bool enabled = true);
// The maps those attentions kept in the last forward, in registration order (first block
// first): the input of attention_rollout. Throws [attention_rollout] when the model has none of
// them or one has no map (store_attention_maps not set, or no forward since).
std::vector<Tensor> stored_attention_maps(Module& model);

}  // namespace lumen::nn
