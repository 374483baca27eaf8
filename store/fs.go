package store

import (
	"database/sql/driver"
	"io/fs"
)

var driverBadConn = driver.ErrBadConn

func mustSub(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err)
	}
	return sub
}
