// Fault points: one armed point with a countdown, set by arm() or LUMEN_FAULT_INJECT.
#include "core/fault.h"

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <mutex>

#include <unistd.h>

#include "core/error.h"

namespace lumen::fault {

namespace {

struct Armed {
    std::string point;
    Action action = Action::none;
    int64_t remaining = 0;  // passes left until the action
};

std::mutex& lock() {
    static std::mutex mutex;
    return mutex;
}
Armed& armed() {
    static Armed state;
    return state;
}
std::atomic<bool> any_armed{false};
std::once_flag environment_read;

// "<point>[@<hit>]:kill|fail"; a malformed value is reported on stderr and ignored, since
// this runs deep inside whatever operation reaches the first point.
void arm_from_environment() {
    const char* text = std::getenv("LUMEN_FAULT_INJECT");
    if (text == nullptr || *text == '\0') return;
    std::string spec = text;
    size_t colon = spec.rfind(':');
    std::string where = spec.substr(0, colon == std::string::npos ? 0 : colon);
    std::string action = colon == std::string::npos ? "" : spec.substr(colon + 1);
    int64_t hit = 1;
    if (size_t at = where.find('@'); at != std::string::npos) {
        hit = std::atoll(where.c_str() + at + 1);
        where.resize(at);
    }
    if (where.empty() || hit < 1 || (action != "kill" && action != "fail")) {
        const char message[] = "lumen: ignoring malformed LUMEN_FAULT_INJECT\n";
        [[maybe_unused]] ssize_t unused = ::write(2, message, sizeof(message) - 1);
        return;
    }
    arm(where, action == "kill" ? Action::kill : Action::fail, hit);
}

}  // namespace

void arm(const std::string& point, Action action, int64_t hit) {
    LUMEN_CHECK(!point.empty() && hit >= 1, "fault", "arm needs a point name and hit >= 1, got '",
                point, "' and ", hit);
    std::lock_guard<std::mutex> guard(lock());
    armed() = {point, action, hit};
    any_armed.store(action != Action::none, std::memory_order_release);
}

void disarm() {
    std::lock_guard<std::mutex> guard(lock());
    armed() = {};
    any_armed.store(false, std::memory_order_release);
}

bool at(const char* point) {
    std::call_once(environment_read, arm_from_environment);
    if (!any_armed.load(std::memory_order_acquire)) return false;
    std::lock_guard<std::mutex> guard(lock());
    Armed& state = armed();
    if (state.action == Action::none || state.point != point || --state.remaining > 0) return false;
    Action action = state.action;
    state = {};
    any_armed.store(false, std::memory_order_release);
    if (action == Action::kill) {
        ::kill(::getpid(), SIGKILL);
        ::_exit(137);  // not reached
    }
    return true;
}

}  // namespace lumen::fault
