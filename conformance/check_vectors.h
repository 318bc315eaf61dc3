// The conformance runner behind `lumen check-vectors`: loads oracle vectors (tests/data/oracle;
// format in docs/architecture.md), runs each through its module's adapter (op_vectors.h), and
// compares outputs and gradients with the tolerances the vector carries. main.cpp only parses
// flags.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "core/device.h"

namespace lumen::conformance {

// One *.safetensors file to run: its path and the name shown in the report (relative to the
// directory it was found in, or the path as given for a file argument).
struct VectorFile {
    std::string path;
    std::string display;
};

// Files given directly, and every *.safetensors under the directories given (recursive,
// sorted), in argument order. Throws [check-vectors] naming a path that does not exist.
std::vector<VectorFile> find_vector_files(const std::vector<std::string>& paths);

struct VectorResult {
    std::string display;
    std::string module;  // empty when the file could not be read
    bool passed = false;
    double max_abs = 0;  // max |got - want| over every compared tensor
    double max_rel = 0;  // max |got - want| / |want| over elements with |want| > atol
    std::string reason;  // why it failed: first failing tensor, or an exception message
};

// Runs one vector on `device`. Never throws for a problem with the vector or with lumen (an
// unreadable file, an unknown module, an op error): that is a failed result with the reason.
//   inputs: in.* (floating -> float32; a leaf with requires_grad when grad.in.* exists),
//           p.* (floating -> float32 leaves with requires_grad), b.* (floating -> float32)
//   check:  every out.* within |got - want| <= atol + rtol |want| (metadata rtol, atol, or
//           the tensor's own [rtol, atol] in metadata 'tolerance', a JSON object keyed by
//           tensor name); infinities and NaNs exactly, position by position; a 0-d result
//           against a scalar stored as [1]. With dout.*: loss = sum_k sum(out_k * dout_k),
//           backward, then every grad.in.* and grad.p.* against the leaf's grad (no grad =
//           zeros), the same way.
VectorResult check_vector_file(const std::string& path, const std::string& display, Device device);

// "PASS  <display>  module=<m>  max_abs=<e> max_rel=<e>" or "FAIL  <display>  module=<m>  <why>".
std::string format_result(const VectorResult& result);

struct CheckSummary {
    int passed = 0;
    int failed = 0;
};

// Runs every vector under `paths`, writes one line per file and "N passed, M failed" to `out`.
// Throws [check-vectors] when a path does not exist or no vector was found.
CheckSummary check_vectors(const std::vector<std::string>& paths, Device device, std::ostream& out);

}  // namespace lumen::conformance
