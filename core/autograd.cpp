// The autograd engine: dependency counting over the recorded graph, then a ready-queue walk
// in reverse topological order. Gradients reaching a node are summed before it runs; leaf
// gradients are summed into .grad() (or captured, for grad()).
#include "core/autograd.h"

#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "core/profiler.h"

namespace lumen {

// Gradient accumulation is the elementwise add of ops/ (the one place core calls into ops).
Tensor add(const Tensor& a, const Tensor& b);
void add_into(const Tensor& dst, const Tensor& src);

namespace {
thread_local bool grad_mode = true;
thread_local const std::string* current_backward_op = nullptr;
thread_local LeafReadyHook leaf_ready_hook;
}  // namespace

LeafReadyHookGuard::LeafReadyHookGuard(LeafReadyHook hook)
    : previous_(std::exchange(leaf_ready_hook, std::move(hook))) {}
LeafReadyHookGuard::~LeafReadyHookGuard() { leaf_ready_hook = std::move(previous_); }

bool grad_enabled() { return grad_mode; }
void set_grad_enabled(bool enabled) { grad_mode = enabled; }

bool needs_recording(std::initializer_list<Tensor> inputs) {
    if (!grad_mode) return false;
    for (const Tensor& t : inputs)
        if (t.defined() && t.requires_grad()) return true;
    return false;
}

bool needs_recording(const std::vector<Tensor>& inputs) {
    if (!grad_mode) return false;
    for (const Tensor& t : inputs)
        if (t.defined() && t.requires_grad()) return true;
    return false;
}

SavedTensor::SavedTensor(const Tensor& tensor) {
    if (!tensor.defined()) return;
    tensor_ = tensor.detach();
    version_ = tensor.version();
}

Tensor SavedTensor::get() const {
    if (tensor_.defined() && tensor_.version() != version_) {
        LUMEN_FAIL(current_backward_op ? *current_backward_op + " backward" : "autograd",
                   "a tensor of shape ", tensor_.shape(), " saved for backward was modified by an "
                   "in-place operation (saved at version ", version_, ", now at version ",
                   tensor_.version(), "); use an out-of-place op or clone() it first");
    }
    return tensor_;
}

std::vector<Tensor> Node::apply(const Tensor& grad_out) {
    LUMEN_CHECK(backward_ != nullptr, "backward", "tried to back-propagate through '", name_,
                "' a second time, but its saved tensors were freed; pass retain_graph=true to "
                "the first backward()");
    // Restored afterwards: a backward may run another (nn::checkpoint's recomputation).
    const std::string* outer = current_backward_op;
    current_backward_op = &name_;
    std::vector<Tensor> grads;
    try {
        grads = backward_(grad_out);
    } catch (...) {
        current_backward_op = outer;
        throw;
    }
    current_backward_op = outer;
    LUMEN_ASSERT(grads.size() == inputs_.size());
    return grads;
}

std::shared_ptr<Node> record_backward(const char* op, const std::vector<Tensor>& inputs,
                                      const Tensor& output, BackwardFn backward) {
    if (!needs_recording(inputs)) return nullptr;
    std::vector<Edge> edges;
    edges.reserve(inputs.size());
    for (const Tensor& input : inputs) {
        Edge edge;
        if (input.defined() && input.requires_grad()) {
            if (input.grad_fn()) {
                edge.node = input.grad_fn();
            } else {
                edge.leaf = input.impl();
            }
            edge.shape = input.shape();
            edge.dtype = input.dtype();
        }
        edges.push_back(std::move(edge));
    }
    auto node = std::make_shared<Node>(op, std::move(edges), std::move(backward));
    output.impl()->grad_fn = node;
    output.impl()->requires_grad = true;
    return node;
}

namespace {

// Whether only `t` sees its buffer (no other handle, view or saved alias), which may then
// be written in place.
bool owns_buffer(const Tensor& t) {
    return t.impl().use_count() == 1 && t.storage().use_count() == 1 && t.is_contiguous();
}

void accumulate(Tensor& slot, const Tensor& grad);
bool accumulate_in_place(Node& node, std::unordered_map<Node*, Tensor>& pending,
                         const Tensor& grad_out);

struct EngineTask {
    std::vector<std::pair<std::shared_ptr<Node>, Tensor>> roots;      // node, grad of its output
    std::vector<std::pair<std::shared_ptr<TensorImpl>, Tensor>> leaf_roots;
    // When capturing (grad()), gradients of these go to `captured` instead of .grad().
    std::unordered_map<const TensorImpl*, size_t> capture_leaf;
    std::unordered_map<const Node*, size_t> capture_node;
    std::vector<Tensor>* captured = nullptr;
    bool retain_graph = false;
};

void deliver_to_leaf(EngineTask& task, const std::shared_ptr<TensorImpl>& leaf, Tensor grad) {
    if (task.captured) {
        auto it = task.capture_leaf.find(leaf.get());
        if (it == task.capture_leaf.end()) return;
        Tensor& slot = (*task.captured)[it->second];
        accumulate(slot, grad);
        return;
    }
    if (!leaf->grad) {
        // Take ownership only of a buffer nobody else can see, so a later in-place change of
        // one .grad() (clipping) cannot leak into another; otherwise keep a copy.
        leaf->grad = owns_buffer(grad) ? grad.impl() : grad.clone().impl();
        leaf->grad->grad_fn = nullptr;
        leaf->grad->requires_grad = false;
    } else {
        Tensor slot(std::move(leaf->grad));  // held here alone unless the user holds .grad()
        accumulate(slot, grad);
        leaf->grad = slot.impl();
    }
}

void check_grad(const Edge& edge, const Tensor& grad, const std::string& op) {
    LUMEN_CHECK(grad.shape() == edge.shape && grad.dtype() == edge.dtype, "autograd",
                "the backward of '", op, "' returned a gradient of shape ", grad.shape(), " and dtype ",
                grad.dtype(), " for an input of shape ", edge.shape, " and dtype ", edge.dtype,
                " (a lumen bug)");
}

void run_engine(EngineTask& task) {
    NoGradGuard no_grad;
    // The hook is taken for this walk (a nested walk, as nn::checkpoint's grad(), has none).
    const LeafReadyHook* hook = !task.captured && leaf_ready_hook ? &leaf_ready_hook : nullptr;
    for (auto& [leaf, grad] : task.leaf_roots) deliver_to_leaf(task, leaf, grad);
    if (hook)
        for (auto& [leaf, grad] : task.leaf_roots) (*hook)(leaf.get());

    // Count, for every node reachable from the roots, how many edges point at it (and, for
    // the hook, at each leaf).
    std::unordered_map<Node*, int> dependencies;
    std::unordered_map<const TensorImpl*, int> leaf_edges;
    std::unordered_set<Node*> seen;
    std::vector<Node*> stack;
    for (auto& [node, grad] : task.roots)
        if (seen.insert(node.get()).second) stack.push_back(node.get());
    while (!stack.empty()) {
        Node* node = stack.back();
        stack.pop_back();
        for (const Edge& edge : node->inputs()) {
            if (hook && edge.leaf) ++leaf_edges[edge.leaf.get()];
            if (!edge.node) continue;
            ++dependencies[edge.node.get()];
            if (seen.insert(edge.node.get()).second) stack.push_back(edge.node.get());
        }
    }

    // Gradients wait in `pending` until every edge into their node has been walked. A node all
    // of whose incoming gradients were undefined still "runs" so its inputs' counts drop.
    std::unordered_map<Node*, Tensor> pending;
    std::vector<Node*> ready;
    for (auto& [node, grad] : task.roots) {
        Tensor& slot = pending[node.get()];
        accumulate(slot, grad);
    }
    for (Node* node : seen)
        if (dependencies[node] == 0) ready.push_back(node);

    while (!ready.empty()) {
        Node* node = ready.back();
        ready.pop_back();
        Tensor grad_out;
        if (auto it = pending.find(node); it != pending.end()) {
            grad_out = std::move(it->second);
            pending.erase(it);
        }
        std::vector<Tensor> grads(node->inputs().size());
        if (grad_out.defined()) {
            if (auto it = task.capture_node.find(node); it != task.capture_node.end()) {
                Tensor& slot = (*task.captured)[it->second];
                accumulate(slot, grad_out);
            }
            profiler::NamedScope profile(
                profiler::Kind::backward, [&] { return node->name() + " backward"; }, &grad_out);
            if (!accumulate_in_place(*node, pending, grad_out)) grads = node->apply(grad_out);
            grad_out = Tensor();
        }
        const std::vector<Edge>& edges = node->inputs();
        for (size_t i = 0; i < edges.size(); ++i) {
            const Edge& edge = edges[i];
            Tensor grad = std::move(grads[i]);
            if (grad.defined() && (edge.node || edge.leaf)) check_grad(edge, grad, node->name());
            if (edge.node) {
                if (grad.defined()) {
                    Tensor& slot = pending[edge.node.get()];
                    accumulate(slot, grad);
                }
                if (--dependencies[edge.node.get()] == 0) ready.push_back(edge.node.get());
            } else if (edge.leaf) {
                if (grad.defined()) deliver_to_leaf(task, edge.leaf, std::move(grad));
                if (hook && --leaf_edges[edge.leaf.get()] == 0) (*hook)(edge.leaf.get());
            }
        }
        if (!task.retain_graph) node->release();
    }
}

// slot += grad: in place when the slot owns its buffer, else into a new tensor (the slot's
// buffer may be a gradient some other node also received, or a user's .grad()).
void accumulate(Tensor& slot, const Tensor& grad) {
    if (!slot.defined()) {
        slot = grad;
    } else if (owns_buffer(slot) && slot.shape() == grad.shape() && slot.dtype() == grad.dtype() &&
               slot.device() == grad.device()) {
        add_into(slot, grad);
    } else {
        slot = add(slot, grad);
    }
}

// Runs node's AccumulateFn into the gradient pending for its one input, when that gradient
// exists and can be written in place; false when the node must apply() instead.
bool accumulate_in_place(Node& node, std::unordered_map<Node*, Tensor>& pending,
                         const Tensor& grad_out) {
    if (!node.accumulate() || node.inputs().size() != 1 || !node.inputs()[0].node) return false;
    auto it = pending.find(node.inputs()[0].node.get());
    if (it == pending.end() || !owns_buffer(it->second)) return false;
    node.accumulate()(it->second, grad_out);
    return true;
}

}  // namespace

void run_backward(const Tensor& root, const Tensor& grad_root, bool retain_graph) {
    LUMEN_CHECK(root.requires_grad(), "backward",
                "the tensor does not require grad and has no grad_fn (shape ", root.shape(), ")");
    Tensor grad = grad_root;
    if (!grad.defined()) {
        LUMEN_CHECK(root.numel() == 1, "backward", "a gradient can be implied only for a tensor "
                    "with one element, got shape ", root.shape(), "; pass grad explicitly");
        grad = ones_like(root);
    }
    LUMEN_CHECK(grad.shape() == root.shape(), "backward", "grad has shape ", grad.shape(),
                " but the tensor has shape ", root.shape());
    if (grad.dtype() != root.dtype() || grad.device() != root.device())
        grad = grad.to(root.dtype()).to(root.device());
    EngineTask task;
    task.retain_graph = retain_graph;
    if (root.grad_fn()) {
        task.roots.push_back({root.grad_fn(), grad.detach()});
    } else {
        task.leaf_roots.push_back({root.impl(), grad.detach()});
    }
    run_engine(task);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, bool retain_graph) {
    LUMEN_CHECK(grad_outputs.empty() || grad_outputs.size() == outputs.size(), "grad",
                "got ", grad_outputs.size(), " grad_outputs for ", outputs.size(), " outputs");
    std::vector<Tensor> result(inputs.size());
    EngineTask task;
    task.retain_graph = retain_graph;
    task.captured = &result;
    for (size_t i = 0; i < inputs.size(); ++i) {
        LUMEN_CHECK(inputs[i].requires_grad(), "grad", "input ", i, " (shape ", inputs[i].shape(),
                    ") does not require grad");
        if (inputs[i].grad_fn()) {
            task.capture_node[inputs[i].grad_fn().get()] = i;
        } else {
            task.capture_leaf[inputs[i].impl().get()] = i;
        }
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
        const Tensor& out = outputs[i];
        LUMEN_CHECK(out.requires_grad(), "grad", "output ", i, " (shape ", out.shape(),
                    ") does not require grad");
        Tensor g = grad_outputs.empty() ? Tensor() : grad_outputs[i];
        if (!g.defined()) {
            LUMEN_CHECK(out.numel() == 1, "grad", "output ", i, " has shape ", out.shape(),
                        "; a gradient can be implied only for one-element outputs");
            g = ones_like(out);
        }
        if (out.grad_fn()) {
            task.roots.push_back({out.grad_fn(), g.detach()});
        } else {
            task.leaf_roots.push_back({out.impl(), g.detach()});
        }
    }
    run_engine(task);
    return result;
}

}  // namespace lumen
