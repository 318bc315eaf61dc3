// Training checkpoints: one safetensors file per checkpoint holding the model's state_dict
// ("model.<key>"), the optimizer's per-parameter state ("optimizer.<param>.<state>") and, as
// JSON in the metadata, step/epoch, the default generator's seed and offset, the optimizer and
// schedule names and the run's config, so that loading restores everything a resumed run needs.
// CheckpointManager keeps the last k and the best by a metric (train/atomic_file.h writes).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nn/module.h"
#include "train/optim.h"

namespace lumen::train {

// The non-tensor part of a checkpoint.
struct CheckpointState {
    int64_t epoch = 0;           // completed epochs
    int64_t step = 0;            // optimizer updates done
    int64_t batch_in_epoch = 0;  // batches of epoch `epoch` already trained (0 at an epoch end)
    uint64_t rng_seed = 0;       // the default generator (dropout, drop path)
    uint64_t rng_offset = 0;
    std::string schedule;     // the schedule's name, for the record
    std::string config_json;  // the run's config as JSON text
    std::string extra_json;   // anything else the trainer keeps (JSON text), e.g. best metric
};

// Writes a checkpoint atomically (".partial" file, fsync, rename, fsync dir) and returns nothing;
// the default generator's state is taken from lumen::default_generator(), overriding the
// rng fields of `state`. Optimizer state tensors are named by the module's parameter names.
// Throws [checkpoint] <path>: ... when a parameter of the optimizer is not in the module, and
// [safetensors]/[atomic_file] for I/O errors.
void save_checkpoint(const std::string& path, const nn::Module& module, const Optimizer& optimizer,
                     CheckpointState state);

// Reads a checkpoint: loads the model (strict), replaces the optimizer's state for every
// parameter (tensors moved to the parameter's device; "step" counts stay on the CPU), restores
// the default generator, and returns the state. `optimizer` may be null (weights only).
// Throws [checkpoint] <path>: ... for a file without lumen checkpoint metadata, an optimizer of
// another type than the one saved (naming both), or state for a parameter the module lacks;
// [load_state_dict] for missing/unexpected/mis-shaped model keys; [safetensors] for a corrupt
// file.
CheckpointState load_checkpoint(const std::string& path, nn::Module& module, Optimizer* optimizer);

// Only the state (no tensors are touched): for resuming, where the config is needed first.
CheckpointState read_checkpoint_state(const std::string& path);

// Loads only the model weights of a checkpoint or of a plain state_dict safetensors file.
void load_checkpoint_weights(const std::string& path, nn::Module& module);

struct CheckpointPolicy {
    int64_t keep_last = 2;    // step checkpoints kept (>= 1); older ones are deleted
    std::string best_metric;  // e.g. "test_accuracy"; empty: no best checkpoint
    bool higher_is_better = true;
};

// A run's checkpoints/ folder: "step-<step, 9 digits>.safetensors" per save, "best.safetensors"
// (a hard link to the best step file, so deleting old steps keeps it) and "index.json"
// ({"latest", "best": {"file", "metric", "value", "step"}, "kept": [...]}, human-readable).
class CheckpointManager {
  public:
    // Creates the folder. Throws [checkpoint] for keep_last < 1.
    CheckpointManager(std::string directory, CheckpointPolicy policy = {});
    // Saves a checkpoint for state.step; `metric` is the value of policy.best_metric now (when
    // the policy has one), which makes it the best when it beats the previous best. Returns the
    // path written.
    std::string save(const nn::Module& module, const Optimizer& optimizer,
                     const CheckpointState& state, std::optional<double> metric = std::nullopt);
    // The newest readable step checkpoint in `directory` ("" when none): the highest step file
    // whose state can be read, so a damaged newest file falls back to the one before.
    static std::string latest(const std::string& directory);
    const std::string& directory() const { return directory_; }
    std::optional<double> best_value() const { return best_value_; }

  private:
    void write_index(const std::string& latest_file) const;
    std::string directory_;
    CheckpointPolicy policy_;
    std::vector<std::string> kept_;
    std::optional<double> best_value_;
    int64_t best_step_ = -1;
};

}  // namespace lumen::train
