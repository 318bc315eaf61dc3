// Joint spatial transforms of a Sample (datasets/sample.h), 2-D and 3-D, as medical segmentation
// recipes use them (MONAI, nnU-Net, TransUNet): resize, crop and pad, flips, quarter turns,
// reorientation, resampling to a voxel spacing, and random crops, flips, turns and affine warps.
// The image and target move with linear interpolation, the label with nearest neighbour, and the
// affine follows the content. Intensity transforms live elsewhere.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "core/random.h"
#include "core/shape.h"
#include "datasets/sample.h"

namespace lumen::datasets {

// Common rules. Shapes: image (C, *spatial) float32, label (*spatial) int64 and target
// (C', *spatial) float32, all on the CPU, with 2 spatial dims (H, W) or 3 (i, j, k). Sizes,
// starts, axes and spacings have one entry per spatial dim. Every function returns a new sample
// of contiguous tensors (the input is never written) and throws [<function>] for a malformed
// sample or argument, showing the values.
//
// The affine follows the content: when output voxel p shows input voxel q = M p + t, the new
// affine is affine * [[M, t], [0, 1]], so world(p) afterwards = world(q) before. A 2-D sample
// uses the affine's first two axes (M and t act on them; the third column is kept).

// The spatial shape of `sample` after checking it; throws [name] unless the image is a
// (C, H, W) or (C, D, H, W) float32 CPU tensor, the label (when present) an int64 CPU tensor of
// the image's spatial shape and the target (when present) a float32 CPU tensor (C', *spatial).
Shape check_sample(const Sample& sample, const char* name);

// The voxel spacing of the affine's first `spatial_dims` axes: its columns' lengths.
std::vector<double> voxel_spacing(const Affine& affine, int64_t spatial_dims);

// ---- the resampler every grid change goes through ----

// q = matrix p + offset: the (fractional) input voxel that output voxel p reads. Row-major 3x3;
// a 2-D sample uses the top-left 2x2 block and the first two offsets.
struct VoxelMap {
    std::array<double, 9> matrix = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    std::array<double, 3> offset = {0, 0, 0};
};

// What a resampler reads outside the input grid (grid_sample's padding_mode): `zeros` a constant
// (the image's fill value; 0 for label and target), `border` the nearest edge voxel.
enum class PaddingMode { zeros, border };

// out(p) = in(map(p)) on an output grid of spatial `size`: image and target bilinear/trilinear,
// label nearest (round half up); a map that hits voxel centres exactly (integer matrix and
// offset: crops, pads, flips, turns) copies values exactly. The image reads `fill` outside the
// grid under PaddingMode::zeros. Updates the affine as above. Throws [warp_affine_nd].
Sample warp_affine_nd(const Sample& sample, const VoxelMap& map, const Shape& size,
                      PaddingMode padding = PaddingMode::zeros, double fill = 0.0);

// The map that resamples a grid with voxel-to-world affine `from` onto the grid of affine `to`:
// q = from^-1 to p (3-D: the top-left 3x3 block and the translation), so that
// warp_affine_nd(sample on `from`, map, size of `to`'s grid) gives the sample on `to`'s grid with
// affine `to`: how a prediction made on a reoriented or resampled grid returns to the input's, as
// nnU-Net exports it. Throws [voxel_map_between] when `from`'s 3x3 block is singular.
VoxelMap voxel_map_between(const Affine& from, const Affine& to);

// ---- deterministic transforms ----

// Resizes to spatial `size` as torch.nn.functional.interpolate: image and target with
// mode='bilinear'/'trilinear', align_corners=False (q = (p + 0.5) old / new - 0.5, clamped into
// the grid), the label with mode='nearest' (q = floor(p old / new), exact in integers). Note that
// torch's 'nearest' is not centred like the linear grid: for non-integer ratios a label voxel can
// sit up to half a voxel off the image (integer down- and up-sampling factors agree exactly).
Sample resize(const Sample& sample, const Shape& size);

// The box [start, start + size) of every tensor; it must lie inside the grid.
Sample crop(const Sample& sample, const Shape& start, const Shape& size);

// Adds before[d] voxels in front of and after[d] behind spatial dim d (all >= 0): the image is
// padded with `value`, the label and target with 0.
Sample pad(const Sample& sample, const Shape& before, const Shape& after, double value = 0.0);

// To spatial `size`, per dim as MONAI's ResizeWithPadOrCrop: a crop of the centre box starting at
// old / 2 - new / 2 (CenterSpatialCrop), or a symmetric zero pad with (new - old) / 2 voxels in
// front (SpatialPad, the odd voxel behind).
Sample center_crop_or_pad(const Sample& sample, const Shape& size);

// Mirrors spatial dim `axis`: out[..., p, ...] = in[..., size - 1 - p, ...].
Sample flip(const Sample& sample, int64_t axis);

// np.rot90 on the spatial plane `axes`: k quarter turns from axes[0] towards axes[1] (any integer
// k, taken mod 4). k = 1 on (H, W): out[y][x] = in[x][W - 1 - y], shape (W, H).
Sample rot90(const Sample& sample, int64_t k, std::array<int64_t, 2> axes = {0, 1});

// Permutes and flips the voxel axes so that axis d points towards world direction code[d]
// ("RAS", "LPS", ...; one of L/R, P/A, I/S each), as nibabel's as_closest_canonical (code "RAS")
// and MONAI's Orientation: the current code is orientation_code(affine) (nifti.h). 3-D only.
// Throws [reorient] for a 2-D sample, a malformed code or an affine without an orientation.
Sample reorient(const Sample& sample, const std::string& code);

// Resamples onto a grid with voxel `spacing` (> 0) covering the same extent: new size
// round(old size * old spacing / new spacing), at least 1, where the old spacing is
// voxel_spacing(affine). The affine's columns are rescaled to the new spacing and its translation
// is kept, so the first voxel's centre stays where it was (MONAI's Spacing with its default
// scale_extent=False); output voxel p reads q = p * new / old (linear for image and target,
// nearest for the label, ties round up) with border padding (Spacing's default), so the last
// voxels, which may reach up to half an old voxel beyond the old grid, repeat the edge.
Sample resample_to_spacing(const Sample& sample, const std::vector<double>& spacing);

// ---- transforms (datasets/sample.h's SampleTransform) ----
// Constructors check their options and throw [<ClassName>]; calling one on a sample of the
// wrong spatial dim count (for its sizes or axes) throws [<ClassName>] too. Random ones draw
// only from the generator (through RandomStream), so a seed fixes the result.

// reorient(sample, code), the code checked when constructed. Throws [Reorient] for a code
// that is not one of L/R, P/A and I/S each.
class Reorient : public SampleTransform {
  public:
    explicit Reorient(std::string code);
    Sample operator()(const Sample& sample, Generator& generator) const override;

