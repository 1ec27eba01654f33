// Package cache is Rival's content-addressed store.
//
// A Digest is a BLAKE3-256 value; its text form, in every file and key, is
// 64 lowercase hex digits, and Short, the first 16, is how messages and
// folder names show one. Blobs live under their digest (zstd-compressed
// where it pays), action records map an action key to the digests of a
// task's outputs, and a stat cache remembers file digests against (device,
// inode, size, mtime, ctime) so that a no-op run costs stat calls, not
// reads. Every write is atomic (temp file in the same directory, fsync,
// rename) and processes that share one cache directory coordinate through
// file locks.
package cache
