// The profiler's recording (per-thread buffers, each behind its own uncontended mutex so that
// stop() can read them while a worker thread still closes a scope), its summary and its Chrome
// trace. Times are steady_clock nanoseconds from the profiler's start; a CUDA kernel's interval
// is replaced at stop() by the device time between its two events.
#include "core/profiler.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "core/device.h"
#include "core/error.h"
#include "core/tensor.h"

namespace lumen {

namespace profiler {

const char* kind_name(Kind kind) {
    switch (kind) {
        case Kind::op: return "op";
        case Kind::kernel: return "kernel";
        case Kind::backward: return "backward";
        case Kind::module: return "module";
    }
    return "?";
}

}  // namespace profiler

namespace {

using Clock = std::chrono::steady_clock;
using profiler::Kind;

struct Event {
    Kind kind;
    std::string name;
    std::string shape;
    int64_t start_ns = 0, end_ns = -1;  // end_ns < 0 while open
    int64_t child_ns = 0;               // time of the intervals nested in it (same thread)
    int64_t bytes = 0, self_bytes = 0;
    int64_t step = 0;
    void* cuda_start = nullptr;  // CUDA events of a kernel on a CUDA tensor
    void* cuda_end = nullptr;
    int cuda_device = -1;
};

// What a thread's scopes read, shared so that a scope closing after its profiler is gone reads
// nothing freed.
struct Clockwork {
    Clock::time_point start = Clock::now();
    std::atomic<int64_t> step{0};
    int64_t now_ns() const {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
    }
};

struct ThreadBuffer {
    std::mutex mutex;
    std::shared_ptr<Clockwork> clock;
    uint32_t tid = 0;
    std::vector<Event> events;
    std::vector<size_t> open;  // indices of the open events, innermost last
};

}  // namespace

struct Profiler::State {
    std::shared_ptr<Clockwork> clock = std::make_shared<Clockwork>();
    int64_t stop_ns = -1;
    std::vector<int64_t> step_ns;  // when each step ended
    std::mutex mutex;              // buffers
    std::vector<std::shared_ptr<ThreadBuffer>> buffers;
    std::vector<Event> events;  // all threads' events, gathered at stop()
    std::vector<uint32_t> event_tid;
    void* cuda_reference = nullptr;  // a CUDA event at the start: the device timeline's origin
    int64_t now_ns() const { return clock->now_ns(); }
};

namespace {

std::mutex g_state_mutex;
Profiler::State* g_state = nullptr;  // the recording profiler's state
std::atomic<uint64_t> g_generation{0};

struct ThreadSlot {
    uint64_t generation = 0;
    std::shared_ptr<ThreadBuffer> buffer;
};
thread_local ThreadSlot t_slot;

uint32_t thread_number() {
    static std::atomic<uint32_t> next{1};
    thread_local uint32_t number = next.fetch_add(1);
    return number;
}

// This thread's buffer for the recording profiler (registered on first use), or null.
ThreadBuffer* thread_buffer() {
    uint64_t generation = g_generation.load(std::memory_order_acquire);
    if (t_slot.generation == generation && t_slot.buffer) return t_slot.buffer.get();
    std::lock_guard<std::mutex> lock(g_state_mutex);
    if (!g_state) return nullptr;
    auto buffer = std::make_shared<ThreadBuffer>();
    buffer->tid = thread_number();
    buffer->clock = g_state->clock;
    {
        std::lock_guard<std::mutex> state_lock(g_state->mutex);
        g_state->buffers.push_back(buffer);
    }
    t_slot = {g_generation.load(), buffer};
    return buffer.get();
}

std::string shape_text(const Tensor* input) {
    if (!input || !input->defined()) return "";
    std::ostringstream os;
    os << input->shape();
    return os.str();
}

}  // namespace

namespace profiler::detail {

bool begin(Kind kind, std::string name, const Tensor* input) {
    ThreadBuffer* buffer = thread_buffer();
    if (!buffer) return false;
    Event event{kind, std::move(name), shape_text(input)};
    if (kind == Kind::kernel && input && input->defined() && input->is_cuda()) {
        event.cuda_device = input->device().index;
        event.cuda_start = cuda::timing_event_record();
    }
    std::lock_guard<std::mutex> lock(buffer->mutex);
    event.step = buffer->clock->step.load(std::memory_order_relaxed);
    event.start_ns = buffer->clock->now_ns();
    buffer->open.push_back(buffer->events.size());
    buffer->events.push_back(std::move(event));
    return true;
}

bool begin(Kind kind, const char* name, const Tensor* input) {
    return begin(kind, std::string(name), input);
}

void end() {
    if (!t_slot.buffer) return;
    ThreadBuffer& buffer = *t_slot.buffer;
    std::lock_guard<std::mutex> lock(buffer.mutex);
    if (buffer.open.empty()) return;  // gathered by stop() meanwhile
    Event& event = buffer.events[buffer.open.back()];
    buffer.open.pop_back();
    if (event.cuda_start) event.cuda_end = cuda::timing_event_record();
    event.end_ns = buffer.clock->now_ns();
    if (!buffer.open.empty()) {
        Event& parent = buffer.events[buffer.open.back()];
        parent.child_ns += event.end_ns - event.start_ns;
        parent.bytes += event.bytes;
    }
}

void allocated(size_t nbytes) {
    ThreadBuffer* buffer = thread_buffer();
    if (!buffer) return;
    std::lock_guard<std::mutex> lock(buffer->mutex);
    if (buffer->open.empty()) return;
    Event& event = buffer->events[buffer->open.back()];
    event.bytes += int64_t(nbytes);
    event.self_bytes += int64_t(nbytes);
}

}  // namespace profiler::detail

Profiler::Profiler() : state_(std::make_unique<State>()) {
    std::lock_guard<std::mutex> lock(g_state_mutex);
    LUMEN_CHECK(g_state == nullptr, "Profiler",
                "another Profiler is recording; stop() it before starting a new one");
    if (cuda_available()) {
        cuda::synchronize();
        state_->cuda_reference = cuda::timing_event_record();
    }
    state_->clock->start = Clock::now();
    g_state = state_.get();
    g_generation.fetch_add(1, std::memory_order_release);
    profiler::detail::recording.store(true, std::memory_order_release);
}

Profiler::~Profiler() {
    try {
        stop();
    } catch (...) {  // a destructor must not throw; stop() only fails on CUDA errors
    }
}

void Profiler::step() {
    if (state_->stop_ns >= 0) return;
    state_->step_ns.push_back(state_->now_ns());
    state_->clock->step.fetch_add(1, std::memory_order_relaxed);
}

int64_t Profiler::steps() const { return int64_t(state_->step_ns.size()); }

double Profiler::elapsed_ms() const {
    return double(state_->stop_ns >= 0 ? state_->stop_ns : state_->now_ns()) / 1e6;
}

void Profiler::stop() {
    State& s = *state_;
    if (s.stop_ns >= 0) return;
    {
        std::lock_guard<std::mutex> lock(g_state_mutex);
        profiler::detail::recording.store(false, std::memory_order_release);
        g_state = nullptr;
        g_generation.fetch_add(1, std::memory_order_release);
    }
    if (s.cuda_reference) cuda::synchronize();
    s.stop_ns = s.now_ns();
    std::lock_guard<std::mutex> lock(s.mutex);
    for (const auto& buffer : s.buffers) {
        std::lock_guard<std::mutex> buffer_lock(buffer->mutex);
        for (Event& event : buffer->events) {
            if (event.end_ns < 0) event.end_ns = s.stop_ns;  // still open: cut at the stop
            if (event.cuda_start && event.cuda_end) {
                // Device time replaces the host interval; on the device of the reference event
                // the start moves to the device timeline too.
                double ms = cuda::timing_event_elapsed_ms(event.cuda_start, event.cuda_end);
                if (s.cuda_reference && event.cuda_device == 0)
                    event.start_ns = int64_t(
                        cuda::timing_event_elapsed_ms(s.cuda_reference, event.cuda_start) * 1e6);
                event.end_ns = event.start_ns + int64_t(ms * 1e6);
            }
            if (event.cuda_start) cuda::timing_event_destroy(event.cuda_start);
            if (event.cuda_end) cuda::timing_event_destroy(event.cuda_end);
            event.cuda_start = event.cuda_end = nullptr;
            s.events.push_back(event);
            s.event_tid.push_back(event.cuda_device >= 0 ? 0 : buffer->tid);
        }
        buffer->events.clear();
        buffer->open.clear();
    }
    if (s.cuda_reference) cuda::timing_event_destroy(s.cuda_reference);
    s.cuda_reference = nullptr;
}

std::vector<Profiler::Row> Profiler::summary() const {
    LUMEN_CHECK(state_->stop_ns >= 0, "Profiler", "summary() needs stop() first");
    std::map<std::pair<profiler::Kind, std::string>, Row> rows;
    std::map<std::pair<profiler::Kind, std::string>, std::map<std::string, int64_t>> shapes;
    for (const Event& e : state_->events) {
        Row& row = rows[{e.kind, e.name}];
        row.kind = e.kind;
        row.name = e.name;
        double ms = double(e.end_ns - e.start_ns) / 1e6;
        row.calls += 1;
        row.total_ms += ms;
        row.self_ms += ms - double(e.child_ns) / 1e6;
        row.max_ms = std::max(row.max_ms, ms);
        row.bytes += e.bytes;
        row.self_bytes += e.self_bytes;
        if (!e.shape.empty()) ++shapes[{e.kind, e.name}][e.shape];
    }
    std::vector<Row> out;
    for (auto& [key, row] : rows) {
        int64_t best = 0;
        for (const auto& [shape, count] : shapes[key])
            if (count > best) best = count, row.shape = shape;
        out.push_back(row);
    }
    std::sort(out.begin(), out.end(), [](const Row& a, const Row& b) {
        return a.total_ms != b.total_ms ? a.total_ms > b.total_ms : a.name < b.name;
    });
    return out;
}

namespace {

std::string bytes_text(int64_t bytes) {
    char text[32];
    if (bytes >= (int64_t(1) << 30))
        std::snprintf(text, sizeof text, "%.2f GiB", double(bytes) / double(1 << 30));
    else if (bytes >= (1 << 20))
        std::snprintf(text, sizeof text, "%.2f MiB", double(bytes) / double(1 << 20));
    else if (bytes >= (1 << 10))
        std::snprintf(text, sizeof text, "%.1f KiB", double(bytes) / double(1 << 10));
    else
        std::snprintf(text, sizeof text, "%lld B", (long long)bytes);
    return text;
}

void print_rows(std::ostream& os, const std::string& title, std::vector<Profiler::Row> rows,
                size_t limit, double recorded_ms) {
    if (rows.empty()) return;
    size_t width = 4;
    for (size_t i = 0; i < rows.size() && i < limit; ++i)
        width = std::max(width, rows[i].name.size());
    os << "\n" << title << " (" << std::min(limit, rows.size()) << " of " << rows.size() << ")\n";
    char line[512];
    std::snprintf(line, sizeof line, "%-*s %-8s %7s %11s %11s %10s %7s %11s %11s  %s\n", int(width),
                  "name", "kind", "calls", "total ms", "self ms", "avg us", "% time", "bytes",
                  "self bytes", "input shape");
    os << line;
    for (size_t i = 0; i < rows.size() && i < limit; ++i) {
        const Profiler::Row& r = rows[i];
        std::snprintf(
            line, sizeof line, "%-*s %-8s %7lld %11.3f %11.3f %10.1f %6.1f%% %11s %11s  %s\n",
            int(width), r.name.c_str(), profiler::kind_name(r.kind), (long long)r.calls, r.total_ms,
            r.self_ms, 1000.0 * r.total_ms / double(r.calls),
            recorded_ms > 0 ? 100.0 * r.total_ms / recorded_ms : 0.0, bytes_text(r.bytes).c_str(),
            bytes_text(r.self_bytes).c_str(), r.shape.c_str());
        os << line;
    }
}

std::string json_escape(const std::string& text) {
    std::string out;
    for (char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char buffer[8];
            std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
            out += buffer;
        } else {
            out += c;
        }
    }
    return out;
}

}  // namespace

