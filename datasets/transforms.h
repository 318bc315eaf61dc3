// Seeded, composable transforms of one image (C, H, W) float32 on the CPU, as in
// torchvision.transforms: flips, rotation and affine warps (bilinear, zero fill), normalize,
// and the additive Gaussian and salt-and-pepper noise of the DGSA paper's robustness setting.
// Every random draw comes from the Generator passed in, so a seed fixes the result.
#pragma once

#include <array>
#include <concepts>
#include <memory>
#include <vector>

#include "core/random.h"
#include "core/tensor.h"

namespace lumen::datasets {

// A transform of one image. Shapes: image (C, H, W) float32 CPU -> (C, H, W) float32, a new
// tensor or, when nothing changes, the input itself; the input is never written. Implementations
// are immutable, so one instance may run on several threads at once. Random transforms draw only
// from `generator` (advancing it).
class Transform {
  public:
    virtual ~Transform() = default;
    virtual Tensor operator()(const Tensor& image, Generator& generator) const = 0;
};
using TransformPtr = std::shared_ptr<const Transform>;

// ---- deterministic functions (torchvision.transforms.functional) ----
// Each takes image (C, H, W) float32 CPU (any strides) and returns a new contiguous
// (C, H, W) float32 tensor; each throws [<name>] for another dtype, device or dim count.

// Mirrors the columns: out[c, y, x] = image[c, y, W - 1 - x].
Tensor hflip(const Tensor& image);
// Mirrors the rows: out[c, y, x] = image[c, H - 1 - y, x].
Tensor vflip(const Tensor& image);
// Samples image at p_in = A p_out + b for every output pixel p_out = (x, y) (column, row;
// pixel centres at integers), bilinear, with 0 outside the image (grid_sample's zero padding).
// inverse = {A00, A01, b0, A10, A11, b1}.
Tensor warp_affine(const Tensor& image, const std::array<double, 6>& inverse);
// Rotates counter-clockwise (as displayed, rows downwards) by `angle` degrees about the image
// centre ((W - 1) / 2, (H - 1) / 2), bilinear, zero fill. rotate(x, 90) of a square image is
// np.rot90: out[c, y, x] = image[c, x, W - 1 - y].
Tensor rotate(const Tensor& image, double angle);
// The affine map p_out = scale * R(angle) * Shear(shear) * (p_in - centre) + centre +
// translate about the image centre, where R rotates counter-clockwise as rotate() does and
// Shear(shear) = [[1, tan(shear)], [0, 1]] (angles in degrees, translate in pixels (x, y)).
// Bilinear, zero fill. Throws [affine] when scale <= 0 or |shear| >= 90.
Tensor affine(const Tensor& image, double angle, std::array<double, 2> translate, double scale,
              double shear);

// ---- transforms ----

// Applies `transforms` in order, passing the same generator along.
class Compose : public Transform {
  public:
    explicit Compose(std::vector<TransformPtr> transforms);
    // Compose(RandomHorizontalFlip(0.5), Normalize({0.5}, {0.5})): copies of the arguments.
    template <typename... Ts>
    requires(sizeof...(Ts) > 0 &&
             (std::derived_from<Ts, Transform> && ...)) explicit Compose(const Ts&... transforms)
        : Compose(std::vector<TransformPtr>{std::make_shared<Ts>(transforms)...}) {}
    Tensor operator()(const Tensor& image, Generator& generator) const override;

  private:
    std::vector<TransformPtr> transforms_;
};

// hflip with probability p (one uniform draw). Throws [RandomHorizontalFlip] unless 0 <= p <= 1.
class RandomHorizontalFlip : public Transform {
  public:
    explicit RandomHorizontalFlip(double p = 0.5);
    Tensor operator()(const Tensor& image, Generator& generator) const override;

  private:
    double p_;
};

// vflip with probability p. Throws [RandomVerticalFlip] unless 0 <= p <= 1.
class RandomVerticalFlip : public Transform {
  public:
    explicit RandomVerticalFlip(double p = 0.5);
    Tensor operator()(const Tensor& image, Generator& generator) const override;

  private:
    double p_;
};

// rotate by an angle uniform in [-degrees, degrees]. Throws [RandomRotation] for degrees < 0.
class RandomRotation : public Transform {
  public:
    explicit RandomRotation(double degrees);
    Tensor operator()(const Tensor& image, Generator& generator) const override;

  private:
    double degrees_;
};

// affine() with angle uniform in [-degrees, degrees], translation uniform in
// [-translate[0] W, translate[0] W] x [-translate[1] H, translate[1] H] pixels, scale uniform
// in [scale[0], scale[1]] and shear uniform in [-shear, shear] degrees (torchvision's
// RandomAffine with an x-shear). Throws [RandomAffine] for negative ranges, translate > 1,
// scale bounds not 0 < low <= high, or shear >= 90.
struct AffineOptions {
    double degrees = 0.0;
    std::array<double, 2> translate = {0.0, 0.0};  // fractions of width and height
    std::array<double, 2> scale = {1.0, 1.0};
    double shear = 0.0;
};
class RandomAffine : public Transform {
  public:
    explicit RandomAffine(const AffineOptions& options);
    Tensor operator()(const Tensor& image, Generator& generator) const override;

  private:
    AffineOptions options_;
};

// out[c] = (image[c] - mean[c]) / std[c]; a single mean or std applies to every channel.
// Throws [Normalize] when a std is not > 0 or a list is empty, and when applied to an image
// whose channel count matches neither 1 nor the lists' length.
class Normalize : public Transform {
  public:
    Normalize(std::vector<double> mean, std::vector<double> std);
    Tensor operator()(const Tensor& image, Generator& generator) const override;

  private:
    std::vector<double> mean_, std_;
};

// out = image + sigma * n with n standard normal per element. Throws [GaussianNoise] for
// sigma < 0.
class GaussianNoise : public Transform {
  public:
    explicit GaussianNoise(double sigma);
    Tensor operator()(const Tensor& image, Generator& generator) const override;

  private:
    double sigma_;
};

// Each element independently becomes `low` with probability amount / 2 and `high` with
// probability amount / 2 (so a fraction `amount` is replaced, half by each value); the rest
// is kept. low/high are the image's value range (0 and 1 for images in [0, 1]; pass the
// normalized ones when it runs after Normalize). Throws [SaltAndPepper] unless
// 0 <= amount <= 1.
class SaltAndPepper : public Transform {
  public:
    explicit SaltAndPepper(double amount, double low = 0.0, double high = 1.0);
    Tensor operator()(const Tensor& image, Generator& generator) const override;

  private:
    double amount_, low_, high_;
};

}  // namespace lumen::datasets
