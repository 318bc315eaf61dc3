// Pretrained weights into a model (a config's model.init_from): a safetensors file whose keys
// are taken under a prefix, renamed by a key map (built in: the original PVTv2 / xmindflow-gdla
// names to timm's; or a JSON file of prefix renames and drops) and placed under a prefix of the
// model (e.g. an ImageNet PVTv2 into PVT-GDLA's "backbone."), with a report of what was loaded,
// missing, unexpected and shape-mismatched. Strict by default.
#pragma once

#include <string>
#include <vector>

#include "nn/module.h"

namespace lumen::train {

struct InitFromOptions {
    std::string path;           // a safetensors file
    std::string source_prefix;  // use only the file's keys under this prefix, removed ("module.")
    std::string target_prefix;  // prepended to each mapped key to name the model's ("backbone.")
    // "" (none), "whai362_pvt_v2" (models::whai362_to_timm), or a JSON file
    // {"rename": {"old_prefix": "new_prefix", ...}, "drop": ["prefix", ...]} (the longest
    // matching prefix of each list applies).
    std::string key_map;
    // Strict: every model key under target_prefix is loaded, every file key used, no shape
    // differs; otherwise nothing is changed and the error lists every problem. Not strict: what
    // fits is loaded and the rest reported.
    bool strict = true;
    bool allow_cast = true;  // a file dtype other than the parameter's is converted
};

struct InitReport {
    std::vector<std::string> loaded, missing, unexpected, dropped;
    std::vector<std::string> mismatched;  // "key: file [a, b] vs model [c, d]"
    int64_t model_keys = 0;               // the model's keys under target_prefix
};

// Throws [init_from] <path>: ... for a strict load that does not fit, a missing or damaged
// file (the reader's message), a key_map that is neither built in nor a readable JSON key map
// (naming the built-in ones), two file keys mapping to one model key, or a target_prefix under
// which the model has no key.
InitReport init_from(nn::Module& model, const InitFromOptions& options);

// "init_from PATH: loaded 3 of 5 keys under 'backbone.'" and, one line each when not empty,
// the missing, unexpected, shape-mismatched and dropped keys (the first 10 of each).
std::string format_init_report(const InitReport& report, const InitFromOptions& options);

// The built-in key maps.
std::vector<std::string> key_map_names();

}  // namespace lumen::train
