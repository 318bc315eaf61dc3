// The config's keys and the builders of `lumen train` / `lumen eval`: data (Fashion-MNIST or
// synthetic, as DataLoaders behind BatchSource), model (registry, checked against the data),
// optimizer and schedule.
#include "train/cli/experiment.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "core/error.h"
#include "core/file_io.h"
#include "datasets/fashion_mnist.h"
#include "models/registry.h"
#include "train/param_groups.h"
#include "train/pretrained.h"
#include "train/schedule_basic.h"

namespace lumen::train::cli {

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
         [] {
             Strings names = datasets::layout_names();
             names.insert(names.begin(), {"fashion_mnist", "synthetic"});
             return names;
         }()},
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
        {"optim.no_decay_rule", std::string("names"),
         "no_decay: names (biases, norm weights, embeddings: timm's rule) or below_2d (biases "
         "and every parameter with fewer than 2 dims: the official PVT-GDLA rule)",
         Strings{"names", "below_2d"}},
        {"optim.lr_mult", std::string(""),
         "per-module learning-rate multipliers: 'prefix=factor,...' on parameter names, the "
         "longest matching prefix wins (e.g. 'backbone.=0.1')"},
        {"schedule.name", std::string("cosine"), "LR schedule",
         Strings{"constant", "step", "exponential", "cosine", "linear_warmup_decay", "one_cycle",
                 "utnet"}},
        {"schedule.interval", std::string("epoch"), "apply per optimizer step or per epoch",
         Strings{"step", "epoch"}},
        {"schedule.warmup",
         int64_t(0),
         "warm-up length in intervals (cosine, linear; utnet: epochs, its paper uses 5)",
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
        {"model.init_from", std::string(""), "a safetensors file of pretrained weights"},
        {"model.init_prefix", std::string(""),
         "init_from: the model's keys it fills start with this (e.g. 'backbone.')"},
        {"model.init_source_prefix", std::string(""),
         "init_from: use the file's keys under this prefix, removed (e.g. 'module.')"},
        {"model.init_key_map", std::string(""),
         "init_from: whai362_pvt_v2 (original PVTv2 names to timm's) or a JSON key-map file"},
        {"model.init_strict", true,
         "init_from: every key must match (else load what fits and report the rest)"},
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
        {"train.precision", std::string("fp32"),
         "mixed precision: bf16 or fp16 matmul/linear GEMMs with float32 accumulation and "
         "float32 master weights (fp16: dynamic loss scaling, overflowed updates skipped); CPU: "
         "emulated, for numerics",
         Strings{"fp32", "bf16", "fp16"}},
        {"train.sync_batchnorm", false,
         "under mpirun: batch norm statistics over every rank's samples (synchronized batch "
         "norm; one process: no effect)"},
        {"train.eval_every", int64_t(1), "epochs between test evaluations", {}, kCount},
        {"train.early_stopping",
         int64_t(0),
         "stop after this many evaluations without a better checkpoint.best_metric (0: off)",
         {},
         Range::between(0, kMaxCount)},
        {"train.log_every",
         int64_t(50),
         "updates between metric records and progress lines",
         {},
         Range::between(1, kMaxSteps)},
        {"train.profile",
         int64_t(0),
         "updates to profile after the first (0: off): profile.txt and profile.json (Chrome "
         "trace) in the run directory",
         {},
         Range::between(0, kMaxSteps)},
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
        {"checkpoint.best_metric", std::string("auto"),
         "kept as best.safetensors: auto (the task's: test_accuracy, test_mean_dice, "
         "test_psnr), none, or any test_<metric> of the task"},
        {"output.runs_dir", std::string("runs"), "parent folder of the run directories"},
        {"output.progress", std::string("auto"), "bar on a terminal, else lines",
         Strings{"auto", "bar", "lines", "none"}},
    };
}

}  // namespace

