// Intensity transforms of medical images as SampleTransforms: CT windows, percentile clipping,
// z-score and range scaling, and the random gamma, noise and brightness/contrast augmentations
// of MONAI and nnU-Net. They change sample.image only (never label, target or affine); spatial
// transforms live elsewhere.
#pragma once

#include <array>

#include "core/random.h"
#include "datasets/sample.h"

namespace lumen::datasets {

// Every transform here takes sample.image (C, *spatial) float32 CPU with 2 or 3 spatial dims
// (any strides) and returns the sample with a new contiguous image of the same shape (or the
// same sample when a random transform does not fire); the input is never written. Applying one
// to another dtype, device or rank throws [<ClassName>] with the image's dtype and shape.
// Statistics (mean, std, percentiles, min/max) are computed in double.

// out = clamp(x, low, high), then (out - low) / (high - low) when `rescale`, so [0, 1]: a CT
// Hounsfield window (TransUNet clips Synapse to [-125, 275] and rescales). All channels alike.
// Throws [ClipWindow] unless low < high.
class ClipWindow : public SampleTransform {
  public:
    ClipWindow(double low, double high, bool rescale = false);
    Sample operator()(const Sample& sample, Generator& generator) const override;

  private:
    double low_, high_;
    bool rescale_;
};

// Per channel: out = clamp(x, P_lower, P_upper) with P_q = numpy.percentile(channel, q) and
// numpy's default method 'linear' (position q/100 (n - 1) in the sorted values, interpolated
// linearly between its two neighbours), as nnU-Net's CT normalisation clips to [0.5, 99.5].
// With `nonzero` (MRI) the percentiles are taken over the voxels != 0 and only those are
// clipped, so the zero background stays 0; a channel with no nonzero voxel is left unchanged.
// Throws [PercentileClip] unless 0 <= lower_pct < upper_pct <= 100.
class PercentileClip : public SampleTransform {
  public:
    PercentileClip(double lower_pct, double upper_pct, bool nonzero = false);
    Sample operator()(const Sample& sample, Generator& generator) const override;

  private:
    double lower_pct_, upper_pct_;
    bool nonzero_;
};

// out = (x - mean) / std (MONAI NormalizeIntensity, defaults as there): the population std
// (ddof 0); std 0 only subtracts the mean. `per_channel` takes the statistics of each channel
// apart, otherwise of the whole image. With `nonzero` the statistics are over the voxels != 0
// and only those change (zeros stay 0); with no nonzero voxel the image is unchanged.
class ZScore : public SampleTransform {
  public:
    explicit ZScore(bool nonzero = false, bool per_channel = false);
    Sample operator()(const Sample& sample, Generator& generator) const override;

  private:
    bool nonzero_, per_channel_;
};

// out = (x - a_min) / (a_max - a_min) * (b_max - b_min) + b_min, then clamp(out, b_min, b_max)
// when `clip` (MONAI ScaleIntensityRange). All channels alike. Throws [ScaleRange] unless
// a_min < a_max and b_min < b_max.
class ScaleRange : public SampleTransform {
  public:
    ScaleRange(double a_min, double a_max, double b_min, double b_max, bool clip = false);
    Sample operator()(const Sample& sample, Generator& generator) const override;

  private:
    double a_min_, a_max_, b_min_, b_max_;
    bool clip_;
};

// Per channel: out = (x - min) / (max - min), so [0, 1]; a constant channel becomes 0 (MONAI
// ScaleIntensity(minv=0, maxv=1, channel_wise=True)).
class ScaleToUnit : public SampleTransform {
  public:
    Sample operator()(const Sample& sample, Generator& generator) const override;
};

// With probability p (one uniform draw), gamma ~ U[gamma[0], gamma[1]] and
// out = ((x - min) / (max - min))^gamma (max - min) + min with min, max over the whole image
// (MONAI RandAdjustContrast, without its 1e-7 added to the range); a constant image is left
// unchanged. Throws [RandomGamma] unless 0 < gamma[0] <= gamma[1] and 0 <= p <= 1.
class RandomGamma : public SampleTransform {
  public:
    explicit RandomGamma(std::array<double, 2> gamma = {0.5, 4.5}, double p = 0.1);
    Sample operator()(const Sample& sample, Generator& generator) const override;

  private:
    std::array<double, 2> gamma_;
    double p_;
};

// With probability p (one uniform draw), sigma ~ U[sigma[0], sigma[1]] (or the fixed sigma)
// and out = x + sigma n with n standard normal, independent per voxel and channel (MONAI
// RandGaussianNoise with mean 0; its default sample_std=True is the range {0, 0.1}).
// Throws [RandomGaussianNoise] unless 0 <= sigma[0] <= sigma[1] and 0 <= p <= 1.
// A braced range needs p too, RandomGaussianNoise({0, 0.1}, 0.1): alone it is ambiguous.
class RandomGaussianNoise : public SampleTransform {
  public:
    explicit RandomGaussianNoise(double sigma = 0.1, double p = 0.1);
    explicit RandomGaussianNoise(std::array<double, 2> sigma, double p = 0.1);
    Sample operator()(const Sample& sample, Generator& generator) const override;

  private:
    std::array<double, 2> sigma_;
    double p_;
};

// With probability p (one uniform draw), for each channel in turn m ~ U[brightness] and
// c ~ U[contrast], then nnU-Net's multiplicative brightness y = x m followed by its contrast
// augmentation with preserve_range: out = clamp((y - mean) c + mean, min, max), where mean,
// min and max are the channel's y (the clip keeps the values the contrast step was given).
// Throws [RandomBrightnessContrast] for a reversed range or p outside [0, 1].
class RandomBrightnessContrast : public SampleTransform {
  public:
    RandomBrightnessContrast(std::array<double, 2> brightness = {0.75, 1.25},
                             std::array<double, 2> contrast = {0.75, 1.25}, double p = 0.15);
    Sample operator()(const Sample& sample, Generator& generator) const override;

  private:
    std::array<double, 2> brightness_, contrast_;
    double p_;
};

}  // namespace lumen::datasets
