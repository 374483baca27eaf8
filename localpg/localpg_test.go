package localpg

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/internal/freeport"
)

// clusterDir returns a fresh directory for a test cluster that the postgres
// OS user can reach when the tests run as root (t.TempDir is mode 0700).
func clusterDir(t *testing.T) string {
	t.Helper()
	base, err := os.MkdirTemp("", "localpg-test-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Stop whatever a failed test left behind before removing it.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := StopDir(ctx, filepath.Join(base, "pg"), nil); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		os.RemoveAll(base)
	})
	return filepath.Join(base, "pg")
}

func query(t *testing.T, url, q string) string {
	t.Helper()
	db, err := sql.Open("postgres", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var s string
	if err := db.QueryRow(q).Scan(&s); err != nil {
		t.Fatalf("%s on %s: %v", q, url, err)
	}
	return s
}

func TestStartReuseClose(t *testing.T) {
	ctx := context.Background()
	dir := clusterDir(t)
	port := freeport.Get(t)

	first, err := Start(ctx, Options{Dir: dir, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	if !first.StartedByUs() {
		t.Error("first Start: StartedByUs = false, want true")
	}
	if want := "127.0.0.1:"; !strings.Contains(first.URL("x"), want) {
		t.Errorf("URL %q does not use TCP", first.URL("x"))
	}
	if err := first.EnsureDatabase(ctx, "stakegraph"); err != nil {
		t.Fatal(err)
	}
	if err := first.EnsureDatabase(ctx, "stakegraph"); err != nil {
		t.Fatalf("EnsureDatabase twice: %v", err)
	}
	if got := query(t, first.URL("stakegraph"), "SELECT current_database()"); got != "stakegraph" {
		t.Errorf("current_database() = %q", got)
	}
	if got := query(t, first.URL("stakegraph"), "SHOW listen_addresses"); got != "127.0.0.1" {
		t.Errorf("listen_addresses = %q, want 127.0.0.1", got)
	}

	second, err := Start(ctx, Options{Dir: dir, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	if second.StartedByUs() {
		t.Error("second Start: StartedByUs = true, want false")
	}
	if second.URL("stakegraph") != first.URL("stakegraph") {
		t.Errorf("URLs differ: %s and %s", second.URL("stakegraph"), first.URL("stakegraph"))
	}

	// The starter leaves the server running while another user holds it,
	// and the last user out stops it.
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if st, _ := DirStatus(dir); !st.Running {
		t.Fatal("server stopped although another user still held it")
	}
	query(t, second.URL("stakegraph"), "SELECT 1::text")
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
	if st, _ := DirStatus(dir); st.Running {
		t.Fatal("the last user's Close did not stop the server")
	}

	// Restarting keeps the data; KeepRunning makes the server outlive its
	// users, and only Stop ends it.
	third, err := Start(ctx, Options{Dir: dir, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	if !third.StartedByUs() {
		t.Error("restart: StartedByUs = false, want true")
	}
	if got := query(t, third.URL("stakegraph"), "SELECT current_database()"); got != "stakegraph" {
		t.Errorf("after restart current_database() = %q", got)
	}
	if err := third.KeepRunning(); err != nil {
		t.Fatal(err)
	}
	if err := third.Close(); err != nil {
		t.Fatal(err)
	}
	if st, _ := DirStatus(dir); !st.Running {
		t.Fatal("Close stopped a server told to keep running")
	}
	fourth, err := Start(ctx, Options{Dir: dir, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	if fourth.StartedByUs() {
		t.Error("Start of a running server: StartedByUs = true, want false")
	}
	if err := fourth.Close(); err != nil {
		t.Fatal(err)
	}
	if st, _ := DirStatus(dir); !st.Running {
		t.Fatal("a user of a kept server stopped it")
	}
	stopped, err := StopDir(ctx, dir, nil)
	if err != nil || !stopped {
		t.Fatalf("StopDir = %v, %v; want true, nil", stopped, err)
	}
	if st, _ := DirStatus(dir); st.Running {
		t.Fatal("server still runs after StopDir")
	}
}

func TestConcurrentStart(t *testing.T) {
	ctx := context.Background()
	dir := clusterDir(t)
	const n = 4
	clusters := make([]*Cluster, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			clusters[i], errs[i] = Start(ctx, Options{Dir: dir, SocketOnly: true, Fast: true, Port: 5432})
		}()
	}
	wg.Wait()
	started := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Start %d: %v", i, errs[i])
		}
		if clusters[i].StartedByUs() {
			started++
		}
	}
	if started != 1 {
		t.Errorf("%d Start calls started the server, want 1", started)
	}
	url := clusters[0].URL("postgres")
	if strings.Contains(url, "127.0.0.1") {
		t.Errorf("socket-only URL %q uses TCP", url)
	}
	for _, setting := range []string{"fsync", "jit"} {
		if got := query(t, url, "SHOW "+setting); got != "off" {
			t.Errorf("%s = %q in a Fast cluster", setting, got)
		}
	}
	if got := query(t, url, "SHOW listen_addresses"); got != "" {
		t.Errorf("listen_addresses = %q in a socket-only cluster", got)
	}
	for _, c := range clusters {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}
	if st, _ := DirStatus(dir); st.Running {
		t.Error("server still runs after every user closed it")
	}
}

func TestPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	_, err = Start(context.Background(), Options{Dir: clusterDir(t), Port: port})
	if err == nil {
		t.Fatal("Start on a busy port succeeded")
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "did not start") {
		t.Errorf("error = %q, want one line saying the server did not start", msg)
	}
}

func TestNoBinaries(t *testing.T) {
	saved := searchDirs
	searchDirs = nil
	t.Cleanup(func() { searchDirs = saved })
	t.Setenv("PATH", t.TempDir())
	_, err := Start(context.Background(), Options{Dir: clusterDir(t)})
	if !errors.Is(err, errNoBinaries) {
		t.Fatalf("Start without binaries: %v, want %v", err, errNoBinaries)
	}
	if !strings.Contains(err.Error(), "install postgresql") {
		t.Errorf("error %q does not say what to install", err)
	}
}

func TestExplicitBinDirMissingPrograms(t *testing.T) {
	_, err := Start(context.Background(), Options{Dir: clusterDir(t), BinDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "has no initdb") {
		t.Fatalf("Start with an empty BinDir: %v", err)
	}
}

func TestVersions(t *testing.T) {
	for v, want := range map[string]string{"15.18": "15", "9.6.24": "9.6", "17": "17", "10.1": "10"} {
		if got := majorOf(v); got != want {
			t.Errorf("majorOf(%q) = %q, want %q", v, got, want)
		}
	}
	if !versionLess("9.6.24", "15.1") || versionLess("16.0", "15.9") || !versionLess("15", "15.1") {
		t.Error("versionLess orders versions wrongly")
	}
}

func TestStopDirNotRunning(t *testing.T) {
	stopped, err := StopDir(context.Background(), filepath.Join(t.TempDir(), "nothing"), nil)
	if err != nil || stopped {
		t.Fatalf("StopDir on a missing cluster = %v, %v; want false, nil", stopped, err)
	}
}

func TestReplica(t *testing.T) {
	ctx := context.Background()
	primary, err := Start(ctx, Options{Dir: clusterDir(t), Port: freeport.Get(t), Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	defer primary.Stop(ctx)
	db, err := sql.Open("postgres", primary.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE t (n int); INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}

	replica, err := Start(ctx, Options{Dir: clusterDir(t), Port: freeport.Get(t), Fast: true, ReplicaOf: primary.URL("postgres")})
	if err != nil {
		t.Fatal(err)
	}
	defer replica.Stop(ctx)
	if got := query(t, replica.URL("postgres"), `SELECT pg_is_in_recovery()::text`); got != "true" {
		t.Errorf("the replica is in recovery: %s", got)
	}
	if got := query(t, replica.URL("postgres"), `SELECT sum(n)::text FROM t`); got != "1" {
		t.Errorf("the copied table sums to %s", got)
	}
	// It streams what the primary writes after the copy.
	if _, err := db.Exec(`INSERT INTO t VALUES (2)`); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for query(t, replica.URL("postgres"), `SELECT sum(n)::text FROM t`) != "3" {
		if time.Now().After(deadline) {
			t.Fatal("the replica never saw the primary's insert")
		}
		time.Sleep(10 * time.Millisecond)
	}
	rdb, err := sql.Open("postgres", replica.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	if _, err := rdb.Exec(`INSERT INTO t VALUES (4)`); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("a write on the replica: %v; want a read-only transaction error", err)
	}
}