std::vector<nn::OptionSpec> trainer_option_specs() {
    std::vector<Spec> specs = run_specs();
    for (auto more :
         {data_specs(), layout_option_specs(), task_option_specs(), optim_schedule_specs()})
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
    const std::string best = config.get_string("checkpoint.best_metric");
    LUMEN_CHECK(best == "auto" || best == "none" || best.rfind("test_", 0) == 0, "config",
                raw.source_of("checkpoint.best_metric"),
                ": checkpoint.best_metric must be auto, none or test_<metric> (test_loss, "
                "test_accuracy, test_mean_dice, test_dice_<class>, test_psnr, ...), got '",
                best, "'");
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

nn::Options model_options(const nn::Options& config, const DataShape& data) {
    const std::string name = config.get_string("model.name");
    nn::Options chosen(name);
    const nn::Options section = config.section("model", name);
    for (const auto& [key, value] : section.values())
        if (key != "name" && key.rfind("init_", 0) != 0) chosen.set(key, value);
    nn::Options options = models::model_options(name, chosen);
    // A text model's vocabulary comes from the data unless the config gives one.
    if (options.has("vocab_size") && options.get_int("vocab_size") == 0 && data.vocab_size > 0)
        options.set("vocab_size", data.vocab_size);
    return options;
}

namespace {

// Throws [config] when the model cannot take the data or give what the task needs, naming the
// data's side and the model's key.
void check_model_fits_data(const nn::Options& config, const DataShape& data,
                           const models::ModelInput& input) {
    const std::string name = config.get_string("model.name");
    auto mismatch = [&](const std::string& what, const std::string& data_value,
                        const std::string& key, const std::string& model_value) {
        LUMEN_FAIL("config", "the data (", data.dataset, ") has ", what, " ", data_value,
                   " but the model (", name, ") expects ", model_value, " (model.", key, ")");
    };
    auto kind_text = [](const std::string& kind) {
        return kind == "bag"      ? std::string("feature bags")
               : kind == "tokens" ? std::string("token sequences")
                                  : std::string("images or volumes");
    };
    LUMEN_CHECK(input.kind == data.kind, "config", "the data (", data.dataset, ") gives ",
                kind_text(data.kind), " but the model (", name, ") takes ", kind_text(input.kind));
    const std::string task = task_kind(config, data);
    const bool dense = task != "classification";
    LUMEN_CHECK((input.output == "dense") == dense, "config", "the ", task, " task (", data.dataset,
                ") needs ", dense ? "a dense output map per example" : "one prediction per example",
                " but the model (", name, ") gives ",
                input.output == "dense" ? "a dense map" : "class logits",
                input.output == "dense" ? " (choose a classification head: model.decoder linear)"
                                        : " (choose a dense head, e.g. model.decoder)");
    if (data.kind == "bag" && input.feature_dim != data.feature_dim)
        mismatch("instance features of size", std::to_string(data.feature_dim), "feat_dim",
                 std::to_string(input.feature_dim));
    if (data.kind == "tokens") {
        LUMEN_CHECK(input.vocab_size >= data.vocab_size, "config", "the data (", data.dataset,
                    ") has a vocabulary of ", data.vocab_size, " tokens but the model (", name,
                    ") embeds ", input.vocab_size, " (model.vocab_size; 0 takes the data's)");
        if (input.max_len < data.max_length)
            mismatch("sequences up to",
                     std::to_string(data.max_length) + " tokens (data.max_length)", "max_len",
                     std::to_string(input.max_len));
    }
    if (data.kind == "image") {
        if (input.in_chans != data.channels)
            mismatch("channels", std::to_string(data.channels), input.chans_key,
                     std::to_string(input.in_chans));
        const int64_t dims = int64_t(data.img_size.size());
        if (dims != input.spatial_dims)
            LUMEN_FAIL("config", "the data (", data.dataset, ") trains on ", dims,
                       "-D examples of size ", nn::format_option(data.img_size), " but the model (",
                       name, ") is ", input.spatial_dims, "-D",
                       dims == 3 ? " (train a 2-D model on slices: the npz_slices layout)" : "");
        if (!input.img_size.empty() && input.img_size != data.img_size)
            mismatch("training examples of size", nn::format_option(data.img_size), input.size_key,
                     nn::format_option(input.img_size) +
                         " (set data.patch_size or data.image_size to it)");
        for (int64_t size : data.img_size)
            if (size % input.size_multiple != 0)
                mismatch("training examples of size", nn::format_option(data.img_size), "name",
                         "sizes divisible by " + std::to_string(input.size_multiple) +
                             " (set data.patch_size or data.image_size)");
    }
    if (task == "enhancement" && input.num_classes != data.channels)
        mismatch("targets with channels", std::to_string(data.channels), input.classes_key,
                 std::to_string(input.num_classes) + " output channels");
    if (task != "enhancement" && data.num_classes > 0 && input.num_classes != data.num_classes)
        mismatch("classes", std::to_string(data.num_classes), input.classes_key,
                 std::to_string(input.num_classes));
}

}  // namespace

std::shared_ptr<nn::Module> build_model(const nn::Options& config, const DataShape& data,
                                        bool training, std::ostream* log) {
    const std::string name = config.get_string("model.name");
    nn::Options options = model_options(config, data);
    check_model_fits_data(config, data, models::find_model(name).input(options));
    check_model_fits(config, name, options, training);
    std::shared_ptr<nn::Module> model =
        with_config_keys("model.*", [&] { return models::build_model(name, options); });
    if (const std::string& path = config.get_string("model.init_from"); !path.empty()) {
        train::InitFromOptions o{.path = path,
                                 .source_prefix = config.get_string("model.init_source_prefix"),
                                 .target_prefix = config.get_string("model.init_prefix"),
                                 .key_map = config.get_string("model.init_key_map"),
                                 .strict = config.get_bool("model.init_strict")};
        train::InitReport report = with_config_keys("model.init_from, model.init_*",
                                                    [&] { return train::init_from(*model, o); });
        if (log) *log << train::format_init_report(report, o) << "\n";
    }
    return model;
}

namespace {

// optim.lr_mult "prefix=factor,...": each group split by the longest prefix of its parameters'
// names, the parts scaled (train::ParamGroup::lr_scale).
std::vector<train::ParamGroup> with_lr_multipliers(const nn::Options& config,
                                                   const nn::Module& model,
                                                   std::vector<train::ParamGroup> groups) {
    const std::string text = config.get_string("optim.lr_mult");
    if (text.empty()) return groups;
    std::vector<std::pair<std::string, double>> rules;
    std::stringstream in(text);
    for (std::string item; std::getline(in, item, ',');) {
        const size_t eq = item.find('=');
        LUMEN_CHECK(eq != std::string::npos && eq > 0, "config",
                    "optim.lr_mult needs 'prefix=factor' items separated by ',', got '", item, "'");
        const std::string number = item.substr(eq + 1);
        char* end = nullptr;
        const double factor = std::strtod(number.c_str(), &end);
        LUMEN_CHECK(!number.empty() && end == number.c_str() + number.size() &&
                        std::isfinite(factor) && factor >= 0,
                    "config", "optim.lr_mult: '", number, "' is not a finite number >= 0 (in '",
                    item, "')");
        rules.emplace_back(item.substr(0, eq), factor);
    }
    std::map<const void*, std::string> names;
    for (const auto& [name, tensor] : model.named_parameters()) names[tensor.impl().get()] = name;
    std::vector<int64_t> used(rules.size());
    auto factor_of = [&](const Tensor& t) {
        const std::string& name = names[t.impl().get()];
        size_t best = rules.size();
        for (size_t r = 0; r < rules.size(); ++r)
            if (name.rfind(rules[r].first, 0) == 0 &&
                (best == rules.size() || rules[r].first.size() > rules[best].first.size()))
                best = r;
        if (best == rules.size()) return 1.0;
        ++used[best];
        return rules[best].second;
    };
    std::vector<train::ParamGroup> scaled;
    for (const train::ParamGroup& group : groups) {
        std::map<double, train::ParamGroup> parts;
        for (const Tensor& p : group.params) {
            const double factor = factor_of(p);
            auto it = parts
                          .try_emplace(
                              factor,
                              train::ParamGroup{{}, group.lr * factor, group.weight_decay, factor})
                          .first;
            it->second.params.push_back(p);
        }
        for (auto& [factor, part] : parts) scaled.push_back(std::move(part));
    }
    for (size_t r = 0; r < rules.size(); ++r)
        LUMEN_CHECK(used[r] > 0, "config", "optim.lr_mult: no parameter name starts with '",
                    rules[r].first, "'");
    return scaled;
}

std::unique_ptr<train::Optimizer> make_optimizer(const nn::Options& config, nn::Module& model) {
    const double lr = config.get_double("optim.lr"),
                 decay = config.get_double("optim.weight_decay");
    std::vector<train::ParamGroup> groups;
    if (config.get_bool("optim.no_decay"))
        groups = train::weight_decay_groups(
            model, lr, decay, {.below_2d = config.get_string("optim.no_decay_rule") == "below_2d"});
    else
        groups = {{model.parameters(), lr, decay}};
    groups = with_lr_multipliers(config, model, std::move(groups));
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
    if (name == "utnet") {
        LUMEN_CHECK(!per_step, "config",
                    "schedule.name utnet is set once per epoch: schedule.interval must be epoch");
        return std::make_shared<train::ExpWarmupPolyLR>(lr, warmup, total);
    }
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

}  // namespace lumen::train::cli
