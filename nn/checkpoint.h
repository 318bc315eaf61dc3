// Activation checkpointing (Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost";
// torch.utils.checkpoint): a function of tensors runs without keeping its intermediate
// activations, and runs again during backward to get them. Peak memory falls from every
// activation of every checkpointed block to one block's at a time, for one more forward.
//
//   x = nn::checkpoint([block, context](const std::vector<Tensor>& in) {
//       return block->forward(in[0], context);
//   }, {x}, block->parameters());
//
// The recomputation replays the default generator from the state it had at the forward, so
// dropout draws the same masks and the gradients are bit-identical to the run without
// checkpointing. Gradients are computed with grad() inside the node, never accumulated into
// .grad() on the side, so check_gradients and grad() see them like any op's. A model's
// `grad_checkpointing: k` picks its blocks with checkpoint_every() (every k-th block).
#pragma once

#include <functional>
#include <vector>

#include "core/tensor.h"

namespace lumen::nn {

using CheckpointFunction = std::function<Tensor(const std::vector<Tensor>& inputs)>;

// fn(inputs) with its graph replaced by one node ("checkpoint") over `inputs` and `params`
// (the tensors fn reads that are not inputs: a module's parameters, whose gradients the node
// returns). fn must be a pure function of its inputs, params and the default generator (it
// is called twice), and must not keep references to locals of the caller (it runs again in
// backward: capture by value). Without grad mode, or when nothing requires grad, it is fn(inputs).
// Throws [checkpoint] when fn returns an undefined tensor.
Tensor checkpoint(const CheckpointFunction& fn, const std::vector<Tensor>& inputs,
                  const std::vector<Tensor>& params = {});

// Whether block `index` (0-based, counted over a model's blocks in the order its forward runs
// them) is checkpointed under grad_checkpointing = every: every > 0 and index + 1 a multiple
// of every (blocks every - 1, 2 every - 1, ...); 0 checkpoints none.
// Throws [checkpoint] for every < 0.
bool is_checkpointed(int64_t every, int64_t index);

// A model's block loop in one call: checkpoint(fn, inputs, params) when
// is_checkpointed(every, index), else fn(inputs) with its graph kept.
//   int64_t index = 0;
//   for (const auto& block : *blocks)  // shared_ptrs, captured by value with the context
//       x = nn::checkpoint_every(every, index++, [block, context](const std::vector<Tensor>& in) {
//           return block->forward(in[0], context);
//       }, {x}, block->parameters());
Tensor checkpoint_every(int64_t every, int64_t index, const CheckpointFunction& fn,
                        const std::vector<Tensor>& inputs, const std::vector<Tensor>& params = {});

// True while checkpoint()'s backward re-runs a function. A module whose forward has an effect
// beyond its output (BatchNorm's running statistics) skips it then, so that it happens once
// per step, as without checkpointing.
bool is_recomputing();

}  // namespace lumen::nn
