// The vector-adapter registry, the config/input readers adapters use, and the adapters for
// single ops ("op.<torch function>"): kwargs by PyTorch name, PyTorch's defaults when absent.
#include "conformance/op_vectors.h"

#include <utility>

#include "core/error.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "ops/softmax.h"

namespace lumen::conformance {

using Json = nlohmann::json;

// ---- config ----

VectorConfig::VectorConfig(Json config, std::string module)
    : json_(std::move(config)), module_(std::move(module)) {
    LUMEN_CHECK(json_.is_object(), module_, "config must be a JSON object, got ", json_.dump());
}

const Json* VectorConfig::find(const std::string& key) {
    known_.insert(key);
    auto it = json_.find(key);
    return it == json_.end() ? nullptr : &*it;
}

bool VectorConfig::has(const std::string& key) { return find(key) != nullptr; }

const Json& VectorConfig::get(const std::string& key) {
    static const Json kNull;
    const Json* value = find(key);
    return value ? *value : kNull;
}

const Json& VectorConfig::all() {
    all_known_ = true;
    return json_;
}

int64_t VectorConfig::get_int(const std::string& key) {
    const Json* value = find(key);
    LUMEN_CHECK(value != nullptr, module_, "config has no '", key, "' (required)");
    LUMEN_CHECK(value->is_number_integer(), module_, "config '", key, "' must be an integer, got ",
                value->dump());
    return value->get<int64_t>();
}

int64_t VectorConfig::get_int(const std::string& key, int64_t fallback) {
    return has(key) ? get_int(key) : fallback;
}

double VectorConfig::get_double(const std::string& key, double fallback) {
    const Json* value = find(key);
    if (value == nullptr) return fallback;
    LUMEN_CHECK(value->is_number(), module_, "config '", key, "' must be a number, got ",
                value->dump());
    return value->get<double>();
}

bool VectorConfig::get_bool(const std::string& key, bool fallback) {
    const Json* value = find(key);
    if (value == nullptr) return fallback;
    LUMEN_CHECK(value->is_boolean(), module_, "config '", key, "' must be true or false, got ",
                value->dump());
    return value->get<bool>();
}

std::string VectorConfig::get_string(const std::string& key, const std::string& fallback) {
    const Json* value = find(key);
    if (value == nullptr) return fallback;
    LUMEN_CHECK(value->is_string(), module_, "config '", key, "' must be a string, got ",
                value->dump());
    return value->get<std::string>();
}

std::vector<int64_t> VectorConfig::get_ints(const std::string& key,
                                            const std::vector<int64_t>& fallback) {
    const Json* value = find(key);
    if (value == nullptr || value->is_null()) return fallback;
    if (value->is_number_integer()) return {value->get<int64_t>()};
    std::vector<int64_t> out;
    bool ok = value->is_array();
    for (const Json& item : ok ? *value : Json::array()) {
        ok = ok && item.is_number_integer();
        if (ok) out.push_back(item.get<int64_t>());
    }
    LUMEN_CHECK(ok, module_, "config '", key, "' must be an integer or a list of integers, got ",
                value->dump());
    return out;
}

void VectorConfig::check_all_read() const {
    if (all_known_) return;
    for (const auto& [key, unused] : json_.items()) {
        if (known_.count(key)) continue;
        std::string reads;
        for (const std::string& name : known_) reads += (reads.empty() ? "" : ", ") + name;
        LUMEN_FAIL(module_, "unsupported config key '", key,
                   "' (this adapter reads: ", reads.empty() ? "no keys" : reads, ")");
    }
}

// ---- inputs ----

const Tensor& VectorCall::input(const std::string& name) {
    auto it = inputs.find(name);
    LUMEN_CHECK(it != inputs.end(), module, "the vector has no input 'in.", name, "'");
    inputs_read_.insert(name);
    return it->second;
}

Tensor VectorCall::optional_input(const std::string& name) {
    return inputs.count(name) ? input(name) : Tensor();
}

void VectorCall::check_all_used() const {
    for (const auto& [name, unused] : inputs)
        LUMEN_CHECK(inputs_read_.count(name), module, "the vector has input 'in.", name,
                    "' that this adapter does not take");
    config.check_all_read();
}

// ---- registry ----

namespace {
// A function-local static: registrations from other files' static initializers may run
// before any global of this file is constructed.
std::map<std::string, VectorAdapter>& registry() {
    static std::map<std::string, VectorAdapter> adapters;
    return adapters;
}
}  // namespace

void register_vector_adapter(const std::string& module, VectorAdapter adapter) {
    LUMEN_CHECK(!registry().count(module), "check-vectors", "module '", module,
                "' already has an adapter");
    registry()[module] = std::move(adapter);
}

const VectorAdapter* find_vector_adapter(const std::string& module) {
    auto it = registry().find(module);
    return it == registry().end() ? nullptr : &it->second;
}

std::vector<std::string> vector_adapter_names() {
    std::vector<std::string> names;
    for (const auto& [name, unused] : registry()) names.push_back(name);
    return names;
}

// ---- op adapters ----

namespace {

TensorMap output(const Tensor& y) { return {{"y", y}}; }

// torch.var(input, dim=None, unbiased=True, keepdim=False) and the newer
// torch.var(input, dim=None, *, correction=1, keepdim=False).
TensorMap var_adapter(VectorCall& call) {
    bool has_unbiased = call.config.has("unbiased");
    bool has_correction = call.config.has("correction");
    LUMEN_CHECK(!(has_unbiased && has_correction), call.module,
                "config gives both 'unbiased' and 'correction'; PyTorch accepts only one");
    double correction = call.config.get_double("correction", 1.0);
    if (has_unbiased) correction = call.config.get_bool("unbiased", true) ? 1.0 : 0.0;
    Dims dims = call.config.get_ints("dim", {});
    bool keepdim = call.config.get_bool("keepdim", false);
    return output(var(call.input("input"), dims, correction, keepdim));
}

// `inplace` (relu, silu, elu) changes only where the result is stored, never its values.
void accept_inplace(VectorCall& call) { call.config.get_bool("inplace", false); }

const VectorAdapterRegistration kMatmul("op.matmul", [](VectorCall& call) {
    return output(matmul(call.input("input"), call.input("other")));
});
const VectorAdapterRegistration kSoftmax("op.softmax", [](VectorCall& call) {
    return output(softmax(call.input("input"), call.config.get_int("dim")));
});
const VectorAdapterRegistration kLogSoftmax("op.log_softmax", [](VectorCall& call) {
    return output(log_softmax(call.input("input"), call.config.get_int("dim")));
});
const VectorAdapterRegistration kGelu("op.gelu", [](VectorCall& call) {
    return output(gelu(call.input("input"), call.config.get_string("approximate", "none")));
});
const VectorAdapterRegistration kSilu("op.silu", [](VectorCall& call) {
    accept_inplace(call);
    return output(silu(call.input("input")));
});
const VectorAdapterRegistration kElu("op.elu", [](VectorCall& call) {
    accept_inplace(call);
    return output(elu(call.input("input"), call.config.get_double("alpha", 1.0)));
});
const VectorAdapterRegistration kSigmoid("op.sigmoid", [](VectorCall& call) {
    return output(sigmoid(call.input("input")));
});
const VectorAdapterRegistration kTanh("op.tanh", [](VectorCall& call) {
    return output(tanh(call.input("input")));
});
const VectorAdapterRegistration kRelu("op.relu", [](VectorCall& call) {
    accept_inplace(call);
    return output(relu(call.input("input")));
});
const VectorAdapterRegistration kSoftplus("op.softplus", [](VectorCall& call) {
    double beta = call.config.get_double("beta", 1.0);
    double threshold = call.config.get_double("threshold", 20.0);
    return output(softplus(call.input("input"), beta, threshold));
});
const VectorAdapterRegistration kVar("op.var", var_adapter);

}  // namespace

}  // namespace lumen::conformance
