// The process group of data-parallel training: the ranks of one job and the collectives the
// trainer needs (sum all-reduce, broadcast, all-gather, barrier), as in torch.distributed.
// Backends: one process (always), MPI (train/dist/mpi_group.cpp, built when CMake finds MPI)
// and NCCL for CUDA tensors (train/dist/nccl_group.cpp, with CUDA and NCCL). What the trainer
// does with them (buckets, sharding, config check) is in train/dist/data_parallel.h.
#pragma once

#include <memory>
#include <string>

#include "core/device.h"
#include "core/tensor.h"

namespace lumen::train::dist {

// A collective started by an *_async call. Its tensor must stay alive, and nobody may read or
// write it, until wait() has returned.
class Work {
  public:
    virtual ~Work() = default;
    // Lets the backend move it on without blocking (MPI progresses a collective only inside its
    // calls); true once it has completed.
    virtual bool poll() = 0;
    // Returns when it has completed; throws [dist] after the timeout (LUMEN_DIST_TIMEOUT).
    virtual void wait() = 0;
};

// A group of `world_size()` processes, numbered 0..world_size()-1. Every collective must be
// called by every rank in the same order with tensors of the same shape and dtype (as with
// MPI); a rank that skips one leaves the others waiting. Tensors must be contiguous. All
// backends take CPU tensors; NCCL also CUDA tensors on its rank's device.
class ProcessGroup {
  public:
    virtual ~ProcessGroup() = default;
    virtual int rank() const = 0;
    virtual int world_size() const = 0;
    // "single", "mpi" or "nccl", for messages.
    virtual std::string backend() const = 0;

    // x = sum over ranks of x, in place. float32, float64 or int64. Throws [all_reduce] for
    // another dtype or a non-contiguous tensor.
    virtual void all_reduce(Tensor& x) = 0;
    // The same, started and returned at once, so that the caller computes while it runs (MPI's
    // non-blocking collective; NCCL's, queued on the device). The same checks, thrown here.
    // The default runs all_reduce() and returns finished work.
    virtual std::unique_ptr<Work> all_reduce_async(Tensor& x);
    // x = rank `root`'s x on every rank, in place; any dtype. Throws [broadcast] for a
    // non-contiguous tensor or a root outside 0..world_size()-1.
    virtual void broadcast(Tensor& x, int root = 0) = 0;
    // Every rank's x stacked along a new first dim: (world_size, ...x's shape), in rank order,
    // on x's device; any dtype. Throws [all_gather] for a non-contiguous tensor.
    virtual Tensor all_gather(const Tensor& x) = 0;
    // Returns once every rank has called it.
    virtual void barrier() = 0;
    // Ends every process of the job with exit status `code` (MPI_Abort), so that the other
    // ranks do not wait forever in a collective for a rank that failed. Only the CLI's main
    // calls it, after printing the error. Returns only for a single process (nothing to end).
    virtual void abort(int code) = 0;

    // The group of this process, made on the first call and the same afterwards: MPI when the
    // process was started by mpirun with more than one rank (OMPI_COMM_WORLD_SIZE or
    // PMI_SIZE > 1), else one process. With `device` CUDA under mpirun, the NCCL backend
    // (CUDA tensors through NCCL, CPU tensors through MPI). Throws [dist] when launched by
    // mpirun but built without MPI (or asked for CUDA without NCCL), naming what is missing.
    static std::shared_ptr<ProcessGroup> from_environment(Device device = Device::cpu());
};

// The group made by from_environment() so far, or null: what main() aborts after an error.
ProcessGroup* current_group();

// A group of one process: rank 0 of 1; every collective leaves its tensor as it is.
std::shared_ptr<ProcessGroup> single_process_group();

// The number of ranks mpirun (OpenMPI or a PMI launcher) says this job has; 1 when not
// launched by one.
int launcher_world_size();
// This rank's index among the ranks of its machine (OMPI_COMM_WORLD_LOCAL_RANK); 0 without.
int launcher_local_rank();

// Which backends this program has ("MPI linked, NCCL not linked"), for `lumen info`.
std::string backends_linked();

}  // namespace lumen::train::dist
