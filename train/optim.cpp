// Optimizer bookkeeping (groups, state, zero_grad) and the SGD and Adam/AdamW updates, written
// with ops so they run on any device; results are copied into the parameters in place.
#include "train/optim.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/autograd.h"
#include "core/parallel.h"
#include "ops/elementwise.h"

namespace lumen::train {

Optimizer::Optimizer(std::string name, std::vector<ParamGroup> groups)
    : name_(std::move(name)), groups_(std::move(groups)) {
    LUMEN_CHECK(!groups_.empty(), name_, "needs at least one parameter group");
    std::set<const TensorImpl*> seen;
    for (size_t g = 0; g < groups_.size(); ++g) {
        const ParamGroup& group = groups_[g];
        LUMEN_CHECK(!group.params.empty(), name_, "parameter group ", g, " is empty");
        check_hyper(name_, "lr", group.lr);
        check_hyper(name_, "weight_decay", group.weight_decay);
        for (const Tensor& p : group.params) {
            LUMEN_CHECK(p.defined() && p.is_floating_point(), name_, "group ", g,
                        " holds a parameter that is not a floating tensor");
            LUMEN_CHECK(seen.insert(p.impl().get()).second, name_,
                        "a parameter appears twice (group ", g, ", shape ", p.shape(), ")");
        }
    }
}

void Optimizer::check_hyper(const std::string& who, const char* what, double value) {
    LUMEN_CHECK(value >= 0.0, who, what, " must be >= 0, got ", value);
}

void Optimizer::zero_grad() {
    for (ParamGroup& group : groups_)
        for (Tensor& p : group.params) p.set_grad(Tensor());
}

void Optimizer::set_lr(double lr) {
    check_hyper(name_, "lr", lr);
    for (ParamGroup& group : groups_) group.lr = lr * group.lr_scale;
}

void Optimizer::set_momentum(double) { LUMEN_FAIL(name_, "has no momentum for a schedule to set"); }

ParamState& Optimizer::state(const Tensor& param) { return state_[param.impl().get()]; }

namespace {

// "" when `state` holds exactly `names`, each like the parameter (shape and dtype), apart from
// `count` (when not null) which must be a finite non-negative 0-d float64 tensor.
std::string check_names(const Tensor& param, const ParamState& state,
                        const std::vector<std::string>& names, const char* count) {
    for (const auto& [name, tensor] : state) {
        if (count && name == count) {
            if (!tensor.defined() || tensor.ndim() != 0 || tensor.dtype() != DType::float64)
                return detail::cat("'", name, "' must be a 0-d float64 count");
            double value = tensor.item<double>();
            if (!std::isfinite(value) || value < 0 || value != std::floor(value))
                return detail::cat("'", name, "' must be a whole number >= 0, got ", value);
            continue;
        }
        if (std::find(names.begin(), names.end(), name) == names.end())
            return detail::cat("unexpected state '", name, "'");
        if (!tensor.defined() || tensor.shape() != param.shape() || tensor.dtype() != param.dtype())
            return detail::cat("'", name, "' has shape ",
                               tensor.defined() ? tensor.shape() : Shape{}, " and dtype ",
                               tensor.defined() ? tensor.dtype() : DType::float32,
                               " but the parameter has ", param.shape(), " and ", param.dtype());
    }
    for (const std::string& name : names)
        if (!state.count(name)) return detail::cat("no '", name, "'");
    if (count && !state.count(count)) return detail::cat("no '", count, "'");
    return "";
}

}  // namespace

std::string Optimizer::check_state(const Tensor&, const ParamState& state) const {
    return state.empty() ? "" : "this optimizer keeps no state";
}

const ParamState* Optimizer::find_state(const Tensor& param) const {
    auto it = state_.find(param.impl().get());
    return it == state_.end() ? nullptr : &it->second;
}

SGD::SGD(std::vector<ParamGroup> groups, SGDOptions opts)
    : Optimizer("SGD", std::move(groups)), options(opts) {
    check_hyper("SGD", "momentum", options.momentum);
    check_hyper("SGD", "dampening", options.dampening);
    LUMEN_CHECK(!options.nesterov || (options.momentum > 0 && options.dampening == 0), "SGD",
                "nesterov needs momentum > 0 and dampening 0, got momentum ", options.momentum,
                " and dampening ", options.dampening);
}

SGD::SGD(const std::vector<Tensor>& params, double lr, SGDOptions opts, double weight_decay)
    : SGD(std::vector<ParamGroup>{ParamGroup{params, lr, weight_decay}}, opts) {}

void SGD::step() {
    NoGradGuard no_grad;
    const double momentum = options.momentum;
    for (ParamGroup& group : param_groups()) {
        for (Tensor& p : group.params) {
            Tensor g = p.grad();
            if (!g.defined()) continue;
            if (options.maximize) g = neg(g);
            if (group.weight_decay != 0) g = add(g, mul(p, group.weight_decay));
            if (momentum != 0) {
                ParamState& s = state(p);
                auto it = s.find("momentum_buffer");
                if (it == s.end()) {
                    it = s.emplace("momentum_buffer", g.clone()).first;  // first step: buf = g
                } else {
                    Tensor scaled = options.dampening == 0 ? g : mul(g, 1.0 - options.dampening);
                    it->second.copy_(add(mul(it->second, momentum), scaled));
                }
                g = options.nesterov ? add(g, mul(it->second, momentum)) : it->second;
            }
            p.copy_(sub(p, mul(g, group.lr)));
        }
    }
}

std::string SGD::check_state(const Tensor& param, const ParamState& state) const {
    if (state.empty()) return "";  // no step yet, or momentum 0
    return check_names(param, state, {"momentum_buffer"}, nullptr);
}

void SGD::set_momentum(double momentum) {
    check_hyper("SGD", "momentum", momentum);
    options.momentum = momentum;
}

namespace {

void check_beta(const char* who, const char* what, double beta) {
    LUMEN_CHECK(beta >= 0.0 && beta < 1.0, who, what, " must be in [0, 1), got ", beta);
}

}  // namespace

Adam::Adam(std::string name, std::vector<ParamGroup> groups, AdamOptions opts, bool decoupled)
    : Optimizer(name, std::move(groups)), options(opts), decoupled_weight_decay_(decoupled) {
    check_beta(name.c_str(), "beta1", options.beta1);
    check_beta(name.c_str(), "beta2", options.beta2);
    check_hyper(name, "eps", options.eps);
}

Adam::Adam(std::vector<ParamGroup> groups, AdamOptions opts)
    : Adam("Adam", std::move(groups), opts, false) {}

Adam::Adam(const std::vector<Tensor>& params, double lr, AdamOptions opts, double weight_decay)
    : Adam(std::vector<ParamGroup>{ParamGroup{params, lr, weight_decay}}, opts) {}

AdamW::AdamW(std::vector<ParamGroup> groups, AdamOptions opts)
    : Adam("AdamW", std::move(groups), opts, true) {}

AdamW::AdamW(const std::vector<Tensor>& params, double lr, AdamOptions opts, double weight_decay)
    : AdamW(std::vector<ParamGroup>{ParamGroup{params, lr, weight_decay}}, opts) {}

void Adam::set_momentum(double beta1) {
    check_beta(name().c_str(), "beta1", beta1);
    options.beta1 = beta1;
}

std::string Adam::check_state(const Tensor& param, const ParamState& state) const {
    if (state.empty()) return "";  // no step yet
    std::vector<std::string> names = {"exp_avg", "exp_avg_sq"};
    if (options.amsgrad) names.push_back("max_exp_avg_sq");
    return check_names(param, state, names, "step");
}

void Adam::step() {
    NoGradGuard no_grad;
    for (ParamGroup& group : param_groups())
        for (Tensor& p : group.params)
            if (p.grad().defined()) update(p, group);
}

namespace {

// The scalars of one Adam step of one parameter.
struct AdamStep {
    double beta1, beta2, eps, lr, weight_decay, step_size, bias_correction2_sqrt;
    bool decoupled, amsgrad, maximize;
};

// One pass of Adam over n elements: the composition's float operations in its order, on each
// element, with no multiply-add contracted into an FMA (which the separate ops cannot do), so
// the numbers are the composition's bit for bit and fused is a speed choice only.
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
template <typename T>
void adam_pass(T* p, const T* grad, T* m, T* v, T* v_max, int64_t n, const AdamStep& a) {
    const T one_minus_beta1 = T(1.0 - a.beta1), beta2 = T(a.beta2),
            one_minus_beta2 = T(1.0 - a.beta2), eps = T(a.eps), step_size = T(a.step_size),
            correction2 = T(a.bias_correction2_sqrt), decay = T(a.weight_decay),
            shrink = T(1.0 - a.lr * a.weight_decay);
    parallel_for(0, n, 1 << 14, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            T g = a.maximize ? -grad[i] : grad[i];
            if (a.weight_decay != 0) {
                if (a.decoupled)
                    p[i] = p[i] * shrink;
                else
                    g = g + p[i] * decay;
            }
            m[i] = m[i] + (g - m[i]) * one_minus_beta1;
            v[i] = v[i] * beta2 + (g * g) * one_minus_beta2;
            T second = v[i];
            if (a.amsgrad) second = v_max[i] = std::max(v_max[i], v[i]);
            const T denominator = std::sqrt(second) / correction2 + eps;
            p[i] = p[i] - (m[i] / denominator) * step_size;
        }
    });
}
#pragma GCC pop_options

