// Losses: argument checks (shapes, dtypes, reduction), the (N, C, S) and pointwise layouts
// the kernels take, the reduction, and the backward rules, which run dedicated kernels on the
// saved inputs (cross_entropy also keeps the per-sample logsumexp as its two parts, the max and
// the log of the shifted sum, 2 N S values: ops/loss_math.h says why). Kernels of the
// input's device: ops/{cpu,cuda}/loss (class losses) and ops/{cpu,cuda}/loss_pointwise.
#include "ops/loss.h"

#include <cmath>

#include "core/autograd.h"
#include "core/cuda_guard.h"
#include "core/profiler.h"
#include "ops/elementwise.h"
#include "ops/loss_kernels.h"
#include "ops/reduce.h"

namespace lumen {

namespace {

enum class Reduction { none, mean, sum };

Reduction parse_reduction(const std::string& reduction, const char* op) {
    if (reduction == "mean") return Reduction::mean;
    if (reduction == "sum") return Reduction::sum;
    LUMEN_CHECK(reduction == "none", op, "reduction must be 'mean', 'sum' or 'none', got '",
                reduction, "'");
    return Reduction::none;
}

void check_floating_input(const Tensor& input, const char* op) {
    LUMEN_CHECK(input.defined(), op, "got an undefined input");
    LUMEN_CHECK(input.dtype() == DType::float32 || input.dtype() == DType::float64, op,
                "expects a float32 or float64 input, got ", input.dtype(), " (shape ",
                input.shape(), ")");
}

// A float tensor that must share input's dtype and device (target, weights).
void check_companion(const Tensor& t, const Tensor& input, const char* what, const char* op) {
    check_same_device(op, {input, t});
    LUMEN_CHECK(t.dtype() == input.dtype(), op, what, " must have the input's dtype ",
                input.dtype(), ", got ", t.dtype());
}

// A contiguous copy (or t itself) without autograd history: the op's node maps gradients to
// the original tensors.
Tensor contiguous_data(const Tensor& t) {
    if (!t.defined()) return t;
    NoGradGuard no_grad;
    return t.detach().contiguous();
}

// The kernel view of a contiguous tensor reinterpreted with `shape` (same numel).
StridedView view_as(const Tensor& t, const Shape& shape, const char* op) {
    if (!t.defined()) return StridedView{};
    StridedView v = strided(t, op);
    Shape strides = contiguous_strides(shape);
    v.ndim = int(shape.size());
    for (size_t d = 0; d < shape.size(); ++d) {
        v.shape[d] = shape[d];
        v.strides[d] = strides[d];
    }
    return v;
}

StridedView optional_view(const Tensor& t, const char* op) {
    return t.defined() ? strided(t, op) : StridedView{};
}

// Element `index` of a contiguous tensor on either device (for error messages).
double element_at(const Tensor& t, int64_t index) {
    return read_element(t.is_cuda() ? t.cpu() : t, index);
}

// ---- class losses ----

struct ClassProblem {
    int64_t samples = 1, classes = 1, positions = 1;  // N, C, S
    Shape nsc() const { return {samples, classes, positions}; }
    Shape ns() const { return {samples, positions}; }
    Shape lse_parts() const { return {2, samples, positions}; }  // max, log-sum
};

ClassProblem class_problem(const Tensor& input, const char* op) {
    LUMEN_CHECK(input.ndim() >= 1, op, "expects input (N, C, ...) or (C), got a 0-d tensor");
    ClassProblem p;
    if (input.ndim() == 1) {
        p.classes = input.size(0);
    } else {
        p.samples = input.size(0);
        p.classes = input.size(1);
        for (int64_t d = 2; d < input.ndim(); ++d) p.positions *= input.size(d);
    }
    LUMEN_CHECK(p.classes >= 1, op, "expects at least one class, got input of shape ",
                input.shape());
    return p;
}

// input's shape without the class dim: the shape of class-index targets and of "none" losses.
Shape target_shape_of(const Tensor& input) {
    Shape shape = input.shape();
    shape.erase(shape.begin() + (input.ndim() == 1 ? 0 : 1));
    return shape;
}

void check_class_weight(const Tensor& weight, const Tensor& input, int64_t classes,
                        const char* op) {
    if (!weight.defined()) return;
    LUMEN_CHECK(weight.ndim() == 1 && weight.numel() == classes, op,
                "weight must be a 1-D tensor of ", classes, " elements (one per class), got shape ",
                weight.shape());
    check_companion(weight, input, "weight", op);
}

// The "none" losses, or the reduced value as a 0-d tensor of `input`'s dtype and device.
Tensor finish(Reduction reduction, double total, double divisor, const Tensor& losses,
              const Tensor& input) {
    if (reduction == Reduction::none) return losses;
    double value = reduction == Reduction::sum ? total : total / divisor;
    return scalar_tensor(value, input.dtype(), input.device());
}

// The per-sample gradient (for "none") and the scale of the reduction for a backward call.
struct GradScale {
    Tensor per_sample;  // contiguous, or undefined
    double scale = 1.0;
};

GradScale grad_scale(const Tensor& grad_out, Reduction reduction, double divisor) {
    GradScale g;
    if (reduction == Reduction::none) {
        g.per_sample = grad_out.contiguous();
    } else {
        g.scale = grad_out.item<double>() / (reduction == Reduction::mean ? divisor : 1.0);
    }
    return g;
}

// cross_entropy / nll_loss with class-index targets.
Tensor class_index_loss(const Tensor& input, const Tensor& target, const Tensor& weight,
                        const ClassLossOptions& options, Reduction reduction, const char* op) {
    profiler::Scope profile(profiler::Kind::op, op, input);
    ClassProblem p = class_problem(input, op);
    Tensor x = contiguous_data(input), t = contiguous_data(target), w = contiguous_data(weight);
    bool record = needs_recording({input});
    Device device = input.device();
    Tensor losses =
        reduction == Reduction::none ? empty(target.shape(), input.dtype(), device) : Tensor();
    Tensor lse =
        record && options.from_logits ? empty(p.lse_parts(), input.dtype(), device) : Tensor();
    double totals[2] = {0, 0};
    int64_t invalid = -1;
    StridedView views[] = {view_as(x, p.nsc(), op), view_as(t, p.ns(), op), optional_view(w, op),
                           view_as(losses, p.ns(), op), view_as(lse, p.lse_parts(), op)};
    invalid = LUMEN_DISPATCH(input, class_loss_forward, views[0], views[1], views[2], options,
                             views[3], views[4], totals);
    LUMEN_CHECK(invalid < 0, op, "target ", invalid < 0 ? 0 : int64_t(element_at(t, invalid)),
                " is out of bounds for ", p.classes, " classes (valid: 0 to ", p.classes - 1,
                " or ignore_index ", options.ignore_index, "; at flat index ", invalid,
                " of a target of shape ", target.shape(), ")");
    double total_weight = totals[1];
    Tensor out = finish(reduction, totals[0], total_weight, losses, input);
    // d loss_i / d x_c = softmax_c a_i - b_i w_c - [c == t_i] (1 - ls) w[t_i] (see kernels.h)
    record_backward(op, {input}, out,
                    [p, options, reduction, total_weight, op, saved_x = save(x), saved_t = save(t),
                     saved_w = save(w), saved_lse = save(lse)](const Tensor& grad_out) {
                        Tensor x = saved_x.get();
                        GradScale g = grad_scale(grad_out, reduction, total_weight);
                        Tensor grad_input = empty(x.shape(), x.dtype(), x.device());
                        StridedView v[] = {view_as(x, p.nsc(), op),
                                           view_as(saved_t.get(), p.ns(), op),
                                           optional_view(saved_w.get(), op),
                                           view_as(saved_lse.get(), p.lse_parts(), op),
                                           view_as(g.per_sample, p.ns(), op),
                                           view_as(grad_input, p.nsc(), op)};
                        LUMEN_DISPATCH(x, class_loss_backward, v[0], v[1], v[2], options, v[3],
                                       v[4], g.scale, v[5]);
                        return std::vector<Tensor>{grad_input};
                    });
    return out;
}

// d loss / d w_c = sum over samples of g q_c (lse - x_c), q = (1 - ls) target + ls / C, with
// lse - x_c = (max - x_c) + log_sum from the forward's two parts: the probability form is
// differentiable in the class weights, as PyTorch's (its class-index form is not, in neither).
Tensor class_weight_grad(const ClassProblem& p, const Tensor& x, const Tensor& q, const Tensor& lse,
                         const GradScale& g, double label_smoothing) {
    NoGradGuard no_grad;
    // No samples: zero, not the sum of nothing times a mean's 1 / 0.
    if (p.samples * p.positions == 0) return zeros({p.classes}, x.dtype(), x.device());
    Shape per_sample = {p.samples, 1, p.positions};
    Tensor max = lse.narrow(0, 0, 1).reshape(per_sample);
    Tensor log_sum = lse.narrow(0, 1, 1).reshape(per_sample);
    Tensor lse_minus_x = add(sub(max, x.reshape(p.nsc())), log_sum);
    Tensor smoothed =
        add(mul(q.reshape(p.nsc()), 1 - label_smoothing), label_smoothing / double(p.classes));
    Tensor terms = mul(smoothed, lse_minus_x);
    if (g.per_sample.defined()) terms = mul(terms, g.per_sample.reshape(per_sample));
    return mul(sum(terms, {0, 2}), g.scale);
}

// cross_entropy with class-probability targets (target has input's shape).
Tensor class_probability_loss(const Tensor& input, const Tensor& target, const Tensor& weight,
                              double label_smoothing, Reduction reduction) {
    const char* op = "cross_entropy";
    profiler::Scope profile(profiler::Kind::op, op, input);
    ClassProblem p = class_problem(input, op);
    Tensor x = contiguous_data(input), q = contiguous_data(target), w = contiguous_data(weight);
    bool need_x = needs_recording({input}), need_q = needs_recording({target});
    bool need_w = needs_recording({weight});
    Device device = input.device();
    Tensor losses = reduction == Reduction::none
                        ? empty(target_shape_of(input), input.dtype(), device)
                        : Tensor();
    Tensor lse = empty(p.lse_parts(), input.dtype(), device);
    double total = 0;
    StridedView views[] = {view_as(x, p.nsc(), op), view_as(q, p.nsc(), op), optional_view(w, op),
                           view_as(losses, p.ns(), op), view_as(lse, p.lse_parts(), op)};
    LUMEN_DISPATCH(input, soft_cross_entropy_forward, views[0], views[1], views[2], label_smoothing,
                   views[3], views[4], &total);
    double samples = double(p.samples * p.positions);
    Tensor out = finish(reduction, total, samples, losses, input);
    // d/dx_c = softmax_c sum_k w_k q_k - w_c q_c;  d/dtarget_c = (1 - ls) w_c (lse - x_c);
    // d/dw_c: class_weight_grad
    record_backward(
        op, {input, target, weight}, out,
        [p, label_smoothing, reduction, samples, need_x, need_q, need_w, op, saved_x = save(x),
         saved_q = save(q), saved_w = save(w), saved_lse = save(lse)](const Tensor& grad_out) {
            Tensor x = saved_x.get();
            GradScale g = grad_scale(grad_out, reduction, samples);
            Tensor grad_input = need_x ? empty(x.shape(), x.dtype(), x.device()) : Tensor();
            Tensor grad_target = need_q ? empty(x.shape(), x.dtype(), x.device()) : Tensor();
            StridedView v[] = {
                view_as(x, p.nsc(), op),           view_as(saved_q.get(), p.nsc(), op),
                optional_view(saved_w.get(), op),  view_as(saved_lse.get(), p.lse_parts(), op),
                view_as(g.per_sample, p.ns(), op), view_as(grad_input, p.nsc(), op),
                view_as(grad_target, p.nsc(), op)};
            LUMEN_DISPATCH(x, soft_cross_entropy_backward, v[0], v[1], v[2], label_smoothing, v[3],
                           v[4], g.scale, v[5], v[6]);
            Tensor grad_weight =
                need_w ? class_weight_grad(p, x, saved_q.get(), saved_lse.get(), g, label_smoothing)
                       : Tensor();
            return std::vector<Tensor>{grad_input, grad_target, grad_weight};
        });
    return out;
}

void check_class_index_target(const Tensor& input, const Tensor& target, const char* op) {
    Shape expected = target_shape_of(input);
    LUMEN_CHECK(target.shape() == expected, op, "expects target of shape ", expected,
                " (class indices) for input of shape ", input.shape(),
                op == std::string("cross_entropy") ? " (or the input's shape for class "
                                                     "probabilities)"
                                                   : "",
                ", got ", target.shape());
    LUMEN_CHECK(target.dtype() == DType::int64, op, "expects int64 class indices as target, got ",
                target.dtype());
    check_same_device(op, {input, target});
}

// ---- pointwise losses ----

// Whether `from` broadcasts to exactly `to` (aligned right, sizes equal or 1).
bool broadcasts_to(const Shape& from, const Shape& to) {
    if (from.size() > to.size()) return false;
    size_t lead = to.size() - from.size();
    for (size_t d = 0; d < from.size(); ++d)
        if (from[d] != 1 && from[d] != to[lead + d]) return false;
    return true;
}

struct PointwiseSpec {
    const char* op;
    PointwiseLoss kind;
    double param = 0;
};

// Checks the arguments of a pointwise loss and returns the shape of its per-element losses.
Shape pointwise_shape(const PointwiseSpec& spec, const Tensor& input, const Tensor& target,
                      const Tensor& weight, const Tensor& pos_weight) {
    const char* op = spec.op;
    check_floating_input(input, op);
    LUMEN_CHECK(target.defined(), op, "got an undefined target");
    check_companion(target, input, "target", op);
    bool bce = spec.kind == PointwiseLoss::binary_cross_entropy ||
               spec.kind == PointwiseLoss::binary_cross_entropy_with_logits;
    Shape shape = input.shape();
    if (bce) {
        LUMEN_CHECK(target.shape() == input.shape(), op, "target shape ", target.shape(),
                    " must equal the input shape ", input.shape());
    } else {
        shape = broadcast_shapes(input.shape(), target.shape(), op);
    }
    for (const auto& [t, what] :
         {std::pair{weight, "weight"}, std::pair{pos_weight, "pos_weight"}}) {
        if (!t.defined()) continue;
        check_companion(t, input, what, op);
        LUMEN_CHECK(broadcasts_to(t.shape(), shape), op, what, " of shape ", t.shape(),
                    " does not broadcast to the input shape ", shape);
    }
    return shape;
}

Tensor pointwise_loss(const PointwiseSpec& spec, const Tensor& input, const Tensor& target,
                      const Tensor& weight, const Tensor& pos_weight, Reduction reduction) {
    const char* op = spec.op;
    profiler::Scope profile(profiler::Kind::op, op, input);
    Shape shape = pointwise_shape(spec, input, target, weight, pos_weight);
    Tensor x, y;
    {
        NoGradGuard no_grad;
        x = input.detach().expand(shape).contiguous();
        y = target.detach().expand(shape).contiguous();
    }
    Tensor w = weight.defined() ? weight.detach() : Tensor();
    Tensor pw = pos_weight.defined() ? pos_weight.detach() : Tensor();
    auto weight_view = [op, shape](const Tensor& t) {
        return t.defined() ? strided_as(t, shape, op) : StridedView{};
    };
    Tensor losses =
        reduction == Reduction::none ? empty(shape, input.dtype(), input.device()) : Tensor();
    int64_t invalid = -1;
    double total = 0;
    StridedView views[] = {strided(x, op), strided(y, op), weight_view(w), weight_view(pw),
                           optional_view(losses, op)};
    total = LUMEN_DISPATCH(input, pointwise_loss_forward, spec.kind, spec.param, views[0], views[1],
                           views[2], views[3], views[4], &invalid);
    LUMEN_CHECK(invalid < 0, op, "all elements of input should be between 0 and 1, got ",
                invalid < 0 ? 0.0 : element_at(x, invalid), " at flat index ", invalid,
                " of shape ", shape);
    double count = double(shape_numel(shape));
    Tensor out = finish(reduction, total, count, losses, input);
    bool need_x = needs_recording({input}), need_y = needs_recording({target});
    Shape input_shape = input.shape(), target_shape = target.shape();
    // The element derivatives are listed in ops/loss_kernels.h; broadcast inputs sum theirs.
    record_backward(op, {input, target}, out,
                    [spec, reduction, count, need_x, need_y, shape, input_shape, target_shape,
                     weight_view, saved_x = save(x), saved_y = save(y), saved_w = save(w),
                     saved_pw = save(pw)](const Tensor& grad_out) {
                        Tensor x = saved_x.get();
                        GradScale g = grad_scale(grad_out, reduction, count);
                        Tensor grad_x = need_x ? empty(shape, x.dtype(), x.device()) : Tensor();
                        Tensor grad_y = need_y ? empty(shape, x.dtype(), x.device()) : Tensor();
                        StridedView v[] = {strided(x, spec.op),
                                           strided(saved_y.get(), spec.op),
                                           weight_view(saved_w.get()),
                                           weight_view(saved_pw.get()),
                                           optional_view(g.per_sample, spec.op),
                                           optional_view(grad_x, spec.op),
                                           optional_view(grad_y, spec.op)};
                        LUMEN_DISPATCH(x, pointwise_loss_backward, spec.kind, spec.param, v[0],
                                       v[1], v[2], v[3], v[4], g.scale, v[5], v[6]);
                        if (need_x) grad_x = sum_to(grad_x, input_shape);
                        if (need_y) grad_y = sum_to(grad_y, target_shape);
                        return std::vector<Tensor>{grad_x, grad_y};
                    });
    return out;
}

}  // namespace

Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                     int64_t ignore_index, const std::string& reduction, double label_smoothing) {
    const char* op = "cross_entropy";
    check_floating_input(input, op);
    LUMEN_CHECK(target.defined(), op, "got an undefined target");
    Reduction mode = parse_reduction(reduction, op);
    LUMEN_CHECK(label_smoothing >= 0.0 && label_smoothing <= 1.0, op,
                "label_smoothing must be between 0.0 and 1.0, got ", label_smoothing);
    ClassProblem p = class_problem(input, op);
    check_class_weight(weight, input, p.classes, op);
    if (target.shape() == input.shape()) {
        LUMEN_CHECK(target.is_floating_point(), op, "a target of the input's shape ", input.shape(),
                    " holds class probabilities and must be floating, got ", target.dtype());
        check_companion(target, input, "target (class probabilities)", op);
        LUMEN_CHECK(ignore_index < 0, op, "ignore_index (", ignore_index,
                    ") is not supported for class-probability targets");
        return class_probability_loss(input, target, weight, label_smoothing, mode);
    }
    check_class_index_target(input, target, op);
    ClassLossOptions options;
    options.ignore_index = ignore_index;
    options.label_smoothing = label_smoothing;
    options.from_logits = true;
    return class_index_loss(input, target, weight, options, mode, op);
}

Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight,
                int64_t ignore_index, const std::string& reduction) {
    const char* op = "nll_loss";
    check_floating_input(input, op);
    LUMEN_CHECK(target.defined(), op, "got an undefined target");
    Reduction mode = parse_reduction(reduction, op);
    ClassProblem p = class_problem(input, op);
    check_class_weight(weight, input, p.classes, op);
    check_class_index_target(input, target, op);
    ClassLossOptions options;
    options.ignore_index = ignore_index;
    options.from_logits = false;
    return class_index_loss(input, target, weight, options, mode, op);
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const Tensor& weight, const std::string& reduction,
                                        const Tensor& pos_weight) {
    const char* op = "binary_cross_entropy_with_logits";
    return pointwise_loss({op, PointwiseLoss::binary_cross_entropy_with_logits}, input, target,
                          weight, pos_weight, parse_reduction(reduction, op));
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                            const std::string& reduction) {
    const char* op = "binary_cross_entropy";
    return pointwise_loss({op, PointwiseLoss::binary_cross_entropy}, input, target, weight,
                          Tensor(), parse_reduction(reduction, op));
}

Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction) {
    return pointwise_loss({"mse_loss", PointwiseLoss::mse}, input, target, Tensor(), Tensor(),
                          parse_reduction(reduction, "mse_loss"));
}

