// `lumen train` / `lumen eval` end to end on the synthetic dataset with a tiny DGViT: the run
// directory and summary, eval of the run, kill-and-resume through the CLI ending bit-identical
// to one run (DataLoader with a worker thread, dropout, per-step schedule), run directory
// numbering, and the errors for bad keys, data/model mismatches, flags and devices.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/fault.h"
#include "core/safetensors.h"
#include "support/gradcheck.h"
#include "support/tiny_config.h"
#include "train/cli/eval_command.h"
#include "train/cli/train_command.h"

using namespace lumen;
using namespace lumen::testing;
namespace fs = std::filesystem;

namespace {

// A config file in `dir` for the tiny run (support/tiny_config.h).
std::string write_config(const TempDir& dir) {
    const std::string path = dir.file("tiny.json");
    std::ofstream(path) << tiny_config_json("tiny", 3);
    return path;
}

std::vector<std::string> args(std::initializer_list<std::string> list, const TempDir& dir) {
    std::vector<std::string> out(list);
    out.push_back("--set");
    out.push_back("output.runs_dir=" + dir.file("runs"));
    return out;
}

std::map<std::string, std::vector<float>> weights(const std::string& path) {
    std::map<std::string, std::vector<float>> out;
    for (auto& [name, t] : load_safetensors(path).tensors) out[name] = t.to_vector<float>();
    return out;
}

}  // namespace

TEST_CASE("lumen train writes the run directory and lumen eval reads it back", "[cli][train]") {
    TempDir dir("cli_train");
    const std::string config = write_config(dir);
    std::ostringstream out;
    CHECK(train::cli::run_train_command(args({config}, dir), out) == 0);
    const std::string run = dir.file("runs/tiny");
    for (const char* name : {"config.json", "metrics.jsonl", "plot.svg", "summary.json",
                             "model.safetensors", "checkpoints/best.safetensors"}) {
        INFO(name);
        CHECK(fs::exists(run + "/" + name));
    }
    std::ifstream summary_file(run + "/summary.json");
    nlohmann::json summary = nlohmann::json::parse(summary_file);
    CHECK(summary["epochs"] == 2);
    CHECK(summary["steps"] == 16);
    CHECK(summary["device"] == "cpu");
    CHECK(summary["test_accuracy"].get<double>() >= 0.0);
    CHECK(summary["test_accuracy"].get<double>() <= 1.0);
    CHECK(summary["images_per_second"].get<double>() > 0.0);
    CHECK(out.str().find("| run directory | " + run) != std::string::npos);
    // The config echo is the resolved config: defaults filled in.
    std::ifstream echo(run + "/config.json");
    nlohmann::json resolved = nlohmann::json::parse(echo);
    CHECK(resolved["model"]["embed_dim"] == 16);
    CHECK(resolved["optim"]["name"] == "adamw");

    std::ostringstream eval;
    CHECK(train::cli::run_eval_command({run}, eval) == 0);
    char expected[64];
    std::snprintf(expected, sizeof(expected), "accuracy %.4f",
                  summary["test_accuracy"].get<double>());
    CHECK(eval.str().find("test split: 64 examples") != std::string::npos);
    CHECK(eval.str().find(expected) != std::string::npos);
    std::ostringstream train_split;
    train::cli::run_eval_command({run + "/checkpoints/best.safetensors", "--split", "train"},
                                 train_split);
    CHECK(train_split.str().find("train split: 128 examples") != std::string::npos);

    // A second run with the same name goes to tiny-2.
    std::ostringstream again;
    train::cli::run_train_command(args({config, "--set", "train.epochs=1"}, dir), again);
    CHECK(fs::exists(dir.file("runs/tiny-2/summary.json")));
}

