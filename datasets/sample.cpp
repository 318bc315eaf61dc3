// SampleCompose and the conversions between examples and samples (datasets/sample.h).
#include "datasets/sample.h"

#include <algorithm>

#include "core/error.h"

namespace lumen::datasets {

namespace {

Shape spatial_shape(const Tensor& image) {
    return Shape(image.shape().begin() + 1, image.shape().end());
}

// What example[1] is to the sample (see sample_of).
enum class Role { none, label, target };

Role role_of(const Example& example) {
    if (example.size() < 2 || !example[1].defined()) return Role::none;
    const Tensor& image = example[0];
    const Tensor& second = example[1];
    if (is_integral(second.dtype()) && second.shape() == spatial_shape(image)) return Role::label;
    if (second.dtype() == DType::float32 && second.ndim() == image.ndim() &&
        spatial_shape(second) == spatial_shape(image))
        return Role::target;
    return Role::none;
}

// The index of the example's affine tensor (float64 (4, 4) after the first two), or 0.
size_t affine_field(const Example& example) {
    for (size_t k = 1; k < example.size(); ++k) {
        const Tensor& t = example[k];
        if (t.defined() && t.dtype() == DType::float64 && t.shape() == Shape{4, 4} &&
            (k >= 2 || role_of(example) == Role::none))
            return k;
    }
    return 0;
}

}  // namespace

SampleCompose::SampleCompose(std::vector<SampleTransformPtr> transforms)
    : transforms_(std::move(transforms)) {
    for (size_t i = 0; i < transforms_.size(); ++i)
        LUMEN_CHECK(transforms_[i] != nullptr, "SampleCompose", "transform ", i, " is null");
}

Sample SampleCompose::operator()(const Sample& sample, Generator& generator) const {
    Sample out = sample;
    for (const SampleTransformPtr& transform : transforms_) out = (*transform)(out, generator);
    return out;
}

Sample sample_of(const Example& example) {
    LUMEN_CHECK(!example.empty() && example[0].defined(), "Sample",
                "an example needs an image as its first tensor, got none");
    const Tensor& image = example[0];
    LUMEN_CHECK((image.ndim() == 3 || image.ndim() == 4) && image.dtype() == DType::float32 &&
                    image.is_cpu(),
                "Sample", "the image must be a (C, H, W) or (C, D, H, W) float32 CPU tensor, got ",
                image.dtype(), " ", image.shape(), " on ", image.device());
    Sample sample;
    sample.image = image;
    switch (role_of(example)) {
        case Role::label: sample.label = example[1].to(DType::int64); break;
        case Role::target: sample.target = example[1]; break;
        case Role::none: break;
    }
    if (size_t k = affine_field(example); k > 0) {
        std::vector<double> values = example[k].contiguous().to_vector<double>();
        std::copy(values.begin(), values.end(), sample.affine.begin());
    }
    return sample;
}

Example example_of(const Sample& sample, const Example& original) {
    Example out = original;
    out[0] = sample.image;
    switch (role_of(original)) {
        case Role::label: out[1] = sample.label.to(original[1].dtype()); break;
        case Role::target: out[1] = sample.target; break;
        case Role::none: break;
    }
    if (size_t k = affine_field(original); k > 0)
        out[k] =
            from_vector(std::vector<double>(sample.affine.begin(), sample.affine.end()), {4, 4});
    return out;
}

}  // namespace lumen::datasets
