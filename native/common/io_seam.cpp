#include "common/io_seam.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <vector>

namespace spanguard {

namespace {

int real_open(const char* path, int flags, mode_t mode) {
  int fd;
  do {
    fd = ::open(path, flags | O_CLOEXEC, mode);
  } while (fd < 0 && errno == EINTR);
  return fd;
}
int real_close(int fd) { return ::close(fd); }
ssize_t real_pwrite(int fd, const void* buf, size_t len, off_t offset) {
  ssize_t n;
  do {
    n = ::pwrite(fd, buf, len, offset);
  } while (n < 0 && errno == EINTR);
  return n;
}
// EINTR (network and FUSE file systems) means the sync did not run, not that dirty pages
// were dropped, so retrying it is safe; any other error is final (see SpanLog::FailSync).
int real_fdatasync(int fd) {
  int rc;
  do {
    rc = ::fdatasync(fd);
  } while (rc < 0 && errno == EINTR);
  return rc;
}
int real_fsync(int fd) {
  int rc;
  do {
    rc = ::fsync(fd);
  } while (rc < 0 && errno == EINTR);
  return rc;
}
int real_ftruncate(int fd, off_t len) {
  int rc;
  do {
    rc = ::ftruncate(fd, len);
  } while (rc < 0 && errno == EINTR);
  return rc;
}
int real_rename(const char* from, const char* to) { return ::rename(from, to); }
int real_unlink(const char* path) { return ::unlink(path); }

const IoOps kRealOps = {real_open,  real_close,     real_pwrite, real_fdatasync,
                        real_fsync, real_ftruncate, real_rename, real_unlink};

// ---- the faulty table -------------------------------------------------------------------

struct PendingWrite {
  off_t offset;
  size_t len;
};

struct FaultState {
  std::mutex mu;
  FaultPlan plan;
  FaultCounters counters;
  bool dead = false;
  // Writes since each fd's last successful sync, and the size each file had then.
  std::map<int, std::vector<PendingWrite>> unsynced;
  std::map<int, off_t> synced_size;
  std::mt19937_64 rng;
};

FaultState& state() {
  static FaultState s;
  return s;
}

off_t file_size(int fd) {
  off_t end = ::lseek(fd, 0, SEEK_END);
  return end < 0 ? 0 : end;
}

// Applies the power loss to every file with unsynced writes. Called with the mutex held.
void crash_locked(FaultState& s) {
  constexpr size_t kSector = 512;
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  for (auto& [fd, writes] : s.unsynced) {
    off_t lowest = -1;
    for (const PendingWrite& w : writes) {
      if (lowest < 0 || w.offset < lowest) lowest = w.offset;
      for (size_t done = 0; done < w.len; done += kSector) {
        size_t n = std::min(kSector, w.len - done);
        off_t at = w.offset + static_cast<off_t>(done);
        double r = coin(s.rng);
        unsigned char buf[kSector];
        if (r < s.plan.drop) {
          std::fill(buf, buf + n, 0);
          ++s.counters.sectors_dropped;
        } else if (r < s.plan.drop + s.plan.garble) {
          for (size_t i = 0; i < n; ++i) buf[i] = static_cast<unsigned char>(s.rng());
          ++s.counters.sectors_garbled;
        } else {
          ++s.counters.sectors_kept;
          continue;
        }
        (void)real_pwrite(fd, buf, n, at);
      }
    }
    // The size extension may not have reached the disk either.
    auto synced = s.synced_size.find(fd);
    off_t floor = synced != s.synced_size.end() ? synced->second : lowest;
    if (lowest >= 0 && coin(s.rng) < 0.25) {
      off_t cut = std::max<off_t>(floor < 0 ? 0 : floor, lowest);
      if (cut < file_size(fd)) {
        (void)real_ftruncate(fd, cut);
        ++s.counters.truncated_files;
      }
    }
  }
  s.unsynced.clear();
  s.counters.crashed = true;
  s.dead = true;
}

int f_open(const char* path, int flags, mode_t mode) {
  FaultState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.dead) {
    errno = EIO;
    return -1;
  }
  int fd = real_open(path, flags, mode);
  if (fd >= 0) {
    s.unsynced.erase(fd);
    s.synced_size[fd] = file_size(fd);
  }
  return fd;
}

int f_close(int fd) {
  FaultState& s = state();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    // Closing does not make writes durable; the journal keeps them keyed by fd only while
    // the fd lives, which is fine because the log keeps segment fds open until close.
    s.unsynced.erase(fd);
    s.synced_size.erase(fd);
  }
  return real_close(fd);
}

ssize_t f_pwrite(int fd, const void* buf, size_t len, off_t offset) {
  FaultState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  ++s.counters.writes;
  if (s.dead) {
    errno = EIO;
    return -1;
  }
  if (s.plan.fail_write_at == s.counters.writes) {
    errno = ENOSPC;
    return -1;
  }
  if (s.plan.short_write_at == s.counters.writes && len > 1) len /= 2;
  ssize_t n = real_pwrite(fd, buf, len, offset);
  if (n > 0) s.unsynced[fd].push_back({offset, static_cast<size_t>(n)});
  return n;
}

int f_sync_common(int fd, bool data_only) {
  FaultState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  ++s.counters.syncs;
  if (s.dead) {
    errno = EIO;
    return -1;
  }
  if (s.plan.crash_at_sync == s.counters.syncs) {
    crash_locked(s);
    errno = EIO;
    return -1;
  }
  if (s.plan.fail_sync_at == s.counters.syncs) {
    errno = EIO;
    return -1;
  }
  int rc = data_only ? real_fdatasync(fd) : real_fsync(fd);
  if (rc == 0) {
    s.unsynced.erase(fd);
    s.synced_size[fd] = file_size(fd);
  }
  return rc;
}

int f_fdatasync(int fd) { return f_sync_common(fd, true); }
int f_fsync(int fd) { return f_sync_common(fd, false); }

int f_ftruncate(int fd, off_t len) {
  FaultState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.dead) {
    errno = EIO;
    return -1;
  }
  return real_ftruncate(fd, len);
}

int f_rename(const char* from, const char* to) {
  FaultState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.dead) {
    errno = EIO;
    return -1;
  }
  return real_rename(from, to);
}

int f_unlink(const char* path) {
  FaultState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.dead) {
    errno = EIO;
    return -1;
  }
  return real_unlink(path);
}

const IoOps kFaultOps = {f_open, f_close, f_pwrite, f_fdatasync, f_fsync, f_ftruncate, f_rename, f_unlink};

std::atomic<const IoOps*> g_ops{&kRealOps};

}  // namespace

const IoOps& Io() noexcept { return *g_ops.load(std::memory_order_acquire); }

void SetFaults(const FaultPlan& plan) {
  FaultState& s = state();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.plan = plan;
    s.counters = FaultCounters{};
    s.dead = false;
    s.unsynced.clear();
    s.synced_size.clear();
    s.rng.seed(plan.seed);
  }
  g_ops.store(&kFaultOps, std::memory_order_release);
}

void ClearFaults() {
  g_ops.store(&kRealOps, std::memory_order_release);
  FaultState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.dead = false;
  s.unsynced.clear();
  s.synced_size.clear();
}

FaultCounters GetFaultCounters() {
  FaultState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.counters;
}

}  // namespace spanguard
