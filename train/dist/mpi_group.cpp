// The MPI backend (OpenMPI's MPI_COMM_WORLD), CPU tensors only. Compiled into lumen_dist when
// CMake finds MPI. Errors come back as return codes (MPI_ERRORS_RETURN) and become [mpi]
// errors naming the call; counts above INT_MAX go in pieces, since MPI's counts are int.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>

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
    }
    ~MpiGroup() override {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (owns_mpi_ && !finalized) MPI_Finalize();
    }
    int rank() const override { return rank_; }
    int world_size() const override { return size_; }
    std::string backend() const override { return "mpi"; }

    void all_reduce(Tensor& x) override {
        check_cpu("all_reduce", x);
        check_summable(x);
        auto* data = static_cast<uint8_t*>(x.data_ptr());
        const int64_t item = int64_t(x.element_size());
        for (int64_t done = 0; done < x.numel();) {
            const int count = int(std::min<int64_t>(x.numel() - done, INT_MAX));
            check_mpi(MPI_Allreduce(MPI_IN_PLACE, data + done * item, count, mpi_type(x.dtype()),
                                    MPI_SUM, MPI_COMM_WORLD),
                      "MPI_Allreduce");
            done += count;
        }
    }

    void broadcast(Tensor& x, int root) override {
        check_cpu("broadcast", x);
        check_root("broadcast", root, size_);
        auto* data = static_cast<uint8_t*>(x.data_ptr());
        const int64_t bytes = x.numel() * int64_t(x.element_size());
        for (int64_t done = 0; done < bytes;) {
            const int count = int(std::min<int64_t>(bytes - done, INT_MAX));
            check_mpi(MPI_Bcast(data + done, count, MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
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
        check_mpi(MPI_Allgather(x.data_ptr(), int(bytes), MPI_BYTE, out.data_ptr(), int(bytes),
                                MPI_BYTE, MPI_COMM_WORLD),
                  "MPI_Allgather");
        return out;
    }

    void barrier() override { check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

    void abort(int code) override { MPI_Abort(MPI_COMM_WORLD, code); }

  private:
    int rank_ = 0, size_ = 1;
    bool owns_mpi_ = false;  // MPI was initialized here, so it is finalized here
};

}  // namespace

std::shared_ptr<ProcessGroup> make_mpi_group() { return std::make_shared<MpiGroup>(); }

}  // namespace lumen::train::dist
