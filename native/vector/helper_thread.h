// One worker thread that runs a share of a search beside the thread that asked for it.
//
// Why: a partitioned search over 10^7 rows scans ~10^6 signatures, and one core reads them
// at about half the rate two cores do (the scan is bound by each core's loads and popcounts,
// not by the memory bus). The search splits its lists in two, runs one half here and the
// other on the caller, and joins: about half the latency, the same answer.
//
// Why a thread kept alive, not one per search: starting a thread costs tens of microseconds
// on a virtual machine, as much as scanning ~10^4 rows; waking a waiting one costs less.
// It is started on the first call and stopped by the destructor.
//
// Where it runs: a new thread inherits its creator's CPU mask, and the first split search
// may run on a read-lane thread, whose mask leaves out the JS thread's core
// (native/napi/background.h); a helper confined so would share the lane thread's one core on
// a 2-CPU host, and the split would only add wakes. So the helper takes the process's own
// mask (its main thread's) when it starts: it may use every core the process may.
//
// A task must not throw (RunBeside checks it is noexcept): whatever it allocates is
// allocated before RunBeside.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>
#include <type_traits>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#endif

namespace spanguard {

class HelperThread {
 public:
  HelperThread() = default;
  HelperThread(const HelperThread&) = delete;
  HelperThread& operator=(const HelperThread&) = delete;
  ~HelperThread() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable()) thread_.join();
  }

  /// Runs fn(1) on the helper while the caller runs fn(0); returns when both have returned.
  /// When the helper cannot be started, fn(1) runs on the caller after fn(0): the same work,
  /// only not in parallel. Returns whether it ran beside.
  template <class Fn>
  bool RunBeside(Fn& fn) noexcept {
    static_assert(noexcept(fn(size_t{0})), "a task run beside must not throw");
    const bool beside = Start();
    if (beside) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        task_ = [](void* ctx) { (*static_cast<Fn*>(ctx))(size_t{1}); };
        ctx_ = &fn;
        pending_ = true;
      }
      wake_.notify_one();  // after the unlock: the helper does not wake into a held lock
    }
    fn(size_t{0});
    if (!beside) {
      fn(size_t{1});
      return false;
    }
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [this] { return !pending_; });
    return true;
  }

 private:
  bool Start() noexcept {
    if (thread_.joinable()) return true;
    if (failed_) return false;
    try {
      thread_ = std::thread([this] { Loop(); });
    } catch (...) {
      failed_ = true;  // no thread (a limit of the process): the caller does both halves
      return false;
    }
#if defined(__linux__)
    // Shown by top -H, /proc/<pid>/task/*/comm and debuggers (15 characters at most).
    (void)pthread_setname_np(thread_.native_handle(), "spanguard-scan");
#endif
    return true;
  }

  void Loop() noexcept {
#if defined(__linux__)
    cpu_set_t process;
    if (sched_getaffinity(getpid(), sizeof process, &process) == 0)
      (void)sched_setaffinity(0, sizeof process, &process);  // refused (a seccomp filter): stays as inherited
#endif
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      wake_.wait(lock, [this] { return stop_ || pending_; });
      if (pending_) {
        void (*task)(void*) = task_;
        void* ctx = ctx_;
        lock.unlock();
        task(ctx);
        lock.lock();
        pending_ = false;
        lock.unlock();
        done_.notify_one();
        lock.lock();
        continue;
      }
      if (stop_) return;
    }
  }

  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::thread thread_;
  void (*task_)(void*) = nullptr;
  void* ctx_ = nullptr;
  bool pending_ = false;
  bool stop_ = false;
  bool failed_ = false;
};

}  // namespace spanguard
