// The safetensors file format (Hugging Face): reading and writing named tensors plus a
// string->string metadata map. Checkpoints, pretrained weights and the oracle vectors all use
// it. Layout: 8-byte little-endian header length n, n bytes of JSON
//   {"<name>": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"key": "value"}}
// then the data section; offsets are relative to its first byte, tensors are row-major LE.
#pragma once

#include <map>
#include <string>

#include "core/tensor.h"

namespace lumen {

struct SafetensorsFile {
    std::map<std::string, Tensor> tensors;        // name -> CPU tensor (contiguous)
    std::map<std::string, std::string> metadata;  // "__metadata__" without "lumen.crc32"
    bool checksum_verified = false;  // the file carried lumen's checksum, and it matched
};

// Reads a safetensors file from a path that may come from anyone. The file is memory-mapped
// copy-on-write: each tensor whose data offset is aligned for its dtype aliases the mapping
// (no copy; writing into it never changes the file), the others, and all BOOL tensors
// (normalized to 0/1), are copied. The mapping lives as long as any tensor using it; as with
// any mmap, truncating the file meanwhile makes later reads fault (SIGBUS).
// dtypes: F32, F64, F16, BF16, I64, I32, U8, BOOL. Returned tensors never require grad.
// Files written by lumen carry a CRC-32 of their content (metadata "lumen.crc32", see
// save_safetensors); when present it is verified and removed from `metadata`.
// Throws lumen::Error "[safetensors] <path>: <problem>" when the file cannot be opened
// (with strerror) or is not a regular file (a FIFO is refused, not waited on), is shorter than
// 8 bytes, its header length runs past the end of the file or over 16 MB, the header is not a
// JSON object, nests deeper than 8 levels or repeats a key, an entry has missing, extra or
// mistyped keys, an unknown dtype, more than kMaxDims (8) dimensions, a negative or
// overflowing shape, data_offsets outside the data section or not holding exactly
// prod(shape) * itemsize bytes, the tensors do not tile the data section exactly (an overlap,
// a gap, or bytes after the last tensor: a wrong header length or appended data), a metadata
// value is not a string, or the checksum does not match. Never reads outside the file; time
// and memory are linear in the header's length.
SafetensorsFile load_safetensors(const std::string& path);

// Writes `tensors` (any device, dtype and layout; copied to contiguous CPU memory as needed,
// autograd history ignored) in name order, and `metadata` as "__metadata__" when not empty.
// The header is padded with spaces to a multiple of 8 bytes so the data section stays 8-byte
// aligned. The metadata gains "lumen.crc32", the checksum that load_safetensors verifies: a
// CRC-32 over each tensor's name, dtype, shape and bytes in name order, then every other
// metadata key and value in key order (each string NUL-terminated, the rank and sizes as
// little-endian int64). The file is written to "<path>.tmp" and renamed over `path`, so a
// crash never leaves a half-written file under the final name.
// Throws lumen::Error "[safetensors] <path>: ..." for an undefined tensor, an empty name, the
// reserved name "__metadata__" or metadata key "lumen.crc32", or an I/O failure (with the
// reason of the failing call, e.g. "write failed: No space left on device").
void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// The safetensors spelling of a dtype ("F32", "BOOL", ...).
const char* safetensors_dtype_name(DType dtype);

}  // namespace lumen
