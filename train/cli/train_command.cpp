// Flag parsing for `lumen train` / `lumen eval` and the run setup: seed, threads and device
// first, then data, model (on the device), optimizer, schedule, trainer. Under mpirun each rank
// runs this same code on its shard of the data (docs/distributed.md); rank 0 alone prints and
// writes files.
#include "train/cli/train_command.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>

#include <unistd.h>

#include "core/device.h"
#include "core/error.h"
#include "core/parallel.h"
#include "core/random.h"
#include "train/checkpoint.h"
#include "train/cli/experiment.h"
#include "train/dist/data_parallel.h"

namespace lumen::train::cli {

namespace fs = std::filesystem;

Arguments parse_arguments(const std::vector<std::string>& args, const std::string& command,
                          const std::vector<std::string>& flags) {
    Arguments a;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (arg == "--help" || arg == "-h") {
            a.help = true;
            continue;
        }
        if (arg.size() < 2 || arg[0] != '-') {
            a.positional.push_back(arg);
            continue;
        }
        size_t eq = arg.find('=');
        std::string flag = arg.substr(0, eq);
        LUMEN_CHECK(std::find(flags.begin(), flags.end(), flag) != flags.end(), "lumen",
                    "unknown option '", arg, "' for '", command, "'");
        LUMEN_CHECK(eq != std::string::npos || i + 1 < args.size(), "lumen", flag,
                    " needs a value");
        std::string value = eq != std::string::npos ? arg.substr(eq + 1) : args[++i];
        if (flag == "--set") a.sets.push_back(value);
        if (flag == "--resume") a.resume = value;
        if (flag == "--device") a.device = value;
        if (flag == "--threads") a.threads = value;
        if (flag == "--split") a.split = value;
        if (flag == "--out") a.out = value;
        if (flag == "--checkpoint") a.checkpoint = value;
        if (flag == "--profile") a.profile = value;
    }
    return a;
}

void apply_flags(const Arguments& a, train::RawConfig& raw) {
    for (const std::string& set : a.sets) raw.set(set);
    if (a.device) raw.set("train.device", *a.device, "--device");
    if (a.threads) raw.assign("train.threads=" + *a.threads, "--threads");
    if (a.profile) raw.assign("train.profile=" + *a.profile, "--profile");
}

Device setup_runtime(const nn::Options& config) {
    if (int64_t threads = config.get_int("train.threads"); threads > 0)
        set_num_threads(int(threads));
    Device device = Device::parse(config.get_string("train.device"));
    LUMEN_CHECK(!device.is_cuda() || cuda_available(), "lumen",
                "train.device is cuda but no CUDA device is available (lumen built with CUDA: ",
                cuda_built() ? "yes" : "no", ")");
    return device;
}

namespace {

// <runs_dir>/<name>, or the first of <name>-2, <name>-3, ... that does not exist.
std::string fresh_run_dir(const nn::Options& config) {
    fs::path base = fs::path(config.get_string("output.runs_dir")) / config.get_string("name");
    if (!fs::exists(base)) return base.string();
    for (int k = 2;; ++k) {
        fs::path candidate = base.string() + "-" + std::to_string(k);
        if (!fs::exists(candidate)) return candidate.string();
    }
}

}  // namespace

std::string latest_checkpoint(const std::string& run_dir, std::ostream& out) {
    std::vector<std::string> skipped;
    std::string path = train::CheckpointManager::latest(run_dir + "/checkpoints", &skipped);
    for (const std::string& reason : skipped)
        out << "warning: skipping a damaged checkpoint: " << reason << "\n";
    LUMEN_CHECK(!path.empty(), "lumen", run_dir, "/checkpoints holds no valid checkpoint",
                skipped.empty() ? "" : " (all damaged, see the warnings)");
    if (!skipped.empty()) out << "using " << path << " instead\n";
    return path;
}

