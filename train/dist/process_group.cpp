// The single-process group, the choice of backend from the launcher's environment, and the
// argument checks the backends share.
#include "train/dist/process_group.h"

#include <cstdlib>
#include <mutex>
#include <string>

#include "core/error.h"
#include "train/dist/backends.h"

namespace lumen::train::dist {

namespace {

class SingleProcessGroup final : public ProcessGroup {
  public:
    int rank() const override { return 0; }
    int world_size() const override { return 1; }
    std::string backend() const override { return "single"; }
    void all_reduce(Tensor& x) override {
        check_contiguous("all_reduce", x);
        check_summable(x);
    }
    void broadcast(Tensor& x, int root) override {
        check_contiguous("broadcast", x);
        check_root("broadcast", root, 1);
    }
    Tensor all_gather(const Tensor& x) override {
        check_contiguous("all_gather", x);
        Shape shape = x.shape();
        shape.insert(shape.begin(), 1);
        Tensor out = empty(shape, x.dtype(), x.device());
        out.copy_(x.view(shape));
        return out;
    }
    void barrier() override {}
    void abort(int) override {}
};

// An environment variable as a positive int, or 0 when unset or not a number.
int env_int(const char* name) {
    const char* text = std::getenv(name);
    if (!text) return 0;
    char* end = nullptr;
    long value = std::strtol(text, &end, 10);
    return end != text && *end == '\0' && value > 0 && value < (1 << 30) ? int(value) : 0;
}

std::mutex group_mutex;
std::shared_ptr<ProcessGroup> world_group;  // what from_environment made

}  // namespace

std::unique_ptr<Work> ProcessGroup::all_reduce_async(Tensor& x) {
    struct Finished final : Work {
        bool poll() override { return true; }
        void wait() override {}
    };
    all_reduce(x);
    return std::make_unique<Finished>();
}

std::shared_ptr<ProcessGroup> single_process_group() {
    return std::make_shared<SingleProcessGroup>();
}

int launcher_world_size() {
    int size = env_int("OMPI_COMM_WORLD_SIZE");
    if (size == 0) size = env_int("PMI_SIZE");  // MPICH's Hydra, Slurm's PMI
    return size > 0 ? size : 1;
}

int launcher_local_rank() {
    const char* text = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    return text ? std::atoi(text) : 0;
}

std::string backends_linked() {
    return std::string("MPI ") + (make_mpi_group ? "linked" : "not linked") + ", NCCL " +
           (make_nccl_group ? "linked" : "not linked");
}

std::shared_ptr<ProcessGroup> ProcessGroup::from_environment(Device device) {
    std::lock_guard lock(group_mutex);
    const int size = launcher_world_size();
    if (!world_group) {
        if (size <= 1) {
            world_group = single_process_group();
        } else {
            LUMEN_CHECK(&make_mpi_group != nullptr, "dist", "started by mpirun with ", size,
                        " ranks, but this lumen was built without MPI (LUMEN_MPI=OFF, or CMake "
                        "found no MPI: install libopenmpi-dev and rebuild)");
            world_group = make_mpi_group();
        }
    }
    if (!device.is_cuda() || world_group->world_size() == 1 || world_group->backend() == "nccl")
        return world_group;
    LUMEN_CHECK(&make_nccl_group != nullptr, "dist", "train.device is ", device, " with ", size,
                " ranks, but this lumen was built without NCCL (it needs "
                "LUMEN_CUDA=ON, MPI and nccl.h with libnccl)");
    world_group = make_nccl_group(world_group, device);
    return world_group;
}

ProcessGroup* current_group() {
    std::lock_guard lock(group_mutex);
    return world_group.get();
}

void check_contiguous(const char* op, const Tensor& x) {
    LUMEN_CHECK(x.defined(), op, "needs a tensor, got an undefined one");
    LUMEN_CHECK(x.is_contiguous(), op, "needs a contiguous tensor, got shape ", x.shape(),
                " with strides ", x.strides(), " (call .contiguous() first)");
}

void check_summable(const Tensor& x) {
    LUMEN_CHECK(
        x.dtype() == DType::float32 || x.dtype() == DType::float64 || x.dtype() == DType::int64,
        "all_reduce", "sums float32, float64 or int64 tensors, got ", x.dtype());
}

double collective_timeout_seconds() {
    const char* text = std::getenv("LUMEN_DIST_TIMEOUT");
    if (!text) return 1800.0;
    char* end = nullptr;
    const double seconds = std::strtod(text, &end);
    LUMEN_CHECK(end != text && *end == '\0' && seconds > 0, "dist",
                "LUMEN_DIST_TIMEOUT must be a number of seconds > 0, got '", text, "'");
    return seconds;
}

void fail_timeout(const char* op, double seconds) {
    // main() names this rank when it prints the error.
    LUMEN_FAIL("dist", op, " did not complete within ", seconds,
               " s: another rank is stuck or gone (LUMEN_DIST_TIMEOUT sets the limit)");
}

void check_root(const char* op, int root, int world_size) {
    LUMEN_CHECK(root >= 0 && root < world_size, op, "root must be a rank in 0..", world_size - 1,
                ", got ", root);
}

}  // namespace lumen::train::dist
