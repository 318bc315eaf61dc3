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
    std::string optimizer;           // the optimizer's name (set by save_checkpoint)
    std::string schedule;            // the schedule's name, for the record
    std::string config_json = "{}";  // the run's config as JSON text (a JSON object)
    std::string extra_json = "{}";   // anything else the trainer keeps (a JSON object)
    // The best value of CheckpointPolicy::best_metric so far, this checkpoint's included, and
    // the step of the checkpoint that has it: what best.safetensors must hold after this save
    // (CheckpointManager::save fills them in; a resumed run repairs best.safetensors from them).
    std::optional<double> best_value;
    int64_t best_step = -1;
};

// Writes a checkpoint atomically (".partial" file, fsync, rename, fsync dir) and returns nothing;
// the default generator's state is taken from lumen::default_generator(), overriding the
// rng fields of `state`. Optimizer state tensors are named by the module's parameter names.
// Throws [checkpoint] <path>: ... when a parameter of the optimizer is not in the module, and
// [safetensors]/[atomic_file] for I/O errors.
void save_checkpoint(const std::string& path, const nn::Module& module, const Optimizer& optimizer,
                     CheckpointState state);

// Reads a checkpoint: loads the model (strict, dtypes must match), replaces the optimizer's
// state for every parameter (tensors moved to the parameter's device; "step" counts stay on
// the CPU), restores the default generator, and returns the state. `optimizer` may be null
// (weights only). Nothing read back is trusted: the file's checksum must be present and match
// (a bit flip anywhere is an error), and every field is checked (format, non-negative epoch,
// step and batch_in_epoch, a best step not after the step, config and extra JSON objects, the
// optimizer state of each parameter: Optimizer::check_state).
// Throws [checkpoint] <path>: ... for a file without lumen checkpoint metadata or checksum, an
// invalid field, an optimizer of another type than the one saved (naming both), or state for a
// parameter the module lacks; [load_state_dict] for missing/unexpected/mis-shaped/mistyped
// model keys; [safetensors] for a damaged file (checksum mismatch included).
CheckpointState load_checkpoint(const std::string& path, nn::Module& module, Optimizer* optimizer);

// The state only, after the same checks of the file and the fields (the tensors are read for
// the checksum but not loaded anywhere): for resuming, where the config is needed first.
CheckpointState read_checkpoint_state(const std::string& path);

// Loads only the model weights of a checkpoint (checked as above) or of a plain state_dict
// safetensors file (its checksum checked when it has one).
void load_checkpoint_weights(const std::string& path, nn::Module& module);

struct CheckpointPolicy {
    int64_t keep_last = 2;    // step checkpoints kept (>= 1); older ones are deleted
    std::string best_metric;  // e.g. "test_accuracy"; empty: no best checkpoint
    bool higher_is_better = true;
};

// A run's checkpoints/ folder: "step-<step, 9 digits>.safetensors" per save, "best.safetensors"
// (a hard link to the best step file, so deleting old steps keeps it) and "index.json"
// ({"latest", "best": {"file", "metric", "value", "step"}, "kept": [...]}, human-readable).
// A save is: the step file (atomic), then best.safetensors (atomic), then old step files
// deleted, then index.json (atomic). The step file records the best, so a kill between any two
// of these is repaired by resume_from() (a missing best link, an extra old file, a stale index).
class CheckpointManager {
  public:
    // Creates the folder. Throws [checkpoint] for keep_last < 1.
    CheckpointManager(std::string directory, CheckpointPolicy policy = {});
    // Saves a checkpoint for state.step; `metric` is the value of policy.best_metric now (when
    // the policy has one), which makes it the best when it beats the previous best. Returns the
    // path written.
    std::string save(const nn::Module& module, const Optimizer& optimizer, CheckpointState state,
                     std::optional<double> metric = std::nullopt);
    // Continues from the checkpoint `state` was read from: its best record becomes the best so
    // far, and best.safetensors is made to match it (relinked to the step file of the recorded
    // best when it holds another step, removed when the checkpoint had no best yet). Returns a
    // line for each repair, for the caller to print.
    std::vector<std::string> resume_from(const CheckpointState& state);
    // The newest valid step checkpoint in `directory` ("" when none): the highest step file
    // that read_checkpoint_state accepts (checksum and fields), so a damaged newest file falls
    // back to the one before. Each file passed over is added to `skipped` as
    // "<path>: <reason>" when `skipped` is not null.
    static std::string latest(const std::string& directory,
                              std::vector<std::string>* skipped = nullptr);
    const std::string& directory() const { return directory_; }
    std::optional<double> best_value() const { return best_value_; }

  private:
    void write_index(const std::string& latest_file) const;
    void link_best(const std::string& step_path) const;
    std::string directory_;
    CheckpointPolicy policy_;
    std::vector<std::string> kept_;
    std::optional<double> best_value_;
    int64_t best_step_ = -1;
};

}  // namespace lumen::train