namespace {

// train.precision's dtype (the spec allows only these names).
DType precision_dtype(const std::string& name) {
    if (name == "bf16") return DType::bfloat16;
    if (name == "fp16") return DType::float16;
    return DType::float32;
}

train::TrainerOptions trainer_options(const nn::Options& config, const std::string& run_dir,
                                      Device device, std::shared_ptr<const train::Task> task) {
    const std::string best = best_metric(config, *task);
    // Losses, distances and errors are better low.
    const bool lower = best.find("loss") != std::string::npos ||
                       best.find("hd95") != std::string::npos || best == "test_mse";
    return {.run_dir = run_dir,
            .epochs = config.get_int("train.epochs"),
            .max_steps = config.get_int("train.max_steps"),
            .accumulate = config.get_int("train.accumulate"),
            .grad_clip = config.get_double("train.grad_clip"),
            .label_smoothing = config.get_double("train.label_smoothing"),
            .nan_guard = config.get_bool("train.nan_guard"),
            .interval = train::parse_schedule_interval(config.get_string("schedule.interval")),
            .eval_every = config.get_int("train.eval_every"),
            .early_stopping = config.get_int("train.early_stopping"),
            .checkpoint_every_epochs = config.get_int("checkpoint.every_epochs"),
            .checkpoint_every_steps = config.get_int("checkpoint.every_steps"),
            .checkpoint = {.keep_last = config.get_int("checkpoint.keep_last"),
                           .best_metric = best,
                           .higher_is_better = !lower},
            .device = device,
            .progress = train::parse_progress_mode(config.get_string("output.progress"),
                                                   isatty(fileno(stdout)) != 0),
            .log_every = config.get_int("train.log_every"),
            .config_json = train::config_to_json(config),
            .title = config.get_string("name") + " (" + config.get_string("model.name") + ")",
            .task = std::move(task),
            .profile_steps = config.get_int("train.profile"),
            .precision = precision_dtype(config.get_string("train.precision")),
            .sync_batchnorm = config.get_bool("train.sync_batchnorm")};
}

constexpr const char* kTrainUsage =
    "usage: lumen train [CONFIG.json] [--set key=value ...] [--resume RUN_DIR]\n"
    "                   [--device cpu|cuda] [--threads N] [--profile STEPS]\n"
    "Trains the model of CONFIG.json (keys: see configs/ and 'lumen models'); --set overrides\n"
    "a key (model.depth=4, optim.lr=1e-3); --resume continues RUN_DIR from its latest checkpoint\n"
    "(with the config stored there unless CONFIG.json is given); --profile records STEPS updates\n"
    "after the first: each op's and kernel's time, bytes and input shape, as a table and a Chrome\n"
    "trace (profile.txt, profile.json in the run directory).\n";

}  // namespace

Device rank_device(Device device) {
    if (!device.is_cuda() || dist::launcher_world_size() == 1) return device;
    return Device::cuda(dist::launcher_local_rank() % std::max(1, cuda_device_count()));
}

int run_train_command(const std::vector<std::string>& args, std::ostream& rank0_out) {
    // The group first: after it, an error on any rank ends the whole job (main's abort)
    // instead of leaving the other ranks waiting.
    std::shared_ptr<dist::ProcessGroup> group = dist::ProcessGroup::from_environment();
    std::ostream silent(nullptr);  // what the other ranks print into: nothing
    std::ostream& out = group->rank() == 0 ? rank0_out : silent;
    Arguments a =
        parse_arguments(args, "train", {"--set", "--resume", "--device", "--threads", "--profile"});
    if (a.help) {
        out << kTrainUsage;
        return 0;
    }
    LUMEN_CHECK(a.positional.size() <= 1, "lumen", "train takes one CONFIG.json, got ",
                a.positional.size(), " paths");
    LUMEN_CHECK(!a.positional.empty() || a.resume, "lumen",
                "train needs CONFIG.json or --resume RUN_DIR (see 'lumen train --help')");
    std::string checkpoint = a.resume ? latest_checkpoint(*a.resume, out) : "";
    train::RawConfig raw =
        a.positional.empty() ? train::RawConfig::parse(
                                   train::read_checkpoint_state(checkpoint).config_json, checkpoint)
                             : train::RawConfig::read(a.positional[0]);
    apply_flags(a, raw);
    nn::Options config = resolve_training_config(raw);
    dist::check_same_config(*group, train::config_to_json(config));
    Device device = rank_device(setup_runtime(config));
    group = dist::ProcessGroup::from_environment(device);  // NCCL for CUDA
    manual_seed(uint64_t(config.get_int("seed")));
    if (group->rank() == 0) ensure_demo_data(config, out);
    group->barrier();  // the demo data is written before the other ranks read it
    // Rank 0 picks the directory (runs/<name>-2 when runs/<name> exists) for all.
    const std::string run_dir =
        a.resume ? *a.resume
                 : dist::broadcast_string(*group, group->rank() == 0 ? fresh_run_dir(config) : "");
    DataSplits data =
        build_data(config, run_dir, {.rank = group->rank(), .world_size = group->world_size()});
    std::shared_ptr<nn::Module> model = build_model(config, data.shape, true, &out);
    std::shared_ptr<train::Task> task = build_task(config, data.shape);
    model->to(device);
    std::unique_ptr<train::Optimizer> optimizer = build_optimizer(config, *model);
    const int64_t k = config.get_int("train.accumulate");
    auto schedule =
        build_schedule(config, (data.train->num_batches() + k - 1) / std::max<int64_t>(k, 1));
    train::TrainerOptions options = trainer_options(config, run_dir, device, task);
    options.group = group;
    train::Trainer trainer(std::move(options), model, std::move(optimizer), schedule, data.train,
                           data.test, out);
    if (a.resume) trainer.resume(checkpoint);
    const bool created = group->rank() == 0 && !fs::exists(run_dir);
    try {
        // Evaluation, resumption and prediction must encode text with this vocabulary.
        if (group->rank() == 0 && data.vocabulary &&
            !fs::exists(fs::path(run_dir) / kVocabularyFile)) {
            fs::create_directories(run_dir);
            data.vocabulary->save((fs::path(run_dir) / kVocabularyFile).string());
        }
        trainer.fit();
    } catch (...) {
        // A run that failed before its first update leaves nothing behind.
        std::error_code error;
        if (created && trainer.step() == 0) fs::remove_all(run_dir, error);
        throw;
    }
    return 0;
}

}  // namespace lumen::train::cli