// Whether the fused pass applies: CPU, float32 or float64, every tensor contiguous and alike.
bool fusable(const Tensor& p, const std::vector<const Tensor*>& others) {
    if (!p.is_cpu() || !p.is_contiguous() ||
        (p.dtype() != DType::float32 && p.dtype() != DType::float64))
        return false;
    for (const Tensor* t : others)
        if (!t->is_cpu() || !t->is_contiguous() || t->dtype() != p.dtype() ||
            t->numel() != p.numel())
            return false;
    return true;
}

}  // namespace

void Adam::update(Tensor& p, const ParamGroup& group) {
    const double beta1 = options.beta1, beta2 = options.beta2, lr = group.lr;
    ParamState& s = state(p);
    if (s.empty()) {
        s.emplace("step", scalar_tensor(0.0, DType::float64));
        s.emplace("exp_avg", zeros_like(p));
        s.emplace("exp_avg_sq", zeros_like(p));
        if (options.amsgrad) s.emplace("max_exp_avg_sq", zeros_like(p));
    }
    Tensor& count = s.at("step");
    count.fill_(count.item<double>() + 1.0);
    const double k = count.item<double>();
    const double step_size = lr / (1.0 - std::pow(beta1, k));
    const double bias_correction2_sqrt = std::sqrt(1.0 - std::pow(beta2, k));
    Tensor &m = s.at("exp_avg"), &v = s.at("exp_avg_sq");
    Tensor v_max = options.amsgrad ? s.at("max_exp_avg_sq") : Tensor();
    const Tensor& grad = p.grad();
    std::vector<const Tensor*> others{&grad, &m, &v};
    if (options.amsgrad) others.push_back(&v_max);
    if (options.fused && fusable(p, others)) {
        const AdamStep a{beta1,
                         beta2,
                         options.eps,
                         lr,
                         group.weight_decay,
                         step_size,
                         bias_correction2_sqrt,
                         decoupled_weight_decay_,
                         options.amsgrad,
                         options.maximize};
        if (p.dtype() == DType::float32)
            adam_pass(p.data_ptr<float>(), grad.data_ptr<float>(), m.data_ptr<float>(),
                      v.data_ptr<float>(), options.amsgrad ? v_max.data_ptr<float>() : nullptr,
                      p.numel(), a);
        else
            adam_pass(p.data_ptr<double>(), grad.data_ptr<double>(), m.data_ptr<double>(),
                      v.data_ptr<double>(), options.amsgrad ? v_max.data_ptr<double>() : nullptr,
                      p.numel(), a);
        for (Tensor* t : {&p, &m, &v, &v_max})  // written in place, as copy_ would record
            if (t->defined()) t->storage()->bump_version();
        return;
    }
    // The composition of ops (the reference; CUDA and other layouts).
    Tensor g = options.maximize ? neg(grad) : grad;
    if (group.weight_decay != 0) {
        if (decoupled_weight_decay_)
            p.copy_(mul(p, 1.0 - lr * group.weight_decay));
        else
            g = add(g, mul(p, group.weight_decay));
    }
    m.copy_(add(m, mul(sub(g, m), 1.0 - beta1)));  // lerp towards g, as PyTorch
    v.copy_(add(mul(v, beta2), mul(mul(g, g), 1.0 - beta2)));
    Tensor second = v;
    if (options.amsgrad) {
        v_max.copy_(maximum(v_max, v));
        second = v_max;
    }
    Tensor denominator = add(div(sqrt(second), bias_correction2_sqrt), options.eps);
    p.copy_(sub(p, mul(div(m, denominator), step_size)));
}

}  // namespace lumen::train
