// CUDA matmul: the batched GEMM of ops/matmul_kernels.h through cuBLAS (ops/cuda/blas.cuh).
// Every operand matrix is read in place in its row- or column-major layout; the batch runs as
// strided batched calls (a broadcast operand has batch stride 0), looped over the batch dims
// whose strides do not follow one constant step. The bias is fused as cuBLAS's beta = 1 on
// an output pre-filled with it. Compiled but never run on a GPU (written without one).
#include "core/cuda/cuda_check.h"
#include "core/cuda/strided.cuh"
#include "core/dispatch.h"
#include "ops/cuda/blas.cuh"
#include "ops/matmul.h"
#include "ops/matmul_kernels.h"

namespace lumen::cuda {

namespace {

// out (rows, cols), row-major and dense, gets the bias in every row: the C that the GEMM then
// adds its product to with beta = 1. For the half types this keeps the sum in float32 inside
// cuBLAS and rounds once, where a separate add after the GEMM would round the product first.
template <typename T>
__global__ void fill_rows_kernel(const T* bias, int64_t bias_stride, T* out, int64_t cols,
                                 int64_t count) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x)
        out[i] = bias[(i % cols) * bias_stride];
}

// The batch dims split for the GEMM calls: the innermost dims whose strides in a and b follow
// one step (a_step, b_step; 0 for a broadcast operand) fold into `inner` matrices of one
// strided batched call; the `outer` dims before them are looped on the host.
struct BatchSplit {
    StridedView a_outer, b_outer;  // the outer batch dims of a and b, for strided_offset
    int64_t outer = 1, inner = 1, a_step = 0, b_step = 0;
};

BatchSplit split_batch(const StridedView& a, const StridedView& b, const StridedView& out) {
    BatchSplit split;
    int batch_dims = out.ndim - 2, first_inner = batch_dims;
    bool started = false;
    for (int d = batch_dims - 1; d >= 0; --d) {
        int64_t size = out.shape[d];
        if (size != 1) {
            if (!started) {
                split.a_step = a.strides[d];
                split.b_step = b.strides[d];
                started = true;
            } else if (a.strides[d] != split.a_step * split.inner ||
                       b.strides[d] != split.b_step * split.inner) {
                break;
            }
            split.inner *= size;
        }
        first_inner = d;
    }
    split.a_outer = a;
    split.b_outer = b;
    split.a_outer.ndim = split.b_outer.ndim = first_inner;
    for (int d = 0; d < first_inner; ++d) split.outer *= out.shape[d];
    return split;
}

// One operand matrix (rows x cols at the view's last two strides) as cuBLAS reads it.
GemmMatrix gemm_operand(const void* data, const StridedView& view, int64_t step) {
    int nd = view.ndim;
    MatrixLayout layout = matrix_layout(view.shape[nd - 2], view.shape[nd - 1],
                                        view.strides[nd - 2], view.strides[nd - 1]);
    LUMEN_ASSERT(layout.valid);  // ops/matmul.cpp copies any other layout
    return {data, layout.outer_stride, !layout.row_major, step};
}

// out = bias in every row (or zero without one): the product's C before beta = 1, and the
// whole result when the inner dim k is 0.
void initialize_output(const StridedView& bias, const StridedView& out, int64_t cols) {
    int64_t count = out.numel();
    if (bias.data == nullptr) {
        LUMEN_CUDA_CHECK(cudaMemsetAsync(out.data, 0, size_t(count) * itemsize(out.dtype), 0));
        return;
    }
    dispatch_floating_half(out.dtype, "matmul", [&]<typename T>() {
        fill_rows_kernel<T><<<grid_for(count), 256>>>(bias.ptr<const T>(), bias.strides[0],
                                                      out.ptr<T>(), cols, count);
    });
    LUMEN_CUDA_CHECK_LAUNCH("fill_rows_kernel");
}

}  // namespace

void matmul_forward(const StridedView& a, const StridedView& b, const StridedView& bias,
                    const StridedView& out) {
    int nd = out.ndim;
    int64_t n = out.shape[nd - 2], k = a.shape[nd - 1], m = out.shape[nd - 1];
    if (out.numel() == 0) return;
    bool has_bias = bias.data != nullptr;
    if (has_bias || k == 0) initialize_output(bias, out, m);
    if (k == 0) return;
    BatchSplit split = split_batch(a, b, out);
    // Half operands may give a float32 product (autocast): sizes per operand.
    int64_t element = int64_t(itemsize(a.dtype)), out_element = int64_t(itemsize(out.dtype));
    bool tf32 = a.dtype == DType::float32 && matmul_allow_tf32();
    for (int64_t i = 0; i < split.outer; ++i) {
        const char* a_data =
            static_cast<const char*>(a.data) + strided_offset(split.a_outer, i) * element;
        const char* b_data =
            static_cast<const char*>(b.data) + strided_offset(split.b_outer, i) * element;
        char* out_data = static_cast<char*>(out.data) + i * split.inner * n * m * out_element;
        gemm(a.dtype, out.dtype, gemm_operand(a_data, a, split.a_step),
             gemm_operand(b_data, b, split.b_step), GemmOutput{out_data, n, m, m, n * m}, k,
             has_bias ? 1.0 : 0.0, split.inner, tf32);
    }
}

}  // namespace lumen::cuda
