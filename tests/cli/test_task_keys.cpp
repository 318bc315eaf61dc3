// The recipe keys of the task-aware CLI on the synthetic dataset with a tiny DGViT: early
// stopping, per-module learning-rate multipliers, pretrained weights through model.init_from,
// the UTNet schedule, the best-checkpoint metric, and the errors for loss names, tasks and keys.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "nn/state_dict.h"
#include "support/gradcheck.h"
#include "support/tiny_config.h"
#include "train/cli/experiment.h"
#include "train/cli/train_command.h"

using namespace lumen;
using namespace lumen::testing;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> run_args(const TempDir& dir, const std::string& name,
                                  std::initializer_list<std::string> sets) {
    const std::string path = dir.file(name + ".json");
    std::ofstream(path) << tiny_config_json(name, 1);
    std::vector<std::string> args{path, "--set", "output.runs_dir=" + dir.file("runs")};
    for (const std::string& set : sets) {
        args.push_back("--set");
        args.push_back(set);
    }
    return args;
}

nlohmann::json summary_of(const TempDir& dir, const std::string& name) {
    return nlohmann::json::parse(std::ifstream(dir.file("runs/" + name + "/summary.json")));
}

nn::Options resolved(std::initializer_list<std::string> sets) {
    train::RawConfig raw = train::RawConfig::parse(tiny_config_json("keys", 1), "test");
    for (const std::string& set : sets) raw.set(set);
    return train::cli::resolve_training_config(raw);
}

}  // namespace

TEST_CASE("early stopping ends a run whose metric stops improving", "[cli][tasks]") {
    TempDir dir("cli_early");
    std::ostringstream out;
    // A learning rate of 0: the test accuracy never improves after the first evaluation.
    train::cli::run_train_command(run_args(dir, "early",
                                           {"train.epochs=6", "train.early_stopping=2",
                                            "optim.lr=0", "schedule.name=constant"}),
                                  out);
    CHECK(summary_of(dir, "early")["epochs"] == 3);
    CHECK(out.str().find("early stopping: test_accuracy has not improved") != std::string::npos);
    // Early stopping needs a metric to watch.
    require_error(
        [&] {
            train::cli::run_train_command(
                run_args(dir, "early2", {"train.early_stopping=2", "checkpoint.best_metric=none"}),
                out);
        },
        {"early stopping", "checkpoint.best_metric"});
}

TEST_CASE("optim.lr_mult scales the learning rate of modules by name prefix", "[cli][tasks]") {
    nn::Options config = resolved({"optim.lr_mult=\"blocks.=0.1,head.=2\""});
    train::cli::DataShape data;
    data.dataset = "synthetic";
    data.channels = 1;
    data.img_size = data.eval_size = {28, 28};
    data.num_classes = 10;
    auto model = train::cli::build_model(config, data);
    auto optimizer = train::cli::build_optimizer(config, *model);
    std::map<double, size_t> counts;
    for (const train::ParamGroup& group : optimizer->param_groups()) {
        CHECK(group.lr == config.get_double("optim.lr") * group.lr_scale);
        counts[group.lr_scale] += group.params.size();
    }
    size_t blocks = 0, heads = 0;
    for (const auto& [name, p] : model->named_parameters()) {
        blocks += name.rfind("blocks.", 0) == 0;
        heads += name.rfind("head.", 0) == 0;
    }
    CHECK(counts[0.1] == blocks);
    CHECK(counts[2.0] == heads);
    CHECK(counts[1.0] == model->named_parameters().size() - blocks - heads);
    // A schedule keeps the ratios.
    optimizer->set_lr(1.0);
    for (const train::ParamGroup& group : optimizer->param_groups())
        CHECK(group.lr == group.lr_scale);
    require_error(
        [&] { train::cli::build_optimizer(resolved({"optim.lr_mult=\"backbone.=0.1\""}), *model); },
        {"[config]", "no parameter name starts with 'backbone.'"});
    require_error(
        [&] { train::cli::build_optimizer(resolved({"optim.lr_mult=\"blocks.=fast\""}), *model); },
        {"[config]", "'fast' is not a finite number"});
    require_error([&] { train::cli::build_optimizer(resolved({"optim.lr_mult=blocks"}), *model); },
                  {"[config]", "prefix=factor"});
}

