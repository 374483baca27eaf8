package graph_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/stakegraph/stakegraph/demo/demotest"
	"github.com/stakegraph/stakegraph/internal/syncbuffer"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// TestPlaygroundInBrowser runs `stakegraph serve` over the demo data, opens
// /graphql in headless Chromium, enters an API key in the playground, runs
// a query and reads the data in the result pane. It also checks that the
// page fetched nothing from anywhere but the server: the playground works
// offline.
//
// It needs Chromium (Debian: apt-get install chromium) and is skipped
// without it, and in -short mode.
func TestPlaygroundInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and a browser")
	}
	browser := findChromium()
	if browser == "" {
		t.Skip("no Chromium found (Debian: apt-get install chromium; or set CHROMIUM to its path)")
	}

	dbURL := demotest.URL(t)
	ctx := context.Background()
	db, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	key, err := db.CreateAPIKey(ctx, "browser-test", nil)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	base := startServe(t, dbURL)

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser),
		chromedp.NoSandbox, // tests may run as root
		chromedp.DisableGPU,
		chromedp.WindowSize(1400, 900),
	)...)
	defer cancelAlloc()
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	defer cancelBrowser()
	browserCtx, cancelTimeout := context.WithTimeout(browserCtx, 90*time.Second)
	defer cancelTimeout()

	// Record every URL the page requests.
	var mu sync.Mutex
	var requested []string
	chromedp.ListenTarget(browserCtx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			mu.Lock()
			requested = append(requested, e.Request.URL)
			mu.Unlock()
		}
	})

	const q = `query BrowserTest {
  avsList(take: 3, sortByTotalOperators: desc) { data { address metadataName totalOperators } meta { total } }
}`
	var result string
	err = chromedp.Run(browserCtx,
		network.Enable(),
		chromedp.Navigate(base+"/graphql"),
		chromedp.WaitVisible(`#api-key`, chromedp.ByID),
		chromedp.WaitVisible(`.graphiql-query-editor .CodeMirror`, chromedp.ByQuery),
		chromedp.SendKeys(`#api-key`, key+"\r", chromedp.ByID),
		chromedp.WaitVisible(`//span[@id="api-key-state" and text()="key set"]`, chromedp.BySearch),
		// The playground is mounted again with the key; wait for its editor.
		chromedp.WaitVisible(`.graphiql-query-editor .CodeMirror`, chromedp.ByQuery),
		chromedp.Evaluate(fmt.Sprintf(`document.querySelector('.graphiql-query-editor .CodeMirror').CodeMirror.setValue(%q)`, q), nil),
		// GraphiQL reads the operation from the edited text after a short
		// pause, and saves it in its tab state; run the query once it has.
		chromedp.Poll(`(() => {
			const state = JSON.parse(window.localStorage.getItem('graphiql:tabState') || '{}');
			return (state.tabs || []).some((tab) => tab.operationName === 'BrowserTest');
		})()`, nil, chromedp.WithPollingTimeout(10*time.Second)),
		chromedp.Click(`.graphiql-execute-button`, chromedp.ByQuery),
		chromedp.Poll(`(() => {
			const cm = document.querySelector('.result-window .CodeMirror');
			const text = cm ? cm.CodeMirror.getValue() : '';
			return text.includes('"avsList"') || text.includes('"errors"') ? text : null;
		})()`, &result, chromedp.WithPollingTimeout(30*time.Second)),
	)
	if err != nil {
		t.Fatalf("browser: %v (result pane: %q)", err, result)
	}
	t.Logf("result pane:\n%s", result)

	want := sqlNames(t, dbURL)
	for _, name := range want {
		if !strings.Contains(result, name) {
			t.Errorf("the result pane does not show %q", name)
		}
	}
	if strings.Contains(result, `"errors"`) {
		t.Errorf("the query failed in the playground:\n%s", result)
	}

	mu.Lock()
	defer mu.Unlock()
	for _, u := range requested {
		if !strings.HasPrefix(u, base) && !strings.HasPrefix(u, "data:") {
			t.Errorf("the playground requested %s: it must work offline", u)
		}
	}
}

// sqlNames returns the names of the three AVS with the most operators.
func sqlNames(t *testing.T, dbURL string) []string {
	t.Helper()
	db, err := store.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var names []string
	if err := storetest.SQL(t, db).SelectContext(context.Background(), &names, `
		SELECT a.metadata_name FROM avs a
		WHERE NOT EXISTS (SELECT 1 FROM curated_avs_metadata c WHERE c.avs_address = a.address AND NOT c.is_visible)
		ORDER BY a.total_operators DESC, a.address DESC LIMIT 3`); err != nil {
		t.Fatal(err)
	}
	return names
}

// findChromium returns the path of a Chromium or Chrome binary, or "".
func findChromium() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// startServe builds the stakegraph command, runs `stakegraph serve` against
// dbURL on a free port until the test ends, and returns its base URL.
func startServe(t *testing.T, dbURL string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "stakegraph")
	build := exec.Command("go", "build", "-o", bin, "../cmd/stakegraph")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build stakegraph: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	cmd := exec.Command(bin, "serve", "--addr", addr, "--admin-addr", "off")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL)
	logs := new(syncbuffer.Buffer)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("stakegraph serve output:\n%s", logs.String())
		}
	})

	base := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get(base + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("stakegraph serve did not become healthy: %v\n%s", err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
