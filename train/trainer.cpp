// The training loop. A step is: forward, the task's loss (divided by `accumulate`), backward on
// each micro-batch; on the last one clip, guard, optimizer step, zero_grad. The schedule is set
// before the first micro-batch of each update (per step) or at the start of the epoch. With
// several ranks, the gradients are averaged over them before clipping and the step.
#include "train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/autocast.h"
#include "core/autograd.h"
#include "core/error.h"
#include "core/parallel.h"
#include "core/sample_shard.h"
#include "nn/norm.h"
#include "nn/state_dict.h"
#include "ops/elementwise.h"
#include "ops/loss.h"
#include "ops/reduce.h"
#include "train/grad_utils.h"
#include "train/metrics_class.h"
#include "train/run_log.h"

namespace lumen::train {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string device_text(Device device) {
    if (device.is_cuda()) return device.str();
    return "cpu (" + std::to_string(get_num_threads()) + " threads)";
}

}  // namespace

Trainer::Trainer(TrainerOptions options, std::shared_ptr<nn::Module> model,
                 std::unique_ptr<Optimizer> optimizer, std::shared_ptr<LRSchedule> schedule,
                 std::shared_ptr<BatchSource> train_data, std::shared_ptr<BatchSource> test_data,
                 std::ostream& out)
    : options_(std::move(options)),
      model_(std::move(model)),
      optimizer_(std::move(optimizer)),
      schedule_(std::move(schedule)),
      train_data_(std::move(train_data)),
      test_data_(std::move(test_data)),
      out_(out) {
    const TrainerOptions& o = options_;
    LUMEN_CHECK(model_ && optimizer_ && schedule_ && train_data_ && test_data_, "Trainer",
                "needs a model, an optimizer, a schedule and train and test data");
    LUMEN_CHECK(o.epochs >= 1 && o.accumulate >= 1 && o.eval_every >= 1 && o.max_steps >= 0,
                "Trainer", "needs epochs, accumulate and eval_every >= 1 and max_steps >= 0, got ",
                o.epochs, ", ", o.accumulate, ", ", o.eval_every, " and ", o.max_steps);
    LUMEN_CHECK(o.grad_clip >= 0 && o.label_smoothing >= 0 && o.label_smoothing <= 1, "Trainer",
                "grad_clip must be >= 0 and label_smoothing in [0, 1], got ", o.grad_clip, " and ",
                o.label_smoothing);
    LUMEN_CHECK(train_data_->num_batches() > 0, "Trainer", "the training data has no batch");
    LUMEN_CHECK(
        o.early_stopping >= 0 && (o.early_stopping == 0 || !o.checkpoint.best_metric.empty()),
        "Trainer", "early stopping (", o.early_stopping,
        " evaluations) needs a best metric to watch (checkpoint.best_metric)");
    LUMEN_CHECK(o.precision == DType::float32 || o.precision == DType::bfloat16 ||
                    o.precision == DType::float16,
                "Trainer", "precision must be float32, bfloat16 or float16, got ", o.precision);
    if (o.precision == DType::float16) scaler_ = std::make_unique<GradScaler>(o.scaler);
    if (o.sync_batchnorm && o.group && o.group->world_size() > 1) {
        std::shared_ptr<dist::ProcessGroup> group = o.group;
        nn::convert_sync_batchnorm(*model_, [group](Tensor& t) { group->all_reduce(t); });
    }
    if (!options_.task) {
        TaskOptions classify;
        classify.loss.label_smoothing = o.label_smoothing;
        options_.task = make_task(classify);
    }
    if (!options_.group) options_.group = dist::single_process_group();
    if (options_.group->world_size() > 1)
        reducer_ = std::make_unique<dist::GradientReducer>(options_.group, model_->parameters());
}

