// Sequential's forward and constructor.
#include "nn/container.h"

namespace lumen::nn {

Sequential::Sequential(std::vector<std::shared_ptr<Module>> modules) : Module("Sequential") {
    for (auto& module : modules) push_back(std::move(module));
}

Tensor Sequential::forward(const Tensor& x) {
    Tensor y = x;
    for (auto& module : modules_) y = module->forward(y);
    return y;
}

}  // namespace lumen::nn
