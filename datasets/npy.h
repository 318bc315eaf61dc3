// NumPy's .npy and .npz files (numpy.save, numpy.savez, numpy.savez_compressed): reading an
// array of any bool, integer or float dtype, in either byte order and in C or Fortran order,
// and writing them. TransUNet's Synapse slices, for one, are .npz files with "image" and
// "label" arrays. Format: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
#pragma once

#include <map>
#include <string>

#include "core/tensor.h"

namespace lumen::datasets {

struct NpyArray {
    Tensor data;        // CPU, contiguous, in C order, with the array's shape
    std::string descr;  // the file's dtype: "<f4", "|b1", ">i2", ...
};

// The lumen dtype an array is read as: bool (b1), uint8 (u1), int32 (i1, i2, u2, i4), int64
// (u4, i8, u8: a uint64 value of 2^63 or more is an error), float16 (f2), float32 (f4),
// float64 (f8); big-endian values are converted, Fortran-ordered arrays transposed to C order.
// Reads a .npy file. Everything the header claims is checked before the data is allocated:
// the magic and version (1.0, 2.0, 3.0), a header that is exactly {'descr', 'fortran_order',
// 'shape'}, a supported dtype (not complex, object, string or structured), at most 8
// non-negative dimensions, a size that fits, and a file holding exactly that many bytes.
// Throws lumen::Error "[npy] <path>: <problem>".
NpyArray read_npy(const std::string& path);
// The same from bytes in memory (a member of an .npz); `source` names them in messages.
NpyArray parse_npy(const std::string& bytes, const std::string& source);

// Reads every array of an .npz archive (stored or deflated), by name without ".npy". Throws
// [npz] for a damaged archive (zip.h lists the checks), [npy] "<path>:<member>" for a damaged
// array, and [npz] for a member that is not an .npy file.
std::map<std::string, NpyArray> read_npz(const std::string& path);

// The .npy descr a tensor is written with ("|b1", "|u1", "<i4", "<i8", "<f2", "<f4", "<f8").
// Throws [npy] for bfloat16, which NumPy has no dtype for.
std::string npy_descr(DType dtype);
// Writes a tensor (any device or layout) as a version 1.0 .npy file in C order, little-endian,
// atomically. Throws [npy] naming the file for an I/O error or a dtype NumPy lacks (bfloat16).
void write_npy(const std::string& path, const Tensor& tensor);
// Writes tensors as an .npz archive, member "<name>.npy" each; deflated when `compress`
// (savez_compressed) else stored (savez). Throws as write_npy, and [npz] for I/O errors.
void write_npz(const std::string& path, const std::map<std::string, Tensor>& tensors,
               bool compress = false);

// A feature bag of multiple-instance learning (one whole-slide image): an (instances, features)
// array from a .npy file or a .safetensors file (its tensor "features", or its only tensor), as
// float32. Throws [bag] naming the file for another rank, an empty bag or a non-numeric dtype.
Tensor read_feature_bag(const std::string& path);

}  // namespace lumen::datasets
