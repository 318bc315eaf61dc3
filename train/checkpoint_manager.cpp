// CheckpointManager: step files, keep-last-k deletion, the best checkpoint as a hard link, and
// the index.json written after every save.
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fault.h"
#include "train/atomic_file.h"
#include "train/checkpoint.h"

namespace lumen::train {

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

constexpr const char* kBestFile = "best.safetensors";
constexpr const char* kIndexFile = "index.json";

// "step-000001234.safetensors": zero padding makes name order equal step order.
std::string step_file(int64_t step) {
    char name[64];
    std::snprintf(name, sizeof(name), "step-%09lld.safetensors", (long long)step);
    return name;
}

bool is_step_file(const std::string& name) {
    return name.rfind("step-", 0) == 0 && name.size() > 17 &&
           name.compare(name.size() - 12, 12, ".safetensors") == 0;
}

// The step files in the folder, oldest first.
std::vector<std::string> step_files(const std::string& directory) {
    std::vector<std::string> names;
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(directory, error))
        if (is_step_file(entry.path().filename().string()))
            names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

}  // namespace

CheckpointManager::CheckpointManager(std::string directory, CheckpointPolicy policy)
    : directory_(std::move(directory)), policy_(std::move(policy)) {
    LUMEN_CHECK(policy_.keep_last >= 1, "checkpoint", "keep_last must be >= 1, got ",
                policy_.keep_last);
    make_directories(directory_);
    kept_ = step_files(directory_);
}

std::string CheckpointManager::save(const nn::Module& module, const Optimizer& optimizer,
                                    CheckpointState state, std::optional<double> metric) {
    const std::string name = step_file(state.step);
    const std::string path = directory_ + "/" + name;
    bool better = metric && !policy_.best_metric.empty() &&
                  (!best_value_ ||
                   (policy_.higher_is_better ? *metric > *best_value_ : *metric < *best_value_));
    if (better) {
        best_value_ = metric;
        best_step_ = state.step;
    }
    state.best_value = best_value_;
    state.best_step = best_value_ ? best_step_ : -1;
    save_checkpoint(path, module, optimizer, state);
    kept_.erase(std::remove(kept_.begin(), kept_.end(), name), kept_.end());
    kept_.push_back(name);
    fault::at("checkpoint.before_best");
    if (better) link_best(path);
    fault::at("checkpoint.before_prune");
    while (int64_t(kept_.size()) > policy_.keep_last) {
        fs::remove(directory_ + "/" + kept_.front());
        kept_.erase(kept_.begin());
    }
    fault::at("checkpoint.before_index");
    write_index(name);
    return path;
}

void CheckpointManager::link_best(const std::string& step_path) const {
    // A hard link shares the file's data: deleting the step file later keeps best.
    const std::string best = directory_ + "/" + kBestFile, temp = best + ".partial";
    std::error_code error;
    fs::remove(temp, error);
    fs::create_hard_link(step_path, temp, error);
    if (error) fs::copy_file(step_path, temp, fs::copy_options::overwrite_existing);
    commit_file(temp, best);
}

std::vector<std::string> CheckpointManager::resume_from(const CheckpointState& state) {
    std::vector<std::string> repairs;
    best_value_ = state.best_value;
    best_step_ = state.best_value ? state.best_step : -1;
    const std::string best = directory_ + "/" + kBestFile;
    int64_t linked_step = -1;  // the step best.safetensors holds now (-1: none or unreadable)
    std::error_code error;
    if (fs::exists(best, error)) {
        try {
            linked_step = read_checkpoint_state(best).step;
        } catch (const Error&) {
        }
    }
    if (linked_step == best_step_) return repairs;
    if (best_step_ < 0) {
        fs::remove(best, error);
        repairs.push_back(best +
                          ": removed; it came after the checkpoint resumed from, which "
                          "had no best yet");
        return repairs;
    }
    const std::string source = directory_ + "/" + step_file(best_step_);
    if (!fs::exists(source, error)) {
        repairs.push_back(best + ": holds step " + std::to_string(linked_step) +
                          " but the best recorded is step " + std::to_string(best_step_) +
                          ", whose file is gone; left as is");
        return repairs;
    }
    link_best(source);
    repairs.push_back(best + ": relinked to step " + std::to_string(best_step_) +
                      ", the best recorded in the checkpoint (it held " +
                      (linked_step < 0 ? std::string("nothing readable")
                                       : "step " + std::to_string(linked_step)) +
                      ")");
    write_index(kept_.empty() ? "" : kept_.back());
    return repairs;
}

void CheckpointManager::write_index(const std::string& latest_file) const {
    Json index{{"latest", latest_file}, {"kept", kept_}};
    if (best_value_)
        index["best"] = {{"file", kBestFile},
                         {"metric", policy_.best_metric},
                         {"value", *best_value_},
                         {"step", best_step_}};
    write_text_atomically(directory_ + "/" + kIndexFile, index.dump(2) + "\n");
}

std::string CheckpointManager::latest(const std::string& directory,
                                      std::vector<std::string>* skipped) {
    std::vector<std::string> names = step_files(directory);
    for (auto it = names.rbegin(); it != names.rend(); ++it) {
        const std::string path = directory + "/" + *it;
        try {
            read_checkpoint_state(path);
            return path;
        } catch (const Error& e) {
            // Damaged (save is atomic, so not by a kill): try the one before.
            if (skipped) skipped->push_back(e.what());
        }
    }
    return "";
}

}  // namespace lumen::train
