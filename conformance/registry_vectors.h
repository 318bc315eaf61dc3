// The whole-model adapters build their models through the model registry (models/registry.h)
// with the options `lumen models` lists and configs set, so that the vectors check the models a
// config builds. A vector's config holds the reference constructor's keyword arguments, which
// the registry's keys are named after; the few exceptions are each adapter's RegistryModel.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "conformance/op_vectors.h"
#include "nn/module.h"
#include "nn/options.h"

namespace lumen::conformance {

// How the configs of one reference model's vectors map onto a registry entry. Every key
// becomes the entry's option of the same name, except that
//  - a nested object's keys join its name with '_' ({"encoder": {"depths": ..}} sets
//    encoder_depths, {"hyena": {"l_max": ..}} hyena_l_max), and null (Python's None) is left out;
//  - a single integer for a list option is a one-item list (PyTorch's int-or-tuple arguments);
//  - `renamed` maps a key (after the joining) to the entry's name for it;
//  - `adapter_keys` are the adapter's own: how to run the model, or preset keys it checks
//    against the built model instead of setting them ("mode" always is: bind_module reads it);
//  - `reference_defaults` hold the reference constructor's defaults where they differ from
//    the paper's (the entry's), for the keys a vector leaves out.
struct RegistryModel {
    std::string name;  // the registry entry
    std::map<std::string, std::string> renamed = {};
    std::vector<std::string> adapter_keys = {};
    std::map<std::string, nn::OptionValue> reference_defaults = {};
};

// Builds `model.name` with models::build_model from the options of call.config (mapped as
// above) and `derived` (options the adapter computed from its own keys, e.g. img_size from
// time, height, width), then binds it to the vector (bind_module). Throws [<call.module>] with
// the registry's message for a key that is no option of the entry ("model 'pvt_segnet' has no
// option 'encoder_depth'; did you mean 'encoder_depths'?") or a value it refuses.
std::shared_ptr<nn::Module> build_registry_model(VectorCall& call, const RegistryModel& model,
                                                 const nn::Options& derived = nn::Options());

}  // namespace lumen::conformance
