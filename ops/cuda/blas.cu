// cuBLAS for lumen: the per-device handles and the row-major GEMM of ops/cuda/blas.cuh.
// cuBLAS is column-major; a row-major C = A B is the column-major C^T = B^T A^T, and a
// row-major matrix read column-major is its transpose, so every call passes B before A with
// the sizes (cols, rows, depth) and no data moves. This file compiled but has never run on a
// GPU (written without one).
#include <algorithm>
#include <climits>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <dlfcn.h>

#include "core/cuda/cuda_check.h"
#include "core/storage.h"
#include "ops/cuda/blas.cuh"

namespace lumen::cuda {

namespace {

// Some cuBLAS kernels put the batch on grid.y/z (at most 65535); larger batches are cut into
// calls of this many matrices (a round number keeps the chunks' pointers nicely aligned).
constexpr int64_t kMaxBatch = 63 * 1024;

int as_int(int64_t value, const char* what) {
    LUMEN_CHECK(value >= 0 && value <= INT_MAX, "gemm", what, " = ", value,
                " does not fit cuBLAS's 32-bit int");
    return int(value);
}

struct GemmTypes {
    cudaDataType_t data;
    cublasComputeType_t compute;
};

// Storage and accumulation types. The half types accumulate in float32 (CUBLAS_COMPUTE_32F);
// float32 uses TF32 tensor cores only when allowed (CUBLAS_COMPUTE_32F_FAST_TF32).
GemmTypes gemm_types(DType dtype, bool allow_tf32) {
    switch (dtype) {
        case DType::float32:
            return {CUDA_R_32F, allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F};
        case DType::float64: return {CUDA_R_64F, CUBLAS_COMPUTE_64F};
        case DType::float16: return {CUDA_R_16F, CUBLAS_COMPUTE_32F};
        case DType::bfloat16: return {CUDA_R_16BF, CUBLAS_COMPUTE_32F};
        default:
            LUMEN_FAIL("gemm", "not implemented for dtype ", dtype,
                       " (expected float32, float64, float16 or bfloat16)");
    }
}

// A device's handle and the workspace it was given.
struct DeviceBlas {
    cublasHandle_t handle = nullptr;
    std::unique_ptr<Storage> workspace;
};

// The workspace size cuBLAS recommends: 32 MiB on Hopper and later, 4 MiB before. It comes
// from lumen's caching allocator, so that cuBLAS never calls cudaMalloc itself.
size_t workspace_bytes(int device) {
    int major = 0;
    LUMEN_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    return size_t(major >= 9 ? 32 : 4) << 20;
}

// libcublas's file name for the toolkit lumen was compiled against (its major version is the
// ABI), and the toolkit's library folder that CMake found (LUMEN_CUDA_LIBRARY_DIR).
#define LUMEN_STRINGIFY_(x) #x
#define LUMEN_STRINGIFY(x) LUMEN_STRINGIFY_(x)
constexpr const char* kCublasName = "libcublas.so." LUMEN_STRINGIFY(CUBLAS_VER_MAJOR);

CublasApi load_cublas() {
    std::vector<std::string> places;
#ifdef LUMEN_CUDA_LIBRARY_DIR
    places.push_back(std::string(LUMEN_CUDA_LIBRARY_DIR) + "/" + kCublasName);
#endif
    places.push_back(kCublasName);
    void* library = nullptr;
    std::string tried;
    for (const std::string& place : places) {
        library = dlopen(place.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (library != nullptr) break;
        const char* why = dlerror();
        tried += "\n  " + place + ": " + (why != nullptr ? why : "not found");
    }
    LUMEN_CHECK(library != nullptr, "cublas", "cannot load cuBLAS (needed for matmul and the ",
                "dense convolutions on CUDA); tried:", tried,
                "\nput the CUDA toolkit's library folder on LD_LIBRARY_PATH");
    // Never dlclose'd: the handles made from it live as long as the process.
    auto resolve = [library](auto& function, const char* name) {
        void* symbol = dlsym(library, name);
        LUMEN_CHECK(symbol != nullptr, "cublas", kCublasName, " has no function ", name,
                    " (a cuBLAS older than the one lumen was built with?)");
        function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(symbol);
    };
    CublasApi api{};
    // The pointer types above must be the header's: each cast picks the declared overload.
    static_assert(
        sizeof(static_cast<decltype(api.create)>(&cublasCreate_v2)) &&
        sizeof(static_cast<decltype(api.set_stream)>(&cublasSetStream_v2)) &&
        sizeof(static_cast<decltype(api.set_workspace)>(&cublasSetWorkspace_v2)) &&
        sizeof(static_cast<decltype(api.status_string)>(&cublasGetStatusString)) &&
        sizeof(static_cast<decltype(api.gemm)>(&cublasGemmEx)) &&
        sizeof(static_cast<decltype(api.gemm_strided_batched)>(&cublasGemmStridedBatchedEx)));
    resolve(api.create, "cublasCreate_v2");
    resolve(api.set_stream, "cublasSetStream_v2");
    resolve(api.set_workspace, "cublasSetWorkspace_v2");
    resolve(api.status_string, "cublasGetStatusString");
    resolve(api.gemm, "cublasGemmEx");
    resolve(api.gemm_strided_batched, "cublasGemmStridedBatchedEx");
    return api;
}

}  // namespace

const CublasApi& cublas() {
    static const CublasApi api = load_cublas();  // a throw leaves it for the next call
    return api;
}

cublasHandle_t blas_handle() {
    static std::mutex mutex;
    static std::vector<DeviceBlas> devices;  // handles are never destroyed (see header)
    int device = 0;
    LUMEN_CUDA_CHECK(cudaGetDevice(&device));
    std::lock_guard<std::mutex> lock(mutex);
    if (size_t(device) >= devices.size()) devices.resize(size_t(device) + 1);
    DeviceBlas& blas = devices[size_t(device)];
    if (blas.handle == nullptr) {
        size_t bytes = workspace_bytes(device);
        auto workspace = std::make_unique<Storage>(bytes, Device::cuda(device));
        LUMEN_CUBLAS_CHECK(cublas().create(&blas.handle));
        // Stream first: cublasSetStream resets the workspace to cuBLAS's own.
        LUMEN_CUBLAS_CHECK(cublas().set_stream(blas.handle, cudaStream_t(0)));
        LUMEN_CUBLAS_CHECK(cublas().set_workspace(blas.handle, workspace->data(), bytes));
        blas.workspace = std::move(workspace);
    }
    return blas.handle;
}

void gemm(DType dtype, const GemmMatrix& a, const GemmMatrix& b, const GemmOutput& c, int64_t depth,
          double beta, int64_t batch, bool allow_tf32) {
    gemm(dtype, dtype, a, b, c, depth, beta, batch, allow_tf32);
}

void gemm(DType dtype, DType out_dtype, const GemmMatrix& a, const GemmMatrix& b,
          const GemmOutput& c, int64_t depth, double beta, int64_t batch, bool allow_tf32) {
    if (c.rows == 0 || c.cols == 0 || batch == 0) return;
    LUMEN_ASSERT(depth >= 1);
    const bool half = dtype == DType::float16 || dtype == DType::bfloat16;
    LUMEN_CHECK(out_dtype == dtype || (half && out_dtype == DType::float32), "gemm", "operands of ",
                dtype, " cannot give a ", out_dtype, " product");
    GemmTypes types = gemm_types(dtype, allow_tf32);
    const cudaDataType_t out_type = gemm_types(out_dtype, false).data;
    // alpha and beta have the compute type: double for float64, float for everything else.
    double alpha64 = 1.0, beta64 = beta;
    float alpha32 = 1.0f, beta32 = float(beta);
    bool wide = types.compute == CUBLAS_COMPUTE_64F;
    const void* alpha = wide ? static_cast<const void*>(&alpha64) : &alpha32;
    const void* beta_ptr = wide ? static_cast<const void*>(&beta64) : &beta32;
    // Column-major view: C^T (cols x rows) = op(B)^T (cols x depth) op(A)^T (depth x rows).
    int m = as_int(c.cols, "cols"), n = as_int(c.rows, "rows"), k = as_int(depth, "depth");
    int ldb = as_int(b.ld, "ldb"), lda = as_int(a.ld, "lda"), ldc = as_int(c.ld, "ldc");
    cublasOperation_t op_b = b.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t op_a = a.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasHandle_t handle = blas_handle();
    if (batch == 1) {
        LUMEN_CUBLAS_CHECK(cublas().gemm(handle, op_b, op_a, m, n, k, alpha, b.data, types.data,
                                         ldb, a.data, types.data, lda, beta_ptr, c.data, out_type,
                                         ldc, types.compute, CUBLAS_GEMM_DEFAULT));
        return;
    }
    size_t element = itemsize(dtype), out_element = itemsize(out_dtype);
    for (int64_t first = 0; first < batch; first += kMaxBatch) {
        int count = int(std::min(kMaxBatch, batch - first));
        const char* b_data = static_cast<const char*>(b.data) + first * b.batch_stride * element;
        const char* a_data = static_cast<const char*>(a.data) + first * a.batch_stride * element;
        char* c_data = static_cast<char*>(c.data) + first * c.batch_stride * out_element;
        LUMEN_CUBLAS_CHECK(cublas().gemm_strided_batched(
            handle, op_b, op_a, m, n, k, alpha, b_data, types.data, ldb, b.batch_stride, a_data,
            types.data, lda, a.batch_stride, beta_ptr, c_data, out_type, ldc, c.batch_stride, count,
            types.compute, CUBLAS_GEMM_DEFAULT));
    }
}

}  // namespace lumen::cuda
