// The NCCL backend: CUDA tensors through NCCL on this rank's GPU, CPU tensors and the barrier
// through the MPI group it was made from, which also carries NCCL's bootstrap (rank 0's
// ncclUniqueId, broadcast to all). Compiled into lumen_dist only with LUMEN_CUDA=ON, MPI and
// NCCL (nccl.h ships with the CUDA toolkit). lumen's kernels run on the legacy default stream,
// so the collectives run there too: ordered with every kernel before and after. They are
// waited for by polling the stream with the MPI backend's deadline (LUMEN_DIST_TIMEOUT) and
// NCCL's asynchronous error state, so that a rank that stopped answering ends the job with
// an error (after ncclCommAbort frees this rank's kernels) instead of a hang.
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include <cuda_runtime.h>
#include <nccl.h>

#include "core/cuda/cuda_check.h"
#include "core/error.h"
#include "train/dist/backends.h"

namespace lumen::train::dist {

namespace {

void check_nccl(ncclResult_t result, const char* call) {
    LUMEN_CHECK(result == ncclSuccess, "nccl", call, " failed: ", ncclGetErrorString(result));
}

ncclDataType_t nccl_type(DType dtype) {
    if (dtype == DType::float32) return ncclFloat32;
    if (dtype == DType::float64) return ncclFloat64;
    return ncclInt64;  // check_summable allowed nothing else
}

class NcclGroup final : public ProcessGroup {
  public:
    NcclGroup(std::shared_ptr<ProcessGroup> host, Device device)
        : host_(std::move(host)), device_(device) {
        LUMEN_CUDA_CHECK(cudaSetDevice(device_.index));
        ncclUniqueId id;
        Tensor bytes = zeros({int64_t(sizeof(id))}, DType::uint8);
        if (host_->rank() == 0) {
            check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
            std::memcpy(bytes.data_ptr(), &id, sizeof(id));
        }
        host_->broadcast(bytes, 0);
        std::memcpy(&id, bytes.data_ptr(), sizeof(id));
        check_nccl(ncclCommInitRank(&comm_, host_->world_size(), id, host_->rank()),
                   "ncclCommInitRank");
    }
    ~NcclGroup() override {
        if (comm_) ncclCommDestroy(comm_);
    }
    int rank() const override { return host_->rank(); }
    int world_size() const override { return host_->world_size(); }
    std::string backend() const override { return "nccl"; }

    void all_reduce(Tensor& x) override { all_reduce_async(x)->wait(); }

    // Queued on the default stream behind the kernels that made x's values, so it needs no
    // event; it does not overlap with later compute on that stream (a second stream would).
    std::unique_ptr<Work> all_reduce_async(Tensor& x) override {
        if (!on_gpu("all_reduce", x)) return host_->all_reduce_async(x);
        check_summable(x);
        check_nccl(ncclAllReduce(x.data_ptr(), x.data_ptr(), size_t(x.numel()),
                                 nccl_type(x.dtype()), ncclSum, comm_, cudaStream_t(0)),
                   "ncclAllReduce");
        struct Queued final : Work {
            NcclGroup* group;
            explicit Queued(NcclGroup* g) : group(g) {}
            bool poll() override { return group->stream_done("all_reduce"); }
            void wait() override { group->wait_stream("all_reduce"); }
        };
        return std::make_unique<Queued>(this);
    }

    void broadcast(Tensor& x, int root) override {
        if (!on_gpu("broadcast", x)) return host_->broadcast(x, root);
        check_root("broadcast", root, world_size());
        check_nccl(ncclBroadcast(x.data_ptr(), x.data_ptr(), bytes(x), ncclUint8, root, comm_,
                                 cudaStream_t(0)),
                   "ncclBroadcast");
        wait_stream("broadcast");
    }

    Tensor all_gather(const Tensor& x) override {
        if (!on_gpu("all_gather", x)) return host_->all_gather(x);
        Shape shape = x.shape();
        shape.insert(shape.begin(), world_size());
        Tensor out = empty(shape, x.dtype(), x.device());
        check_nccl(ncclAllGather(x.data_ptr(), out.data_ptr(), bytes(x), ncclUint8, comm_,
                                 cudaStream_t(0)),
                   "ncclAllGather");
        wait_stream("all_gather");
        return out;
    }

    void barrier() override { host_->barrier(); }
    void abort(int code) override {
        if (comm_) ncclCommAbort(comm_);  // frees ranks blocked in a NCCL kernel
        host_->abort(code);
    }

    // Whether the default stream, and so the last collective queued on it, has finished;
    // throws [nccl] for an error NCCL reports on the communicator.
    bool stream_done(const char* op) {
        ncclResult_t state = ncclSuccess;
        check_nccl(ncclCommGetAsyncError(comm_, &state), "ncclCommGetAsyncError");
        if (state != ncclSuccess && state != ncclInProgress) {
            ncclCommAbort(comm_);
            comm_ = nullptr;
            check_nccl(state, op);
        }
        const cudaError_t query = cudaStreamQuery(cudaStream_t(0));
        if (query == cudaErrorNotReady) return false;
        LUMEN_CUDA_CHECK(query);
        return true;
    }
    // Polls stream_done until it is, and after the timeout aborts the communicator (its
    // kernels return) and throws [dist] as the MPI backend does. Sleeps 50 us between polls
    // past the first thousand.
    void wait_stream(const char* op) {
        using Clock = std::chrono::steady_clock;
        const Clock::time_point start = Clock::now();
        const auto limit = std::chrono::duration<double>(timeout_);
        for (int polls = 0; !stream_done(op); ++polls) {
            if (Clock::now() - start >= limit) {
                ncclCommAbort(comm_);
                comm_ = nullptr;
                fail_timeout(op, timeout_);
            }
            if (polls > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
    }

  private:
    // Whether x goes through NCCL: a CUDA tensor on this rank's device (checked), not a CPU one.
    bool on_gpu(const char* op, const Tensor& x) const {
        check_contiguous(op, x);
        if (!x.is_cuda()) return false;
        LUMEN_CHECK(comm_ != nullptr, op, "rank ", rank(), "'s NCCL communicator was aborted ",
                    "after an earlier error or timeout");
        LUMEN_CHECK(x.device() == device_, op, "rank ", rank(), " communicates on ", device_,
                    ", got a tensor on ", x.device());
        return true;
    }
    static size_t bytes(const Tensor& x) { return size_t(x.numel()) * x.element_size(); }

    std::shared_ptr<ProcessGroup> host_;
    Device device_;
    ncclComm_t comm_ = nullptr;
    double timeout_ = collective_timeout_seconds();
};

}  // namespace

std::shared_ptr<ProcessGroup> make_nccl_group(std::shared_ptr<ProcessGroup> host, Device device) {
    return std::make_shared<NcclGroup>(std::move(host), device);
}

}  // namespace lumen::train::dist
