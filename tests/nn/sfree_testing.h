// Helpers shared by the seed-001 / SimA tests: a float64 gradcheck of a module's input and every
// parameter element, and the peak resident memory of the process (to show that the linear
// attentions never allocate an N x N matrix).
#pragma once

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <string>

#include "support/gradcheck.h"

namespace lumen::testing::sfree {

// Checks, in float64, d sum(f(x) * w) / dx (gradcheck) and / d every parameter of m (central
// differences on the parameter's own storage; every `stride`-th element and the last one of
// each parameter). m must already be float64.
inline void module_gradcheck(nn::Module& m, const std::function<Tensor(const Tensor&)>& f,
                             const Tensor& x, double tol = 1e-5, int64_t stride = 1) {
    gradcheck([&](const std::vector<Tensor>& in) { return f(in[0]); }, {x},
              {.rtol = tol, .atol = tol * 1e-2});
    Tensor w = random_input(f(x).shape(), 99);
    auto loss = [&] {
        NoGradGuard no_grad;
        return sum(mul(f(x), w)).item<double>();
    };
    m.zero_grad();
    sum(mul(f(x), w)).backward();
    const double eps = 1e-6;
    for (auto& [name, p] : m.named_parameters()) {
        INFO(name);
        REQUIRE(p.is_contiguous());
        double* data = p.data_ptr<double>();
        std::vector<double> analytic = p.grad().defined() ? p.grad().to_vector<double>()
                                                          : std::vector<double>(size_t(p.numel()));
        const int64_t last = p.numel() - 1;
        for (int64_t i = 0; i <= last; i = i == last ? last + 1 : std::min(i + stride, last)) {
            double saved = data[i];
            data[i] = saved + eps;
            double plus = loss();
            data[i] = saved - eps;
            double minus = loss();
            data[i] = saved;
            double numeric = (plus - minus) / (2 * eps);
            CHECK(std::abs(analytic[size_t(i)] - numeric) <= 1e-6 + tol * std::abs(numeric));
        }
    }
}

// Linux: resets the peak resident set size (writing 5 to /proc/self/clear_refs); false when the
// kernel does not allow it.
inline bool reset_peak_rss() {
    std::ofstream clear("/proc/self/clear_refs");
    if (!clear) return false;
    clear << "5";
    clear.flush();
    return bool(clear);
}

// Linux: a field of /proc/self/status in kB ("VmHWM" peak, "VmRSS" current); -1 if absent.
inline int64_t proc_status_kb(const std::string& field) {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1));
    }
    return -1;
}

}  // namespace lumen::testing::sfree
