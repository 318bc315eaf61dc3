// The config's keys and the builders of `lumen train` / `lumen eval`: data (Fashion-MNIST or
// synthetic, as DataLoaders behind BatchSource), model (registry, checked against the data),
// optimizer and schedule.
#include "train/cli/experiment.h"

#include <algorithm>
#include <thread>

#include <unistd.h>

#include "core/error.h"
#include "core/file_io.h"
#include "datasets/fashion_mnist.h"
#include "models/registry.h"
#include "train/param_groups.h"
#include "train/schedule_basic.h"

namespace lumen::cli {

namespace {

using Spec = nn::OptionSpec;
using Strings = std::vector<std::string>;
using nn::Range;

// Bounds that keep every count far from int64 overflow (epochs x steps, steps x batch).
constexpr double kMaxCount = 1e6, kMaxSteps = 1e12;
const Range kCount = Range::between(1, kMaxCount);
const Range kFraction = Range::between(0, 1);
const Range kNonNegative = Range::at_least(0);

std::vector<Spec> data_specs() {
    return {
        {"data.dataset", std::string("fashion_mnist"), "the dataset or layout",
         Strings{"fashion_mnist", "synthetic", "image_folder", "image_mask", "decathlon",
                 "npz_slices", "bags", "text_csv"}},
        {"data.dir", std::string(datasets::kFashionMnistDir),
         "where the data is: the IDX files, or a layout's root folder"},
        {"data.batch_size", int64_t(128), "training batch size", {}, kCount},
        {"data.eval_batch_size", int64_t(500), "evaluation batch size", {}, kCount},
        {"data.num_workers",
         int64_t(1),
         "loader threads making batches ahead (0: inline)",
         {},
         Range::between(0, 64)},
        {"data.train_subset",
         int64_t(0),
         "use the first N training images (0: all)",
         {},
         Range::between(0, kMaxSteps)},
        {"data.test_subset",
         int64_t(0),
         "use the first N test images (0: all)",
         {},
         Range::between(0, kMaxSteps)},
        {"data.normalize", true,
         "fashion_mnist, synthetic: (x - 0.2860) / 0.3530, Fashion-MNIST's mean and std"},
        {"data.hflip", 0.0, "probability of a horizontal flip (training images)", {}, kFraction},
        {"data.rotation",
         0.0,
         "random rotation in [-deg, deg] (training images)",
         {},
         Range::between(0, 180)},
        {"data.gaussian_noise",
         0.0,
         "sigma of additive Gaussian noise on [0, 1] pixels",
         {},
         kNonNegative},
        {"data.salt_pepper",
         0.0,
         "fraction of pixels set to 0 or 1 (training images)",
         {},
         kFraction},
    };
}

std::vector<Spec> optim_schedule_specs() {
    return {
        {"optim.name", std::string("adamw"), "optimizer", Strings{"adamw", "adam", "sgd"}},
        {"optim.lr", 3e-4, "learning rate (the peak of a schedule)", {}, kNonNegative},
        {"optim.weight_decay", 0.01, "weight decay (decoupled for adamw)", {}, kNonNegative},
        {"optim.betas",
         std::vector<double>{0.9, 0.999},
         "Adam betas",
         {},
         Range::between(0, 1, true)},
        {"optim.eps", 1e-8, "Adam eps", {}, Range::above(0)},
        {"optim.momentum", 0.9, "SGD momentum", {}, kNonNegative},
        {"optim.nesterov", false, "SGD Nesterov momentum"},
        {"optim.no_decay", false, "exempt biases, norm weights and embeddings from decay"},
        {"schedule.name", std::string("cosine"), "LR schedule",
         Strings{"constant", "step", "exponential", "cosine", "linear_warmup_decay", "one_cycle"}},
        {"schedule.interval", std::string("epoch"), "apply per optimizer step or per epoch",
         Strings{"step", "epoch"}},
        {"schedule.warmup",
         int64_t(0),
         "warm-up length in intervals (cosine, linear)",
         {},
         Range::between(0, kMaxSteps)},
        {"schedule.min_lr", 0.0, "cosine: the final learning rate", {}, kNonNegative},
        {"schedule.step_size",
         int64_t(30),
         "step: intervals between decays",
         {},
         Range::between(1, kMaxSteps)},
        {"schedule.gamma", 0.1, "step, exponential: decay factor", {}, Range::above(0)},
        {"schedule.pct_start", 0.3, "one_cycle: fraction of the cycle spent rising", {}, kFraction},
    };
}

std::vector<Spec> run_specs() {
    const double cores = double(std::max(1u, std::thread::hardware_concurrency()));
    return {
        {"name", std::string("run"),
         "run name: the run directory is <output.runs_dir>/<name> (one path component)"},
        {"description", std::string(""), "free text for people (not used)"},
        {"seed",
         int64_t(0),
         "seeds the model init, dropout, shuffling and augmentation",
         {},
         kNonNegative},
        {"model.name", std::string("dgvit"), "a registered model (lumen models)",
         models::model_names()},
        {"train.epochs", int64_t(100), "epochs", {}, kCount},
        {"train.max_steps",
         int64_t(0),
         "stop after this many optimizer updates (0: no limit)",
         {},
         Range::between(0, kMaxSteps)},
        {"train.accumulate", int64_t(1), "micro-batches per optimizer update", {}, kCount},
        {"train.grad_clip",
         0.0,
         "clip the global gradient L2 norm to this (0: off)",
         {},
         kNonNegative},
        {"train.label_smoothing", 0.0, "cross-entropy label smoothing", {}, kFraction},
        {"train.nan_guard", true, "stop at the first non-finite loss or gradient"},
        {"train.eval_every", int64_t(1), "epochs between test evaluations", {}, kCount},
        {"train.log_every",
         int64_t(50),
         "updates between metric records and progress lines",
         {},
         Range::between(1, kMaxSteps)},
        {"train.device", std::string("cpu"), "cpu or cuda", Strings{"cpu", "cuda"}},
        {"train.threads",
         int64_t(0),
         "CPU threads (0: all cores of this machine)",
         {},
         Range::between(0, cores)},
        {"checkpoint.every_epochs", int64_t(1), "epochs between checkpoints", {}, kCount},
        {"checkpoint.every_steps",
         int64_t(0),
         "also every this many updates (0: off)",
         {},
         Range::between(0, kMaxSteps)},
        {"checkpoint.keep_last", int64_t(2), "step checkpoints kept", {}, kCount},
        {"checkpoint.best_metric", std::string("test_accuracy"), "kept as best.safetensors",
         Strings{"test_accuracy", "test_loss", "none"}},
        {"output.runs_dir", std::string("runs"), "parent folder of the run directories"},
        {"output.progress", std::string("auto"), "bar on a terminal, else lines",
         Strings{"auto", "bar", "lines", "none"}},
    };
}

}  // namespace

std::vector<nn::OptionSpec> trainer_option_specs() {
    std::vector<Spec> specs = run_specs();
    for (auto more : {data_specs(), layout_option_specs(), optim_schedule_specs()})
        specs.insert(specs.end(), more.begin(), more.end());
    return specs;
}

nn::Options resolve_training_config(const train::RawConfig& raw) {
    std::vector<Spec> specs = trainer_option_specs();
    // The model section's keys depend on the model: resolve model.name first.
    auto name_spec = std::find_if(specs.begin(), specs.end(),
                                  [](const Spec& spec) { return spec.key == "model.name"; });
    std::string model = std::get<std::string>(name_spec->default_value);
    if (auto name = raw.find("model.name")) {
        try {
            model =
                std::get<std::string>(nn::coerce_option(*name_spec, *name, "config", "model.name"));
        } catch (const Error& e) {
            LUMEN_FAIL("config", raw.source_of("model.name"), ": ",
                       std::string(e.what()).substr(9));
        }
    }
    for (const Spec& spec : models::find_model(model).options)
        specs.push_back(
            {"model." + spec.key, spec.default_value, spec.help, spec.choices, spec.range});
    nn::Options config = train::resolve_config(raw, specs);
    // The run directory is <runs_dir>/<name>: a name must not lead out of runs_dir.
    const std::string& name = config.get_string("name");
    bool control = std::any_of(name.begin(), name.end(),
                               [](char c) { return static_cast<unsigned char>(c) < 32; });
    LUMEN_CHECK(!name.empty() && name != "." && name != ".." &&
                    name.find('/') == std::string::npos && !control && name.size() <= 200,
                "config", raw.source_of("name"),
                ": 'name' must be one folder name (no '/', not '.' or '..', no control "
                "characters, at most 200 characters): the run directory is "
                "<output.runs_dir>/<name>; got '",
                name.substr(0, 200), "'");
    return config;
}

namespace {

double physical_memory_bytes() {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? double(pages) * double(page) : 0.0;
}

// Refuses a model whose training (or evaluation) would need more memory than this machine has,
// from the registry's estimate, before anything is allocated.
void check_model_fits(const nn::Options& config, const std::string& name,
                      const nn::Options& options, bool training) {
    const models::ModelEntry& entry = models::find_model(name);
    const double memory = physical_memory_bytes();
    if (!entry.cost || memory <= 0) return;
    const models::ModelCost cost = entry.cost(options);
    const std::string optimizer = config.get_string("optim.name");
    // Weights and gradients, plus Adam's two moments or SGD's momentum buffer.
    const double copies = !training ? 1 : optimizer == "sgd" ? 3 : 4;
    const int64_t batch = config.get_int(training ? "data.batch_size" : "data.eval_batch_size");
    const bool on_cpu = config.get_string("train.device") == "cpu";
    const double weights = 4 * cost.parameters * copies;
    // Evaluation keeps no activations for a backward pass; a forward needs about a third.
    const double activations =
        on_cpu ? cost.activation_bytes * double(batch) / (training ? 1 : 3) : 0.0;
    LUMEN_CHECK(weights + activations <= memory, "config", "the model (", name,
                ", the model.* keys) needs about ", format_bytes(weights + activations), " to ",
                training ? "train" : "evaluate", ": ", cost.parameters, " parameters (",
                format_bytes(weights),
                training ? " with gradients and " + optimizer + " state" : std::string(), ") and ",
                format_bytes(activations), " of activations for a batch of ", batch,
                training ? " (data.batch_size)" : " (data.eval_batch_size)",
                ", but this machine has ", format_bytes(memory), " of memory");
}

}  // namespace

std::shared_ptr<nn::Module> build_model(const nn::Options& config, const DataShape& data,
                                        bool training) {
    const std::string name = config.get_string("model.name");
    nn::Options overrides = config.section("model", name);
    nn::Options chosen(name);
    for (const auto& [key, value] : overrides.values())
        if (key != "name") chosen.set(key, value);
    nn::Options options = models::model_options(name, chosen);
    models::ModelInput input = models::find_model(name).input(options);
    const std::string dataset = config.get_string("data.dataset");
    auto mismatch = [&](const char* what, const std::string& data_value, const char* key,
                        const std::string& model_value) {
        LUMEN_FAIL("config", "the data (", dataset, ") has ", what, " ", data_value,
                   " but the model (", name, ") expects ", model_value, " (model.", key, ")");
    };
    if (input.in_chans != data.channels)
        mismatch("channels", std::to_string(data.channels), "in_chans",
                 std::to_string(input.in_chans));
    if (input.img_size != data.img_size)
        mismatch("image size", nn::format_option(data.img_size), "img_size",
                 nn::format_option(input.img_size));
    if (input.num_classes != data.num_classes)
        mismatch("classes", std::to_string(data.num_classes), "num_classes",
                 std::to_string(input.num_classes));
    check_model_fits(config, name, options, training);
    return with_config_keys("model.*", [&] { return models::build_model(name, options); });
}

namespace {

std::unique_ptr<train::Optimizer> make_optimizer(const nn::Options& config, nn::Module& model) {
    const double lr = config.get_double("optim.lr"),
                 decay = config.get_double("optim.weight_decay");
    std::vector<train::ParamGroup> groups;
    if (config.get_bool("optim.no_decay"))
        groups = train::weight_decay_groups(model, lr, decay);
    else
        groups = {{model.parameters(), lr, decay}};
    const std::string name = config.get_string("optim.name");
    if (name == "sgd") {
        train::SGDOptions o{.momentum = config.get_double("optim.momentum"),
                            .nesterov = config.get_bool("optim.nesterov")};
        return std::make_unique<train::SGD>(std::move(groups), o);
    }
    std::vector<double> betas = config.get_doubles("optim.betas");
    LUMEN_CHECK(betas.size() == 2, "config", "optim.betas needs 2 values, got ", betas.size());
    train::AdamOptions o{
        .beta1 = betas[0], .beta2 = betas[1], .eps = config.get_double("optim.eps")};
    if (name == "adam") return std::make_unique<train::Adam>(std::move(groups), o);
    return std::make_unique<train::AdamW>(std::move(groups), o);
}

std::shared_ptr<train::LRSchedule> make_schedule(const nn::Options& config,
                                                 int64_t steps_per_epoch) {
    const double lr = config.get_double("optim.lr");
    const bool per_step = config.get_string("schedule.interval") == "step";
    const int64_t total = config.get_int("train.epochs") * (per_step ? steps_per_epoch : 1);
    const int64_t warmup = config.get_int("schedule.warmup");
    const std::string name = config.get_string("schedule.name");
    if (name == "constant") return std::make_shared<train::ConstantLR>(lr);
    if (name == "step")
        return std::make_shared<train::StepLR>(lr, config.get_int("schedule.step_size"),
                                               config.get_double("schedule.gamma"));
    if (name == "exponential")
        return std::make_shared<train::ExponentialLR>(lr, config.get_double("schedule.gamma"));
    if (name == "linear_warmup_decay")
        return std::make_shared<train::LinearWarmupDecayLR>(lr, warmup, total);
    if (name == "one_cycle")
        return std::make_shared<train::OneCycleLR>(
            train::OneCycleOptions{.max_lr = lr,
                                   .total_steps = total,
                                   .pct_start = config.get_double("schedule.pct_start")});
    return std::make_shared<train::WarmupCosineLR>(lr, total, warmup, 0.0,
                                                   config.get_double("schedule.min_lr"));
}

}  // namespace

std::unique_ptr<train::Optimizer> build_optimizer(const nn::Options& config, nn::Module& model) {
    return with_config_keys("optim.*", [&] { return make_optimizer(config, model); });
}

std::shared_ptr<train::LRSchedule> build_schedule(const nn::Options& config,
                                                  int64_t steps_per_epoch) {
    return with_config_keys("schedule.*, optim.lr and train.epochs",
                            [&] { return make_schedule(config, steps_per_epoch); });
}

}  // namespace lumen::cli
