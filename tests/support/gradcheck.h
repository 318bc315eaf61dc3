// Test helpers: float64 central-difference gradient checks, closeness assertions, and inputs
// (random values, indices and class targets; deliberately non-contiguous views). CPU/CUDA
// parity checks are in support/parity.h. A new op's test uses these in a few lines:
//   gradcheck([](const std::vector<Tensor>& in) { return exp(in[0]); }, {random_input({3, 4})});
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "lumen/lumen.h"

namespace lumen::testing {

// A float64 tensor with entries uniform in [low, high), fixed by `seed`.
Tensor random_input(const Shape& shape, uint64_t seed = 1, double low = -1.0, double high = 1.0);

// int64 indices uniform in [0, high) of `shape`, fixed by `seed` (repeats for big shapes).
Tensor random_index(const Shape& shape, int64_t high, uint64_t seed);

// int64 class indices in [0, classes) of `shape`, every fourth one replaced by `ignore`.
Tensor class_targets(const Shape& shape, int64_t classes, int64_t ignore, uint64_t seed);

// The same values as `x` in a tensor whose memory is laid out differently (its last two dims
// are stored transposed, or every other element is skipped for 1-D), so is_contiguous() is
// false. Use it to test that ops honour strides.
Tensor noncontiguous(const Tensor& x);

// REQUIREs that got and want have the same shape and |got - want| <= atol + rtol |want|
// elementwise; on failure reports the worst element and its index.
void require_close(const Tensor& got, const Tensor& want, double rtol = 1e-5, double atol = 1e-8);
void require_close(const Tensor& got, const std::vector<double>& want, double rtol = 1e-5,
                   double atol = 1e-8);

struct GradcheckOptions {
    double eps = 1e-6;   // central-difference step
    double rtol = 1e-5;  // |analytic - numeric| <= atol + rtol |numeric|
    double atol = 1e-7;
};

// Checks the analytic gradients of f with respect to every floating input against central
// differences of loss = sum(f(inputs) * w) for a fixed random w. Inputs must be float64 CPU
// tensors; they are made leaves with requires_grad (non-floating inputs are left alone).
// Non-contiguous inputs stay non-contiguous.
using Function = std::function<Tensor(const std::vector<Tensor>&)>;
void gradcheck(const Function& f, const std::vector<Tensor>& inputs,
               const GradcheckOptions& options = {});

// Checks, in float64 (m is converted), the gradients of loss = sum(f(inputs) * w) w.r.t. the
// floating inputs and every parameter of m (every `stride`-th element of each, and its last).
// f runs the module with any forward signature.
void module_gradcheck(nn::Module& m, const Function& f, const std::vector<Tensor>& inputs,
                      double rtol = 1e-5, double atol = 1e-6, int64_t stride = 1);
// The single-input form, f = m.forward.
void module_gradcheck(nn::Module& m, const Tensor& x);

// REQUIREs that calling `body` throws lumen::Error whose message contains every fragment
// (e.g. the op name in brackets and the offending shape).
void require_error(const std::function<void()>& body, const std::vector<std::string>& fragments);

// True when CUDA tests can run; otherwise WARNs why the calling case is skipped (lumen built
// without CUDA, or no GPU visible). Cases start with `if (!have_gpu()) return;`.
bool have_gpu();

// Shapes and dim lists as text for INFO (Catch cannot find lumen's operator<< for vectors).
std::string text(const std::vector<int64_t>& values);

// CHECKs that every oracle vector tests/data/oracle/<group>/<name>.safetensors passes
// `lumen check-vectors` on the CPU, reporting the runner's line for each.
void require_oracle_vectors(const std::vector<std::string>& names,
                            const std::string& group = "ops");

// Row-major index <-> coordinates in `shape`, for naive reference loops.
Shape unravel(int64_t linear, const Shape& shape);
int64_t ravel(const Shape& coords, const Shape& shape);

// A fresh directory under the system temp dir, removed when the test ends.
struct TempDir {
    std::filesystem::path path;
    explicit TempDir(const std::string& tag);
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    std::string file(const std::string& name) const { return (path / name).string(); }
};

}  // namespace lumen::testing
