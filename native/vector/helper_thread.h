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
// A task must not throw: whatever it allocates is allocated before RunBeside.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>

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
    return true;
  }

  void Loop() noexcept {
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
