package bench

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// WarmPageCache reads every file under dir once and returns the bytes
// read, so that the operating system caches them as it does a
// long-running server's data. A measure then starts from the same warm
// cache whether the machine has just booted or ran the bench before: after
// a restart only 2 of the bench data's 7.3 GB were cached, and each
// operation's few seconds of warm-up read only what it touched.
//
// It is also run before each operation of a measure: the bench machines'
// kernel pages out file pages that have not been touched for a minute
// (DAMON's pageout scheme, up to 128 MB a second), so the data of an
// operation measured minutes after the start was read from disk again
// (20-30 MB/s of reads during a GraphQL page's measure). A file that
// PostgreSQL removes while the directory is read is skipped.
func WarmPageCache(dir string) (int64, error) {
	var total int64
	buf := make([]byte, 1<<20)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path != dir && errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		n, err := readWhole(path, buf)
		total += n
		return err
	})
	return total, err
}

// readWhole reads the file at path to its end with buf and returns the
// bytes read; a file that no longer exists reads as empty.
func readWhole(path string, buf []byte) (int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var total int64
	for {
		n, err := f.Read(buf)
		total += int64(n)
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}