Tensor l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction) {
    return pointwise_loss({"l1_loss", PointwiseLoss::l1}, input, target, Tensor(), Tensor(),
                          parse_reduction(reduction, "l1_loss"));
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction,
                      double beta) {
    const char* op = "smooth_l1_loss";
    LUMEN_CHECK(beta >= 0, op, "beta must be non-negative, got ", beta);
    // beta = 0 is l1_loss (PyTorch does the same; the quadratic piece would divide by 0).
    PointwiseSpec spec{op, beta == 0 ? PointwiseLoss::l1 : PointwiseLoss::smooth_l1, beta};
    return pointwise_loss(spec, input, target, Tensor(), Tensor(), parse_reduction(reduction, op));
}

Tensor huber_loss(const Tensor& input, const Tensor& target, const std::string& reduction,
                  double delta) {
    const char* op = "huber_loss";
    LUMEN_CHECK(delta > 0, op, "delta must be positive, got ", delta);
    return pointwise_loss({op, PointwiseLoss::huber, delta}, input, target, Tensor(), Tensor(),
                          parse_reduction(reduction, op));
}

Tensor charbonnier_loss(const Tensor& input, const Tensor& target, double eps,
                        const std::string& reduction) {
    const char* op = "charbonnier_loss";
    LUMEN_CHECK(eps > 0, op, "eps must be positive, got ", eps);
    return pointwise_loss({op, PointwiseLoss::charbonnier, eps}, input, target, Tensor(), Tensor(),
                          parse_reduction(reduction, op));
}

}  // namespace lumen
