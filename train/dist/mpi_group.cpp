// The MPI backend (OpenMPI's MPI_COMM_WORLD), CPU tensors only. Compiled into lumen_dist when
// CMake finds MPI. Errors come back as return codes (MPI_ERRORS_RETURN) and become [mpi]
// errors naming the call; counts above INT_MAX go in pieces, since MPI's counts are int.
// Every collective is started non-blocking and waited for with a deadline
// (LUMEN_DIST_TIMEOUT seconds, 1800 by default as torch.distributed's), so that a rank that
// stopped without dying (stuck, SIGSTOP, a lost machine) ends the job with an error instead of
// a hang; a rank that dies is mpirun's to notice.
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <mpi.h>

#include "core/error.h"
#include "train/dist/backends.h"

namespace lumen::train::dist {

namespace {

void check_mpi(int code, const char* call) {
    if (code == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    LUMEN_FAIL("mpi", call, " failed: ", std::string(text, size_t(length)));
}

void check_cpu(const char* op, const Tensor& x) {
    check_contiguous(op, x);
    LUMEN_CHECK(x.is_cpu(), op, "the MPI backend takes CPU tensors, got one on ", x.device(),
                " (CUDA tensors need the NCCL backend)");
}

MPI_Datatype mpi_type(DType dtype) {
    if (dtype == DType::float32) return MPI_FLOAT;
    if (dtype == DType::float64) return MPI_DOUBLE;
    return MPI_INT64_T;  // check_summable allowed nothing else
}

// Polls `requests` until all complete, and throws [dist] after `timeout` seconds. Past the
// first thousand polls it sleeps 50 us between them, which frees the core for the rank that is
// still computing when there are more ranks than cores (blocking MPI calls spin instead).
void wait_all(std::vector<MPI_Request>& requests, double timeout, const char* op) {
    using Clock = std::chrono::steady_clock;
    const Clock::time_point start = Clock::now();
    const auto limit = std::chrono::duration<double>(timeout);
    int done = 0;
    for (int polls = 0;; ++polls) {
        check_mpi(MPI_Testall(int(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE),
                  "MPI_Testall");
        if (done) return;
        if (Clock::now() - start >= limit) fail_timeout(op, timeout);
        if (polls > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
}

// The requests of one non-blocking collective (several when its count exceeds INT_MAX) and
// the tensor they write.
class MpiWork final : public Work {
  public:
    MpiWork(std::vector<MPI_Request> requests, Tensor buffer, double timeout, const char* op)
        : requests_(std::move(requests)), buffer_(std::move(buffer)), timeout_(timeout), op_(op) {}
    ~MpiWork() override {
        // Abandoned unfinished (an error between start and wait, and the job is ending): MPI
        // may still write into the buffer, and waiting could block on a failed rank, so the
        // buffer is deliberately never freed.
        if (!finished_) new Tensor(std::move(buffer_));
    }
    bool poll() override {
        if (finished_) return true;
        int done = 0;
        check_mpi(MPI_Testall(int(requests_.size()), requests_.data(), &done, MPI_STATUSES_IGNORE),
                  "MPI_Testall");
        finished_ = done != 0;
        return finished_;
    }
    void wait() override {
        if (finished_) return;
        wait_all(requests_, timeout_, op_);
        finished_ = true;
    }

  private:
    std::vector<MPI_Request> requests_;
    Tensor buffer_;
    double timeout_;
    const char* op_;
    bool finished_ = false;
};

class MpiGroup final : public ProcessGroup {
  public:
    MpiGroup() {
        int initialized = 0;
        MPI_Initialized(&initialized);
        if (!initialized) {
            // Only the thread that called MPI_Init calls MPI (the trainer's thread); worker
            // threads compute but never communicate.
            int provided = 0;
            check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided),
                      "MPI_Init_thread");
            owns_mpi_ = true;
        }
        check_mpi(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN),
                  "MPI_Comm_set_errhandler");
        check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
        check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
        timeout_ = collective_timeout_seconds();
    }
    ~MpiGroup() override {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (owns_mpi_ && !finalized) MPI_Finalize();
    }
    int rank() const override { return rank_; }
    int world_size() const override { return size_; }
    std::string backend() const override { return "mpi"; }

    void all_reduce(Tensor& x) override { all_reduce_async(x)->wait(); }

    std::unique_ptr<Work> all_reduce_async(Tensor& x) override {
        check_cpu("all_reduce", x);
        check_summable(x);
        auto* data = static_cast<uint8_t*>(x.data_ptr());
        const int64_t item = int64_t(x.element_size());
        std::vector<MPI_Request> requests;
        for (int64_t done = 0; done < x.numel();) {
            const int count = int(std::min<int64_t>(x.numel() - done, INT_MAX));
            MPI_Request request;
            check_mpi(MPI_Iallreduce(MPI_IN_PLACE, data + done * item, count, mpi_type(x.dtype()),
                                     MPI_SUM, MPI_COMM_WORLD, &request),
                      "MPI_Iallreduce");
            requests.push_back(request);
            done += count;
        }
        return std::make_unique<MpiWork>(std::move(requests), x, timeout_, "all_reduce");
    }

    void broadcast(Tensor& x, int root) override {
        check_cpu("broadcast", x);
        check_root("broadcast", root, size_);
        auto* data = static_cast<uint8_t*>(x.data_ptr());
        const int64_t bytes = x.numel() * int64_t(x.element_size());
        for (int64_t done = 0; done < bytes;) {
            const int count = int(std::min<int64_t>(bytes - done, INT_MAX));
            MPI_Request request;
            check_mpi(MPI_Ibcast(data + done, count, MPI_BYTE, root, MPI_COMM_WORLD, &request),
                      "MPI_Ibcast");
            wait(request, "broadcast");
            done += count;
        }
    }

    Tensor all_gather(const Tensor& x) override {
        check_cpu("all_gather", x);
        const int64_t bytes = x.numel() * int64_t(x.element_size());
        LUMEN_CHECK(bytes <= INT_MAX, "all_gather", "gathers at most 2^31 - 1 bytes per rank, got ",
                    bytes, " (shape ", x.shape(), ")");
        Shape shape = x.shape();
        shape.insert(shape.begin(), size_);
        Tensor out = empty(shape, x.dtype());
        MPI_Request request;
        check_mpi(MPI_Iallgather(x.data_ptr(), int(bytes), MPI_BYTE, out.data_ptr(), int(bytes),
                                 MPI_BYTE, MPI_COMM_WORLD, &request),
                  "MPI_Iallgather");
        wait(request, "all_gather");
        return out;
    }

    void barrier() override {
        MPI_Request request;
        check_mpi(MPI_Ibarrier(MPI_COMM_WORLD, &request), "MPI_Ibarrier");
        wait(request, "barrier");
    }

    void abort(int code) override { MPI_Abort(MPI_COMM_WORLD, code); }

  private:
    void wait(MPI_Request& request, const char* op) const {
        std::vector<MPI_Request> requests{request};
        wait_all(requests, timeout_, op);
    }

    int rank_ = 0, size_ = 1;
    bool owns_mpi_ = false;    // MPI was initialized here, so it is finalized here
    double timeout_ = 1800.0;  // seconds a collective may wait for the other ranks
};

}  // namespace

std::shared_ptr<ProcessGroup> make_mpi_group() { return std::make_shared<MpiGroup>(); }

}  // namespace lumen::train::dist
