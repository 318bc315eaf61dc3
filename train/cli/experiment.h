// What `lumen train` and `lumen eval` build from a config: the config's keys (trainer, data,
// optimizer, schedule, checkpoints; the "model" section's keys come from the model registry),
// the datasets as BatchSources (Fashion-MNIST from the Debian package, or a small synthetic set
// for tests), the model checked against the data, the optimizer and the LR schedule.
#pragma once

#include <memory>
#include <ostream>
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
#include "train/task.h"
#include "train/trainer.h"

namespace lumen::train::cli {

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

// What the data gives, to check a model against it and to choose the task.
struct DataShape {
    std::string kind = "image";           // "image" (C, *spatial), "bag" (N, D), "tokens" (L)
    std::string task = "classification";  // what its examples are for (also segmentation,
                                          // enhancement)
    int64_t channels = 0;
    // The spatial size of a training example after the transforms (the patch when
    // data.patch_size crops one), and the first evaluation example's (volumes may differ).
    std::vector<int64_t> img_size, eval_size;
    int64_t num_classes = 0;  // 0: the data cannot know (index masks, npz slices)
    std::vector<std::string> class_names;
    int64_t feature_dim = 0;                 // bags
    int64_t vocab_size = 0, max_length = 0;  // tokens
    std::string dataset;                     // data.dataset, for messages
};

// The train and test splits of config's data section, batched and (train only) shuffled and
// augmented, with seeds from config's "seed". Throws [fashion_mnist] naming the directory when
// the files are missing.
struct DataSplits {
    std::shared_ptr<train::BatchSource> train, test;
    DataShape shape;
    int64_t train_examples = 0, test_examples = 0;
    std::vector<datasets::CaseInfo> test_cases;  // the test examples' origins (layouts only)
    // text_csv: the vocabulary the examples were encoded with (saved with the run).
    std::shared_ptr<const datasets::Vocabulary> vocabulary;
};
// Data-parallel training: rank `rank` of `world_size` trains on its shard of the training
// data (DataLoaderOptions::num_replicas) and evaluates its block of the test data
// (contiguous_shards; train::evaluate gathers the metrics).
struct DataShard {
    int64_t rank = 0, world_size = 1;
};
// `run_dir`: a run whose saved vocabulary (kVocabularyFile) text is encoded with, when it has
// one (resume, eval, predict); empty or without the file, the layout builds it.
DataSplits build_data(const nn::Options& config, const std::string& run_dir = "",
                      DataShard shard = {});
// One split without augmentation ("train" or "test"), for `lumen eval`; `cases` receives the
// examples' origins (layouts only), all of them whatever the shard. Under mpirun, `shard`
// gives this rank its block of the split (train::evaluate gathers the metrics).
std::shared_ptr<train::BatchSource> build_eval_data(
    const nn::Options& config, const std::string& split, DataShape* shape,
    std::vector<datasets::CaseInfo>* cases = nullptr, const std::string& run_dir = "",
    DataShard shard = {});
// The task of the data (data.dataset's) or task.name. Throws [config] for a task the layout
// cannot give.
std::string task_kind(const nn::Options& config, const DataShape& data);
// The shape of a layout's examples: the first training example through the training pipeline
// and the first evaluation example through the evaluation pipeline.
DataShape layout_shape(const nn::Options& config, const datasets::LayoutData& layout,
                       const std::string& eval_split);
// The test split of a layout: "test", or "val" when there is none.
std::string eval_split(const datasets::LayoutData& layout);

// The data.* keys of the dataset layouts and their transforms (train/cli/experiment_layouts.cpp),
// part of trainer_option_specs().
std::vector<nn::OptionSpec> layout_option_specs();
// Whether data.dataset names a layout of datasets/layouts.h.
bool is_layout(const std::string& dataset);
// When data.make_demo names a demo dataset and data.dir does not exist, writes the demo there,
// saying so on `out` (so that a tiny config runs from a fresh clone).
void ensure_demo_data(const nn::Options& config, std::ostream& out);
// A run's vocabulary file (text_csv): one token per line, written when training starts.
inline constexpr const char* kVocabularyFile = "vocab.txt";
// The data.* keys as the options of datasets::load_layout, with the vocabulary saved in
// `run_dir` when it holds one.
datasets::LayoutOptions layout_options(const nn::Options& config, const std::string& run_dir = "");
// The layout data.dataset names, read from data.dir with the data.* keys (and run_dir's
// vocabulary, as layout_options). Errors of the layout come as [config] naming the data.* keys.
datasets::LayoutData load_config_layout(const nn::Options& config, const std::string& run_dir = "");
// The joint transforms the data.* keys ask for, in a fixed order: geometry (orientation,
// spacing), intensity preprocessing (window, percentile clip, z-score, scale to [0, 1]) and
// the resize for every split, then for training the random patch (by label), rotation/scale, flips,
// quarter turns, noise, brightness/contrast and gamma. Null when none is asked for. Throws [config]
// naming the keys.
datasets::SampleTransformPtr build_sample_pipeline(const nn::Options& config, int64_t spatial_dims,
                                                   bool training);
// `data` behind a CachedDataset of data.cache_mb MiB (unchanged when 0).
std::shared_ptr<const datasets::Dataset> cached(const nn::Options& config,
                                                std::shared_ptr<const datasets::Dataset> data);

// The "model" section's options with the registry's defaults, and what vocab_size 0 takes from
// the data.
nn::Options model_options(const nn::Options& config, const DataShape& data);

// The model of the "model" section. Throws [config] naming both sides when the model does not
// fit the data: the input kind (image, bag, tokens), channels, spatial dims, image size (exact,
// or a multiple of what a fully convolutional model needs), classes, feature size, vocabulary,
// or its output (logits or a dense map) for the task; and, before anything is allocated, when
// the registry's estimate of the memory to train it (`training`: weights, gradients, optimizer
// state and a batch's activations) or to evaluate it exceeds this machine's physical memory.
// Loads model.init_from's weights when given, printing the report on `log` (when not null).
std::shared_ptr<nn::Module> build_model(const nn::Options& config, const DataShape& data,
                                        bool training = true, std::ostream* log = nullptr);

// The task.*, loss.* and eval.* keys (train/cli/experiment_task.cpp).
std::vector<nn::OptionSpec> task_option_specs();
// The task of the config for a model on the data: loss terms and weights, deep supervision
// (the model's paper weights when loss.deep_supervision is empty and the model has them on),
// metrics and how evaluation runs the model (eval.inference auto: slice by slice for a 2-D
// model on volumes, a sliding window of the model's size for a fixed-size model, whole
// otherwise). Throws [config] naming the keys.
std::shared_ptr<train::Task> build_task(const nn::Options& config, const DataShape& data);
// checkpoint.best_metric resolved: "auto" becomes test_<the task's primary metric>; "none" "".
std::string best_metric(const nn::Options& config, const train::Task& task);

// The optimizer of the "optim" section over the model's parameters (two groups when
// optim.no_decay exempts biases, norm weights and embeddings). Errors of the optimizer (and of
// the schedule below) come as [config] naming the keys they came from.
std::unique_ptr<train::Optimizer> build_optimizer(const nn::Options& config, nn::Module& model);

// The schedule of the "schedule" section; `steps_per_epoch` = optimizer updates per epoch.
std::shared_ptr<train::LRSchedule> build_schedule(const nn::Options& config,
                                                  int64_t steps_per_epoch);

}  // namespace lumen::train::cli
