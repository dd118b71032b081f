// The appends and flushes waiting on group commit, and where their sync runs.
//
// Engine side of group commit's bookkeeping: the binding pushes a waiter per append or flush
// it leaves pending, and hands a callback that settles one (resolving or rejecting its
// promise); this class decides which waiters a completed sync or a failed write covers, and
// in which order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>

namespace spanguard {

class SyncWaiters {
 public:
  /// Everything staged up to `seq` must be durable before the waiter settles. `first` is the
  /// append's first id (NaN for a flush). `handle` is the binding's own (a promise to settle),
  /// null for a waiter whose promise the JS side keeps in its queue.
  struct Waiter {
    uint64_t seq;
    double first;
    void* handle;
  };

  bool empty() const { return waiters_.empty(); }
  size_t size() const { return waiters_.size(); }
  void Push(uint64_t seq, double first, void* handle) { waiters_.push_back({seq, first, handle}); }

  /// Removes, oldest first, every waiter a sync up to `synced_seq` covers, calling
  /// `settle(waiter)` for each.
  template <typename F>
  void TakeDurable(uint64_t synced_seq, F&& settle) {
    while (!waiters_.empty() && waiters_.front().seq <= synced_seq) {
      const Waiter w = waiters_.front();
      waiters_.pop_front();
      settle(w);
    }
  }

  /// Removes every waiter, oldest first (a failed sync fails them all).
  template <typename F>
  void TakeAll(F&& fail) {
    while (!waiters_.empty()) {
      const Waiter w = waiters_.front();
      waiters_.pop_front();
      fail(w);
    }
  }

  /// Removes, newest first, every waiter whose records were staged past `written_seq` (a
  /// failed staged write drops exactly those records).
  template <typename F>
  void TakeUnwritten(uint64_t written_seq, F&& fail) {
    while (!waiters_.empty() && waiters_.back().seq > written_seq) {
      const Waiter w = waiters_.back();
      waiters_.pop_back();
      fail(w);
    }
  }

 private:
  std::deque<Waiter> waiters_;
};

}  // namespace spanguard