TEST_CASE("lumen train --resume after a stop ends bit-identical to one run",
          "[cli][train][resume]") {
    TempDir dir("cli_resume");
    const std::string config = write_config(dir);
    std::ostringstream out;
    train::cli::run_train_command(args({config, "--set", "name=whole"}, dir), out);
    // The first half stops after 11 of 16 updates (inside epoch 2), as a kill would, leaving
    // its last checkpoint; the second half resumes from it.
    train::cli::run_train_command(
        args({config, "--set", "name=split", "--set", "train.max_steps=11"}, dir), out);
    const std::string split = dir.file("runs/split");
    CHECK(nlohmann::json::parse(std::ifstream(split + "/summary.json"))["steps"] == 11);
    train::cli::run_train_command(args({config, "--set", "name=split", "--resume", split}, dir),
                                  out);
    auto whole = weights(dir.file("runs/whole/model.safetensors"));
    auto resumed = weights(split + "/model.safetensors");
    REQUIRE(whole.size() == resumed.size());
    for (auto& [name, values] : whole) {
        INFO(name);
        CHECK(values == resumed[name]);  // every bit
    }
    // Without CONFIG.json the run's stored config is used.
    train::cli::run_train_command(args({"--resume", split, "--set", "train.epochs=3"}, dir), out);
    CHECK(nlohmann::json::parse(std::ifstream(split + "/summary.json"))["epochs"] == 3);
}

TEST_CASE("lumen train errors name the key, the file or both sides of a mismatch", "[cli][train]") {
    TempDir dir("cli_errors");
    const std::string config = write_config(dir);
    std::ostringstream out;
    require_error(
        [&] {
            train::cli::run_train_command(args({config, "--set", "optim.lrr=1"}, dir), out);
        },
        {"[config] --set: unknown key 'optim.lrr'; did you mean 'optim.lr'?"});
    require_error(
        [&] {
            train::cli::run_train_command(args({config, "--set", "train.epochs=two"}, dir), out);
        },
        {"[config] --set: option 'train.epochs' expects an integer, got \"two\""});
    require_error(
        [&] {
            train::cli::run_train_command(args({config, "--set", "model.in_chans=3"}, dir), out);
        },
        {"[config] the data (synthetic) has channels 1", "model (dgvit) expects 3",
         "model.in_chans"});
    require_error(
        [&] {
            train::cli::run_train_command(args({config, "--set", "model.img_size=[32,32]"}, dir),
                                          out);
        },
        {"training examples of size [28, 28]", "expects [32, 32]", "model.img_size"});
    require_error(
        [&] {
            train::cli::run_train_command(args({config, "--set", "model.num_classes=5"}, dir), out);
        },
        {"classes 10", "expects 5", "model.num_classes"});
    require_error(
        [&] {
            train::cli::run_train_command(args({config, "--set", "model.name=vitt"}, dir), out);
        },
        {"'model.name' must be one of context_swin, context_vit, dgt, dgvit",
         "did you mean \"vit\"?"});
    require_error(
        [&] {
            train::cli::run_train_command({config, "--sett", "a=1"}, out);
        },
        {"[lumen]", "unknown option '--sett'"});
    require_error([&] { train::cli::run_train_command({}, out); },
                  {"[lumen]", "CONFIG.json or --resume"});
    require_error([&] { train::cli::run_train_command({dir.file("absent.json")}, out); },
                  {"[config]", "absent.json", "cannot open: No such file"});
    require_error(
        [&] {
            train::cli::run_train_command({config, "--resume", dir.file("none")}, out);
        },
        {"[lumen]", "none/checkpoints holds no valid checkpoint"});
    if (!cuda_available())
        require_error(
            [&] {
                train::cli::run_train_command(args({config, "--device", "cuda"}, dir), out);
            },
            {"[lumen]", "no CUDA device"});
    require_error([&] { train::cli::run_eval_command({dir.file("none")}, out); },
                  {"[lumen]", "does not exist"});
    std::ostringstream help;
    CHECK(train::cli::run_train_command({"--help"}, help) == 0);
    CHECK(help.str().find("usage: lumen train") != std::string::npos);
}

