package cache

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// wholeReader reads small regular files whole into a buffer it keeps, in
// three system calls when nothing is unusual (open, fstat, one pread) and a
// close: cache:verify reads three small files per entry (blob, record,
// output), and an *os.File costs it an allocation, a poller registration
// attempt and a second read to see the end. It refuses what safefile.Open
// refuses (any file but a regular one, without blocking on a FIFO) and what
// is larger than the limit it is given, and it is not safe for concurrent
// use: each worker holds its own.
type wholeReader struct {
	buf []byte
	// atime is set once an O_NOATIME open was refused (a file another user
	// owns): later opens do not ask again.
	atime bool
}

// openRegular opens path and takes its stat, refusing anything but a
// regular file with safefile's error.
func (r *wholeReader) openRegular(path string) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := r.open(path)
	if err != nil {
		return -1, st, err
	}
	if err := fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, st, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return -1, st, fmt.Errorf("%s: %w (%s); remove it or put a regular file there", path, ErrNotRegular, kindOf(st.Mode))
	}
	return fd, st, nil
}

// readFile is safefile.ReadFile into r's buffer: the regular file at path,
// whole, at most limit bytes, stopping when ctx ends. The slice is valid
// until r's next read.
func (r *wholeReader) readFile(ctx context.Context, path string, limit int64) ([]byte, error) {
	fd, st, err := r.openRegular(path)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	if st.Size > limit {
		return nil, fmt.Errorf("%s: %w (%d bytes, limit %d); remove or replace it and run again", path, ErrTooLarge, st.Size, limit)
	}
	n, err := r.readAll(ctx, fd, path, st.Size, limit)
	if err != nil {
		return nil, err
	}
	return r.buf[:n], nil
}

// hashFile digests the regular file at path and returns its stat as it was
// opened: a small file from one read into r's buffer, a large one (or one
// that grew past smallFile while read) streamed as HashFile does.
func (r *wholeReader) hashFile(ctx context.Context, path string) (Digest, unix.Stat_t, error) {
	fd, st, err := r.openRegular(path)
	if err != nil {
		return Digest{}, st, err
	}
	if st.Size <= smallFile {
		n, err := r.readAll(ctx, fd, path, st.Size, smallFile)
		if err == nil {
			unix.Close(fd)
			return HashBytes(r.buf[:n]), st, nil
		}
		if !errors.Is(err, ErrTooLarge) {
			unix.Close(fd)
			return Digest{}, st, err
		}
		// It grew while read: hash it from the start as a stream.
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var d Digest
	if st.Size <= smallFile {
		d, _, err = HashReader(f)
	} else {
		d, _, err = hashOpenFile(f, st.Size)
	}
	if err != nil {
		return Digest{}, st, fmt.Errorf("hash %s: %w", path, err)
	}
	return d, st, nil
}

// open opens path read-only, non-blocking (a FIFO planted there is not
// waited on) and without updating its access time where the file's owner
// allows it.
func (r *wholeReader) open(path string) (int, error) {
	flags := unix.O_RDONLY | unix.O_NONBLOCK | unix.O_CLOEXEC
	for {
		fl := flags
		if !r.atime {
			fl |= unix.O_NOATIME
		}
		fd, err := unix.Open(path, fl, 0)
		switch {
		case err == nil:
			return fd, nil
		case err == unix.EINTR:
			continue
		case err == unix.EPERM && !r.atime:
			r.atime = true
			continue
		}
		return -1, &fs.PathError{Op: "open", Path: path, Err: err}
	}
}

func fstat(fd int, st *unix.Stat_t) error {
	for {
		if err := unix.Fstat(fd, st); err != unix.EINTR {
			return err
		}
	}
}

// readAll reads the open file from offset 0 to its end into r.buf and
// returns its length, at most limit bytes (more is ErrTooLarge). One pread
// does when it returns the size fstat reported and less than it was asked
// for: the file ended there.
func (r *wholeReader) readAll(ctx context.Context, fd int, path string, size, limit int64) (int, error) {
	if need := int(size) + 1; cap(r.buf) < need {
		r.buf = make([]byte, max(need, 4<<10))
	}
	buf := r.buf[:cap(r.buf)]
	n := 0
	for {
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("read %s: %w", path, err)
		}
		if n == len(buf) {
			if int64(n) > limit {
				return 0, fmt.Errorf("%s: %w (over %d bytes); remove or replace it and run again", path, ErrTooLarge, limit)
			}
			buf = append(buf, 0)[:cap(buf)]
			r.buf = buf
		}
		m, err := unix.Pread(fd, buf[n:], int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		n += m
		if int64(n) > limit {
			return 0, fmt.Errorf("%s: %w (over %d bytes); remove or replace it and run again", path, ErrTooLarge, limit)
		}
		if m == 0 || int64(n) == size && n < len(buf) {
			return n, nil
		}
	}
}

// kindOf names a file type the way safefile's refusals do.
func kindOf(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a device"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFLNK:
		return "a symlink"
	}
	return "not a regular file"
}

// statOfUnix is statOf for a stat taken with unix.Fstat.
func statOfUnix(st *unix.Stat_t) fileStat {
	return fileStat{
		Dev:     uint64(st.Dev),
		Ino:     st.Ino,
		Size:    st.Size,
		MtimeNS: st.Mtim.Sec*1e9 + st.Mtim.Nsec,
		CtimeNS: st.Ctim.Sec*1e9 + st.Ctim.Nsec,
	}
}
