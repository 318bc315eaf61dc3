// Optimizer bookkeeping (groups, state, zero_grad) and SGD's update, written with ops so it
// runs on any device; results are copied into the parameters in place.
#include "train/optim.h"

#include <set>

#include "core/autograd.h"
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
    for (ParamGroup& group : groups_) group.lr = lr;
}

ParamState& Optimizer::state(const Tensor& param) { return state_[param.impl().get()]; }

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

}  // namespace lumen::train