TEST_CASE("lumen train refuses out-of-range keys, escaping names and oversized models",
          "[cli][train][hostile]") {
    TempDir dir("cli_hostile");
    const std::string config = write_config(dir);
    std::ostringstream out;
    auto expect = [&](std::initializer_list<std::string> extra,
                      const std::vector<std::string>& fragments) {
        std::vector<std::string> a = args({config}, dir);
        a.insert(a.end(), extra.begin(), extra.end());
        INFO(a.back());
        require_error([&] { train::cli::run_train_command(a, out); }, fragments);
    };
    auto set = [&](const std::string& assignment, const std::vector<std::string>& fragments) {
        expect({"--set", assignment}, fragments);
    };
    // Each of these ended in SIGFPE, an overflow or a silent truncation before.
    set("train.log_every=0", {"[config] --set: option 'train.log_every' must be in [1, "});
    set("checkpoint.every_epochs=0",
        {"option 'checkpoint.every_epochs' must be in [1, 1000000], got 0"});
    set("train.epochs=4611686018427387904",
        {"option 'train.epochs' must be in [1, 1000000], got 4611686018427387904"});
    set("train.epochs=0", {"option 'train.epochs' must be in [1, 1000000], got 0"});
    set("data.gaussian_noise=-1", {"option 'data.gaussian_noise' must be >= 0, got -1"});
    set("data.batch_size=0", {"option 'data.batch_size' must be in [1, 1000000], got 0"});
    const std::string cores = std::to_string(std::max(1u, std::thread::hardware_concurrency()));
    for (const std::string threads : {"-1", "1099511627776", "1000"})
        expect({"--threads", threads}, {"[config] --threads: option 'train.threads' must be in "
                                        "[0, " +
                                        cores + "], got " + threads});
    // A name may not lead out of output.runs_dir.
    set("name=../../x", {"[config] --set: 'name' must be one folder name", "got '../../x'"});
    set("name=..", {"'name' must be one folder name"});
    CHECK_FALSE(fs::exists(dir.file("x")));
    // depth 1e9 allocated until killed; now the estimate refuses it before anything is built.
    set("model.depth=1000000", {"[config] the model (dgvit, the model.* keys) needs about",
                                "parameters", "but this machine has"});
    set("model.embed_dim=60000", {"needs about", "with gradients and adamw state"});
    // Library errors name the keys they came from.
    expect({"--set", "schedule.name=linear_warmup_decay", "--set", "schedule.warmup=100000"},
           {"[config] from the schedule.*, optim.lr and train.epochs keys: "
            "[LinearWarmupDecayLR]"});
    // Nothing was left behind by the refused starts.
    CHECK_FALSE(fs::exists(dir.file("runs")));
}

TEST_CASE("a run that fails before its first update leaves no run directory",
          "[cli][train][hostile]") {
    TempDir dir("cli_failed_start");
    const std::string config = write_config(dir);
    std::ostringstream out;
    fault::arm("write", fault::Action::fail, 1);  // the first file the run writes
    require_error([&] { train::cli::run_train_command(args({config}, dir), out); },
                  {"No space left on device"});
    fault::disarm();
    CHECK_FALSE(fs::exists(dir.file("runs/tiny")));
}

TEST_CASE("lumen train --profile writes the table and a Chrome trace of the profiled steps",
          "[cli][train][profiler]") {
    TempDir dir("cli_profile");
    const std::string config = write_config(dir);
    std::ostringstream out;
    REQUIRE(train::cli::run_train_command(args({config, "--profile", "3"}, dir), out) == 0);
    const std::string run = dir.file("runs/tiny");
    CHECK(out.str().find("profile: 3 steps") != std::string::npos);
    CHECK(out.str().find("ops and backward nodes by total time") != std::string::npos);
    std::ifstream table(run + "/profile.txt");
    std::stringstream text;
    text << table.rdbuf();
    CHECK(text.str().find("linear backward") != std::string::npos);
    CHECK(text.str().find("matmul_forward") != std::string::npos);
    std::ifstream trace_file(run + "/profile.json");
    nlohmann::json trace = nlohmann::json::parse(trace_file);
    int64_t steps = 0, events = 0;
    for (const nlohmann::json& event : trace["traceEvents"]) {
        steps += event["ph"] == "i";
        events += event["ph"] == "X";
    }
    CHECK(steps == 3);
    CHECK(events > 100);
    // The run itself is unchanged: all 16 updates, then the summary.
    std::ifstream summary_file(run + "/summary.json");
    CHECK(nlohmann::json::parse(summary_file)["steps"] == 16);

    // More steps than the run has: the profile ends with the training (15 after the warm-up).
    std::ostringstream longer;
    REQUIRE(train::cli::run_train_command(args({config, "--profile=100"}, dir), longer) == 0);
    CHECK(longer.str().find("profile: 15 steps") != std::string::npos);
    require_error(
        [&] {
            train::cli::run_train_command(args({config, "--profile", "-1"}, dir), out);
        },
        {"train.profile"});
}
