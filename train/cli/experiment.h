// What `lumen train` and `lumen eval` build from a config: the config's keys (trainer, data,
// optimizer, schedule, checkpoints; the "model" section's keys come from the model registry),
// the datasets as BatchSources (Fashion-MNIST from the Debian package, or a small synthetic set
// for tests), the model checked against the data, the optimizer and the LR schedule.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "datasets/layouts.h"
#include "datasets/sample.h"
#include "nn/module.h"
#include "nn/options.h"
#include "train/config.h"
#include "train/optim.h"
#include "train/schedule.h"
#include "train/trainer.h"

namespace lumen::cli {

// Runs a builder; a library error from it ("[AdamW] lr must be ...") becomes a [config] error
// that also names the config keys it came from, so the user knows what to change.
template <typename Build>
auto with_config_keys(const char* keys, Build&& build) -> decltype(build()) {
    try {
        return build();
    } catch (const Error& e) {
        const std::string message = e.what();
        if (message.rfind("[config]", 0) == 0) throw;  // already names its key
        LUMEN_FAIL("config", "from the ", keys, " keys: ", message);
    }
}

// Every key of a training config except the model's ("model.name" included), with defaults.
std::vector<nn::OptionSpec> trainer_option_specs();

// Resolves a raw config: the trainer keys plus "model.<key>" for the keys of the model that
// model.name names. Throws [config] <source>: ... for unknown or mistyped keys (the closest key
// suggested) and [models] for an unknown model.
nn::Options resolve_training_config(const train::RawConfig& raw);

// The shape of the examples of a dataset.
struct DataShape {
    int64_t channels = 0;
    std::vector<int64_t> img_size;  // (H, W)
    int64_t num_classes = 0;
};

// The train and test splits of config's data section, batched and (train only) shuffled and
// augmented, with seeds from config's "seed". Throws [fashion_mnist] naming the directory when
// the files are missing.
struct DataSplits {
    std::shared_ptr<train::BatchSource> train, test;
    DataShape shape;
    int64_t train_examples = 0, test_examples = 0;
};
DataSplits build_data(const nn::Options& config);
// One split without augmentation ("train" or "test"), for `lumen eval`.
std::shared_ptr<train::BatchSource> build_eval_data(const nn::Options& config,
                                                    const std::string& split, DataShape* shape);

// The data.* keys of the dataset layouts and their transforms (train/cli/experiment_layouts.cpp),
// part of trainer_option_specs().
std::vector<nn::OptionSpec> layout_option_specs();
// Whether data.dataset names a layout of datasets/layouts.h.
bool is_layout(const std::string& dataset);
// The layout data.dataset names, read from data.dir with the data.* keys. Errors of the layout
// come as [config] naming the data.* keys.
datasets::LayoutData load_config_layout(const nn::Options& config);
// The joint transforms the data.* keys ask for, in a fixed order: geometry (orientation,
// spacing) and intensity preprocessing (window, percentile clip, z-score, scale to [0, 1])
// for every split, then for training the random patch (by label), rotation/scale, flips,
// quarter turns, noise, brightness/contrast and gamma. Null when none is asked for. Throws [config]
// naming the keys.
datasets::SampleTransformPtr build_sample_pipeline(const nn::Options& config, int64_t spatial_dims,
                                                   bool training);
// `data` behind a CachedDataset of data.cache_mb MiB (unchanged when 0).
std::shared_ptr<const datasets::Dataset> cached(const nn::Options& config,
                                                std::shared_ptr<const datasets::Dataset> data);

// The model of the "model" section. Throws [config] naming both sides when the data's channels,
// image size or classes differ from the model's (model.in_chans, model.img_size,
// model.num_classes), and, before anything is allocated, when the registry's estimate of the
// memory to train it (`training`: weights, gradients, optimizer state and a batch's
// activations) or to evaluate it exceeds this machine's physical memory, giving the estimate.
std::shared_ptr<nn::Module> build_model(const nn::Options& config, const DataShape& data,
                                        bool training = true);

// The optimizer of the "optim" section over the model's parameters (two groups when
// optim.no_decay exempts biases, norm weights and embeddings). Errors of the optimizer (and of
// the schedule below) come as [config] naming the keys they came from.
std::unique_ptr<train::Optimizer> build_optimizer(const nn::Options& config, nn::Module& model);

// The schedule of the "schedule" section; `steps_per_epoch` = optimizer updates per epoch.
std::shared_ptr<train::LRSchedule> build_schedule(const nn::Options& config,
                                                  int64_t steps_per_epoch);

}  // namespace lumen::cli
