// CheckpointManager: step files, keep-last-k deletion, the best checkpoint as a hard link, and
// the index.json written after every save.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
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
    // A resumed run continues the previous best; an unreadable index only loses that record.
    std::ifstream in(directory_ + "/" + kIndexFile);
    if (!in) return;
    try {
        Json index = Json::parse(in);
        if (index.contains("best") && index["best"].is_object()) {
            best_value_ = index["best"].at("value").get<double>();
            best_step_ = index["best"].at("step").get<int64_t>();
        }
    } catch (const Json::exception&) {
    }
}

std::string CheckpointManager::save(const nn::Module& module, const Optimizer& optimizer,
                                    const CheckpointState& state, std::optional<double> metric) {
    const std::string name = step_file(state.step);
    const std::string path = directory_ + "/" + name;
    save_checkpoint(path, module, optimizer, state);
    kept_.erase(std::remove(kept_.begin(), kept_.end(), name), kept_.end());
    kept_.push_back(name);
    bool better = metric && !policy_.best_metric.empty() &&
                  (!best_value_ ||
                   (policy_.higher_is_better ? *metric > *best_value_ : *metric < *best_value_));
    if (better) {
        // A hard link shares the file's data: deleting the step file later keeps best.
        const std::string best = directory_ + "/" + kBestFile, temp = best + ".partial";
        std::error_code error;
        fs::remove(temp, error);
        fs::create_hard_link(path, temp, error);
        if (error) fs::copy_file(path, temp, fs::copy_options::overwrite_existing);
        commit_file(temp, best);
        best_value_ = metric;
        best_step_ = state.step;
    }
    while (int64_t(kept_.size()) > policy_.keep_last) {
        fs::remove(directory_ + "/" + kept_.front());
        kept_.erase(kept_.begin());
    }
    write_index(name);
    return path;
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

std::string CheckpointManager::latest(const std::string& directory) {
    std::vector<std::string> names = step_files(directory);
    for (auto it = names.rbegin(); it != names.rend(); ++it) {
        const std::string path = directory + "/" + *it;
        try {
            read_checkpoint_state(path);
            return path;
        } catch (const Error&) {
            // A damaged file (not produced by save, which is atomic): try the one before.
        }
    }
    return "";
}

}  // namespace lumen::train
