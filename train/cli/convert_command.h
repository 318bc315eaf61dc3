// `lumen convert IN OUT` between NIfTI (.nii, .nii.gz), NumPy (.npy, .npz) and safetensors,
// and `lumen inspect FILE`: shape, dtype, spacing, affine, orientation and value statistics.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace lumen::train::cli {

// Converting to safetensors writes tensor "image" (and for NIfTI "affine", float64 4x4 as
// nibabel's img.affine); "image" is float32 unless --keep-dtype: for NIfTI the values and shape
// of nibabel's img.get_fdata() (index order (i, j, k[, t]), scaling applied), for .npy the
// array as NumPy loads it; an .npz gives one tensor per member. From safetensors: to NIfTI the
// tensor "image" (or the only tensor) with the geometry of "affine" when present; to .npy the
// same tensor; to .npz every tensor. NIfTI to NIfTI keeps the header's geometry. Throws
// [convert] naming the file and the formats for a pair it cannot convert.
int run_convert_command(const std::vector<std::string>& args, std::ostream& out);
int run_inspect_command(const std::vector<std::string>& args, std::ostream& out);
// `lumen make-demo NAME --out DIR [--seed N]` (datasets/demo.h).
int run_make_demo_command(const std::vector<std::string>& args, std::ostream& out);

}  // namespace lumen::train::cli
