// Mixed precision by op policy (Micikevicius et al. 2018, "Mixed Precision Training";
// torch.autocast): inside an autocast::Guard, the GEMMs of matmul and linear (the bulk of a
// transformer's arithmetic) round their float32 operands to float16 or bfloat16 and accumulate
// in float32, which tensor cores run several times faster; their outputs stay float32, so
// softmax, the norms, reductions, losses and every elementwise op keep computing in float32
// (the policy's "float32 ops" need no cast). The parameters stay float32 (master weights): the
// rounding is inside the op, whose backward rounds the incoming gradient the same way (with
// float16 that gradient needs loss scaling, train::GradScaler, to stay above 2^-24) and returns
// float32 gradients.
//
//   {
//       lumen::autocast::Guard autocast(lumen::DType::bfloat16);
//       loss = criterion(model.forward(x), y);
//   }
//   loss.backward();  // outside the region, as with torch.autocast
//
// On CUDA the half GEMMs run in cuBLAS (half inputs, float32 output); on the CPU they are
// emulated (operands rounded, the float32 kernel): the same numbers, for tests, not speed.
// Convolutions and the fused attentions stay float32 in this release (their CUDA kernels have
// no half path yet). Float64 operands are never touched. The state is per thread.
#pragma once

#include "core/dtype.h"

namespace lumen::autocast {

// Whether this thread is inside an enabled Guard, and the half dtype it lowers GEMMs to.
bool enabled();
DType dtype();

// Turns autocast on with `dtype` (float16 or bfloat16) or off (float32) until destroyed, then
// restores the previous state (guards nest). Throws [autocast] for any other dtype.
class Guard {
  public:
    explicit Guard(DType dtype);
    ~Guard();
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

  private:
    bool previous_enabled_;
    DType previous_dtype_;
};

// Whether a GEMM of operands of dtypes a and b is lowered: autocast is enabled, each operand is
// float32 or the autocast dtype, and at least one is float32 (two half operands take the op's
// plain half path). Sets `half` to the autocast dtype when it is.
bool lowers_gemm(DType a, DType b, DType& half);

}  // namespace lumen::autocast