namespace {

// A number of the trainer's extra record in [0, 2^53] (0 when absent), so that the counts
// among them convert to int64 exactly.
double extra_number(const std::string& path, const nlohmann::json& extra, const char* key) {
    auto it = extra.find(key);
    if (it == extra.end()) return 0.0;
    const double limit = 9007199254740992.0;  // 2^53
    LUMEN_CHECK(it->is_number() && it->get<double>() >= 0 && it->get<double>() <= limit,
                "checkpoint", path, ": the trainer record's '", key,
                "' must be a number in [0, 2^53], got ", it->dump());
    return it->get<double>();
}

}  // namespace

void Trainer::resume(const std::string& checkpoint_path) {
    CheckpointState state = load_checkpoint(checkpoint_path, *model_, optimizer_.get());
    // state_from_json checked that extra is a JSON object.
    nlohmann::json extra = nlohmann::json::parse(state.extra_json);
    // Where in the epoch's order the checkpoint stopped, in examples: batch k of N ranks with
    // batch b each ends at k N b (the shards interleave, datasets/loader.h). A run with
    // another number of ranks or batch size goes on from there when its N' b' divides it.
    int64_t batch_in_epoch = state.batch_in_epoch;
    const int64_t ranks =
        std::max<int64_t>(1, int64_t(extra_number(checkpoint_path, extra, "world_size")));
    const int64_t batch_size = train_data_->batch_size();
    const int64_t per_batch = options_.group->world_size() * batch_size;
    if (extra.contains("epoch_position") && batch_size > 0) {
        const int64_t position = int64_t(extra_number(checkpoint_path, extra, "epoch_position"));
        LUMEN_CHECK(position % per_batch == 0, "checkpoint", checkpoint_path,
                    ": it stopped inside an epoch, after ", position, " examples of its order (",
                    state.batch_in_epoch, " batches on ", ranks, " rank(s)), and this run's ",
                    options_.group->world_size(), " rank(s) x data.batch_size ", batch_size, " = ",
                    per_batch,
                    " examples per batch do not divide it; resume with ranks x batch size "
                    "dividing ",
                    position, ", or from a checkpoint taken at the end of an epoch");
        batch_in_epoch = position / per_batch;
    } else {  // no position recorded, or this batch source cannot say its batch size
        LUMEN_CHECK(batch_in_epoch == 0 || ranks == options_.group->world_size(), "checkpoint",
                    checkpoint_path, ": it stopped inside an epoch (after batch ", batch_in_epoch,
                    ") of a run with ", ranks, " rank(s), and this run has ",
                    options_.group->world_size(), "; resume it with ", ranks,
                    " rank(s), or from a checkpoint taken at the end of an epoch");
    }
    const int64_t batches = train_data_->num_batches();
    LUMEN_CHECK(batch_in_epoch < batches, "checkpoint", checkpoint_path,
                ": the checkpoint stopped after batch ", batch_in_epoch,
                " of an epoch, but an epoch of this run has ", batches,
                " batches (did data.batch_size or the data change?)");
    epoch_ = state.epoch;
    step_ = state.step;
    batch_in_epoch_ = batch_in_epoch;
    train_seconds_ = extra_number(checkpoint_path, extra, "train_seconds");
    images_trained_ = int64_t(extra_number(checkpoint_path, extra, "images"));
    // The totals of the epoch the checkpoint interrupted, so that its record covers the
    // whole epoch as in a run that was never stopped.
    epoch_loss_sum_ = extra_number(checkpoint_path, extra, "epoch_loss_sum");
    epoch_seen_ = int64_t(extra_number(checkpoint_path, extra, "epoch_seen"));
    epoch_correct_ = int64_t(extra_number(checkpoint_path, extra, "epoch_correct"));
    LUMEN_CHECK(epoch_correct_ <= epoch_seen_, "checkpoint", checkpoint_path,
                ": the trainer record counts ", epoch_correct_, " correct of ", epoch_seen_,
                " examples");
    early_stale_ = int64_t(extra_number(checkpoint_path, extra, "early_stale"));
    if (auto best = extra.find("early_best"); best != extra.end() && best->is_number())
        early_best_ = best->get<double>();
    if (scaler_ && extra.contains("loss_scale"))
        scaler_->load_state(extra_number(checkpoint_path, extra, "loss_scale"),
                            int64_t(extra_number(checkpoint_path, extra, "loss_scale_tracker")));
    skipped_updates_ = int64_t(extra_number(checkpoint_path, extra, "skipped_updates"));
    resume_state_ = state;
    resumed_ = true;
}

