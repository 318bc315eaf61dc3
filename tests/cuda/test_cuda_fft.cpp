// CPU/CUDA parity of rfft, irfft (cuFFT) and fftconv: outputs and gradients for odd, even,
// power-of-two and length-1 transforms, cropping and zero-padding through n, every norm mode,
// transforms along a non-last dim and of strided inputs, float32 and float64; fftconv with and
// without D, batched and 4-d inputs, long sequences. Skips with a message without a GPU.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "support/parity.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

// Compares f's output and input gradients between the devices, in float64 and float32; `what`
// names the case.
void check_parity(const std::string& what, const Function& f, const std::vector<Tensor>& inputs) {
    for (DType dtype : {DType::float64, DType::float32}) {
        std::vector<Tensor> in;
        for (const Tensor& t : inputs) in.push_back(t.to(dtype));
        std::vector<Tensor> want = output_and_grads(f, in, Device::cpu());
        std::vector<Tensor> got = output_and_grads(f, in, Device::cuda());
        REQUIRE(got.size() == want.size());
        // float32 FFTs round differently (cuFFT against the CPU's radix-4 / kissfft): a tolerance
        // relative to the size of the values.
        for (size_t i = 0; i < got.size(); ++i) {
            INFO(what << " " << dtype_name(dtype) << ": "
                      << (i == 0 ? std::string("output")
                                 : "gradient of input " + std::to_string(i - 1)));
            double scale = std::max(1.0, max(abs(want[i].to(DType::float64))).item<double>());
            double tol = dtype == DType::float32 ? 2e-5 * scale : 1e-11 * scale;
            require_close(got[i], want[i].to(DType::float64), 0, tol);
        }
    }
}

}  // namespace

TEST_CASE("rfft: CUDA matches the CPU for any length, n and norm", "[cuda][ops][fft]") {
    if (!have_gpu()) return;
    uint64_t seed = 10;
    for (int64_t length : {1, 2, 5, 8, 12, 17, 64, 100}) {
        for (std::optional<int64_t> n : {std::optional<int64_t>(), std::optional<int64_t>(1),
                                         std::optional<int64_t>(7), std::optional<int64_t>(20)}) {
            for (std::string norm : {"backward", "forward", "ortho"}) {
                std::string what = "rfft length " + std::to_string(length) + " n " +
                                   (n ? std::to_string(*n) : "default") + " norm " + norm;
                check_parity(
                    what, [&](const std::vector<Tensor>& in) { return rfft(in[0], n, -1, norm); },
                    {random_input({3, length}, seed)});
                seed += 2;
            }
        }
    }
}

TEST_CASE("irfft: CUDA matches the CPU for odd and even n, cropping and padding",
          "[cuda][ops][fft]") {
    if (!have_gpu()) return;
    uint64_t seed = 100;
    for (int64_t bins : {1, 2, 4, 9, 33}) {
        for (std::optional<int64_t> n :
             {std::optional<int64_t>(), std::optional<int64_t>(1), std::optional<int64_t>(5),
              std::optional<int64_t>(16), std::optional<int64_t>(31)}) {
            if (!n && bins == 1) continue;  // default n = 0 is an error
            for (std::string norm : {"backward", "forward", "ortho"}) {
                std::string what = "irfft bins " + std::to_string(bins) + " n " +
                                   (n ? std::to_string(*n) : "default") + " norm " + norm;
                check_parity(
                    what, [&](const std::vector<Tensor>& in) { return irfft(in[0], n, -1, norm); },
                    {random_input({2, bins, 2}, seed)});
                seed += 2;
            }
        }
    }
}

TEST_CASE("rfft and irfft: CUDA along another dim and on strided inputs", "[cuda][ops][fft]") {
    if (!have_gpu()) return;
    check_parity("rfft dim 0",
                 [](const std::vector<Tensor>& in) { return rfft(in[0], 10, 0, "ortho"); },
                 {random_input({9, 4, 3}, 200)});
    check_parity(
        "rfft of a transposed input",
        [](const std::vector<Tensor>& in) { return rfft(in[0].transpose(0, 1), std::nullopt); },
        {random_input({15, 6}, 202)});
    check_parity("irfft dim 1 of a (3, 6, 5, 2) spectrum",
                 [](const std::vector<Tensor>& in) { return irfft(in[0], 10, 1, "forward"); },
                 {random_input({3, 6, 5, 2}, 204)});
    check_parity("irfft of a narrowed (offset) input",
                 [](const std::vector<Tensor>& in) { return irfft(in[0].narrow(0, 1, 3), 12); },
                 {random_input({4, 7, 2}, 206)});
    check_parity("rfft of an odd-offset row (unaligned for cuFFT)",
                 [](const std::vector<Tensor>& in) { return rfft(in[0].narrow(0, 1, 1), 32); },
                 {random_input({3, 33}, 208)});
    check_parity("round trip irfft(rfft(x))",
                 [](const std::vector<Tensor>& in) { return irfft(rfft(in[0], 21), 21); },
                 {random_input({5, 21}, 210)});
}

TEST_CASE("fftconv: CUDA output and gradients of u, k and D match the CPU", "[cuda][ops][fft]") {
    if (!have_gpu()) return;
    struct ConvCase {
        Shape u, k;
        bool with_d;
    };
    std::vector<ConvCase> cases = {
        {{2, 3, 37}, {3, 37}, true},       {{2, 3, 37}, {3, 37}, false},
        {{1, 1, 1}, {1, 1}, true},         {{2, 2, 3, 100}, {1, 3, 100}, true},
        {{3, 4, 64}, {4, 64}, true},       {{1, 5, 513}, {5, 513}, true},
        {{2, 64, 1000}, {64, 1000}, true}, {{4, 130}, {4, 130}, true},
    };
    uint64_t seed = 300;
    for (const ConvCase& c : cases) {
        int64_t channels = c.u[c.u.size() - 2];
        std::vector<Tensor> inputs{random_input(c.u, seed), random_input(c.k, seed + 1, -0.3, 0.3)};
        if (c.with_d) inputs.push_back(random_input({channels}, seed + 2));
        bool with_d = c.with_d;
        check_parity(
            "fftconv u " + text(c.u) + " k " + text(c.k) + (with_d ? " with D" : " without D"),
            [with_d](const std::vector<Tensor>& in) {
                return fftconv(in[0], in[1], with_d ? in[2] : Tensor());
            },
            inputs);
        seed += 10;
    }
}

TEST_CASE("fftconv, rfft: CUDA errors name the op", "[cuda][ops][fft]") {
    if (!have_gpu()) return;
    Tensor u = random_input({2, 3, 8}, 1).cuda(), k = random_input({3, 8}, 2);
    require_error([&] { fftconv(u, k); }, {"[fftconv]", "different devices"});
    require_error([&] { fftconv(u, k.cuda(), random_input({3}, 3)); },
                  {"[fftconv]", "different devices"});
    require_error([&] { rfft(u, 0); }, {"[rfft]", "invalid number of data points"});
    require_error([&] { irfft(u, 4); }, {"[irfft]", "(..., 2)"});
}
