// Package freeport finds TCP ports for tests' servers.
package freeport

import (
	"net"
	"testing"
)

// Get returns a TCP port on 127.0.0.1 that was free a moment ago. Another
// process may take it before the test's server does; tests use it where a
// server must be given its port in advance.
func Get(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