void Profiler::print_table(std::ostream& os, size_t limit) const {
    std::vector<Row> all = summary();
    const double recorded = elapsed_ms();
    os << "profile: " << steps() << " steps, " << std::fixed << std::setprecision(1) << recorded
       << " ms recorded";
    if (steps() > 0) os << " (" << recorded / double(steps()) << " ms a step)";
    os.unsetf(std::ios::floatfield);
    os << "; times include the intervals nested in them (self: without)\n";
    auto of = [&](std::initializer_list<profiler::Kind> kinds) {
        std::vector<Row> rows;
        for (const Row& r : all)
            if (std::find(kinds.begin(), kinds.end(), r.kind) != kinds.end()) rows.push_back(r);
        return rows;
    };
    print_rows(os, "ops and backward nodes by total time",
               of({profiler::Kind::op, profiler::Kind::backward}), limit, recorded);
    print_rows(os, "kernels by total time (device time on CUDA)", of({profiler::Kind::kernel}),
               limit, recorded);
    std::vector<Row> memory = of({profiler::Kind::op, profiler::Kind::backward});
    std::stable_sort(memory.begin(), memory.end(),
                     [](const Row& a, const Row& b) { return a.self_bytes > b.self_bytes; });
    print_rows(os, "ops and backward nodes by bytes allocated (self)", memory, limit, recorded);
    print_rows(os, "modules by total time", of({profiler::Kind::module}), limit, recorded);
}

