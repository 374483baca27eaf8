// Package npmtest installs the npm packages that tests run (graphql-http's
// audit, @redocly/cli), pinned by each directory's package-lock.json.
package npmtest

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Install runs `npm ci` in dir unless its node_modules already holds every
// package of its package-lock.json at its version. Test processes that
// share the directory (make test beside make test-stress, say) take turns
// through an exclusive lock on dir/.npm-install.lock, so that none reads a
// node_modules another is rebuilding.
func Install(t testing.TB, npm, dir string) {
	t.Helper()
	lock, err := os.OpenFile(filepath.Join(dir, ".npm-install.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatalf("npm lock in %s: %v", dir, err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatalf("npm lock in %s: %v", dir, err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if Installed(t, dir) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
	if !Installed(t, dir) {
		t.Fatalf("npm ci in %s did not install the versions of package-lock.json", dir)
	}
}

// Installed reports whether dir/node_modules holds every package of
// dir/package-lock.json at its version.
func Installed(t testing.TB, dir string) bool {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(raw, &lock); err != nil {
		t.Fatalf("%s/package-lock.json: %v", dir, err)
	}
	for path, pkg := range lock.Packages {
		if path == "" {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, path, "package.json"))
		if err != nil {
			return false
		}
		var installed struct {
			Version string `json:"version"`
		}
		if json.Unmarshal(raw, &installed) != nil || installed.Version != pkg.Version {
			return false
		}
	}
	return true
}
