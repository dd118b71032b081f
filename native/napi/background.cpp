#include "napi/background.h"

#include <map>

#if defined(__linux__)
#include <sched.h>
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

namespace {

// One lane of each kind per JS environment (the main thread's, each worker's), made on its
// first job and stopped by the environment's cleanup.
std::mutex lanes_mu;
std::map<std::pair<napi_env, Lane>, ThreadLane*>& Lanes() {
  static auto* lanes = new std::map<std::pair<napi_env, Lane>, ThreadLane*>();
  return *lanes;
}

// How far below the thread that made it a lane thread runs (nice steps): about a ninth of
// the JS thread's CPU weight.
constexpr int kLaneNiceSteps = 10;

// Lowers the calling thread's scheduling priority (Linux: a thread's nice value is its own,
// set through its tid). A catch-up keeps a lane thread busy for seconds, and on a machine
// whose cores are all busy (two cores: the two indexes' jobs, or one of them and another
// process) the JS thread woke for its timers and waited behind them for a core: the loop ran
// 40-80 ms late though the JS thread had nothing to do. At a lower priority the lane's threads
// take what the JS thread leaves. Threads they start (the vector index's build threads)
// inherit it. Best effort: elsewhere, or if the call fails, the lane runs as it did.
void LowerLaneThreadPriority() {
#if defined(__linux__)
  const auto tid = static_cast<id_t>(syscall(SYS_gettid));
  errno = 0;
  const int now = getpriority(PRIO_PROCESS, tid);
  if (now == -1 && errno != 0) return;
  (void)setpriority(PRIO_PROCESS, tid, std::min(19, now + kLaneNiceSteps));
#endif
}

}  // namespace

ThreadLane& ThreadLane::Of(Napi::Env env, Lane lane) {
  const auto key = std::make_pair(napi_env(env), lane);
  {
    std::lock_guard<std::mutex> lock(lanes_mu);
    auto it = Lanes().find(key);
    if (it != Lanes().end()) return *it->second;
  }
  auto* made = new ThreadLane(env, lane);
  std::lock_guard<std::mutex> lock(lanes_mu);
  Lanes()[key] = made;
  return *made;
}

size_t ThreadLane::Threads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return threads_.size();
}

ThreadLane::ThreadLane(Napi::Env env, Lane lane) : env_(env), lane_(lane) {
  napi_value name = Napi::String::New(env, lane == Lane::kRead ? "spanguard:readLane" : "spanguard:writeLane");
  if (napi_create_threadsafe_function(env, nullptr, nullptr, name, 0, 1, nullptr, nullptr, this, &ThreadLane::CallJs,
                                      &tsfn_) != napi_ok) {
    throw NativeError("IO_ERROR", "a lane of background threads could not be made");
  }
  // Idle until a job is in the lane: an empty lane does not keep the process alive.
  napi_unref_threadsafe_function(env, tsfn_);
  napi_add_env_cleanup_hook(env, &ThreadLane::Cleanup, this);
#if defined(__linux__)
  if (lane == Lane::kRead) {
    // The CPUs this (the JS) thread may use: the lane's threads are kept within them.
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
      for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) js_cpus_.push_back(c);
    }
  }
#endif
}

ThreadLane::~ThreadLane() = default;

void ThreadLane::Submit(std::unique_ptr<Task> task) {
  ++submitted_;
  if (in_lane_++ == 0) napi_ref_threadsafe_function(env_, tsfn_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (lane_ == Lane::kRead) SteerOffJsCpu();
    queued_.push_back(std::move(task));
    // A job does not wait for another to end while the lane may grow: every thread busy, one more.
    if (idle_ < queued_.size() && threads_.size() < kMaxThreads) threads_.emplace_back([this] { Loop(); });
  }
  // After the lock is released: the woken thread does not wake only to wait for it.
  cv_.notify_one();
}

