// The config's keys and the builders of `lumen train` / `lumen eval`: data (Fashion-MNIST or
// synthetic, as DataLoaders behind BatchSource), model (registry, checked against the data),
// optimizer and schedule.
#include "train/cli/experiment.h"

#include <algorithm>

#include "core/error.h"
#include "datasets/fashion_mnist.h"
#include "models/registry.h"
#include "train/param_groups.h"
#include "train/schedule_basic.h"

namespace lumen::cli {

namespace {

using Spec = nn::OptionSpec;
using Strings = std::vector<std::string>;

std::vector<Spec> data_specs() {
    return {
        {"data.dataset", std::string("fashion_mnist"), "the dataset",
         Strings{"fashion_mnist", "synthetic"}},
        {"data.dir", std::string(datasets::kFashionMnistDir), "where the IDX files are"},
        {"data.batch_size", int64_t(128), "training batch size"},
        {"data.eval_batch_size", int64_t(500), "evaluation batch size"},
        {"data.num_workers", int64_t(1), "loader threads making batches ahead (0: inline)"},
        {"data.train_subset", int64_t(0), "use the first N training images (0: all)"},
        {"data.test_subset", int64_t(0), "use the first N test images (0: all)"},
        {"data.normalize", true, "(x - 0.2860) / 0.3530, Fashion-MNIST's mean and std"},
        {"data.hflip", 0.0, "probability of a horizontal flip (training images)"},
        {"data.rotation", 0.0, "random rotation in [-deg, deg] (training images)"},
        {"data.gaussian_noise", 0.0, "sigma of additive Gaussian noise on [0, 1] pixels"},
        {"data.salt_pepper", 0.0, "fraction of pixels set to 0 or 1 (training images)"},
    };
}

std::vector<Spec> optim_schedule_specs() {
    return {
        {"optim.name", std::string("adamw"), "optimizer", Strings{"adamw", "adam", "sgd"}},
        {"optim.lr", 3e-4, "learning rate (the peak of a schedule)"},
        {"optim.weight_decay", 0.01, "weight decay (decoupled for adamw)"},
        {"optim.betas", std::vector<double>{0.9, 0.999}, "Adam betas"},
        {"optim.eps", 1e-8, "Adam eps"},
        {"optim.momentum", 0.9, "SGD momentum"},
        {"optim.nesterov", false, "SGD Nesterov momentum"},
        {"optim.no_decay", false, "exempt biases, norm weights and embeddings from decay"},
        {"schedule.name", std::string("cosine"), "LR schedule",
         Strings{"constant", "step", "exponential", "cosine", "linear_warmup_decay", "one_cycle"}},
        {"schedule.interval", std::string("epoch"), "apply per optimizer step or per epoch",
         Strings{"step", "epoch"}},
        {"schedule.warmup", int64_t(0), "warm-up length in intervals (cosine, linear)"},
        {"schedule.min_lr", 0.0, "cosine: the final learning rate"},
        {"schedule.step_size", int64_t(30), "step: intervals between decays"},
        {"schedule.gamma", 0.1, "step, exponential: decay factor"},
        {"schedule.pct_start", 0.3, "one_cycle: fraction of the cycle spent rising"},
    };
}

std::vector<Spec> run_specs() {
    return {
        {"name", std::string("run"), "run name: the run directory is <output.runs_dir>/<name>"},
        {"description", std::string(""), "free text for people (not used)"},
        {"seed", int64_t(0), "seeds the model init, dropout, shuffling and augmentation"},
        {"model.name", std::string("dgvit"), "a registered model (lumen models)",
         models::model_names()},
        {"train.epochs", int64_t(100), "epochs"},
        {"train.max_steps", int64_t(0), "stop after this many optimizer updates (0: no limit)"},
        {"train.accumulate", int64_t(1), "micro-batches per optimizer update"},
        {"train.grad_clip", 0.0, "clip the global gradient L2 norm to this (0: off)"},
        {"train.label_smoothing", 0.0, "cross-entropy label smoothing"},
        {"train.nan_guard", true, "stop at the first non-finite loss or gradient"},
        {"train.eval_every", int64_t(1), "epochs between test evaluations"},
        {"train.log_every", int64_t(50), "updates between metric records and progress lines"},
        {"train.device", std::string("cpu"), "cpu or cuda", Strings{"cpu", "cuda"}},
        {"train.threads", int64_t(0), "CPU threads (0: all cores)"},
        {"checkpoint.every_epochs", int64_t(1), "epochs between checkpoints"},
        {"checkpoint.every_steps", int64_t(0), "also every this many updates (0: off)"},
        {"checkpoint.keep_last", int64_t(2), "step checkpoints kept"},
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
    for (auto more : {data_specs(), optim_schedule_specs()})
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
        specs.push_back({"model." + spec.key, spec.default_value, spec.help, spec.choices});
    return train::resolve_config(raw, specs);
}

std::shared_ptr<nn::Module> build_model(const nn::Options& config, const DataShape& data) {
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
    return models::build_model(name, options);
}

std::unique_ptr<train::Optimizer> build_optimizer(const nn::Options& config, nn::Module& model) {
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

std::shared_ptr<train::LRSchedule> build_schedule(const nn::Options& config,
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

}  // namespace lumen::cli
