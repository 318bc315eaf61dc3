// lumen's thread pool. One pool per process, started on the first parallel_for that splits
// work; its threads are detached and live until the process exits.
//
// A job is `count` tasks. The thread that owns the pool for the job publishes it in one atomic
// word (job number, task count, next task index); every thread, the owner included, claims
// the next index with fetch_add until none is left, so no task runs twice and the chunk a task
// covers never depends on which thread runs it. The last task to finish wakes the owner.
//
// Waiting threads spin for kSpin, then sleep in the kernel (C++20 atomic wait, a futex on
// Linux). The short spin keeps back-to-back ops of a training step from paying a wake-up each;
// sleeping after it leaves the cores to the program's other threads. (OpenMP's default instead
// spins for long: embedded in a program with its own busy threads it was 4-13x slower.)
#include "core/parallel.h"

#include <chrono>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <new>
#include <thread>
#include <utility>

#include <pthread.h>
#include <sched.h>

namespace lumen {

namespace {

constexpr auto kSpin = std::chrono::microseconds(20);
constexpr int kMaxThreads = 1024;  // task indices must fit the 16 bits of Pool::state_

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

// Returns once `word` no longer holds `old`: spins for kSpin, then sleeps until notified.
void wait_while_equal(const std::atomic<uint32_t>& word, uint32_t old) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 1; word.load(std::memory_order_acquire) == old; ++i) {
        if (i % 64 == 0 && std::chrono::steady_clock::now() - start > kSpin) {
            while (word.load(std::memory_order_acquire) == old) {
                word.wait(old, std::memory_order_acquire);
            }
            return;
        }
        cpu_relax();
    }
}

// Whether this thread is running a task (then nested parallel_for calls run serially).
thread_local bool in_task = false;

using Task = void (*)(void* context, int i);

class Pool {
  public:
    Pool() {
        // A forked child has none of the parent's threads, and a lock another thread held at
        // the fork stays held: start over with no workers and a free lock.
        pthread_atfork(nullptr, nullptr, [] {
            Pool& pool = instance();
            pool.workers_ = 0;
            new (&pool.owner_) std::mutex();
        });
    }

    static Pool& instance() {
        static Pool* pool = new Pool();  // never destroyed: its detached threads outlive main
        return *pool;
    }

    void run(int count, Task task, void* context) {
        std::unique_lock<std::mutex> lock(owner_, std::defer_lock);
        if (in_task || count > kMaxThreads || !lock.try_lock()) {
            for (int i = 0; i < count; ++i) task(context, i);
            return;
        }
        uint32_t epoch = epoch_.load(std::memory_order_relaxed);
        for (; workers_ < count - 1; ++workers_) std::thread(&Pool::work, this, epoch).detach();

        task_ = task;
        context_ = context;
        error_ = nullptr;
        done_.store(0, std::memory_order_relaxed);
        ++job_;
        state_.store(uint64_t(job_) << 32 | uint64_t(count) << 16, std::memory_order_release);
        epoch_.fetch_add(1, std::memory_order_release);
        epoch_.notify_all();

        run_claimed();
        for (uint32_t done; (done = done_.load(std::memory_order_acquire)) != uint32_t(count);) {
            wait_while_equal(done_, done);
        }
        if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    }

  private:
    // A worker: sleeps until the next job is published, helps with it, and so on.
    void work(uint32_t epoch) {
        for (;;) {
            wait_while_equal(epoch_, epoch);
            epoch = epoch_.load(std::memory_order_acquire);
            run_claimed();
        }
    }

    // Claims and runs the current job's tasks until none is left.
    void run_claimed() {
        for (;;) {
            uint64_t state = state_.fetch_add(1, std::memory_order_acq_rel);
            uint32_t i = state & 0xffff, count = (state >> 16) & 0xffff;
            if (i >= count) return;
            in_task = true;
            try {
                task_(context_, int(i));
            } catch (...) {
                std::lock_guard<std::mutex> guard(error_mutex_);
                if (!error_) error_ = std::current_exception();
            }
            in_task = false;
            if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == count) done_.notify_one();
        }
    }

    std::mutex owner_;  // held by the thread whose job runs
    int workers_ = 0;   // threads started (they never exit)
    uint32_t job_ = 0;
    // Written by the owner before it publishes a job; read by threads that claimed a task of it.
    Task task_ = nullptr;
    void* context_ = nullptr;
    std::mutex error_mutex_;
    std::exception_ptr error_;
    // bits 32-63: job number, 16-31: task count, 0-15: the next task index to claim.
    std::atomic<uint64_t> state_{0};
    std::atomic<uint32_t> done_{0};   // tasks of the current job finished
    std::atomic<uint32_t> epoch_{0};  // bumped when a job is published; idle workers wait on it
};

int threads_from_environment() {
    for (const char* name : {"LUMEN_NUM_THREADS", "OMP_NUM_THREADS"}) {
        const char* value = std::getenv(name);
        if (value == nullptr) continue;
        char* end = nullptr;
        long threads = std::strtol(value, &end, 10);
        if (end != value && threads > 0) return int(std::min<long>(threads, kMaxThreads));
    }
    return 0;
}

int default_threads() {
    static const int threads = [] {
        if (int from_env = threads_from_environment(); from_env > 0) return from_env;
        cpu_set_t set;
        if (sched_getaffinity(0, sizeof(set), &set) == 0) {
            return std::clamp(CPU_COUNT(&set), 1, kMaxThreads);
        }
        return std::clamp(int(std::thread::hardware_concurrency()), 1, kMaxThreads);
    }();
    return threads;
}

std::atomic<int> chosen_threads{0};

}  // namespace

int get_num_threads() {
    int chosen = chosen_threads.load(std::memory_order_relaxed);
    return chosen > 0 ? chosen : default_threads();
}

void set_num_threads(int threads) {
    chosen_threads.store(std::clamp(threads, 0, kMaxThreads), std::memory_order_relaxed);
}

namespace detail {
void run_tasks(int count, void (*task)(void* context, int i), void* context) {
    if (count <= 1) {
        if (count == 1) task(context, 0);
        return;
    }
    Pool::instance().run(count, task, context);
}
}  // namespace detail

}  // namespace lumen
