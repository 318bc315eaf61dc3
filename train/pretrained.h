// Pretrained weights into a model (a config's model.init_from): the keys of a safetensors file
// are taken under a source prefix, renamed by a key map (built in: the original PVTv2 names to
// timm's; or a JSON file of prefix renames and drops) and placed under a prefix of the model
// (e.g. an ImageNet PVTv2 into PVT-GDLA's "backbone."), with a report of what was loaded,
// missing, unexpected and mismatched. Strict by default. Copying is nn::Module::load_state_dict's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nn/module.h"

namespace lumen::train {

// A file key K becomes the model key target_prefix + key_map(K without source_prefix).
struct InitFromOptions {
    std::string path;           // a safetensors file
    std::string source_prefix;  // "" (all keys) or only the keys under it, removed ("module.")
    std::string target_prefix;  // "" or the model's keys to fill ("backbone."); ends with '.'
    // "" (none); "whai362_pvt_v2": the original PVTv2 / xmindflow-gdla names to timm's
    // (models::whai362_to_timm; keys under "backbone." are renamed under that prefix, as the
    // official PVT-GDLA checkpoints store their encoder); or the path of a JSON file
    // {"rename": {"old_prefix": "new_prefix", ...}, "drop": ["prefix", ...]}: the longest
    // prefix of either list that a key starts with applies, and a key matching none is kept.
    std::string key_map;
    // Strict: every model key under target_prefix is filled, every file key (not dropped) is
    // used and no shape differs; otherwise the error lists every problem and nothing changes.
    // Not strict: every key that matches in name and shape (and dtype, see allow_cast) is
    // loaded, the rest reported.
    bool strict = true;
    // A floating file tensor (float64, float16, bfloat16) is converted to its parameter's
    // floating dtype; other dtype differences are mismatches.
    bool allow_cast = true;
};

// Model keys (target_prefix included), sorted, except `unexpected` (the model key the file key
// became, with " (file key 'K')" when K differs) and `dropped` (file keys).
struct InitReport {
    std::vector<std::string> loaded, missing, unexpected, dropped;
    // "key: file [7] vs model [256]", or "key: file int64 vs model float32" for a dtype.
    std::vector<std::string> mismatched;
    int64_t model_keys = 0;  // the model's keys under target_prefix
};

// Loads what fits into `model`'s own tensors in place (handles that an optimizer holds stay
// valid; values move to each tensor's device). Reads the file once, memory-mapped.
// Throws [init_from] <path>: ... before changing anything for: a strict load that does not fit
// (listing every missing, unexpected and mismatched key with both shapes); a non-strict load
// that fits no key at all; a missing or damaged file (the safetensors reader's reason); a
// key_map neither built in nor a readable JSON key map (naming the built-in ones); two file keys
// that map to one model key; a prefix not ending in '.'; a source_prefix that no file key
// starts with; a target_prefix under which the model has no key.
InitReport init_from(nn::Module& model, const InitFromOptions& options);

// "init_from PATH: loaded 3 of 5 keys under 'backbone.'" and, one indented line each when not
// empty, the missing, unexpected, mismatched and dropped keys (the first 10 of each, then
// "... and N more").
std::string format_init_report(const InitReport& report, const InitFromOptions& options);

// The built-in key maps: {"whai362_pvt_v2"}.
std::vector<std::string> key_map_names();

}  // namespace lumen::train