double Trainer::train_batch(const std::vector<Tensor>& batch, bool first_micro, bool last_micro) {
    LUMEN_CHECK(batch.size() >= 2, "Trainer", "a batch needs {inputs, labels}, got ", batch.size(),
                " tensors");
    if (first_micro && options_.interval == ScheduleInterval::step)
        schedule_->apply(*optimizer_, step_);
    const Task& task = *options_.task;
    Tensor x = batch[0].to(options_.device), y = batch[1].to(options_.device);
    // Data-parallel: this rank's dropout masks are its rows of the global batch's masks
    // (core/sample_shard.h), over forward, loss and backward (a checkpoint's recompute).
    std::optional<SampleShardGuard> shard;
    if (options_.group->world_size() > 1)
        shard.emplace(options_.group->rank(), options_.group->world_size(), x.size(0));
    std::vector<Tensor> outputs;
    Tensor loss;
    {
        autocast::Guard autocast(options_.precision);  // float32: off
        outputs = task.uses_all_outputs() ? model_->forward_outputs(x)
                                          : std::vector<Tensor>{model_->forward(x)};
        loss = task.loss(outputs, y);
    }
    const double local_loss = loss.item<double>();
    if (options_.accumulate > 1) loss = div(loss, double(options_.accumulate));
    {
        // With several ranks, the last micro-batch's backward starts each bucket's all-reduce
        // as soon as the bucket's gradients are made (reducer_->average() waits for them).
        LeafReadyHookGuard overlap(last_micro && reducer_ ? reducer_->hook() : LeafReadyHook());
        (scaler_ ? scaler_->scale(loss) : loss).backward();
    }
    shard.reset();
    int64_t correct = 0, examples = x.size(0);
    if (task.counts_correct()) {
        NoGradGuard no_grad;
        correct = sum(eq(argmax(outputs[0], 1), class_target(y))).item<int64_t>();
    }
    const double value = reduce_batch_stats(local_loss, examples, correct);
    epoch_correct_ += correct;
    epoch_loss_sum_ += value * double(examples);
    epoch_seen_ += examples;
    images_trained_ += examples;
    // Before unscaling and clipping, so that every rank sees the same gradients and takes the
    // same decisions (overflow skip, clip factor, NaN guard).
    if (last_micro && reducer_) reducer_->average();
    if (last_micro && scaler_ && !scaler_->unscale_(*optimizer_)) {
        // float16 gradients overflowed at this loss scale: no update, a smaller scale.
        skipped_update_ = true;
        ++skipped_updates_;
        scaler_->update();
        optimizer_->zero_grad();
    } else if (last_micro) {
        skipped_update_ = false;
        std::optional<double> norm;
        if (options_.grad_clip > 0)
            norm = clip_grad_norm_(model_->parameters(), options_.grad_clip);
        if (options_.nan_guard) check_finite(*model_, value, step_ + 1, norm);
        optimizer_->step();
        if (scaler_) scaler_->update();
        optimizer_->zero_grad();
    }
    return value;
}

// The batch's mean loss and its example and correct counts over all ranks (this rank's own
// with one), so that the epoch totals, the logs and the NaN guard agree on every rank.
double Trainer::reduce_batch_stats(double loss, int64_t& examples, int64_t& correct) {
    if (options_.group->world_size() == 1) return loss;
    Tensor stats =
        from_vector<double>({loss * double(examples), double(examples), double(correct)});
    options_.group->all_reduce(stats);
    const std::vector<double> total = stats.to_vector<double>();
    examples = int64_t(total[1]);
    correct = int64_t(total[2]);
    return total[0] / total[1];
}

