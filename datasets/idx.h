// IDX files, the MNIST format (http://yann.lecun.com/exdb/mnist/): a magic word (two zero
// bytes, a dtype code, the number of dims), big-endian uint32 dims, then the row-major data.
// Plain and gzip-compressed files are read alike (zlib). Datasets built on it are in
// fashion_mnist.h.
#pragma once

#include <string>

#include "core/tensor.h"

namespace lumen::datasets {

// Reads an IDX file, plain or gzipped, into a CPU tensor of the file's shape. dtype codes map
// to lumen dtypes: 0x08 ubyte -> uint8; 0x09 sbyte, 0x0B short, 0x0C int -> int32; 0x0D float
// -> float32; 0x0E double -> float64 (multi-byte values are converted from big-endian).
// Everything is validated before the data is allocated: the magic, the dtype code, the number
// of dims (1..8), every dim > 0, the total size (no overflow, at most 2^34 bytes, and no more
// than the file can hold), and after reading that the payload is exactly that long.
// Throws lumen::Error "[idx] <path>: <problem> (got ..., expected ...)"; a file that cannot be
// opened names the path and the system's reason.
Tensor read_idx(const std::string& path);

// Reads an IDX image file: ubyte data with 3 dims. Returns uint8 (N, H, W).
// Throws [idx] naming the file for any other dtype or dim count, and for everything read_idx
// rejects.
Tensor read_idx_images(const std::string& path);

// Reads an IDX label file: ubyte data with 1 dim. Returns int64 (N).
// Throws [idx] naming the file for any other dtype or dim count, and for everything read_idx
// rejects.
Tensor read_idx_labels(const std::string& path);

// Writes a uint8, int32, float32 or float64 CPU tensor (1..8 dims, none of size 0) as an IDX
// file with the matching dtype code; gzip-compressed when `compress`. Used to make test files
// and to export data. Throws [idx] naming the file when it cannot be written or the tensor is
// not supported.
void write_idx(const std::string& path, const Tensor& tensor, bool compress = false);

}  // namespace lumen::datasets
