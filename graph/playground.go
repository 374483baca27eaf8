package graph

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
)

// The playground is GraphiQL with an API key field, bundled by
// playground/build.mjs into one page with its script and styles inline, so
// that it works without internet access.
//
//go:generate sh -c "cd playground && npm ci --no-audit --no-fund && npm run build"
//go:embed playground/dist/index.html
var playgroundHTML []byte

// playground serves the embedded GraphiQL page, gzipped for clients that
// accept it, with an ETag so browsers revalidate cheaply.
type playground struct {
	etag string

	gzipOnce sync.Once
	gzipped  []byte
}

func newPlayground() *playground {
	sum := sha256.Sum256(playgroundHTML)
	return &playground{etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
}

// wanted reports whether a GET request is a browser asking for a page
// rather than a GraphQL request over GET (which carries a query).
func (p *playground) wanted(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/html") && !r.URL.Query().Has("query")
}

func (p *playground) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("ETag", p.etag)
	h.Set("Cache-Control", "no-cache")
	h.Set("Vary", "Accept, Accept-Encoding")
	h.Set("X-Content-Type-Options", "nosniff")
	if r.Header.Get("If-None-Match") == p.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := playgroundHTML
	if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		body = p.gzipBody()
		h.Set("Content-Encoding", "gzip")
	}
	w.Write(body)
}

// gzipBody compresses the page once, on first use.
func (p *playground) gzipBody() []byte {
	p.gzipOnce.Do(func() {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write(playgroundHTML)
		zw.Close()
		p.gzipped = buf.Bytes()
	})
	return p.gzipped
}
