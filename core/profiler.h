// Where time and memory go, op by op. A lumen::Profiler records, from its construction until
// stop() (or its destruction), four kinds of intervals on every thread:
//   op        an op's forward, by its PyTorch name ("conv2d", "softmax", "add"), with the
//             shape of its first input and the bytes it allocated;
//   kernel    each CPU or CUDA kernel launch inside the ops ("conv_forward",
//             "softmax_backward"); on CUDA its time is the device time between two CUDA
//             events recorded around it on the stream, resolved when the profiler stops;
//   backward  each node the autograd engine runs ("conv2d backward"), with what it allocated;
//   module    each module forward called through nn::Holder ("Conv2d", "Block").
// step() marks a training-step boundary. Results: summary() rows, print_table (top entries by
// total time and by bytes allocated) and write_chrome_trace (the Chrome trace-event JSON that
// Perfetto and chrome://tracing open).
//
//   lumen::Profiler profiler;
//   for (...) { train_step(); profiler.step(); }
//   profiler.stop();
//   profiler.print_table(std::cout);
//   profiler.write_chrome_trace("trace.json");
//
// While no Profiler records, a hook costs one relaxed atomic load and a branch. `lumen train
// CONFIG --profile STEPS` profiles STEPS training steps (after one unprofiled warm-up step).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace lumen {

class Tensor;

namespace profiler {

enum class Kind : uint8_t { op, kernel, backward, module };
const char* kind_name(Kind kind);

namespace detail {
inline std::atomic<bool> recording{false};
// Whether an interval was opened (false when the profiler stopped meanwhile).
bool begin(Kind kind, const char* name, const Tensor* input);
bool begin(Kind kind, std::string name, const Tensor* input);
void end();
void allocated(size_t nbytes);
}  // namespace detail

// Whether a Profiler is recording now.
inline bool recording() { return detail::recording.load(std::memory_order_relaxed); }

inline const Tensor* as_tensor(const Tensor& tensor) { return &tensor; }
template <typename Other>
const Tensor* as_tensor(const Other&) {
    return nullptr;
}

// One interval, from construction to destruction; nothing unless a Profiler is recording.
// `name` must outlive the profiler when given as const char* (a string literal or a static
// name); std::string names are copied.
class Scope {
  public:
    Scope(Kind kind, const char* name, const Tensor* input = nullptr) {
        if (recording()) open_ = detail::begin(kind, name, input);
    }
    // The input of a kernel dispatch: a tensor (its shape is recorded, and a CUDA tensor's
    // kernel is timed with CUDA events) or a Device (random number kernels).
    template <typename Input>
    Scope(Kind kind, const char* name, const Input& input) : Scope(kind, name, as_tensor(input)) {}
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    ~Scope() {
        if (open_) detail::end();
    }

  protected:
    Scope() = default;
    bool open_ = false;
};

// A scope whose name is built only when recording (backward nodes, module type names).
class NamedScope : public Scope {
  public:
    template <typename MakeName>
    NamedScope(Kind kind, MakeName&& make_name, const Tensor* input = nullptr) {
        if (recording()) open_ = detail::begin(kind, std::string(make_name()), input);
    }
};

// Storage calls this for every allocation (bytes go to the innermost open scope on the thread).
inline void on_allocate(size_t nbytes) {
    if (recording()) detail::allocated(nbytes);
}

}  // namespace profiler

class Profiler {
  public:
    // One row of the summary: every interval of one kind and name together.
    struct Row {
        profiler::Kind kind;
        std::string name;
        int64_t calls = 0;
        double total_ms = 0;  // wall (CPU) or device (CUDA kernels) time, nested intervals included
        double self_ms = 0;   // total minus the intervals nested in it on the same thread
        double max_ms = 0;
        int64_t bytes = 0;       // allocated inside it, nested intervals included
        int64_t self_bytes = 0;  // allocated inside it, outside the nested intervals
        std::string shape;       // the most frequent input shape ("" when none was recorded)
    };

    // Starts recording; throws [Profiler] when another Profiler is recording.
    Profiler();
    ~Profiler();
    Profiler(const Profiler&) = delete;
    Profiler& operator=(const Profiler&) = delete;

    void step();  // ends the current step (steps are numbered from 0 in the trace)
    void stop();  // ends recording (and resolves CUDA event times); idempotent

    int64_t steps() const;
    double elapsed_ms() const;  // from construction to stop()
    // Rows of one kind (all kinds when `kind` is null), sorted by total time, longest first.
    std::vector<Row> summary() const;
    // The top `limit` ops and backward nodes by total time, kernels by total time, ops by
    // bytes allocated, and modules by total time, as aligned text tables.
    void print_table(std::ostream& os, size_t limit = 20) const;
    // Chrome trace-event JSON ("X" events in microseconds; one track per thread, CUDA kernels
    // on a track of their own, step boundaries as instant events). Throws [Profiler] naming
    // the path when it cannot be written.
    void write_chrome_trace(const std::string& path) const;

    struct State;

  private:
    std::unique_ptr<State> state_;
};

}  // namespace lumen
