// Vector adapters for `lumen check-vectors`: a registry from an oracle vector's `module` string
// ("op.softmax", later "nn.LayerNorm", "vit", ...) to a function that runs lumen on the
// vector's inputs and returns its outputs. The op adapters live in op_vectors.cpp; modules and
// models add theirs in their own conformance/<family>/*_vectors.cpp with one registration each:
//   const VectorAdapterRegistration kConv2d("op.conv2d", [](VectorCall& call) { ... });
// The runner (check_vectors.h) loads the file, builds the VectorCall and compares the outputs.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tensor.h"

namespace lumen::conformance {

using TensorMap = std::map<std::string, Tensor>;

// A vector's `config` (PyTorch keyword arguments for op.*, constructor config for modules),
// read key by key. Each key an adapter asks for, present or not, becomes known; after the
// adapter ran, the runner calls check_all_read() so that a kwarg lumen does not support (or a
// typo) fails the vector instead of being ignored. Getters without a fallback require the key.
// Every getter throws lumen::Error "[<module>] config '<key>' ..." on a missing required key
// or a value of the wrong JSON type.
class VectorConfig {
  public:
    // Throws [<module>] when `config` is not a JSON object.
    VectorConfig(nlohmann::json config, std::string module);

    bool has(const std::string& key);
    int64_t get_int(const std::string& key);
    int64_t get_int(const std::string& key, int64_t fallback);
    double get_double(const std::string& key, double fallback);  // accepts ints too
    bool get_bool(const std::string& key, bool fallback);
    std::string get_string(const std::string& key, const std::string& fallback);
    // A list of ints, or a single int as a one-element list (PyTorch's `dim: int | list`);
    // null or absent gives `fallback`.
    std::vector<int64_t> get_ints(const std::string& key, const std::vector<int64_t>& fallback);
    // The raw value (null when absent); marks the key known.
    const nlohmann::json& get(const std::string& key);
    // The whole object, for an adapter that hands it to a typed config parser which rejects
    // unknown keys itself; marks every key known.
    const nlohmann::json& all();

    // Throws "[<module>] unsupported config key '<key>' (this adapter reads: a, b)".
    void check_all_read() const;

  private:
    const nlohmann::json* find(const std::string& key);
    nlohmann::json json_;
    std::string module_;
    std::set<std::string> known_;
    bool all_known_ = false;
};

// Everything an adapter gets. Tensors are on the device the runner was asked for; floating
// ones are float32. Inputs with a grad.in.* entry and all floating params are leaves with
// requires_grad; the runner reads their .grad() after backward.
struct VectorCall {
    VectorCall(nlohmann::json config_json, const std::string& module_name)
        : config(std::move(config_json), module_name), module(module_name) {}

    // in.<name>, read through input() so that the runner can reject inputs nobody used.
    TensorMap inputs;
    // p.<name> (state_dict keys). An adapter that copies them into a module instead of using
    // these tensors must store the module's own parameter tensors back here under the same
    // names, so that the runner compares the gradients the module actually received.
    TensorMap params;
    TensorMap buffers;  // b.<name>
    VectorConfig config;
    std::string module;
    Device device = Device::cpu();  // where the runner put the tensors (modules move there)

    // The input `name`; throws "[<module>] the vector has no input 'in.<name>'".
    const Tensor& input(const std::string& name);
    // The input `name`, or an undefined Tensor when the vector has none (optional arguments
    // such as a bias).
    Tensor optional_input(const std::string& name);
    // Throws naming the first in.* tensor no adapter asked for, then config keys likewise.
    void check_all_used() const;

  private:
    std::set<std::string> inputs_read_;
};

// Runs one vector: returns its outputs by name without the "out." prefix ("y" when there is
// one output). Throws lumen::Error for anything it cannot run.
using VectorAdapter = std::function<TensorMap(VectorCall& call)>;

// Adds an adapter; throws [check-vectors] if `module` already has one.
void register_vector_adapter(const std::string& module, VectorAdapter adapter);
// The adapter for `module`, or nullptr.
const VectorAdapter* find_vector_adapter(const std::string& module);
// All registered module strings, sorted.
std::vector<std::string> vector_adapter_names();

// Registers at static-initialization time, so that a file that defines adapters needs no
// edit elsewhere. Only for files compiled straight into the CLI and the tests (train/cli,
// conformance): the linker drops unreferenced objects of a static library, registrations included.
struct VectorAdapterRegistration {
    VectorAdapterRegistration(const std::string& module, VectorAdapter adapter) {
        register_vector_adapter(module, std::move(adapter));
    }
};

}  // namespace lumen::conformance
