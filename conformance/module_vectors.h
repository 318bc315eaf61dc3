// Shared steps of the check-vectors adapters for nn modules and models: put the module on the
// runner's device, set train/eval mode from the config, load the vector's p.* and b.* tensors
// into it by state_dict name (strictly: every parameter and buffer must be in the vector), and
// hand the module's own parameters back to the runner so that it compares the gradients the
// module received.
#pragma once

#include "conformance/op_vectors.h"
#include "nn/module.h"

namespace lumen::conformance {

// Reads the optional config key "mode" ("train", the default, or "eval"), moves `module` to
// call.device, loads call.params and call.buffers into it (a vector stores 0-d tensors such as
// num_batches_tracked with shape [1]; they are accepted), and replaces call.params[name] by the
// module's parameter `name`. Throws [<module>] naming any key that does not fit.
void bind_module(VectorCall& call, nn::Module& module);

}  // namespace lumen::conformance
