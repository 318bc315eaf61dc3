// Internal: how process_group.cpp reaches the MPI and NCCL backends without depending on them.
// They live in the library lumen_dist (train/dist/mpi_group.cpp, nccl_group.cpp), which only
// the programs of this tree link (whole, as lumen_cuda: core/cuda_guard.h explains the weak
// declarations); in a program without it these functions are null and lumen runs as one
// process. Also the argument checks that every backend shares.
#pragma once

#include <memory>

#include "train/dist/process_group.h"

#define LUMEN_DIST_API __attribute__((weak))

namespace lumen::train::dist {

// MPI_COMM_WORLD (MPI initialized on the first call, finalized at exit).
LUMEN_DIST_API std::shared_ptr<ProcessGroup> make_mpi_group();
// CUDA tensors through NCCL on `device`, CPU tensors and the NCCL bootstrap through `host`
// (an MPI group). Null without NCCL.
LUMEN_DIST_API std::shared_ptr<ProcessGroup> make_nccl_group(std::shared_ptr<ProcessGroup> host,
                                                             Device device);

// Throws [op] unless x is defined and contiguous.
void check_contiguous(const char* op, const Tensor& x);
// Throws [all_reduce] unless x's dtype can be summed (float32, float64, int64).
void check_summable(const Tensor& x);
// Throws [op] unless 0 <= root < world_size.
void check_root(const char* op, int root, int world_size);
// How long a collective may wait for the other ranks: LUMEN_DIST_TIMEOUT in seconds, 1800 (as
// torch.distributed's) when unset. Throws [dist] for a value that is not a number > 0.
double collective_timeout_seconds();
// The [dist] error of a collective `op` that did not complete within `seconds`.
[[noreturn]] void fail_timeout(const char* op, double seconds);

}  // namespace lumen::train::dist
