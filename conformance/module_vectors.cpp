// bind_module: the common part of every module adapter.
#include "conformance/module_vectors.h"

namespace lumen::conformance {

void bind_module(VectorCall& call, nn::Module& module) {
    std::string mode = call.config.get_string("mode", "train");
    LUMEN_CHECK(mode == "train" || mode == "eval", call.module,
                "config 'mode' must be 'train' or "
                "'eval', got '",
                mode, "'");
    module.train(mode == "train");
    module.to(call.device);
    std::map<std::string, Tensor> own = module.state_dict();
    std::map<std::string, Tensor> state;
    for (const TensorMap* group : {&call.params, &call.buffers}) {
        for (const auto& [name, tensor] : *group) {
            auto it = own.find(name);
            bool scalar = it != own.end() && it->second.ndim() == 0 && tensor.numel() == 1;
            state[name] = scalar ? tensor.reshape({}) : tensor;
        }
    }
    try {
        // The runner made every floating tensor float32 on purpose (make_leaf): cast.
        module.load_state_dict(state, true, true);
    } catch (const Error& e) {
        LUMEN_FAIL(call.module, e.what());
    }
    for (auto& [name, tensor] : call.params) tensor = module.tensor(name);
}

}  // namespace lumen::conformance
