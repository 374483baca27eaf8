package indexer

import (
	"fmt"
	"io"
	"net/http"
)

// cappedTransport is the HTTP transport of a JSON-RPC client: it stops
// reading an answer once it is larger than limit, so that a node cannot make
// the indexer buffer an arbitrarily large answer. A body declared too large
// fails before it is read; a longer body than declared (or a chunked one)
// fails once limit bytes have been read, and the connection is dropped
// instead of being drained.
type cappedTransport struct {
	base  http.RoundTripper
	limit int64
}

func (t *cappedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > t.limit {
		resp.Body.Close()
		return nil, responseTooLarge(t.limit)
	}
	resp.Body = &cappedBody{body: resp.Body, left: t.limit, limit: t.limit}
	return resp, nil
}

// responseTooLarge is the error of an answer larger than limit bytes.
func responseTooLarge(limit int64) error {
	return fmt.Errorf("%w: larger than the limit of %d bytes", ErrResponseTooLarge, limit)
}

// cappedBody reads at most limit bytes of body; reading more fails with
// ErrResponseTooLarge, then and on every later read.
type cappedBody struct {
	body  io.ReadCloser
	left  int64 // bytes still allowed
	limit int64
	err   error
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.left <= 0 {
		// At the limit: only the end of the body may follow.
		var one [1]byte
		n, err := b.body.Read(one[:])
		if n > 0 {
			b.err = responseTooLarge(b.limit)
			return 0, b.err
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.body.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.body.Close() }
