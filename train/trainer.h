// The Trainer: the epoch/step loop of a task (train/task.h: classification, segmentation,
// enhancement; by default image classification with cross-entropy and accuracy) with an
// optimizer, an LR schedule applied per step or per epoch, gradient accumulation and clipping,
// the NaN/inf guard, evaluation, checkpoints (resume ends bit-identical on CPU for the same seed
// and thread count), progress output and the run directory files (train/run_log.h). Data comes
// through BatchSource, so the trainer does not depend on how batches are made. Data-parallel
// (TrainerOptions::group): rank 0's weights at the start, gradients averaged after backward,
// loss and counts summed over the ranks, files written by rank 0 only (docs/distributed.md).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/profiler.h"
#include "nn/module.h"
#include "train/checkpoint.h"
#include "train/dist/data_parallel.h"
#include "train/grad_scaler.h"
#include "train/optim.h"
#include "train/progress.h"
#include "train/schedule.h"
#include "train/schedule_basic.h"
#include "train/task.h"

namespace lumen::train {

class RunLog;
struct MetricRecord;

// Batches of one split, {inputs (B, ...), targets (B, ...), ...} on the CPU (see train/task.h), in an order fixed by
// the epoch (so a resumed run sees the same batches).
class BatchSource {
  public:
    virtual ~BatchSource() = default;
    virtual int64_t num_batches() const = 0;   // per epoch
    virtual int64_t num_examples() const = 0;  // per epoch
    // Examples per full batch, or 0 when unknown: a checkpoint taken inside an epoch then
    // resumes only with the same number of ranks and batches (else at the same example).
    virtual int64_t batch_size() const { return 0; }
    // Starts epoch `epoch` at batch `first_batch` (> 0 when a resumed run continues an epoch).
    virtual void start_epoch(int64_t epoch, int64_t first_batch = 0) = 0;
    // The next batch of the current epoch, or nullopt after its last.
    virtual std::optional<std::vector<Tensor>> next() = 0;
};

struct TrainerOptions {
    std::string run_dir = "runs/run";
    int64_t epochs = 1;
    int64_t max_steps = 0;  // > 0: stop after this many optimizer updates (checkpointed)
    // Micro-batches per optimizer update; each loss is divided by it, so an epoch's last, short
    // group of micro-batches weighs less (as the usual PyTorch loop does).
    int64_t accumulate = 1;
    double grad_clip = 0.0;  // > 0: clip the global L2 norm to this
    double label_smoothing = 0.0;
    bool nan_guard = true;
    ScheduleInterval interval = ScheduleInterval::epoch;
    int64_t eval_every = 1;  // epochs between evaluations (the last epoch always evaluates)
    // > 0: stop after this many evaluations in a row without a better checkpoint.best_metric
    // (early stopping; a checkpoint is written at the stop).
    int64_t early_stopping = 0;
    int64_t checkpoint_every_epochs = 1;
    int64_t checkpoint_every_steps = 0;  // > 0: also every this many updates
    CheckpointPolicy checkpoint;         // keep_last, best_metric ("test_accuracy", ...)
    Device device = Device::cpu();
    ProgressMode progress = ProgressMode::lines;
    int64_t log_every = 50;          // updates between step records and plain progress lines
    std::string config_json = "{}";  // echoed to config.json and stored in checkpoints
    std::string title = "lumen";     // the plot's title
    // What the batches mean, the loss and the metrics; null: classification with
    // cross-entropy (label_smoothing above) and accuracy.
    std::shared_ptr<const Task> task;
    // > 0: profile this many updates after this fit()'s first one (a warm-up): the table is
    // printed and written to profile.txt, the Chrome trace to profile.json in the run directory
    // (lumen train --profile STEPS; core/profiler.h).
    int64_t profile_steps = 0;
    // Mixed precision (core/autocast.h; train.precision fp32|bf16|fp16): float32 (off), or the
    // training forward's matmul/linear GEMMs in bfloat16 or float16 with float32 accumulation
    // and float32 master weights. float16 adds dynamic loss scaling (train/grad_scaler.h): an
    // update whose gradients overflow is skipped and reported. Evaluation stays float32.
    DType precision = DType::float32;
    GradScalerOptions scaler;
    // Data-parallel training over this group's ranks (null: one process). Each rank's
    // train_data must be its shard (DataLoaderOptions::num_replicas) and its test_data its
    // block (contiguous_shards); only rank 0 writes the run directory and `out`.
    std::shared_ptr<dist::ProcessGroup> group;
    // With a group of several ranks: every BatchNorm of the model normalizes in training with
    // the statistics of all ranks' samples (nn::convert_sync_batchnorm; train.sync_batchnorm).
    bool sync_batchnorm = false;
};

struct TrainSummary {
    double test_accuracy = 0.0, test_loss = 0.0, train_loss = 0.0;
    std::map<std::string, double> test_metrics;  // the task's metrics of the last evaluation
    int64_t epochs = 0, steps = 0;
    int64_t skipped_updates = 0;  // float16 updates skipped for overflowed gradients
    double wall_seconds = 0.0, train_seconds = 0.0, images_per_second = 0.0;
    std::string device, run_dir;
};

// The loss and metrics of `task` over every batch of `data` (epoch 0's order), in eval mode
// without gradients, predictions made by task.predict (whole, sliding window or slices); the
// model is left in eval mode. Throws [evaluate] when the data has no batch. With a `group` of
// several ranks, `data` is this rank's block of the split (DataLoaderOptions::
// contiguous_shards) and every rank returns the metrics of the whole split (the meters' states
// gathered in rank order: TaskMeter::state).
EvalResult evaluate(nn::Module& model, BatchSource& data, const Task& task, Device device,
                    dist::ProcessGroup* group = nullptr);

// evaluate() with the classification task: mean cross-entropy (with `label_smoothing`) and
// accuracy.
EvalResult evaluate_classifier(nn::Module& model, BatchSource& data, Device device,
                               double label_smoothing = 0.0);

class Trainer {
  public:
    // Throws [Trainer] for epochs < 1, accumulate < 1, eval_every < 1, negative max_steps,
    // grad_clip or label_smoothing, or a null model/optimizer/schedule/source.
    Trainer(TrainerOptions options, std::shared_ptr<nn::Module> model,
            std::unique_ptr<Optimizer> optimizer, std::shared_ptr<LRSchedule> schedule,
            std::shared_ptr<BatchSource> train_data, std::shared_ptr<BatchSource> test_data,
            std::ostream& out);

