// The conformance runner: file discovery, building an adapter call from a vector's tensors,
// the backward pass of loss = sum_k <out_k, dout_k>, and the tolerance comparison (finite
// values within atol + rtol |want|, the vector's or the tensor's own pair; infinities and NaNs
// exactly, position by position).
#include "conformance/check_vectors.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iomanip>
#include <sstream>
#include <tuple>
#include <utility>

#include <nlohmann/json.hpp>

#include "conformance/op_vectors.h"
#include "core/autograd.h"
#include "core/error.h"
#include "core/json_strict.h"
#include "core/safetensors.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"

namespace lumen::conformance {

namespace fs = std::filesystem;

namespace {

// The vector generator's default tolerances, used when a vector's metadata omits them.
constexpr double kDefaultRtol = 1e-4;
constexpr double kDefaultAtol = 1e-5;

struct Tolerance {
    double rtol = kDefaultRtol;
    double atol = kDefaultAtol;
};

// The vector's rtol/atol, and the optional metadata 'tolerance': a JSON object from tensor
// names ("out.y", "grad.in.input") to [rtol, atol] pairs that replace the vector's for those
// tensors.
struct Tolerances {
    Tolerance all;
    std::map<std::string, Tolerance> tensors;
    const Tolerance& of(const std::string& name) const {
        auto it = tensors.find(name);
        return it == tensors.end() ? all : it->second;
    }
};

// A vector's tensors grouped by role, with the prefix removed ("in.input" -> in["input"]).
struct VectorTensors {
    TensorMap in, p, b, out, dout, grad_in, grad_p;
};

VectorTensors group_tensors(const TensorMap& all) {
    VectorTensors groups;
    // Longer prefixes first: "grad.in." must not be taken for "in." of "grad.in.x".
    const std::pair<std::string, TensorMap*> prefixes[] = {{"grad.in.", &groups.grad_in},
                                                           {"grad.p.", &groups.grad_p},
                                                           {"dout.", &groups.dout},
                                                           {"out.", &groups.out},
                                                           {"in.", &groups.in},
                                                           {"p.", &groups.p},
                                                           {"b.", &groups.b}};
    for (const auto& [name, tensor] : all) {
        auto match = std::find_if(std::begin(prefixes), std::end(prefixes), [&](const auto& p) {
            return name.size() > p.first.size() && name.compare(0, p.first.size(), p.first) == 0;
        });
        LUMEN_CHECK(match != std::end(prefixes), "check-vectors", "unexpected tensor '", name,
                    "' (names start with in., p., b., out., dout., grad.in. or grad.p.)");
        (*match->second)[name.substr(match->first.size())] = tensor;
    }
    return groups;
}

// Every dout/grad entry must refer to a tensor the vector has.
void check_references(const VectorTensors& t) {
    const std::tuple<const TensorMap*, const TensorMap*, const char*, const char*> links[] = {
        {&t.dout, &t.out, "dout.", "out."},
        {&t.grad_in, &t.in, "grad.in.", "in."},
        {&t.grad_p, &t.p, "grad.p.", "p."}};
    for (const auto& [refs, targets, ref_prefix, target_prefix] : links) {
        for (const auto& [name, unused] : *refs)
            LUMEN_CHECK(targets->count(name), "check-vectors", "the vector has '", ref_prefix, name,
                        "' but no '", target_prefix, name, "'");
    }
}

double metadata_number(const std::map<std::string, std::string>& metadata, const char* key,
                       double fallback) {
    auto it = metadata.find(key);
    if (it == metadata.end()) return fallback;
    // strtod, not stod: a denormal tolerance ("1.2e-322") underflows, which stod refuses.
    const char* text = it->second.c_str();
    char* end = nullptr;
    double value = std::strtod(text, &end);
    size_t used = it->second.empty() || std::isspace(static_cast<unsigned char>(text[0]))
                      ? 0
                      : size_t(end - text);
    if (!std::isfinite(value)) used = 0;
    LUMEN_CHECK(used == it->second.size() && used > 0 && value >= 0, "check-vectors", "metadata '",
                key, "' must be a non-negative number, got '", it->second, "'");
    return value;
}

Tolerances parse_tolerances(const std::map<std::string, std::string>& metadata,
                            const TensorMap& tensors) {
    Tolerances tol;
    tol.all.rtol = metadata_number(metadata, "rtol", kDefaultRtol);
    tol.all.atol = metadata_number(metadata, "atol", kDefaultAtol);
    auto it = metadata.find("tolerance");
    if (it == metadata.end()) return tol;
    nlohmann::json json = parse_json_strict(it->second, "check-vectors", "metadata 'tolerance'", 4);
    LUMEN_CHECK(json.is_object(), "check-vectors",
                "metadata 'tolerance' must be a JSON object of [rtol, atol] pairs, got ",
                json.dump());
    for (const auto& [name, pair] : json.items()) {
        bool ok = pair.is_array() && pair.size() == 2 && pair[0].is_number() &&
                  pair[1].is_number() && pair[0].get<double>() >= 0 && pair[1].get<double>() >= 0;
        LUMEN_CHECK(ok, "check-vectors", "metadata 'tolerance' of '", name,
                    "' must be [rtol, atol] with two non-negative numbers, got ", pair.dump());
        bool compared = name.rfind("out.", 0) == 0 || name.rfind("grad.", 0) == 0;
        LUMEN_CHECK(compared && tensors.count(name), "check-vectors",
                    "metadata 'tolerance' names '", name,
                    "', which is not an out.* or grad.* tensor of the vector");
        tol.tensors[name] = {pair[0].get<double>(), pair[1].get<double>()};
    }
    return tol;
}

nlohmann::json parse_config(const std::map<std::string, std::string>& metadata) {
    auto it = metadata.find("config");
    if (it == metadata.end()) return nlohmann::json::object();
    return parse_json_strict(it->second, "check-vectors", "metadata 'config'", 32);
}

// A detached float32 (when floating) copy on `device`, so that .grad() lands on this handle.
Tensor make_leaf(const Tensor& loaded, Device device, bool requires_grad) {
    Tensor leaf = loaded.is_floating_point() ? loaded.to(DType::float32) : loaded;
    leaf = leaf.to(device).detach();
    if (requires_grad && leaf.is_floating_point()) leaf.requires_grad_(true);
    return leaf;
}

void fill_call(const VectorTensors& t, Device device, VectorCall* call) {
    call->device = device;
    for (const auto& [name, tensor] : t.in)
        call->inputs[name] = make_leaf(tensor, device, t.grad_in.count(name) > 0);
    for (const auto& [name, tensor] : t.p) call->params[name] = make_leaf(tensor, device, true);
    for (const auto& [name, tensor] : t.b) call->buffers[name] = make_leaf(tensor, device, false);
}

std::string sci(double value) {
    std::ostringstream os;
    os << std::scientific << std::setprecision(2) << value;
    return os.str();
}

// The multi-index of a row-major linear index, e.g. [1, 0, 3].
Shape unravel(int64_t linear, const Shape& shape) {
    Shape index(shape.size());
    for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
        index[d] = shape[d] ? linear % shape[d] : 0;
        linear = shape[d] ? linear / shape[d] : 0;
    }
    return index;
}

// Running comparison over all tensors of a vector; `failure` keeps the first failing tensor.
struct Comparison {
    Tolerances tol;
    double max_abs = 0;
    double max_rel = 0;
    std::string failure;

