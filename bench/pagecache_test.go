package bench

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWarmPageCache checks that every regular file under the directory,
// nested ones included, is read whole.
func TestWarmPageCache(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "base", "1"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, size := range map[string]int{"a": 10, "base/1/b": 70000, "base/1/c": 0} {
		if err := os.WriteFile(filepath.Join(dir, name), make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n, err := WarmPageCache(dir)
	if err != nil || n != 70010 {
		t.Errorf("WarmPageCache = %d, %v; want 70010 bytes", n, err)
	}
	// A file removed after the directory was listed reads as empty.
	if n, err := readWhole(filepath.Join(dir, "gone"), make([]byte, 8)); n != 0 || err != nil {
		t.Errorf("readWhole of a removed file = %d, %v; want 0, nil", n, err)
	}
	if n, err := readWhole(filepath.Join(dir, "base/1/b"), make([]byte, 8)); n != 70000 || err != nil {
		t.Errorf("readWhole with a small buffer = %d, %v; want 70000, nil", n, err)
	}
	if _, err := WarmPageCache(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing directory gave no error")
	}
}