    // Continues from a checkpoint: model, optimizer, generator, step and epoch, and the running
    // totals of an interrupted epoch (so its train loss and accuracy cover the whole epoch, as
    // without the interruption); metrics.jsonl keeps the records up to the checkpoint's step
    // (a torn last line is dropped) and best.safetensors is repaired to the checkpoint's best
    // record; fit() prints what was repaired. Call before fit(). Throws [checkpoint] for a
    // checkpoint that fails load_checkpoint's checks or stopped past the end of an epoch of
    // this run's data.
    void resume(const std::string& checkpoint_path);
    // Trains to options.epochs (or max_steps), evaluating, logging and checkpointing; writes
    // summary.json and model.safetensors (the weights only, PyTorch state_dict keys) and prints
    // the summary table. Throws [nan_guard] when a step goes non-finite.
    TrainSummary fit();
    // Loss and the task's metrics over a split, in eval mode without gradients; with several
    // ranks, `data` is this rank's block of it (as the test data) and the result the whole's.
    EvalResult evaluate(BatchSource& data);
    const Task& task() const { return *options_.task; }

    nn::Module& model() { return *model_; }
    Optimizer& optimizer() { return *optimizer_; }
    int64_t step() const { return step_; }

  private:
    bool train_epoch(RunLog* log, Progress& progress);
    double train_batch(const std::vector<Tensor>& batch, bool first_micro, bool last_micro);
    void end_epoch(RunLog* log, Progress& progress, bool evaluate_now);
    void save_checkpoint_now(std::optional<double> metric);
    void update_early_stopping(const MetricRecord& record, Progress& progress);
    void finish(TrainSummary& summary);
    void print_summary_table(const TrainSummary& summary) const;
    void profile_update();
    void finish_profile();
    // Rank 0 writes the run directory; the other ranks of a data-parallel run write nothing.
    bool writes_files() const { return options_.group->rank() == 0; }
    double reduce_batch_stats(double loss, int64_t& examples, int64_t& correct);

    TrainerOptions options_;
    std::shared_ptr<nn::Module> model_;
    std::unique_ptr<Optimizer> optimizer_;
    std::shared_ptr<LRSchedule> schedule_;
    std::shared_ptr<BatchSource> train_data_, test_data_;
    std::ostream& out_;
    std::unique_ptr<dist::GradientReducer> reducer_;  // more than one rank only
    std::unique_ptr<GradScaler> scaler_;              // float16 only
    bool skipped_update_ = false;         // the last update overflowed (float16) and was skipped
    int64_t skipped_updates_ = 0;
    std::unique_ptr<CheckpointManager> checkpoints_;
    int64_t epoch_ = 0, step_ = 0, batch_in_epoch_ = 0;
    bool resumed_ = false;
    std::optional<CheckpointState> resume_state_;
    // This epoch's running totals and the time spent training (not evaluating).
    double epoch_loss_sum_ = 0.0, train_seconds_ = 0.0;
    int64_t epoch_seen_ = 0, epoch_correct_ = 0, images_trained_ = 0;
    std::optional<EvalResult> last_eval_;
    int64_t last_eval_step_ = -1;
    // Early stopping: the best metric so far and the evaluations since it improved.
    std::optional<double> early_best_;
    int64_t early_stale_ = 0;
    bool early_stop_ = false;
    // --profile: the recording profiler, the updates of this fit() so far, and whether done.
    std::unique_ptr<Profiler> profiler_;
    int64_t updates_this_fit_ = 0;
    bool profiled_ = false;
};

}  // namespace lumen::train