bool Trainer::train_epoch(RunLog* log, Progress& progress) {
    if (options_.interval == ScheduleInterval::epoch) schedule_->apply(*optimizer_, epoch_);
    model_->train();
    train_data_->start_epoch(epoch_, batch_in_epoch_);  // > 0: the rest of a resumed epoch
    const int64_t batches = train_data_->num_batches(), k = options_.accumulate;
    progress.start_epoch(epoch_, options_.epochs, (batches + k - 1) / k, batch_in_epoch_ / k);
    if (batch_in_epoch_ == 0) {  // else: the totals of a resumed epoch's first part
        epoch_loss_sum_ = 0.0;
        epoch_seen_ = epoch_correct_ = 0;
    }
    Clock::time_point start = Clock::now();
    int64_t micro = 0;
    for (int64_t b = batch_in_epoch_; b < batches; ++b) {
        std::optional<std::vector<Tensor>> batch = train_data_->next();
        LUMEN_CHECK(batch.has_value(), "Trainer", "the training data ended after ", b, " of ",
                    batches, " batches");
        const bool last = micro + 1 == k || b + 1 == batches;
        double loss = train_batch(*batch, micro == 0, last);
        micro = last ? 0 : micro + 1;
        if (!last) continue;
        ++step_;
        if (skipped_update_) {
            char line[160];
            std::snprintf(line, sizeof(line),
                          "step %lld: float16 gradients overflowed (inf/NaN); update skipped, "
                          "loss scale now %g",
                          (long long)step_, scaler_->get_scale());
            progress.message(line);
        }
        profile_update();
        batch_in_epoch_ = b + 1;
        const double lr = optimizer_->param_groups()[0].lr;
        progress.step(loss, lr);
        if (log && step_ % options_.log_every == 0)
            log->append({"step",
                         double(epoch_) + double(b + 1) / double(batches),
                         step_,
                         {{"loss", loss}, {"lr", lr}}});
        const bool more = b + 1 < batches;
        const bool stop = options_.max_steps > 0 && step_ >= options_.max_steps;
        if (more && (stop || (options_.checkpoint_every_steps > 0 &&
                              step_ % options_.checkpoint_every_steps == 0))) {
            train_seconds_ += seconds_since(start);
            start = Clock::now();
            save_checkpoint_now(std::nullopt);
        }
        if (more && stop) return false;
    }
    train_seconds_ += seconds_since(start);
    ++epoch_;
    batch_in_epoch_ = 0;
    const bool stop = options_.max_steps > 0 && step_ >= options_.max_steps;
    end_epoch(log, progress, epoch_ % options_.eval_every == 0 || epoch_ == options_.epochs);
    return !stop && !early_stop_;
}

EvalResult evaluate(nn::Module& model, BatchSource& data, const Task& task, Device device,
                    dist::ProcessGroup* group) {
    Clock::time_point start = Clock::now();
    model.eval();
    NoGradGuard no_grad;
    std::unique_ptr<TaskMeter> meter = task.meter();
    bool any = false;
    data.start_epoch(0);
    while (std::optional<std::vector<Tensor>> batch = data.next()) {
        Tensor output = task.predict(model, (*batch)[0].to(device));
        Tensor loss = task.eval_loss(output, (*batch)[1].to(device));
        meter->add(output.cpu(), *batch, loss.item<double>() * double((*batch)[0].size(0)));
        any = true;
    }
    if (group && group->world_size() > 1) {
        // A rank may have no example of a small split: the merged meter's finish() checks that
        // the whole split had one, on every rank alike.
        std::unique_ptr<TaskMeter> whole = task.meter();
        for (const std::vector<double>& state : dist::all_gather_numbers(*group, meter->state()))
            whole->merge(state);
        meter = std::move(whole);
    } else {
        LUMEN_CHECK(any, "evaluate", "the evaluation data has no batch");
    }
    EvalResult result;
    meter->finish(result);
    result.seconds = seconds_since(start);
    return result;
}