  private:
    std::string code_;
};

// resample_to_spacing(sample, spacing). Throws [ResampleToSpacing] unless spacing has 2 or 3
// entries, all finite and > 0.
class ResampleToSpacing : public SampleTransform {
  public:
    explicit ResampleToSpacing(std::vector<double> spacing);
    Sample operator()(const Sample& sample, Generator& generator) const override;

  private:
    std::vector<double> spacing_;
};

// resize(sample, size). Throws [Resize] unless size has 2 or 3 entries, all > 0.
class Resize : public SampleTransform {
  public:
    explicit Resize(Shape size);
    Sample operator()(const Sample& sample, Generator& generator) const override;

  private:
    Shape size_;
};

// center_crop_or_pad(sample, size). Throws [CenterCropOrPad] unless size has 2 or 3 entries > 0.
class CenterCropOrPad : public SampleTransform {
  public:
    explicit CenterCropOrPad(Shape size);
    Sample operator()(const Sample& sample, Generator& generator) const override;

  private:
    Shape size_;
};

// A patch of `size` at a uniformly random position (every position equally likely, as MONAI's
// RandSpatialCrop); dims smaller than the patch are zero-padded symmetrically first (as
// center_crop_or_pad). Throws [RandomCropOrPad] unless size has 2 or 3 entries, all > 0.
class RandomCropOrPad : public SampleTransform {
  public:
    explicit RandomCropOrPad(Shape size);
    Sample operator()(const Sample& sample, Generator& generator) const override;

