package cache

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// fileStat is the identity of a file's content as far as the kernel can
// tell without reading it.
type fileStat struct {
	Dev     uint64 `json:"dev"`
	Ino     uint64 `json:"ino"`
	Size    int64  `json:"size"`
	MtimeNS int64  `json:"mtime_ns"`
	CtimeNS int64  `json:"ctime_ns"`
}

func statOf(fi fs.FileInfo) (fileStat, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileStat{}, false
	}
	return fileStat{
		Dev:     uint64(st.Dev),
		Ino:     st.Ino,
		Size:    fi.Size(),
		MtimeNS: st.Mtim.Sec*1e9 + st.Mtim.Nsec,
		CtimeNS: st.Ctim.Sec*1e9 + st.Ctim.Nsec,
	}, true
}

// Stat returns the stat identity of path, for detecting changes during a run.
func Stat(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	st, _ := statOf(fi)
	return fmt.Sprintf("%d:%d:%d:%d:%d", st.Dev, st.Ino, st.Size, st.MtimeNS, st.CtimeNS), nil
}