#if defined(__linux__)
// The CPUs the JS thread may use but `off` (all of them when it is not one: the host moved
// the JS thread outside the set it started with).
static cpu_set_t AllBut(const std::vector<int>& cpus, int off) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus)
    if (c != off) CPU_SET(c, &set);
  return set;
}
#endif

void ThreadLane::SteerOffJsCpu() {
#if defined(__linux__)
  const int cpu = sched_getcpu();
  // Unchanged since the last job (the common case: one vDSO read), or nowhere else to go.
  if (cpu < 0 || cpu == off_cpu_ || js_cpus_.size() < 2) return;
  off_cpu_ = cpu;
  const cpu_set_t set = AllBut(js_cpus_, cpu);
  // Best effort: a thread whose mask cannot be set runs wherever the scheduler puts it.
  for (long tid : tids_) (void)sched_setaffinity(static_cast<pid_t>(tid), sizeof(set), &set);
#endif
}

void ThreadLane::SetUp() {
  if (lane_ == Lane::kWrite) {
    LowerLaneThreadPriority();
    return;
  }
#if defined(__linux__)
  std::lock_guard<std::mutex> lock(mu_);
  const long tid = static_cast<long>(syscall(SYS_gettid));
  tids_.push_back(tid);
  if (off_cpu_ >= 0) {
    const cpu_set_t set = AllBut(js_cpus_, off_cpu_);
    (void)sched_setaffinity(static_cast<pid_t>(tid), sizeof(set), &set);
  }
#endif
}

void ThreadLane::Loop() {
  SetUp();
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    ++idle_;
    cv_.wait(lock, [this] { return stopping_ || !queued_.empty(); });
    --idle_;
    if (stopping_) return;
    std::unique_ptr<Task> task = std::move(queued_.front());
    queued_.pop_front();
    lock.unlock();
    task->Run();
    // To the JS thread; the queue is unbounded, so the call does not block. It fails only once
    // the environment is going away: the job is then dropped with it, unsettled (its
    // destructor would touch handles of the environment being torn down).
    (void)napi_call_threadsafe_function(tsfn_, task.release(), napi_tsfn_nonblocking);
    lock.lock();
  }
}

void ThreadLane::CallJs(napi_env env, napi_value, void* context, void* data) {
  auto* task = static_cast<Task*>(data);
  // No environment: the function is being torn down with it; the job is dropped unsettled.
  if (env == nullptr || task == nullptr) return;
  static_cast<ThreadLane*>(context)->Complete(Napi::Env(env), task);
}

void ThreadLane::Complete(Napi::Env env, Task* raw) {
  std::unique_ptr<Task> task(raw);
  {
    Napi::HandleScope handles(env);
    // As an AsyncWorker's completion: in a callback scope, so the microtasks that settling
    // queued run when it closes.
    Napi::CallbackScope scope(env, task->context_);
    try {
      task->Complete(env);
    } catch (...) {
    }
    if (env.IsExceptionPending()) {
      Napi::Error e = env.GetAndClearPendingException();
      napi_fatal_exception(env, e.Value());
    }
  }
  task.reset();
  if (--in_lane_ == 0) napi_unref_threadsafe_function(env, tsfn_);
}

void ThreadLane::Cleanup(void* self) {
  auto* lane = static_cast<ThreadLane*>(self);
  {
    std::lock_guard<std::mutex> lock(lanes_mu);
    Lanes().erase(std::make_pair(lane->env_, lane->lane_));
  }
  {
    std::lock_guard<std::mutex> lock(lane->mu_);
    lane->stopping_ = true;
  }
  lane->cv_.notify_all();
  // A thread finishes the job it runs; jobs not run, or run and not yet delivered, are dropped
  // with the environment (their promises are never settled: nothing is left to see them).
  for (auto& t : lane->threads_) t.join();
  for (auto& t : lane->queued_) (void)t.release();
  napi_release_threadsafe_function(lane->tsfn_, napi_tsfn_abort);
  delete lane;
}

}  // namespace spanguard
