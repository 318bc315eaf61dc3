// NIfTI-1 and NIfTI-2 images (.nii, .nii.gz), the format of CT and MRI volumes in medical
// imaging (https://nifti.nimh.nih.gov): reading with the geometry exactly as nibabel gives it
// (the array of img.get_fdata() and img.affine), and writing, keeping an input's geometry so
// that predictions overlay their images in any viewer.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace lumen::datasets {

// The header fields that matter for the array and its place in space, after the fixes nibabel
// applies when it loads a file (pixdim[1..3] of 0 become 1 and negative ones their absolute
// value, a qfac (pixdim[0]) other than -1 or 1 becomes 1, qform/sform codes outside 0..5
// become 0, vox_offset 0 becomes the end of the header).
struct NiftiHeader {
    int version = 1;                 // 1 or 2
    std::vector<int64_t> shape;      // dim[1..dim[0]]
    int datatype = 16;               // NIfTI code: 2 uint8, 4 int16, 8 int32, 16 float32, ...
    std::array<double, 8> pixdim{};  // pixdim[0] is qfac
    double scl_slope = 0, scl_inter = 0;
    int qform_code = 0, sform_code = 0;
    double quatern_b = 0, quatern_c = 0, quatern_d = 0;
    double qoffset_x = 0, qoffset_y = 0, qoffset_z = 0;
    std::array<std::array<double, 4>, 3> srow{};
    int xyzt_units = 0;
    std::string descrip;

    // nibabel's Nifti1Header.get_best_affine(): the sform when sform_code != 0, else the qform
    // when qform_code != 0, else the "base" affine from pixdim centred on the volume (x flipped,
    // as Analyze). Row-major 4x4, float64. Throws [nifti] for a qform whose quaternion is not
    // unit length (nibabel refuses those too).
    std::array<double, 16> affine() const;
    // The spacing of the first three axes (pixdim[1..3]; 1 for missing axes).
    std::array<double, 3> spacing() const;
};

struct NiftiImage {
    NiftiHeader header;
    // The stored values, shape (i, j, k[, t, ...]) in that index order (C-contiguous), in the
    // lumen dtype closest to the datatype: uint8; int32 (int8, int16, uint16, int32); int64
    // (uint32, int64, uint64: values of 2^63 or more are an error); float32; float64.
    Tensor data;
    // As nibabel's img.get_fdata(): float64, each value * scl_slope + scl_inter computed in
    // float64 (no scaling when the slope is 0 or not finite).
    Tensor fdata() const;
};

// Reads a .nii or .nii.gz file (gzip detected from the content), NIfTI-1 or NIfTI-2, either
// byte order. Everything the header claims is checked before the data is allocated: the
// header size and magic, 1..7 dimensions each >= 1, a supported datatype (not complex, RGB,
// float128 or binary), the data size (no overflow, at most 16 GiB, and within the file) and
// vox_offset. Throws lumen::Error "[nifti] <path>: <problem> (got ..., expected ...)".
NiftiImage read_nifti(const std::string& path);

// Writes `data` (any device and layout; 1 to 7 dims in (i, j, k, ...) order; uint8, int32,
// int64, float32 or float64) as a NIfTI-1 file, gzip-compressed when `path` ends in ".gz",
// atomically. The geometry (pixdim, qform and sform with their codes, units) comes from
// `like` (the header of the image a prediction was made from), the shape and datatype from
// `data`, and scaling is off. Throws [nifti] naming the file.
void write_nifti(const std::string& path, const Tensor& data, const NiftiHeader& like);

// A header whose affine() is `affine` (row-major 4x4): sform_code 2 (aligned) with the
// affine's rows, qform_code 0, pixdim from the columns' lengths.
NiftiHeader nifti_header_from_affine(const std::array<double, 16>& affine);

// The axis codes of an affine ("RAS", "LPS", ...) as nibabel's aff2axcodes: for each voxel
// axis, the world direction it is closest to.
std::string orientation_code(const std::array<double, 16>& affine);

}  // namespace lumen::datasets
