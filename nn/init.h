// Parameter initialisers with PyTorch's names and formulas (torch.nn.init, timm's
// trunc_normal_): each fills a tensor in place, on any device, from the counter-based
// generator (the default one when `generator` is null), so a seed fixes every initial weight.
// They run without autograd and keep the tensor's identity (modules and optimizers hold it).
#pragma once

#include <string>
#include <utility>

#include "core/random.h"
#include "core/tensor.h"

namespace lumen::nn::init {

// U(a, b).
void uniform_(const Tensor& t, double a = 0.0, double b = 1.0, Generator* generator = nullptr);
// N(mean, std^2).
void normal_(const Tensor& t, double mean = 0.0, double std = 1.0, Generator* generator = nullptr);
// N(mean, std^2) restricted to [a, b] (absolute bounds, as timm/PyTorch): inverse-CDF
// sampling, then a clamp against rounding. Throws [trunc_normal_] unless a < b and std > 0.
void trunc_normal_(const Tensor& t, double mean = 0.0, double std = 1.0, double a = -2.0,
                   double b = 2.0, Generator* generator = nullptr);
void constant_(const Tensor& t, double value);
void zeros_(const Tensor& t);
void ones_(const Tensor& t);

// fan_in = size(1) * receptive field, fan_out = size(0) * receptive field, where the
// receptive field is the product of dims 2.. (a Linear weight (out, in) has fan_in = in).
// Throws [init] for tensors with fewer than 2 dims.
std::pair<int64_t, int64_t> fan_in_and_fan_out(const Tensor& t);
// PyTorch's recommended gain: linear/conv/sigmoid 1, tanh 5/3, relu sqrt(2),
// leaky_relu sqrt(2 / (1 + param^2)), selu 3/4. Throws [calculate_gain] for other names.
double calculate_gain(const std::string& nonlinearity, double param = 0.01);

// U(-r, r) with r = gain * sqrt(6 / (fan_in + fan_out)).
void xavier_uniform_(const Tensor& t, double gain = 1.0, Generator* generator = nullptr);
// N(0, s^2) with s = gain * sqrt(2 / (fan_in + fan_out)).
void xavier_normal_(const Tensor& t, double gain = 1.0, Generator* generator = nullptr);
// U(-r, r) with r = gain * sqrt(3 / fan), gain = calculate_gain(nonlinearity, a), fan per
// `mode` ("fan_in" or "fan_out"). PyTorch's Linear/Conv default is a = sqrt(5) on fan_in,
// i.e. U(+-1/sqrt(fan_in)).
void kaiming_uniform_(const Tensor& t, double a = 0.0, const std::string& mode = "fan_in",
                      const std::string& nonlinearity = "leaky_relu",
                      Generator* generator = nullptr);
// N(0, s^2) with s = gain / sqrt(fan).
void kaiming_normal_(const Tensor& t, double a = 0.0, const std::string& mode = "fan_in",
                     const std::string& nonlinearity = "leaky_relu",
                     Generator* generator = nullptr);

// The default initialisation of PyTorch's nn.Linear and nn.ConvNd: weight kaiming_uniform_
// with a = sqrt(5), bias (if defined) U(+-1/sqrt(fan_in)).
void torch_default_(const Tensor& weight, const Tensor& bias, Generator* generator = nullptr);

}  // namespace lumen::nn::init