    void fail(const std::string& why) {
        if (failure.empty()) failure = why;
    }
    void compare(const std::string& name, const Tensor& got, const Tensor& want);
};

void Comparison::compare(const std::string& name, const Tensor& result, const Tensor& want) {
    // The vectors store a scalar as [1] (README: "A scalar is stored with shape [1]").
    Tensor got = result.ndim() == 0 && want.shape() == Shape{1} ? result.reshape({1}) : result;
    if (got.shape() != want.shape()) {
        return fail(
            detail::cat(name, ": shape ", got.shape(), " but the vector has ", want.shape()));
    }
    const Tolerance& t = tol.of(name);
    std::vector<double> g = got.detach().to_vector<double>();
    std::vector<double> w = want.to_vector<double>();
    double worst_excess = 0;
    int64_t worst = -1;
    for (size_t i = 0; i < w.size(); ++i) {
        double error = 0, excess = 0;
        if (std::isfinite(w[i]) && std::isfinite(g[i])) {
            error = std::abs(g[i] - w[i]);
            excess = error - (t.atol + t.rtol * std::abs(w[i]));
        } else if (!(g[i] == w[i] || (std::isnan(g[i]) && std::isnan(w[i])))) {
            // An infinity or NaN on either side must be matched exactly: atol + rtol * inf
            // would allow anything, and NaN - allowed compares false.
            error = excess = INFINITY;
        }
        max_abs = std::max(max_abs, error);
        if (std::isfinite(w[i]) && std::abs(w[i]) > t.atol)
            max_rel = std::max(max_rel, error / std::abs(w[i]));
        if (excess > 0 && (worst < 0 || excess > worst_excess)) {
            worst_excess = excess;
            worst = int64_t(i);
        }
    }
    if (worst < 0) return;
    double allowed = std::isfinite(w[worst]) ? t.atol + t.rtol * std::abs(w[worst]) : 0.0;
    double error = std::isfinite(worst_excess) ? std::abs(g[worst] - w[worst]) : INFINITY;
    fail(detail::cat(name, ": max_abs=", sci(error), " at ", unravel(worst, want.shape()), " (got ",
                     g[worst], ", want ", w[worst], ", allowed ", sci(allowed), ")"));
}

// loss = sum_k sum(out_k * dout_k) over outputs that carry a graph, then backward.
void backward_from(const TensorMap& outputs, const TensorMap& douts, Device device) {
    Tensor loss;
    for (const auto& [name, dout] : douts) {
        const Tensor& out = outputs.at(name);
        if (!out.requires_grad()) continue;  // depends on no leaf: every gradient is zero
        Tensor term = sum(mul(out, dout.to(out.dtype()).to(device)));
        loss = loss.defined() ? add(loss, term) : term;
    }
    if (loss.defined()) loss.backward();
}

void compare_grads(const std::string& prefix, const TensorMap& want, const TensorMap& leaves,
                   Comparison* comparison) {
    for (const auto& [name, expected] : want) {
        auto it = leaves.find(name);
        Tensor grad = it == leaves.end() ? Tensor() : it->second.grad();
        if (!grad.defined()) grad = zeros(expected.shape());
        comparison->compare(prefix + name, grad, expected);
    }
}

// Restores the caller's grad mode; the runner needs recording on.
class GradModeOn {
  public:
    GradModeOn() : previous_(grad_enabled()) { set_grad_enabled(true); }
    ~GradModeOn() { set_grad_enabled(previous_); }
    GradModeOn(const GradModeOn&) = delete;
    GradModeOn& operator=(const GradModeOn&) = delete;

