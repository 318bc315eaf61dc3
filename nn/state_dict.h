// Module weights as safetensors files: the keys are the module's state_dict names, i.e. the
// PyTorch state_dict keys, so `safetensors.torch.save_file(model.state_dict(), path)` in
// PyTorch produces a file that load_state_dict below reads, and the other way round.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "nn/module.h"

namespace lumen::nn {

// Writes module.state_dict() (parameters and persistent buffers, any device) to `path`
// atomically (temp file + rename). Throws [safetensors] <path>: ... on I/O errors.
void save_state_dict(const Module& module, const std::string& path,
                     const std::map<std::string, std::string>& metadata = {});

// Maps a key of a foreign checkpoint to lumen's name; return "" to drop the key.
using KeyRename = std::function<std::string(const std::string&)>;

// Reads `path` and loads it into `module` (Module::load_state_dict semantics: shape mismatches
// always throw, dtype mismatches unless `allow_cast`, missing/unexpected keys when `strict`).
// `rename`, when given, maps every key of the file first (checkpoints saved with other
// names). Errors name the file:
// "[load_state_dict] <path>: state dict does not fit ViT: missing keys: ...".
LoadReport load_state_dict(Module& module, const std::string& path, bool strict = true,
                           const KeyRename& rename = nullptr, bool allow_cast = false);

}  // namespace lumen::nn
