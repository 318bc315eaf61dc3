// Reverse-mode autograd, define-by-run as in PyTorch. An op that sees an input with
// requires_grad (while grad mode is on) records a Node: edges to its inputs' nodes (or to the
// leaf tensors themselves), and a backward function written beside the op's forward.
// Tensor::backward() runs the nodes in reverse topological order, accumulates leaf .grad(),
// and frees the saved tensors unless the graph is retained. Backward runs in no-grad mode.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace lumen {

// An input of a node: the node that produced it, or the leaf it is (exactly one is set).
// `shape` and `dtype` let the engine check each gradient it receives.
struct Edge {
    std::shared_ptr<Node> node;
    std::shared_ptr<TensorImpl> leaf;
    Shape shape;
    DType dtype = kDefaultFloat;
};

// Gradients for each input, in the order the inputs were recorded; an undefined Tensor means
// "no gradient" (the input does not need one, or it is zero).
using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_out)>;
// For a node with one input whose gradient is zero but for the part grad_out lands in (a
// slice): adds that part into `input_grad`, the input's whole gradient so far, in place.
using AccumulateFn = std::function<void(const Tensor& input_grad, const Tensor& grad_out)>;

class Node {
  public:
    Node(std::string name, std::vector<Edge> inputs, BackwardFn backward)
        : name_(std::move(name)), inputs_(std::move(inputs)), backward_(std::move(backward)) {}

    const std::string& name() const { return name_; }
    const std::vector<Edge>& inputs() const { return inputs_; }
    // Whether input i needs a gradient (backward functions use it to skip work).
    bool needs_grad(size_t i) const {
        return i < inputs_.size() && (inputs_[i].node || inputs_[i].leaf);
    }
    std::vector<Tensor> apply(const Tensor& grad_out);
    // The engine uses `accumulate` instead of apply when the input already has a gradient
    // that nothing else holds: the chunks of a fused q/k/v projection then add their
    // gradients into one buffer instead of each filling a zero tensor of the whole size.
    void set_accumulate(AccumulateFn accumulate) { accumulate_ = std::move(accumulate); }
    const AccumulateFn& accumulate() const { return accumulate_; }
    void release() {  // frees the captured (saved) tensors
        backward_ = nullptr;
        accumulate_ = nullptr;
    }

  private:
    std::string name_;
    std::vector<Edge> inputs_;
    BackwardFn backward_;
    AccumulateFn accumulate_;
};

// Grad mode is per thread and on by default.
bool grad_enabled();
void set_grad_enabled(bool enabled);

// Turns recording off for its scope (optimizer steps, evaluation, backward itself).
class NoGradGuard {
  public:
    NoGradGuard() : previous_(grad_enabled()) { set_grad_enabled(false); }
    ~NoGradGuard() { set_grad_enabled(previous_); }
    NoGradGuard(const NoGradGuard&) = delete;
    NoGradGuard& operator=(const NoGradGuard&) = delete;

  private:
    bool previous_;
};

// True when grad mode is on and any defined input requires grad: an op then records a node.
bool needs_recording(std::initializer_list<Tensor> inputs);
bool needs_recording(const std::vector<Tensor>& inputs);

// A tensor captured for backward. It keeps a detached alias (so capturing an op's own output
// makes no reference cycle) and the storage version at capture time; get() throws if an
// in-place op changed the tensor since, instead of computing a wrong gradient.
class SavedTensor {
  public:
    SavedTensor() = default;
    explicit SavedTensor(const Tensor& tensor);
    Tensor get() const;
    bool defined() const { return tensor_.defined(); }

  private:
    Tensor tensor_;
    int64_t version_ = 0;
};

inline SavedTensor save(const Tensor& tensor) { return SavedTensor(tensor); }

// Records `output = op(inputs...)` if needs_recording(inputs): gives output a grad_fn and
// requires_grad. `backward` returns one gradient per input (same shape and dtype as it).
// The lambda must capture tensors only through save(); returns the node or nullptr.
std::shared_ptr<Node> record_backward(const char* op, const std::vector<Tensor>& inputs,
                                      const Tensor& output, BackwardFn backward);

// Called by Tensor::backward() when a leaf's gradient is final for this backward: every edge
// into the leaf from the graph being walked has delivered its gradient (PyTorch's
// post-accumulate-grad hook). Data-parallel training uses it to start each bucket's
// all-reduce while backward goes on (train/dist/data_parallel.h). Fires once per leaf that the
// graph reaches, even when its gradient was undefined; never for grad(), which fills no .grad().
using LeafReadyHook = std::function<void(const TensorImpl* leaf)>;

// Installs `hook` for this thread's backward passes within its scope (the previous one after).
class LeafReadyHookGuard {
  public:
    explicit LeafReadyHookGuard(LeafReadyHook hook);
    ~LeafReadyHookGuard();
    LeafReadyHookGuard(const LeafReadyHookGuard&) = delete;
    LeafReadyHookGuard& operator=(const LeafReadyHookGuard&) = delete;

  private:
    LeafReadyHook previous_;
};

// Engine entry point behind Tensor::backward().
void run_backward(const Tensor& root, const Tensor& grad_root, bool retain_graph);

// Gradients of `outputs` (weighted by `grad_outputs`, default ones for scalars) with respect
// to `inputs`, returned instead of accumulated into .grad() (torch.autograd.grad).
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, bool retain_graph = false);

}  // namespace lumen
