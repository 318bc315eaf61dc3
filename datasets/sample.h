// One sample of a dense task (segmentation, denoising) as the joint transforms see it: the
// image, the label map that every spatial transform moves with it (nearest neighbour, so labels
// stay labels), an image target that moves with it too (linear: the clean image of a denoising
// pair) and where the voxel grid lies in the world. 2-D and 3-D alike.
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/random.h"
#include "core/tensor.h"
#include "datasets/dataset.h"

namespace lumen::datasets {

// Row-major 4x4 voxel-to-world map (millimetres), as NIfTI's affine: world = A (i, j, k, 1).
using Affine = std::array<double, 16>;
inline constexpr Affine kIdentityAffine = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};

struct Sample {
    // (C, *spatial) float32 on the CPU; 2 spatial dims (H, W) or 3 (the NIfTI order i, j, k).
    Tensor image;
    // (*spatial) int64 label map, or undefined (no mask).
    Tensor label;
    // (C', *spatial) float32 moved with the image (linear interpolation), or undefined.
    // Intensity transforms change `image` only: a denoising target stays clean.
    Tensor target;
    // Where voxel (i, j, k) lies in the world; 2-D samples use its first two axes. Transforms
    // that move the grid (crop, pad, flip, rot90, resampling, reorientation) update it, so a
    // prediction made on the transformed grid can still be written where it belongs.
    Affine affine = kIdentityAffine;

    int64_t spatial_dims() const { return image.ndim() - 1; }
};

// A transform of one sample: immutable, so one instance may run on several threads at once;
// random transforms draw only from `generator` (advancing it), so a seed fixes the result.
class SampleTransform {
  public:
    virtual ~SampleTransform() = default;
    virtual Sample operator()(const Sample& sample, Generator& generator) const = 0;
};
using SampleTransformPtr = std::shared_ptr<const SampleTransform>;

// Applies `transforms` in order, passing the same generator along.
class SampleCompose : public SampleTransform {
  public:
    explicit SampleCompose(std::vector<SampleTransformPtr> transforms);
    template <typename... Ts>
    requires(sizeof...(Ts) > 0 && (std::derived_from<Ts, SampleTransform> &&
                                   ...)) explicit SampleCompose(const Ts&... transforms)
        : SampleCompose(std::vector<SampleTransformPtr>{std::make_shared<Ts>(transforms)...}) {}
    Sample operator()(const Sample& sample, Generator& generator) const override;

  private:
    std::vector<SampleTransformPtr> transforms_;
};

// The sample of an example: example[0] is the image; example[1], when present, is the label
// map when it is an integer tensor of the image's spatial shape, the target when it is a
// float32 tensor with the image's spatial shape after its first dim, and passes through
// unchanged otherwise (a class label); a later float64 (4, 4) tensor is the affine (the
// decathlon layout adds it); other tensors pass through. Throws [Sample] when example[0] is
// not a (C, H, W) or (C, D, H, W) float32 CPU tensor.
Sample sample_of(const Example& example);
// The example again, with the transformed sample's tensors (and affine) in the places they
// came from.
Example example_of(const Sample& sample, const Example& original);

}  // namespace lumen::datasets
