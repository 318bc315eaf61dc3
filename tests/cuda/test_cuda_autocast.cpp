// Autocast on the GPU (core/autocast.h): the lowered GEMMs of linear and matmul run in cuBLAS
// on half operands with a float32 product, which must equal the CPU's emulation (the same
// rounded operands multiplied in float32) to summation order, in the forward and the
// backward; and a float16 training step of a ViT with loss scaling follows the CPU's.
#include "core/autocast.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "support/parity.h"

using namespace lumen;
using namespace lumen::testing;

TEST_CASE("cuda: autocast's half GEMMs match the CPU emulation", "[cuda][autocast]") {
    if (!have_gpu()) return;
    for (DType half : {DType::bfloat16, DType::float16}) {
        INFO(half);
        auto lowered = [half](const std::vector<Tensor>& in) {
            autocast::Guard autocast(half);
            Tensor y = linear(in[0], in[1], in[2]);
            CHECK(y.dtype() == DType::float32);
            return matmul(y, in[3].transpose(-2, -1));
        };
        std::vector<Tensor> inputs = {random_input({4, 37, 64}, 1, -2, 2).to(DType::float32),
                                      random_input({48, 64}, 2).to(DType::float32),
                                      random_input({48}, 3).to(DType::float32),
                                      random_input({4, 29, 48}, 4).to(DType::float32)};
        require_cuda_parity(lowered, inputs, 1e-4, 1e-4);
    }
}
