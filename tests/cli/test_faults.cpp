// Crash safety of `lumen train`, with real kills: a child `lumen` process is killed (SIGKILL)
// at each named point of the checkpoint sequence and of the metrics log (core/fault.h), or
// meets a full disk there, and `lumen train --resume` must then end exactly where a run that
// was never interrupted ends: the same weights bit for bit, the same metric records (timings
// aside), the same best checkpoint. Also a damaged newest checkpoint (skipped with a warning)
// and a torn metrics line (dropped).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include "core/safetensors.h"
#include "support/gradcheck.h"
#include "support/tiny_config.h"
#include "train/checkpoint.h"

using namespace lumen;
using namespace lumen::testing;
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

struct Outcome {
    bool killed = false;  // ended by SIGKILL
    int status = -1;      // exit status when not killed by a signal
    std::string output;   // stdout and stderr
};

// Runs the lumen binary with `args`, and LUMEN_FAULT_INJECT=`fault` when not empty.
Outcome run_lumen(const std::vector<std::string>& args, const std::string& fault,
                  const std::string& log) {
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 1);
        dup2(fd, 2);
        if (fault.empty())
            unsetenv("LUMEN_FAULT_INJECT");
        else
            setenv("LUMEN_FAULT_INJECT", fault.c_str(), 1);
        std::vector<char*> argv = {const_cast<char*>(LUMEN_CLI)};
        for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        execv(LUMEN_CLI, argv.data());
        _exit(127);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    Outcome out;
    out.killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    out.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream in(log);
    out.output.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    return out;
}

// The tiny run (support/tiny_config.h) with a checkpoint every 3 updates besides each epoch
// end, the best by test loss, and its runs under `dir`.
std::string write_config(const TempDir& dir) {
    const std::string path = dir.file("fault.json");
    std::ofstream(path) << tiny_config_json(
        "fault", 5,
        R"("checkpoint": {"every_steps": 3, "keep_last": 2, "best_metric": "test_loss"})");
    return path;
}

// `lumen train CONFIG` with the runs under dir/runs and the run named `name`.
std::vector<std::string> train_args(const std::string& config, const TempDir& dir,
                                    const std::string& name) {
    return {"train", config,        "--set", "output.runs_dir=" + dir.file("runs"),
            "--set", "name=" + name};
}

std::map<std::string, std::vector<double>> tensors_of(const std::string& path) {
    std::map<std::string, std::vector<double>> out;
    for (auto& [name, t] : load_safetensors(path).tensors) out[name] = t.to_vector<double>();
    return out;
}

// The metric records without the timings.
std::vector<Json> records_of(const std::string& run) {
    std::vector<Json> out;
    std::ifstream in(run + "/metrics.jsonl");
    for (std::string line; std::getline(in, line);) {
        Json j = Json::parse(line);
        j.erase("train_seconds");
        out.push_back(j);
    }
    return out;
}

struct RunResult {
    std::map<std::string, std::vector<double>> weights;
    std::vector<Json> records;
    int64_t best_step = -1;
    Json index_best;
};

RunResult result_of(const std::string& run) {
    RunResult r;
    r.weights = tensors_of(run + "/model.safetensors");
    r.records = records_of(run);
    r.best_step = train::read_checkpoint_state(run + "/checkpoints/best.safetensors").step;
    std::ifstream index(run + "/checkpoints/index.json");
    r.index_best = Json::parse(index)["best"];
    return r;
}

void require_same(const RunResult& got, const RunResult& want) {
    CHECK(got.best_step == want.best_step);
    CHECK(got.index_best == want.index_best);
    REQUIRE(got.records.size() == want.records.size());
    for (size_t i = 0; i < want.records.size(); ++i) {
        INFO("record " << i);
        CHECK(got.records[i].dump() == want.records[i].dump());
    }
    REQUIRE(got.weights.size() == want.weights.size());
    for (const auto& [name, values] : want.weights) {
        INFO(name);
        CHECK(got.weights.at(name) == values);  // every bit
    }
}

}  // namespace