EvalResult evaluate_classifier(nn::Module& model, BatchSource& data, Device device,
                               double label_smoothing) {
    TaskOptions classify;
    classify.loss.label_smoothing = label_smoothing;
    return evaluate(model, data, *make_task(classify), device);
}

EvalResult Trainer::evaluate(BatchSource& data) {
    dist::broadcast_buffers(*options_.group, *model_);
    EvalResult result =
        train::evaluate(*model_, data, *options_.task, options_.device, options_.group.get());
    model_->train();
    return result;
}

void Trainer::save_checkpoint_now(std::optional<double> metric) {
    if (!writes_files()) return;
    nlohmann::json extra{{"train_seconds", train_seconds_},   {"images", images_trained_},
                         {"epoch_loss_sum", epoch_loss_sum_}, {"epoch_seen", epoch_seen_},
                         {"epoch_correct", epoch_correct_},   {"early_stale", early_stale_}};
    if (early_best_) extra["early_best"] = *early_best_;
    if (scaler_) {
        extra["loss_scale"] = scaler_->get_scale();
        extra["loss_scale_tracker"] = scaler_->growth_tracker();
        extra["skipped_updates"] = skipped_updates_;
    }
    if (options_.group->world_size() > 1) extra["world_size"] = options_.group->world_size();
    // Every batch before a mid-epoch checkpoint was full (only an epoch's last may be short).
    if (train_data_->batch_size() > 0)
        extra["epoch_position"] =
            batch_in_epoch_ * options_.group->world_size() * train_data_->batch_size();
    CheckpointState state{.epoch = epoch_,
                          .step = step_,
                          .batch_in_epoch = batch_in_epoch_,
                          .schedule = schedule_->name(),
                          .config_json = options_.config_json,
                          .extra_json = extra.dump()};
    checkpoints_->save(*model_, *optimizer_, state, metric);
}

void Trainer::end_epoch(RunLog* log, Progress& progress, bool evaluate_now) {
    MetricRecord record{"epoch", double(epoch_), step_, {}};
    const Task& task = *options_.task;
    const double train_loss = epoch_seen_ ? epoch_loss_sum_ / double(epoch_seen_) : NAN;
    record.values = {{"train_loss", train_loss},
                     {"lr", optimizer_->param_groups()[0].lr},
                     {"train_seconds", train_seconds_}};
    char line[200];
    std::snprintf(line, sizeof(line), "epoch %lld/%lld: train loss %.4f", (long long)epoch_,
                  (long long)options_.epochs, train_loss);
    std::string summary = line;
    if (task.counts_correct()) {
        const double accuracy = epoch_seen_ ? double(epoch_correct_) / double(epoch_seen_) : NAN;
        record.values["train_accuracy"] = accuracy;
        std::snprintf(line, sizeof(line), " acc %.4f", accuracy);
        summary += line;
    }
    if (evaluate_now) {
        last_eval_ = evaluate(*test_data_);
        last_eval_step_ = step_;
        record.values["test_loss"] = last_eval_->loss;
        for (const auto& [name, value] : last_eval_->metrics) record.values["test_" + name] = value;
        const std::string primary = task.primary_metric();
        std::snprintf(line, sizeof(line), " | test loss %.4f %s %.4f (%s)", last_eval_->loss,
                      primary == "accuracy" ? "acc" : primary.c_str(),
                      last_eval_->metrics.at(primary),
                      format_duration(last_eval_->seconds).c_str());
        summary += line;
    }
    if (log) {
        log->append(record);
        log->write_plot(options_.title, task.primary_metric());
    }
    progress.end_epoch(summary);
    if (evaluate_now && options_.early_stopping > 0) update_early_stopping(record, progress);
    const bool stop = (options_.max_steps > 0 && step_ >= options_.max_steps) || early_stop_;
    if (epoch_ % options_.checkpoint_every_epochs == 0 || epoch_ == options_.epochs || stop) {
        std::optional<double> metric;
        auto it = record.values.find(options_.checkpoint.best_metric);
        if (it != record.values.end()) metric = it->second;
        save_checkpoint_now(metric);
    }
}

