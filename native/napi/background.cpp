#include "napi/background.h"

#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#endif

namespace spanguard {

BackgroundCounters& Background() {
  static BackgroundCounters counters;
  return counters;
}

#if defined(__linux__)
namespace {
/// Whether this process may set a thread back to nice `value` after raising it: root
/// (CAP_SYS_NICE, as far as a check without libcap goes) or RLIMIT_NICE at least 20 - value.
bool MayRestore(int value) {
  if (geteuid() == 0) return true;
  struct rlimit limit {};
  if (getrlimit(RLIMIT_NICE, &limit) != 0) return false;
  return limit.rlim_cur == RLIM_INFINITY || static_cast<long>(limit.rlim_cur) >= 20 - value;
}
/// Cleared for good when putting a thread back failed once (the check above was wrong).
std::atomic<bool> g_lowering{true};
}  // namespace

BackgroundPriority::BackgroundPriority(bool lower) {
  if (!lower || !g_lowering.load(std::memory_order_relaxed)) return;
  tid_ = syscall(SYS_gettid);
  errno = 0;
  before_ = getpriority(PRIO_PROCESS, static_cast<id_t>(tid_));
  if (errno != 0 || before_ >= 19 || !MayRestore(before_)) return;
  lowered_ = setpriority(PRIO_PROCESS, static_cast<id_t>(tid_), std::min(19, before_ + kBackgroundNice)) == 0;
}

BackgroundPriority::~BackgroundPriority() {
  if (!lowered_) return;
  if (setpriority(PRIO_PROCESS, static_cast<id_t>(tid_), before_) != 0) g_lowering.store(false);
}
#else
BackgroundPriority::BackgroundPriority(bool) {}
BackgroundPriority::~BackgroundPriority() = default;
#endif

}  // namespace spanguard
