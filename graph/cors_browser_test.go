package graph_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/stakegraph/stakegraph/demo/demotest"
	"github.com/stakegraph/stakegraph/store"
)

// frontendPage is a web page of another origin that calls /graphql with an
// API key, as a browser frontend does, and renders what it got: the
// status, the media type, the response headers that CORS exposes and the
// names of the AVS in the data. Its POST with Content-Type
// application/json and X-API-Token is preflighted by the browser.
const frontendPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>frontend</title></head>
<body><pre id="out">loading</pre>
<script>
const api = %q, key = %q;
const out = document.getElementById("out");
fetch(api + "/graphql", {
  method: "POST",
  headers: {
    "Content-Type": "application/json",
    "Accept": "application/graphql-response+json, application/json;q=0.9",
    "X-API-Token": key,
  },
  body: JSON.stringify({query: "{ avsList(take: 3, sortByTotalOperators: desc) { data { metadataName } } }"}),
}).then(async (res) => {
  const body = await res.json();
  const lines = [
    "status " + res.status,
    "type " + res.headers.get("Content-Type"),
    "limit " + res.headers.get("X-RateLimit-Limit"),
    "remaining " + res.headers.get("X-RateLimit-Remaining"),
    "request " + (res.headers.get("X-Request-Id") ? "id" : "none"),
  ];
  if (body.errors) {
    lines.push("errors " + JSON.stringify(body.errors));
  } else {
    for (const avs of body.data.avsList.data) lines.push("avs " + avs.metadataName);
  }
  out.textContent = lines.join("\n");
}).catch((err) => { out.textContent = "failed " + err; });
</script>
</body></html>`

// TestCrossOriginPageInBrowser runs `stakegraph serve` over the demo data
// and, in headless Chromium, opens a page served from another origin (a
// second HTTP server) that calls /graphql with an API key through fetch
// and renders the answer. The test reads the rendered text: the browser
// let the page send the key (the preflight was answered without one), read
// the answer and the exposed headers.
//
// It needs Chromium (Debian: apt-get install chromium) and is skipped
// without it, and in -short mode.
func TestCrossOriginPageInBrowser(t *testing.T) {
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
	key, err := db.CreateAPIKey(ctx, "cors-browser-test", nil)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	api := startServe(t, dbURL)

	page := fmt.Sprintf(frontendPage, api, key)
	frontend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, page)
	}))
	defer frontend.Close()
	if strings.HasPrefix(api, frontend.URL) {
		t.Fatalf("the page (%s) and the API (%s) have one origin", frontend.URL, api)
	}

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser),
		chromedp.NoSandbox, // tests may run as root
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.UserDataDir(browserProfile(t)),
	)...)
	defer cancelAlloc()
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	defer cancelBrowser()
	browserCtx, cancelTimeout := context.WithTimeout(browserCtx, 60*time.Second)
	defer cancelTimeout()

	var text string
	err = chromedp.Run(browserCtx,
		chromedp.Navigate(frontend.URL),
		chromedp.Poll(`(() => {
			const text = document.getElementById('out').textContent;
			return text === 'loading' ? null : text;
		})()`, &text, chromedp.WithPollingTimeout(30*time.Second)),
	)
	if err != nil {
		t.Fatalf("browser: %v (page text: %q)", err, text)
	}
	t.Logf("the page rendered:\n%s", text)

	for _, want := range []string{
		"status 200",
		"type application/graphql-response+json",
		"limit ",
		"request id",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the page does not show %q", want)
		}
	}
	if strings.Contains(text, "limit null") || strings.Contains(text, "remaining null") {
		t.Error("the page cannot read the rate-limit headers: they are not exposed")
	}
	for _, name := range sqlNames(t, dbURL) {
		if !strings.Contains(text, "avs "+name) {
			t.Errorf("the page does not show the AVS %q", name)
		}
	}
}

// browserProfile returns a fresh Chromium profile directory, removed when
// the test ends. Chromium's helper processes can still write to it for a
// moment after the browser exits (a busy machine makes that moment
// longer), so the removal retries until the directory is released, for at
// most 30 seconds, where t.TempDir's single attempt fails the test.
func browserProfile(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "stakegraph-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		var err error
		for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			if err = os.RemoveAll(dir); err == nil {
				return
			}
		}
		t.Errorf("remove the browser profile: %v", err)
	})
	return dir
}