  private:
    bool previous_;
};

void run_vector(const std::string& path, Device device, VectorResult* result) {
    GradModeOn grad_mode;
    SafetensorsFile file = load_safetensors(path);
    auto module = file.metadata.find("module");
    LUMEN_CHECK(module != file.metadata.end(), "check-vectors",
                "the vector has no 'module' in its __metadata__");
    result->module = module->second;
    const VectorAdapter* adapter = find_vector_adapter(result->module);
    if (adapter == nullptr) {
        result->reason = "unknown module '" + result->module + "'";
        return;
    }
    Comparison comparison;
    comparison.tol = parse_tolerances(file.metadata, file.tensors);
    VectorTensors t = group_tensors(file.tensors);
    check_references(t);
    LUMEN_CHECK(!t.out.empty(), "check-vectors", "the vector has no out.* tensor to check");

    VectorCall call(parse_config(file.metadata), result->module);
    fill_call(t, device, &call);
    TensorMap leaves_in = call.inputs;
    TensorMap outputs = (*adapter)(call);
    call.check_all_used();

    for (const auto& [name, want] : t.out) {
        auto got = outputs.find(name);
        if (got == outputs.end() || !got->second.defined()) {
            comparison.fail("out." + name + ": the adapter returned no output '" + name + "'");
        } else {
            comparison.compare("out." + name, got->second, want);
        }
    }
    // Gradients of wrong outputs say nothing new; the output failure is the reason.
    if (!t.dout.empty() && comparison.failure.empty()) {
        backward_from(outputs, t.dout, device);
        compare_grads("grad.in.", t.grad_in, leaves_in, &comparison);
        compare_grads("grad.p.", t.grad_p, call.params, &comparison);
    }
    result->max_abs = comparison.max_abs;
    result->max_rel = comparison.max_rel;
    result->reason = comparison.failure;
    result->passed = comparison.failure.empty();
}

}  // namespace

std::vector<VectorFile> find_vector_files(const std::vector<std::string>& paths) {
    std::vector<VectorFile> files;
    for (const std::string& arg : paths) {
        fs::path root(arg);
        std::error_code error;
        if (!fs::is_directory(root, error)) {
            LUMEN_CHECK(fs::exists(root, error), "check-vectors", "no such file or directory: '",
                        arg, "'");
            files.push_back({arg, arg});
            continue;
        }
        std::vector<fs::path> found;
        try {
            for (const auto& entry : fs::recursive_directory_iterator(root)) {
                if (entry.is_regular_file() && entry.path().extension() == ".safetensors")
                    found.push_back(entry.path());
            }
        } catch (const fs::filesystem_error& e) {
            LUMEN_FAIL("check-vectors", "cannot list '", arg, "': ", e.what());
        }
        std::sort(found.begin(), found.end());
        for (const fs::path& file : found)
            files.push_back({file.string(), fs::relative(file, root).generic_string()});
    }
    return files;
}

VectorResult check_vector_file(const std::string& path, const std::string& display, Device device) {
    VectorResult result;
    result.display = display;
    try {
        run_vector(path, device, &result);
    } catch (const std::exception& e) {
        // Per-file isolation: a broken vector or op is one FAIL line, never the end of the run.
        result.passed = false;
        result.reason = e.what();
    }
    return result;
}

std::string format_result(const VectorResult& result) {
    std::string module = "  module=" + (result.module.empty() ? "?" : result.module) + "  ";
    if (result.passed) {
        return "PASS  " + result.display + module + "max_abs=" + sci(result.max_abs) +
               " max_rel=" + sci(result.max_rel);
    }
    return "FAIL  " + result.display + module + result.reason;
}

CheckSummary check_vectors(const std::vector<std::string>& paths, Device device,
                           std::ostream& out) {
    std::vector<VectorFile> files = find_vector_files(paths);
    LUMEN_CHECK(!files.empty(), "check-vectors", "no *.safetensors vectors found under ", paths);
    CheckSummary summary;
    for (const VectorFile& file : files) {
        VectorResult result = check_vector_file(file.path, file.display, device);
        ++(result.passed ? summary.passed : summary.failed);
        out << format_result(result) << std::endl;  // flushed: long runs show progress
    }
    out << summary.passed << " passed, " << summary.failed << " failed" << std::endl;
    return summary;
}

}  // namespace lumen::conformance
