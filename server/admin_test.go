package server

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stakegraph/stakegraph/store/storetest"
)

// TestAdminPprof checks that the admin listener serves pprof only when
// Config.Pprof is set, never the command line, and the API listener never.
func TestAdminPprof(t *testing.T) {
	db := storetest.New(t)
	off := New(Config{}, Deps{DB: db})
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/cmdline", "/debug/pprof/symbol"} {
		if w := get(t, off.AdminHandler(), path); w.Code != http.StatusNotFound {
			t.Errorf("without Pprof, admin %s = %d, want 404", path, w.Code)
		}
	}
	if w := get(t, off.AdminHandler(), "/metrics"); w.Code != http.StatusOK {
		t.Errorf("without Pprof, admin /metrics = %d", w.Code)
	}

	on := New(Config{Pprof: true}, Deps{DB: db})
	w := get(t, on.AdminHandler(), "/debug/pprof/")
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "goroutine") {
		t.Errorf("with Pprof, admin /debug/pprof/ = %d %.200s", w.Code, w.Body)
	}
	if w := get(t, on.AdminHandler(), "/debug/pprof/goroutine?debug=1"); w.Code != http.StatusOK {
		t.Errorf("with Pprof, admin /debug/pprof/goroutine = %d", w.Code)
	}
	for _, path := range []string{"/debug/pprof/cmdline", "/debug/pprof/cmdline?x=1"} {
		w := get(t, on.AdminHandler(), path)
		if w.Code != http.StatusNotFound || strings.Contains(w.Body.String(), os.Args[0]) {
			t.Errorf("with Pprof, admin %s = %d %.200s; want 404 without the command line", path, w.Code, w.Body)
		}
	}
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline"} {
		if w := get(t, on.Handler(), path); w.Code != http.StatusNotFound {
			t.Errorf("API listener %s = %d, want 404", path, w.Code)
		}
	}
}
