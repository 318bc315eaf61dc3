// Test helpers; see gradcheck.h.
#include "support/gradcheck.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <unistd.h>

#include "conformance/check_vectors.h"

namespace lumen::testing {

Tensor random_input(const Shape& shape, uint64_t seed, double low, double high) {
    Generator generator(seed);
    return add(mul(rand(shape, DType::float64, &generator), high - low), low);
}

Tensor random_index(const Shape& shape, int64_t high, uint64_t seed) {
    std::vector<int64_t> values(size_t(shape_numel(shape)));
    // a 64-bit linear congruential sequence; the high bits are the random ones
    uint64_t state = seed * 6364136223846793005ull + 1442695040888963407ull;
    for (int64_t& v : values) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        v = int64_t((state >> 33) % uint64_t(high));
    }
    return from_vector(values, shape);
}

Tensor class_targets(const Shape& shape, int64_t classes, int64_t ignore, uint64_t seed) {
    std::vector<double> u = random_input(shape, seed, 0.0, 1.0).to_vector<double>();
    std::vector<int64_t> t(u.size());
    for (size_t i = 0; i < u.size(); ++i)
        t[i] =
            i % 4 == 1 ? ignore : std::min<int64_t>(classes - 1, int64_t(u[i] * double(classes)));
    return from_vector(t, {int64_t(t.size())}).reshape(shape);
}

Tensor noncontiguous(const Tensor& x) {
    NoGradGuard no_grad;
    if (x.ndim() >= 2) {
        // Store the last two dims swapped, then view them back: same values, transposed strides.
        Tensor stored = x.transpose(-1, -2).contiguous();
        return stored.transpose(-1, -2);
    }
    if (x.ndim() == 0) return x.clone();
    int64_t doubled = 2 * x.shape()[0];  // 1-D: every other element of a buffer twice as long
    Tensor wide = zeros({doubled}, x.dtype());
    Tensor every_other = wide.slice(0, 0, doubled, 2);
    every_other.copy_(x);
    return every_other;
}

void require_close(const Tensor& got, const std::vector<double>& want, double rtol, double atol) {
    std::vector<double> values = got.to_vector<double>();
    REQUIRE(values.size() == want.size());
    double worst = 0;
    size_t worst_at = 0;
    bool ok = true;
    for (size_t i = 0; i < values.size(); ++i) {
        double error = std::abs(values[i] - want[i]);
        bool nan_mismatch = std::isnan(values[i]) != std::isnan(want[i]);
        if (nan_mismatch || error > atol + rtol * std::abs(want[i])) {
            if (ok || error > worst) {
                worst = error;
                worst_at = i;
            }
            ok = false;
        }
    }
    if (!ok) {
        std::ostringstream os;
        os << "element " << worst_at << ": got " << values[worst_at] << ", want " << want[worst_at]
           << " (abs error " << worst << ", rtol " << rtol << ", atol " << atol << ")";
        FAIL(os.str());
    }
}

void require_close(const Tensor& got, const Tensor& want, double rtol, double atol) {
    INFO("shapes: got " << detail::cat(got.shape()) << ", want " << detail::cat(want.shape()));
    REQUIRE(got.shape() == want.shape());
    require_close(got, want.to_vector<double>(), rtol, atol);
}

void gradcheck(const Function& f, const std::vector<Tensor>& inputs,
               const GradcheckOptions& options) {
    GradientCheckResult result =
        check_gradients(f, inputs, {}, {options.eps, options.rtol, options.atol});
    INFO(result.failure);
    REQUIRE(result.passed);
}

void module_gradcheck(nn::Module& m, const Function& f, const std::vector<Tensor>& inputs,
                      double rtol, double atol, int64_t stride) {
    m.to(DType::float64);
    GradientCheckResult result = check_gradients(
        f, inputs, m.parameters(), {.rtol = rtol, .atol = atol, .param_stride = stride});
    INFO(m.type_name() << ": " << result.failure);
    CHECK(result.passed);
}

void module_gradcheck(nn::Module& m, const Tensor& x) {
    module_gradcheck(m, [&](const std::vector<Tensor>& in) { return m.forward(in[0]); }, {x});
}

void require_error(const std::function<void()>& body, const std::vector<std::string>& fragments) {
    try {
        body();
    } catch (const Error& e) {
        std::string message = e.what();
        INFO("message: " << message);
        for (const std::string& fragment : fragments)
            CHECK(message.find(fragment) != std::string::npos);
        return;
    }
    FAIL("expected lumen::Error containing " << fragments[0]);
}

void require_oracle_vectors(const std::vector<std::string>& names, const std::string& group) {
    for (const std::string& name : names) {
        std::string path =
            std::string(LUMEN_TEST_DATA) + "/oracle/" + group + "/" + name + ".safetensors";
        conformance::VectorResult result =
            conformance::check_vector_file(path, name, Device::cpu());
        INFO(conformance::format_result(result));
        CHECK(result.passed);
    }
}

Shape unravel(int64_t linear, const Shape& shape) {
    Shape coords(shape.size());
    for (size_t d = shape.size(); d-- > 0;) {
        coords[d] = linear % shape[d];
        linear /= shape[d];
    }
    return coords;
}

int64_t ravel(const Shape& coords, const Shape& shape) {
    int64_t linear = 0;
    for (size_t d = 0; d < shape.size(); ++d) linear = linear * shape[d] + coords[d];
    return linear;
}

bool have_gpu() {
    if (!cuda_built()) {
        WARN("CUDA test skipped: lumen was built without CUDA (LUMEN_CUDA=OFF)");
        return false;
    }
    if (!cuda_available()) {
        WARN("CUDA test skipped: lumen was built with CUDA but no CUDA device is visible");
        return false;
    }
    return true;
}

std::string text(const std::vector<int64_t>& values) { return detail::cat(values); }

TempDir::TempDir(const std::string& tag) {
    path = std::filesystem::temp_directory_path() /
           ("lumen_test_" + tag + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
}

TempDir::~TempDir() { std::filesystem::remove_all(path); }

}  // namespace lumen::testing
