// save_state_dict / load_state_dict from files, on top of core/safetensors and Module.
#include "nn/state_dict.h"

#include "core/safetensors.h"

namespace lumen::nn {

void save_state_dict(const Module& module, const std::string& path,
                     const std::map<std::string, std::string>& metadata) {
    save_safetensors(path, module.state_dict(), metadata);
}

LoadReport load_state_dict(Module& module, const std::string& path, bool strict,
                           const KeyRename& rename, bool allow_cast) {
    SafetensorsFile file = load_safetensors(path);
    std::map<std::string, Tensor> state;
    for (auto& [key, tensor] : file.tensors) {
        std::string name = rename ? rename(key) : key;
        if (name.empty()) continue;
        LUMEN_CHECK(!state.count(name), "load_state_dict", path, ": two keys of the file map to '",
                    name, "' (the second is '", key, "')");
        state[name] = tensor;
    }
    try {
        return module.load_state_dict(state, strict, allow_cast);
    } catch (const Error& e) {
        std::string message = e.what();
        const std::string prefix = "[load_state_dict] ";
        if (message.rfind(prefix, 0) == 0) message = message.substr(prefix.size());
        LUMEN_FAIL("load_state_dict", path, ": ", message);
    }
}

}  // namespace lumen::nn
