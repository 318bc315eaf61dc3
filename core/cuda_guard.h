// How the CPU library reaches the CUDA backend without depending on it.
//
// lumen is two libraries: lumen (lumen::lumen: tensors, ops, nn, models, training; every CPU
// kernel) and lumen_cuda (lumen::cuda: the kernels of core/cuda and ops/cuda, linked whole
// into the programs that ask for it). The functions of the backend are declared with
// LUMEN_CUDA_API, a weak declaration: in a program without lumen::cuda they resolve to null
// instead of failing to link, so a CPU-only program needs neither the CUDA toolkit nor its
// libraries. No such null is ever called: CUDA memory only comes from cuda::allocate, which
// core/storage.cpp reaches only after cuda_built() said the backend is there, so an op that
// sees a CUDA tensor knows the backend is linked.
//
// LUMEN_DISPATCH(tensor, kernel, args...) is the one line with which an op runs a kernel on the
// tensor's device: cuda::kernel(args...) for a CUDA tensor, cpu::kernel(args...) otherwise,
// inside a profiler scope named after the kernel (core/profiler.h; one relaxed load when off).
#pragma once

#include "core/error.h"
#include "core/profiler.h"

#define LUMEN_CUDA_API __attribute__((weak))

#define LUMEN_DISPATCH(tensor, fn, ...)                                      \
    (::lumen::profiler::Scope(::lumen::profiler::Kind::kernel, #fn, tensor), \
     (tensor).is_cuda() ? cuda::fn(__VA_ARGS__) : cpu::fn(__VA_ARGS__))

// For ops whose CUDA kernel does not exist yet: a clear error, never a silent CPU fallback.
#define LUMEN_NO_CUDA_KERNEL(op) \
    LUMEN_FAIL(op, "has no CUDA kernel yet; move the inputs to the CPU with .cpu()")