void Trainer::update_early_stopping(const MetricRecord& record, Progress& progress) {
    const CheckpointPolicy& policy = options_.checkpoint;
    auto it = record.values.find(policy.best_metric);
    LUMEN_CHECK(it != record.values.end(), "Trainer", "early stopping watches '",
                policy.best_metric, "', which the evaluation does not report");
    const double value = it->second;
    const bool better =
        !early_best_ || (policy.higher_is_better ? value > *early_best_ : value < *early_best_);
    if (better) {
        early_best_ = value;
        early_stale_ = 0;
        return;
    }
    if (++early_stale_ < options_.early_stopping) return;
    early_stop_ = true;
    progress.message("early stopping: " + policy.best_metric + " has not improved on " +
                     std::to_string(*early_best_) + " for " + std::to_string(early_stale_) +
                     " evaluations");
}

TrainSummary Trainer::fit() {
    Clock::time_point start = Clock::now();
    // Every rank starts from rank 0's weights (resumed ranks read the same checkpoint anyway).
    dist::broadcast_module(*options_.group, *model_);
    std::unique_ptr<RunLog> log;
    std::vector<std::string> repairs;
    if (writes_files()) {
        log = std::make_unique<RunLog>(options_.run_dir, resumed_ ? step_ : -1);
        log->write_config(options_.config_json);
        checkpoints_ = std::make_unique<CheckpointManager>(options_.run_dir + "/checkpoints",
                                                           options_.checkpoint);
        repairs = log->warnings();
    }
    Progress progress(out_, options_.progress, options_.log_every);
    if (resume_state_ && checkpoints_) {
        std::vector<std::string> more = checkpoints_->resume_from(*resume_state_);
        repairs.insert(repairs.end(), more.begin(), more.end());
    }
    for (const std::string& repair : repairs) progress.message("repaired " + repair);
    const int64_t k = options_.accumulate;
    std::ostringstream head;
    head << (resumed_ ? "resuming " : "training ") << options_.title << ": "
         << model_->num_parameters() << " parameters, " << device_text(options_.device) << ", "
         << options_.epochs << " epochs of " << (train_data_->num_batches() + k - 1) / k
         << " steps";
    if (options_.precision != DType::float32)
        head << ", " << options_.precision << " GEMMs" << (scaler_ ? " with loss scaling" : "")
             << (options_.device.is_cuda() ? ""
                                           : " (emulated on the CPU: for numerics, not speed)");
    if (options_.group->world_size() > 1)
        head << ", " << options_.group->world_size() << " ranks (" << options_.group->backend()
             << ")";
    if (resumed_) head << ", from epoch " << epoch_ << " step " << step_;
    progress.message(head.str());
    while (epoch_ < options_.epochs)
        if (!train_epoch(log.get(), progress)) break;
    finish_profile();  // a run shorter than the profiled steps
    TrainSummary summary;
    finish(summary);
    summary.wall_seconds = seconds_since(start);
    std::map<std::string, double> numbers{{"test_loss", summary.test_loss},
                                          {"train_loss", summary.train_loss},
                                          {"epochs", double(summary.epochs)},
                                          {"steps", double(summary.steps)},
                                          {"wall_seconds", summary.wall_seconds},
                                          {"train_seconds", summary.train_seconds},
                                          {"images_per_second", summary.images_per_second},
                                          {"parameters", double(model_->num_parameters())}};
    for (const auto& [name, value] : summary.test_metrics) numbers["test_" + name] = value;
    if (log)
        log->write_summary(numbers, {{"device", summary.device},
                                     {"run_dir", summary.run_dir},
                                     {"model", options_.title},
                                     {"task", options_.task->kind()}});
    print_summary_table(summary);
    return summary;
}