TEST_CASE("a kill at any point of the checkpoint sequence resumes to the same end",
          "[cli][fault][resume]") {
    TempDir dir("faults_kill");
    const std::string config = write_config(dir);
    const std::string log = dir.file("log.txt");
    Outcome whole = run_lumen(train_args(config, dir, "whole"), "", log);
    REQUIRE(whole.status == 0);
    const RunResult want = result_of(dir.file("runs/whole"));
    CHECK(want.records.size() == 10);  // 8 step records and 2 epoch records

    // Each point at a pass after the first checkpoint (a run killed before it has nothing to
    // resume from, and must be started again).
    // 7 checkpoints are saved (steps 3, 6, 8, 9, 12, 15, 16; the epoch ends at 8 and 16 are
    // evaluated and may become the best), each about 90 tensors.
    const std::vector<std::string> faults = {
        "safetensors.data@150:kill",      "safetensors.data@600:kill",
        "atomic.before_rename@9:kill",    "atomic.after_rename@12:kill",
        "checkpoint.before_best@3:kill",  "checkpoint.before_best@7:kill",
        "checkpoint.before_prune@3:kill", "checkpoint.before_index@4:kill",
        "run_log.mid_record@5:kill"};
    int index = 0;
    for (const std::string& fault : faults) {
        INFO(fault);
        const std::string name = "kill" + std::to_string(index++);
        const std::string run = dir.file("runs/" + name);
        Outcome killed = run_lumen(train_args(config, dir, name), fault, log);
        INFO(killed.output);
        REQUIRE(killed.killed);
        Outcome resumed = run_lumen({"train", "--resume", run}, "", log);
        INFO(resumed.output);
        REQUIRE(resumed.status == 0);
        if (fault.rfind("run_log", 0) == 0)
            CHECK(resumed.output.find("a record cut short") != std::string::npos);
        require_same(result_of(run), want);
    }
}

TEST_CASE("a full disk during a checkpoint fails cleanly and the run resumes to the same end",
          "[cli][fault][resume]") {
    TempDir dir("faults_disk");
    const std::string config = write_config(dir);
    const std::string log = dir.file("log.txt");
    REQUIRE(run_lumen(train_args(config, dir, "whole"), "", log).status == 0);
    const RunResult want = result_of(dir.file("runs/whole"));
    for (int hit : {200, 500}) {
        INFO("write@" << hit);
        const std::string name = "full" + std::to_string(hit);
        const std::string run = dir.file("runs/" + name);
        Outcome failed =
            run_lumen(train_args(config, dir, name), "write@" + std::to_string(hit) + ":fail", log);
        INFO(failed.output);
        REQUIRE(failed.status == 1);
        CHECK(failed.output.find("write failed: No space left on device") != std::string::npos);
        CHECK(failed.output.find(run) != std::string::npos);  // names the file
        for (const auto& entry : fs::recursive_directory_iterator(run))
            for (const char* temp : {".partial", ".tmp"})  // nothing half-written left
                CHECK(entry.path().extension() != temp);
        Outcome resumed = run_lumen({"train", "--resume", run}, "", log);
        INFO(resumed.output);
        REQUIRE(resumed.status == 0);
        require_same(result_of(run), want);
    }
}

TEST_CASE("a damaged newest checkpoint is skipped with a warning and the run resumes",
          "[cli][fault][resume]") {
    TempDir dir("faults_damaged");
    const std::string config = write_config(dir);
    const std::string log = dir.file("log.txt");
    REQUIRE(run_lumen(train_args(config, dir, "whole"), "", log).status == 0);
    const RunResult want = result_of(dir.file("runs/whole"));
    const std::string run = dir.file("runs/part");
    std::vector<std::string> part = train_args(config, dir, "part");
    part.insert(part.end(), {"--set", "train.max_steps=12"});
    REQUIRE(run_lumen(part, "", log).status == 0);
    const std::string newest = run + "/checkpoints/step-000000012.safetensors";
    REQUIRE(fs::exists(newest));
    {
        std::fstream f(newest, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(-7, std::ios::end);
        f.put('\x55');
    }
    Outcome resumed = run_lumen({"train", "--resume", run, "--set", "train.max_steps=0"}, "", log);
    INFO(resumed.output);
    REQUIRE(resumed.status == 0);
    CHECK(resumed.output.find("warning: skipping a damaged checkpoint: [safetensors] " + newest +
                              ": checksum mismatch") != std::string::npos);
    CHECK(resumed.output.find("using " + run + "/checkpoints/step-000000009.safetensors instead") !=
          std::string::npos);
    require_same(result_of(run), want);
}
