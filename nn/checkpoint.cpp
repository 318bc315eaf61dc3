// The checkpoint node: forward under NoGradGuard; backward re-runs fn on detached inputs with
// grad mode on, the default generator put back to the forward's state and the forward's
// sample-shard context (core/sample_shard.h), so every mask is drawn again as it was; then
// takes grad() of the recomputed output with respect to those inputs and the params.
#include "nn/checkpoint.h"

#include "core/autograd.h"
#include "core/error.h"
#include "core/random.h"
#include "core/sample_shard.h"

namespace lumen::nn {

namespace {

// Sets the default generator to (seed, offset) for the recomputation and restores the state
// the backward pass had afterwards (so later draws are unaffected by the replay).
class GeneratorReplay {
  public:
    GeneratorReplay(uint64_t seed, uint64_t offset)
        : seed_(default_generator().seed()), offset_(default_generator().offset()) {
        default_generator().manual_seed(seed);
        default_generator().set_offset(offset);
    }
    ~GeneratorReplay() {
        default_generator().manual_seed(seed_);
        default_generator().set_offset(offset_);
    }
    GeneratorReplay(const GeneratorReplay&) = delete;
    GeneratorReplay& operator=(const GeneratorReplay&) = delete;

  private:
    uint64_t seed_, offset_;
};

// Set while a checkpoint node re-runs its function (per thread, as grad mode is).
thread_local bool recomputing = false;

class RecomputeGuard {
  public:
    RecomputeGuard() : previous_(recomputing) { recomputing = true; }
    ~RecomputeGuard() { recomputing = previous_; }
    RecomputeGuard(const RecomputeGuard&) = delete;
    RecomputeGuard& operator=(const RecomputeGuard&) = delete;

  private:
    bool previous_;
};

class GradModeGuard {
  public:
    explicit GradModeGuard(bool enabled) : previous_(grad_enabled()) { set_grad_enabled(enabled); }
    ~GradModeGuard() { set_grad_enabled(previous_); }
    GradModeGuard(const GradModeGuard&) = delete;
    GradModeGuard& operator=(const GradModeGuard&) = delete;

  private:
    bool previous_;
};

}  // namespace

Tensor checkpoint(const CheckpointFunction& fn, const std::vector<Tensor>& inputs,
                  const std::vector<Tensor>& params) {
    std::vector<Tensor> all = inputs;
    all.insert(all.end(), params.begin(), params.end());
    if (!needs_recording(all)) {
        Tensor out = fn(inputs);
        LUMEN_CHECK(out.defined(), "checkpoint", "the function returned an undefined tensor");
        return out;
    }
    const uint64_t seed = default_generator().seed(), offset = default_generator().offset();
    const SampleShard shard = sample_shard();
    Tensor out;
    {
        NoGradGuard no_grad;
        out = fn(inputs);
    }
    LUMEN_CHECK(out.defined(), "checkpoint", "the function returned an undefined tensor");
    std::vector<SavedTensor>
        saved;  // detached aliases: whether each needs a gradient is kept apart
    std::vector<bool> needs_grad;
    for (const Tensor& input : inputs) {
        saved.push_back(save(input));
        needs_grad.push_back(input.defined() && input.requires_grad());
    }
    const size_t count = inputs.size();
    record_backward(
        "checkpoint", all, out,
        [fn, saved, needs_grad, params, count, seed, offset, shard](const Tensor& grad_out) {
            // Fresh leaves for the inputs: the recomputed graph ends at them.
            std::vector<Tensor> leaves;
            std::vector<Tensor> wrt;
            std::vector<size_t> position;  // index in the node's inputs
            for (size_t i = 0; i < count; ++i) {
                Tensor leaf = saved[i].get().detach();
                if (needs_grad[i]) {
                    leaf.requires_grad_();
                    wrt.push_back(leaf);
                    position.push_back(i);
                }
                leaves.push_back(leaf);
            }
            for (size_t j = 0; j < params.size(); ++j) {
                if (!params[j].requires_grad()) continue;
                wrt.push_back(params[j]);
                position.push_back(count + j);
            }
            Tensor again;
            {
                GeneratorReplay replay(seed, offset);
                SampleShardGuard same_shard(shard.rank, shard.world, shard.batch);
                GradModeGuard grad_mode(true);
                RecomputeGuard recompute;
                again = fn(leaves);
            }
            std::vector<Tensor> grads(count + params.size());
            if (wrt.empty() || !again.requires_grad()) return grads;
            std::vector<Tensor> computed = grad({again}, wrt, {grad_out});
            for (size_t k = 0; k < wrt.size(); ++k) grads[position[k]] = computed[k];
            return grads;
        });
    return out;
}

bool is_checkpointed(int64_t every, int64_t index) {
    LUMEN_CHECK(every >= 0, "checkpoint", "grad_checkpointing must be >= 0 (0: off, k: every k-th ",
                "block), got ", every);
    return every > 0 && (index + 1) % every == 0;
}

Tensor checkpoint_every(int64_t every, int64_t index, const CheckpointFunction& fn,
                        const std::vector<Tensor>& inputs, const std::vector<Tensor>& params) {
    return is_checkpointed(every, index) ? checkpoint(fn, inputs, params) : fn(inputs);
}

bool is_recomputing() { return recomputing; }

}  // namespace lumen::nn