void Trainer::profile_update() {
    if (options_.profile_steps <= 0 || profiled_) return;
    ++updates_this_fit_;
    if (!profiler_) {
        if (updates_this_fit_ == 1) profiler_ = std::make_unique<Profiler>();
        return;
    }
    profiler_->step();
    if (profiler_->steps() >= options_.profile_steps) finish_profile();
}

void Trainer::finish_profile() {
    if (!profiler_) return;
    profiler_->stop();
    profiled_ = true;
    if (!writes_files()) {
        profiler_.reset();
        return;
    }
    std::ostringstream table;
    profiler_->print_table(table);
    const std::string text = options_.run_dir + "/profile.txt";
    const std::string trace = options_.run_dir + "/profile.json";
    std::ofstream file(text);
    file << table.str();
    LUMEN_CHECK(file.good(), "Trainer", "cannot write the profile to '", text, "'");
    profiler_->write_chrome_trace(trace);
    out_ << table.str() << "profile: table in " << text << ", trace in " << trace
         << " (open it in https://ui.perfetto.dev or chrome://tracing)\n";
    profiler_.reset();
}

void Trainer::finish(TrainSummary& summary) {
    if (!last_eval_ || last_eval_step_ != step_) {
        last_eval_ = evaluate(*test_data_);
        last_eval_step_ = step_;
    }
    if (writes_files()) nn::save_state_dict(*model_, options_.run_dir + "/model.safetensors");
    summary.test_accuracy = last_eval_->accuracy;
    summary.test_metrics = last_eval_->metrics;
    summary.test_loss = last_eval_->loss;
    summary.train_loss = epoch_seen_ ? epoch_loss_sum_ / double(epoch_seen_) : NAN;
    summary.epochs = epoch_;
    summary.steps = step_;
    summary.skipped_updates = skipped_updates_;
    summary.train_seconds = train_seconds_;
    summary.images_per_second = train_seconds_ > 0 ? double(images_trained_) / train_seconds_ : 0;
    summary.device = options_.device.str();
    summary.run_dir = options_.run_dir;
}

void Trainer::print_summary_table(const TrainSummary& s) const {
    char rows[7][64];
    const std::string primary = options_.task->primary_metric();
    auto metric = s.test_metrics.find(primary);
    std::snprintf(rows[0], 64, "%.4f", metric != s.test_metrics.end() ? metric->second : NAN);
    std::snprintf(rows[1], 64, "%.4f", s.test_loss);
    std::snprintf(rows[2], 64, "%lld (%lld steps)", (long long)s.epochs, (long long)s.steps);
    std::snprintf(rows[3], 64, "%.1f s", s.wall_seconds);
    std::snprintf(rows[4], 64, "%.1f", s.images_per_second);
    const std::vector<std::pair<std::string, std::string>> table = {
        {"test " + primary, rows[0]}, {"test loss", rows[1]},
        {"epochs", rows[2]},          {"wall time", rows[3]},
        {"images/s", rows[4]},        {"device", device_text(options_.device)},
        {"run directory", s.run_dir}};
    size_t width = 0;
    for (const auto& row : table) width = std::max(width, row.second.size());
    size_t names = 13;  // "run directory"; a task's metric name may be longer
    for (const auto& row : table) names = std::max(names, row.first.size());
    std::string rule = "+";
    rule.append(names + 2, '-').append("+").append(width + 2, '-').append("+");
    out_ << rule << "\n";
    for (const auto& [name, value] : table) {
        out_ << "| " << name << std::string(names + 1 - name.size(), ' ') << "| " << value
             << std::string(width - value.size(), ' ') << " |\n";
    }
    out_ << rule << "\n" << std::flush;
}

}  // namespace lumen::train
