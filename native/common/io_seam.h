// The syscall seam: every file operation of the span log that changes what is on disk
// (open, pwrite, fdatasync/fsync, ftruncate, rename, unlink) goes through one function
// table, so tests can inject faults into the binary users run instead of into a mock.
//
// Why the fault table ships in the default build rather than behind a define: the kill -9
// and power-loss tests must exercise the exact code path production runs, and a second
// build would double the CI build time on a 2-core box. The cost is one indirect call per
// syscall (noise next to the syscall), and the faulty table can only be installed through
// the explicitly test-named JS export `addon._testing.setFaults(...)`.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace spanguard {

/// The operations the log performs on files. Signatures and errno behaviour are POSIX's.
struct IoOps {
  int (*open)(const char* path, int flags, mode_t mode);
  int (*close)(int fd);
  ssize_t (*pwrite)(int fd, const void* buf, size_t len, off_t offset);
  int (*fdatasync)(int fd);
  int (*fsync)(int fd);
  int (*ftruncate)(int fd, off_t len);
  int (*rename)(const char* from, const char* to);
  int (*unlink)(const char* path);
};

/// The table in force (the real syscalls unless a test installed faults). Thread-safe:
/// the syncer worker calls it too.
const IoOps& Io() noexcept;

/// What a test asks the faulty table to do. Counters count calls made after SetFaults.
struct FaultPlan {
  /// The n-th fdatasync/fsync (1-based) fails with EIO and the file is left as is; -1 off.
  int64_t fail_sync_at = -1;
  /// Simulated power loss at the n-th fdatasync/fsync (1-based): every write since that
  /// file's last successful sync is, sector by sector (512 B), kept, dropped (zeroed) or
  /// garbled (random bytes) at random, the file may lose its size extension, the sync
  /// reports EIO, and from then on every seam call fails with EIO (the "machine" is off)
  /// until ClearFaults. -1 off.
  int64_t crash_at_sync = -1;
  /// Probabilities of dropping / garbling one unsynced sector at the crash.
  double drop = 0.3;
  double garble = 0.2;
  /// Seed of the damage's random choices, so a failing trial can be replayed.
  uint64_t seed = 1;
  /// pwrite fails with ENOSPC at the n-th call (1-based); -1 off.
  int64_t fail_write_at = -1;
  /// The n-th pwrite (1-based) writes only the first half of its bytes and returns that
  /// count, as a write that runs into a full disk does; -1 off. With fail_write_at = n + 1
  /// the writer's retry of the rest fails: some bytes of the write landed, then ENOSPC.
  int64_t short_write_at = -1;
};

struct FaultCounters {
  int64_t syncs = 0;
  int64_t writes = 0;
  bool crashed = false;
  int64_t sectors_kept = 0;
  int64_t sectors_dropped = 0;
  int64_t sectors_garbled = 0;
  int64_t truncated_files = 0;
};

/// Installs the faulty table with `plan` (resetting counters and the unsynced-write journal).
void SetFaults(const FaultPlan& plan);
/// Back to the real syscalls.
void ClearFaults();
FaultCounters GetFaultCounters();

}  // namespace spanguard