void Profiler::write_chrome_trace(const std::string& path) const {
    LUMEN_CHECK(state_->stop_ns >= 0, "Profiler", "write_chrome_trace() needs stop() first");
    std::ofstream file(path);
    LUMEN_CHECK(file.good(), "Profiler", "cannot write the trace to '", path, "'");
    file << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
    file << "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 1, \"args\": {\"name\": "
            "\"lumen\"}}";
    std::map<uint32_t, bool> threads;
    char number[64];
    for (size_t i = 0; i < state_->events.size(); ++i) {
        const Event& e = state_->events[i];
        const uint32_t tid = state_->event_tid[i];
        threads[tid] = true;
        std::snprintf(number, sizeof number, "\"ts\": %.3f, \"dur\": %.3f",
                      double(e.start_ns) / 1e3, double(e.end_ns - e.start_ns) / 1e3);
        file << ",\n{\"ph\": \"X\", \"pid\": 1, \"tid\": " << tid << ", \"name\": \""
             << json_escape(e.name) << "\", \"cat\": \"" << profiler::kind_name(e.kind) << "\", "
             << number << ", \"args\": {\"step\": " << e.step << ", \"bytes\": " << e.bytes;
        if (!e.shape.empty()) file << ", \"input shape\": \"" << json_escape(e.shape) << "\"";
        file << "}}";
    }
    for (size_t k = 0; k < state_->step_ns.size(); ++k) {
        std::snprintf(number, sizeof number, "%.3f", double(state_->step_ns[k]) / 1e3);
        file << ",\n{\"ph\": \"i\", \"s\": \"g\", \"pid\": 1, \"tid\": 1, \"name\": \"end of step "
             << k << "\", \"ts\": " << number << "}";
    }
    for (const auto& [tid, unused] : threads)
        file << ",\n{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, \"tid\": " << tid
             << ", \"args\": {\"name\": \""
             << (tid == 0 ? std::string("CUDA stream") : "thread " + std::to_string(tid)) << "\"}}";
    file << "\n]}\n";
    file.close();
    LUMEN_CHECK(!file.fail(), "Profiler", "cannot write the trace to '", path, "'");
}

}  // namespace lumen