  private:
    Shape size_;
};

// Foreground-biased patches, as MONAI's RandCropByPosNegLabel: with probability pos / (pos + neg)
// the patch centre is a uniformly random foreground voxel (label > 0), otherwise a random
// background voxel (label <= 0). The patch starts at centre - size / 2, clamped so it fits; dims
// smaller than the patch are zero-padded symmetrically (as center_crop_or_pad) and keep the whole
// dim. With `num_classes`, a positive draw first picks one of the foreground classes present in
// the label uniformly, then a voxel of it (nnU-Net's class-balanced foreground oversampling, so
// small structures are seen as often as large ones), and label values outside [0, num_classes)
// throw. Without a label, or without any voxel of the drawn kind, the patch position is uniform
// as in RandomCropOrPad. Throws [RandomPosNegCrop] for a bad size, pos or neg < 0, pos + neg = 0,
// or num_classes < 2.
class RandomPosNegCrop : public SampleTransform {
  public:
    RandomPosNegCrop(Shape size, double pos = 1.0, double neg = 1.0,
                     std::optional<int64_t> num_classes = std::nullopt);
    Sample operator()(const Sample& sample, Generator& generator) const override;

  private:
    Shape size_;
    double pos_, neg_;
    std::optional<int64_t> num_classes_;
};

// flip(sample, axis) for each listed spatial axis independently with probability p (one draw per
// axis, as MONAI's RandFlip per axis / nnU-Net's mirroring). Throws [RandomFlip] for an axis
// outside [0, 3), a repeated axis or p outside [0, 1].
class RandomFlip : public SampleTransform {
  public:
    explicit RandomFlip(std::vector<int64_t> axes, double p = 0.5);
    Sample operator()(const Sample& sample, Generator& generator) const override;

  private:
    std::vector<int64_t> axes_;
    double p_;
};

// With probability p, rot90(sample, k, axes) with k uniform in {1, 2, 3} (MONAI's RandRotate90
// with max_k = 3). A plane that is not square changes shape for odd k, as in MONAI: (H, W)
// becomes (W, H). Throws [RandomRot90] for p outside [0, 1] or axes not two distinct dims in
// [0, 3).
class RandomRot90 : public SampleTransform {
  public:
    explicit RandomRot90(double p = 0.5, std::array<int64_t, 2> axes = {0, 1});
    Sample operator()(const Sample& sample, Generator& generator) const override;

  private:
    double p_;
    std::array<int64_t, 2> axes_;
};

// Options of SampleRandomAffine (named apart from the image-only RandomAffine of transforms.h).
struct SampleAffineOptions {
    // Rotation angles in degrees, uniform in [-d, d]: one for a 2-D sample (from axis 0 towards
    // axis 1), three for 3-D (about axes 0, 1, 2, applied in that order).
    std::vector<double> degrees = {0.0};
    // Isotropic scale factor uniform in [low, high]; > 1 magnifies the content (as torchvision;
    // MONAI's and batchgenerators' factors scale the sampling grid, i.e. are our 1 / scale).
    std::array<double, 2> scale = {1.0, 1.0};
    double p = 1.0;  // probability of warping at all
};

// With probability p, rotates and scales the sample about the grid centre (size - 1) / 2 in
// voxel coordinates (as MONAI's RandAffine and nnU-Net's spatial transform): out(p) =
// in(centre + R^T (p - centre) / scale), image and target linear, label nearest, zero fill
// (label 0) outside, same size; the affine follows the content. Throws [SampleRandomAffine]
// unless there are 1 or 3 degrees >= 0, 0 < scale low <= high and p in [0, 1], or when the
// degrees do not match the sample (1 for 2-D, 3 for 3-D).
class SampleRandomAffine : public SampleTransform {
  public:
    explicit SampleRandomAffine(SampleAffineOptions options);
    Sample operator()(const Sample& sample, Generator& generator) const override;

  private:
    SampleAffineOptions options_;
};

}  // namespace lumen::datasets
