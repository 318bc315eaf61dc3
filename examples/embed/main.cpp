// Embedding check: a program built against an installed lumen through find_package(lumen).
// It differentiates loss = sum(w * x^2) and compares d loss / dx with the exact 2 w x.
#include <cmath>
#include <cstdio>
#include <vector>

#include <lumen/lumen.h>

int main() {
    using namespace lumen;
    try {
        Tensor x = tensor({1.0, -2.0, 3.0}).requires_grad_();
        Tensor w = tensor({0.5, 1.5, -2.0});
        Tensor loss = sum(w * square(x));
        loss.backward();

        std::vector<float> grad_x = x.grad().to_vector<float>();
        const std::vector<float> expected = {1.0f, -6.0f, -12.0f};  // 2 w x
        bool ok = grad_x.size() == expected.size();
        for (size_t i = 0; ok && i < expected.size(); ++i) {
            ok = std::fabs(grad_x[i] - expected[i]) < 1e-6f;
        }
        std::printf("loss %.3f, grad_x = [%g, %g, %g]: %s\n", loss.item<double>(), grad_x[0],
                    grad_x[1], grad_x[2], ok ? "ok" : "WRONG, expected [1, -6, -12]");
        return ok ? 0 : 1;
    } catch (const Error& error) {
        std::fprintf(stderr, "error: %s\n", error.what());
        return 1;
    }
}
