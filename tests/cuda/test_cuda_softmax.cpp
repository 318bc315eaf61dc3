// CPU/CUDA parity of softmax and log_softmax: along the last, a middle and the first dim, rows
// of every kernel shape (length 1 to 100000: warp slices, whole warps, one block per row),
// -inf entries and fully masked rows, non-contiguous inputs, and both backward kernels.
// Skips with a message without a GPU.
#include <cmath>
#include <limits>
#include <string>

#include "support/parity.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

Tensor apply(const Tensor& x, int64_t dim, bool log) {
    return log ? log_softmax(x, dim) : softmax(x, dim);
}

const char* name_of(bool log) { return log ? "log_softmax" : "softmax"; }

double tolerance(DType dtype) { return dtype == DType::float64 ? 1e-12 : 2e-6; }

// Forward and backward (same upstream gradient) on both devices.
void require_same(const Tensor& x, int64_t dim, bool log, double tol) {
    require_cuda_parity([&](const Tensor& t) { return apply(t, dim, log); }, x, tol, tol);
}

}  // namespace

TEST_CASE("softmax and log_softmax match the CPU along the last dim on the GPU",
          "[cuda][ops][softmax]") {
    if (!have_gpu()) return;
    // Lengths for every warp shape (1 lane .. 32 lanes x 32 elements), the first block-per-row
    // length, and long rows; row counts that leave partial blocks.
    for (int64_t length : {1, 2, 3, 7, 31, 32, 33, 100, 128, 255, 256, 1000, 1024, 1025, 5000}) {
        for (int64_t rows : {1, 5, 67}) {
            for (DType dtype : {DType::float32, DType::float64}) {
                for (bool log : {false, true}) {
                    INFO(name_of(log)
                         << " " << dtype_name(dtype) << " rows " << rows << " length " << length);
                    Tensor x = random_input({rows, length}, 3, -4, 4).to(dtype);
                    require_same(x, -1, log, tolerance(dtype));
                }
            }
        }
    }
    for (bool log : {false, true}) {
        INFO(name_of(log) << " one row of 100000");
        require_same(random_input({2, 100000}, 4, -6, 6).to(DType::float32), 1, log, 1e-6);
    }
}

TEST_CASE("softmax and log_softmax match the CPU along middle and first dims on the GPU",
          "[cuda][ops][softmax]") {
    if (!have_gpu()) return;
    std::vector<std::pair<Shape, int64_t>> cases = {
        {{4, 37, 5}, 1}, {{3, 1000, 33}, 1}, {{2, 6, 129}, 1},  {{300, 7}, 0},
        {{5000, 3}, 0},  {{1, 64}, 0},       {{2, 3, 4, 5}, 2}, {{31, 1, 2}, 1},
    };
    for (const auto& [shape, dim] : cases) {
        for (DType dtype : {DType::float32, DType::float64}) {
            for (bool log : {false, true}) {
                INFO(name_of(log) << " " << dtype_name(dtype) << " shape " << text(shape) << " dim "
                                  << dim);
                Tensor x = random_input(shape, 5, -4, 4).to(dtype);
                require_same(x, dim, log, tolerance(dtype));
            }
        }
    }
}

TEST_CASE("softmax takes non-contiguous inputs and 0-d tensors on the GPU",
          "[cuda][ops][softmax]") {
    if (!have_gpu()) return;
    Tensor x = random_input({40, 300}, 6).to(DType::float32);
    for (bool log : {false, true}) {
        require_same(x.t(), 0, log, 2e-6);
        require_same(x.t(), 1, log, 2e-6);
        require_same(x.narrow(1, 1, 257), -1, log, 2e-6);  // rows not 16-byte aligned
        require_same(random_input({}, 7), 0, log, 1e-12);
        require_same(zeros({0, 5}), 1, log, 0);
    }
}

TEST_CASE("softmax handles -inf, fully masked rows and large values like the CPU on the GPU",
          "[cuda][ops][softmax]") {
    if (!have_gpu()) return;
    double inf = std::numeric_limits<double>::infinity();
    // For each length: a row with -inf entries (as attention masks make), a fully masked row
    // (NaN, as in PyTorch), a row with +inf (NaN), and large finite values (no overflow).
    for (int64_t length : {5, 31, 32, 1000, 5000}) {
        Tensor x = random_input({4, length}, 8, -3, 3);
        Tensor column = arange(0, double(length), 1, DType::int64).view({1, length});
        Tensor row = arange(0, 4, 1, DType::int64).view({4, 1});
        Tensor masked = logical_or(logical_and(eq(row, 0), gt(column, length / 2)), eq(row, 1));
        x = masked_fill(x, masked, -inf);
        x = masked_fill(x, logical_and(eq(row, 2), eq(column, 1)), inf);
        x = where(eq(row, 3), mul(x, 1e30), x);
        for (DType dtype : {DType::float32, DType::float64}) {
            for (bool log : {false, true}) {
                INFO(name_of(log) << " " << dtype_name(dtype) << " masked, length " << length);
                Tensor xt = x.to(dtype);
                require_close(apply(xt.cuda(), -1, log).cpu(), apply(xt, -1, log), tolerance(dtype),
                              tolerance(dtype));
                // the same rows along the first dim (column kernel)
                require_close(apply(xt.t().contiguous().cuda(), 0, log).cpu(),
                              apply(xt.t().contiguous(), 0, log), tolerance(dtype),
                              tolerance(dtype));
            }
        }
    }
}

TEST_CASE("softmax rejects integer inputs on the GPU", "[cuda][ops][softmax]") {
    if (!have_gpu()) return;
    Tensor x = zeros({3, 4}, DType::int64, Device::cuda());
    require_error([&] { softmax(x, 1); }, {"[softmax]", "int64"});
    require_error([&] { log_softmax(x, 1); }, {"[log_softmax]", "int64"});
}
