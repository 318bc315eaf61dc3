// Internal to the CUDA kernels: one cuBLAS handle per device and a row-major GEMM front end
// over cublasGemmEx / cublasGemmStridedBatchedEx, shared by matmul (ops/cuda/matmul.cu) and
// the dense convolutions (ops/cuda/conv.cu). Implemented in ops/cuda/blas.cu.
#pragma once

#include <cstdint>

#include <cublas_v2.h>

#include "core/dtype.h"
#include "core/error.h"

namespace lumen::cuda {

// cuBLAS is opened with dlopen on first use, not linked: loading libcublasLt (which libcublas
// needs) runs about 0.4 s of static initialisation and touches 200 MB, which every lumen
// process paid before, `lumen --help` and CPU-only runs included. The functions lumen calls:
struct CublasApi {
    cublasStatus_t (*create)(cublasHandle_t*);
    cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t);
    cublasStatus_t (*set_workspace)(cublasHandle_t, void*, size_t);
    const char* (*status_string)(cublasStatus_t);
    cublasStatus_t (*gemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                           const void*, const void*, cudaDataType, int, const void*, cudaDataType,
                           int, const void*, void*, cudaDataType, int, cublasComputeType_t,
                           cublasGemmAlgo_t);
    cublasStatus_t (*gemm_strided_batched)(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                           int, int, int, const void*, const void*, cudaDataType,
                                           int, long long, const void*, cudaDataType, int,
                                           long long, const void*, void*, cudaDataType, int,
                                           long long, int, cublasComputeType_t, cublasGemmAlgo_t);
};

// Opens libcublas.so.<major of the toolkit lumen was built with> (first from the toolkit's
// library folder, then wherever the dynamic loader looks) and resolves the functions above,
// once per process; needs no GPU. Throws [cublas] naming each place tried and dlerror's
// reason, or the missing function; a later call tries again.
const CublasApi& cublas();

}  // namespace lumen::cuda

// Wraps every cuBLAS call: throws [cublas] naming the call and cuBLAS's status string.
#define LUMEN_CUBLAS_CHECK(call)                                                                \
    do {                                                                                        \
        cublasStatus_t lumen_status_ = (call);                                                  \
        if (lumen_status_ != CUBLAS_STATUS_SUCCESS)                                             \
            LUMEN_FAIL("cublas", #call,                                                         \
                       " failed: ", ::lumen::cuda::cublas().status_string(lumen_status_), " (", \
                       __FILE__, ":", __LINE__, ")");                                           \
    } while (0)

namespace lumen::cuda {

// The handle of the current device, created on first use (bound to the default stream, with
// a 32 MiB workspace on Hopper, 4 MiB before, from lumen's caching allocator) and kept for
// the life of the process: destroying it at exit could run after the CUDA context is gone.
cublasHandle_t blas_handle();

// One operand of a row-major GEMM. `data` holds the operand row-major with `ld` elements
// between rows; when `transposed` it holds the operand's transpose that way (the operand is
// then read column-major: a transposed view, or W^T read from W). `batch_stride` (elements)
// separates the matrices of a batch; 0 repeats one matrix for every batch entry.
struct GemmMatrix {
    const void* data = nullptr;
    int64_t ld = 1;
    bool transposed = false;
    int64_t batch_stride = 0;
};

// The output of a row-major GEMM: `rows` x `cols`, `ld` elements between rows.
struct GemmOutput {
    void* data = nullptr;
    int64_t rows = 0, cols = 0, ld = 1;
    int64_t batch_stride = 0;
};

// C[i] = A[i] B[i] + beta C[i] for i < batch, A (rows x depth), B (depth x cols), all of
// `dtype` (float32, float64, float16, bfloat16). Products accumulate in float32 for float32
// and the half types (output rounded once to the half type, so beta = 1 adds C in float32
// too) and in float64 for float64. `allow_tf32` lets float32 use TF32 tensor cores.
// Empty problems (rows, cols or batch 0) return at once; depth must be >= 1 (callers handle
// an empty inner dim: cuBLAS would still want valid leading dims for the empty operands).
// `out_dtype` float32 with half operands (autocast, core/autocast.h) keeps the float32 sum
// unrounded; otherwise it must equal `dtype`.
// Throws [cublas] on a cuBLAS error and [gemm] when a size does not fit cuBLAS's int.
void gemm(DType dtype, const GemmMatrix& a, const GemmMatrix& b, const GemmOutput& c, int64_t depth,
          double beta, int64_t batch, bool allow_tf32);
void gemm(DType dtype, DType out_dtype, const GemmMatrix& a, const GemmMatrix& b,
          const GemmOutput& c, int64_t depth, double beta, int64_t batch, bool allow_tf32);

}  // namespace lumen::cuda
