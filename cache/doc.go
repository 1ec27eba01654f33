// Package cache is Rival's content-addressed store.
//
// Blobs live under their BLAKE3 digest (zstd-compressed where it pays),
// action records map an action key to the digests of a task's outputs, and a
// stat cache remembers file digests against (device, inode, size, mtime,
// ctime) so that a no-op run costs stat calls, not reads. Every write is
// atomic (temp file in the same directory, fsync, rename) and processes that
// share one cache directory coordinate through file locks.
package cache