TEST_CASE("model.init_from starts a run from another run's weights", "[cli][tasks]") {
    TempDir dir("cli_init_from");
    std::ostringstream out;
    train::cli::run_train_command(run_args(dir, "first", {}), out);
    const std::string weights = dir.file("runs/first/model.safetensors");
    std::ostringstream second;
    train::cli::run_train_command(
        run_args(dir, "second", {"model.init_from=\"" + weights + "\"", "train.max_steps=1"}),
        second);
    CHECK(second.str().find("init_from " + weights + ": loaded") != std::string::npos);
    // A file that does not fit the model is refused before training, naming the keys.
    require_error(
        [&] {
            train::cli::run_train_command(
                run_args(dir, "third",
                         {"model.init_from=\"" + weights + "\"", "model.embed_dim=32"}),
                out);
        },
        {"[config]", "model.init_from", "mismatched (21)", "file [16, 16] vs model [32, 32]"});
}

TEST_CASE("task keys: the losses, tasks and metrics a config may name", "[cli][tasks]") {
    TempDir dir("cli_task_keys");
    std::ostringstream out;
    require_error(
        [&] { train::cli::run_train_command(run_args(dir, "a", {"loss.name=dice_ce"}), out); },
        {"[config]", "unknown classification loss 'dice_ce'", "cross_entropy"});
    require_error(
        [&] {
            train::cli::run_train_command(run_args(dir, "b", {"loss.name=cross_entropi"}), out);
        },
        {"did you mean 'cross_entropy'"});
    require_error(
        [&] { train::cli::run_train_command(run_args(dir, "c", {"task.name=segmentation"}), out); },
        {"[config]", "task.name is segmentation", "classification examples"});
    require_error(
        [&] {
            train::cli::run_train_command(run_args(dir, "d", {"checkpoint.best_metric=accuracy"}),
                                          out);
        },
        {"checkpoint.best_metric must be auto, none or test_<metric>"});
    require_error(
        [&] {
            train::cli::run_train_command(
                run_args(dir, "e", {"schedule.name=utnet", "schedule.interval=step"}), out);
        },
        {"utnet", "schedule.interval must be epoch"});
    // The UTNet schedule per epoch, and a best checkpoint by another test metric.
    train::cli::run_train_command(
        run_args(dir, "f",
                 {"schedule.name=utnet", "schedule.interval=epoch", "schedule.warmup=1",
                  "checkpoint.best_metric=test_balanced_accuracy"}),
        out);
    nlohmann::json summary = summary_of(dir, "f");
    CHECK(summary["task"] == "classification");
    for (const char* key : {"test_accuracy", "test_balanced_accuracy", "test_auroc", "test_loss"})
        CHECK(summary.contains(key));
    CHECK(fs::exists(dir.file("runs/f/checkpoints/best.safetensors")));
}

TEST_CASE("data.resize gives Fashion-MNIST-style splits another size", "[cli][tasks]") {
    train::cli::DataSplits data = train::cli::build_data(resolved({"data.resize=[32, 32]"}));
    CHECK(data.shape.img_size == std::vector<int64_t>{32, 32});
    data.train->start_epoch(0);
    std::optional<std::vector<Tensor>> batch = data.train->next();
    REQUIRE(batch);
    CHECK(batch->front().shape() == Shape{16, 1, 32, 32});
    require_error([] { train::cli::build_data(resolved({"data.resize=[32]"})); },
                  {"[config]", "data.resize [32]", "one size per spatial dim (2)"});
}
