package indexer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/stakegraph/stakegraph/chain"
)

// MetadataOptions tune a MetadataFetcher.
type MetadataOptions struct {
	// IPFSGateway resolves ipfs:// URIs: ipfs://CID/path is fetched from
	// IPFSGateway + CID/path. Default https://ipfs.io/ipfs/.
	IPFSGateway string
	// Timeout bounds one fetch attempt. Default 10s.
	Timeout time.Duration
	// MaxBytes bounds a document's size. Default 1 MiB.
	MaxBytes int64
	// Attempts per document and fetch round. Default 3.
	Attempts int
	// Backoff before the second attempt (doubling after). Default 1s.
	Backoff time.Duration
	// AllowPrivateAddresses lets URIs reach every address, loopback and
	// private networks included. Off by default: metadata URIs are chosen by
	// anyone on chain, and the indexer must not be turned into a probe of
	// its own network. By default the fetcher connects only to globally
	// routable unicast addresses, checked on the address of every
	// connection, after name resolution and after redirects.
	AllowPrivateAddresses bool
	Logger                *slog.Logger

	// allowAddress, when set, admits further addresses to the strict
	// default check; tests use it to reach their own servers on loopback.
	allowAddress func(netip.AddrPort) bool
	// lookupHost, when set, resolves a host name before the system
	// resolver does (ok false: not resolved here); tests use it to have a
	// name resolve to an address of their choice.
	lookupHost func(host string) (ip string, ok bool)
}

// MetadataFetcher fetches the JSON documents operators and AVS publish at
// their metadata URIs.
type MetadataFetcher struct {
	opts   MetadataOptions
	client *http.Client
}

// NewMetadataFetcher returns a fetcher with the given options.
func NewMetadataFetcher(opts MetadataOptions) *MetadataFetcher {
	if opts.IPFSGateway == "" {
		opts.IPFSGateway = "https://ipfs.io/ipfs/"
	}
	if !strings.HasSuffix(opts.IPFSGateway, "/") {
		opts.IPFSGateway += "/"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 1 << 20
	}
	if opts.Attempts <= 0 {
		opts.Attempts = 3
	}
	if opts.Backoff <= 0 {
		opts.Backoff = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	dialer := &net.Dialer{Timeout: opts.Timeout}
	if !opts.AllowPrivateAddresses {
		dialer.Control = addressGuard(opts.allowAddress)
	}
	dial := dialer.DialContext
	if opts.lookupHost != nil {
		dial = func(ctx context.Context, network, address string) (net.Conn, error) {
			host, port, err := net.SplitHostPort(address)
			if err != nil {
				return nil, err
			}
			if ip, ok := opts.lookupHost(host); ok {
				address = net.JoinHostPort(ip, port)
			}
			return dialer.DialContext(ctx, network, address)
		}
	}
	transport := &http.Transport{
		// No proxy, whatever the environment says: a proxy would make the
		// connection (and so the address check) on the fetcher's behalf.
		Proxy:                 nil,
		DialContext:           dial,
		TLSHandshakeTimeout:   opts.Timeout,
		ResponseHeaderTimeout: opts.Timeout,
		MaxIdleConnsPerHost:   4,
	}
	return &MetadataFetcher{
		opts: opts,
		client: &http.Client{
			Transport: transport,
			Timeout:   opts.Timeout,
			CheckRedirect: func(req *http.Request, via []*http.Request) error {
				if len(via) >= 5 {
					return errors.New("too many redirects")
				}
				return nil
			},
		},
	}
}

// errPrivateAddress refuses connections to addresses that are not globally
// routable unicast: the indexer's own networks, and special-purpose ranges.
var errPrivateAddress = errors.New("metadata URI resolves to a private, loopback or otherwise non-public address")

// errNotRetryable marks fetch failures that another attempt cannot fix.
var errNotRetryable = errors.New("not retryable")

// ResolveURI turns a metadata URI into the HTTP(S) URL to fetch.
func (f *MetadataFetcher) ResolveURI(uri string) (string, error) {
	uri = strings.TrimSpace(uri)
	if rest, ok := strings.CutPrefix(uri, "ipfs://"); ok {
		rest = strings.TrimPrefix(rest, "ipfs/")
		if rest == "" {
			return "", errors.New("empty ipfs URI")
		}
		return f.opts.IPFSGateway + rest, nil
	}
	u, err := url.Parse(uri)
	if err != nil {
		return "", fmt.Errorf("bad metadata URI: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("unsupported metadata URI scheme %q", u.Scheme)
	}
	if u.Host == "" {
		return "", errors.New("metadata URI has no host")
	}
	return u.String(), nil
}

// metadataJSON is the published document. Fields are raw so that a field of
// the wrong type is dropped instead of failing the whole document.
type metadataJSON struct {
	Name        json.RawMessage `json:"name"`
	Website     json.RawMessage `json:"website"`
	Description json.RawMessage `json:"description"`
	Logo        json.RawMessage `json:"logo"`
	Twitter     json.RawMessage `json:"twitter"`
	Discord     json.RawMessage `json:"discord"`
	Telegram    json.RawMessage `json:"telegram"`
}

// Fetch fetches and parses the document of a metadata URI update, retrying
// transient failures.
func (f *MetadataFetcher) Fetch(ctx context.Context, u chain.MetadataURIUpdated) (chain.MetadataDocument, error) {
	target, err := f.ResolveURI(u.URI)
	if err != nil {
		return chain.MetadataDocument{}, err
	}
	var body []byte
	wait := f.opts.Backoff
	for attempt := 1; ; attempt++ {
		body, err = f.get(ctx, target)
		if err == nil || errors.Is(err, errNotRetryable) || attempt >= f.opts.Attempts || ctx.Err() != nil {
			break
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
		wait *= 2
	}
	if err != nil {
		return chain.MetadataDocument{}, err
	}
	return ParseMetadata(u, body)
}

func (f *MetadataFetcher) get(ctx context.Context, target string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, f.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNotRetryable, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "stakegraph-indexer")
	resp, err := f.client.Do(req)
	if err != nil {
		if errors.Is(err, errPrivateAddress) {
			return nil, fmt.Errorf("%w: %w", errNotRetryable, err)
		}
		return nil, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return nil, fmt.Errorf("GET %s: %s", target, resp.Status)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("%w: GET %s: %s", errNotRetryable, target, resp.Status)
	}
	if resp.ContentLength > f.opts.MaxBytes {
		return nil, fmt.Errorf("%w: document of %d bytes exceeds the %d byte limit", errNotRetryable, resp.ContentLength, f.opts.MaxBytes)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.opts.MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", target, err)
	}
	if int64(len(body)) > f.opts.MaxBytes {
		return nil, fmt.Errorf("%w: document exceeds the %d byte limit", errNotRetryable, f.opts.MaxBytes)
	}
	return body, nil
}

// maxFieldLength caps each text field of a document.
const maxFieldLength = 4096

// ParseMetadata parses a metadata document published for u. The document
// must be a JSON object; string fields are kept, other types are dropped.
func ParseMetadata(u chain.MetadataURIUpdated, body []byte) (chain.MetadataDocument, error) {
	var raw metadataJSON
	if err := json.Unmarshal(body, &raw); err != nil {
		return chain.MetadataDocument{}, fmt.Errorf("metadata document is not a JSON object: %w", err)
	}
	doc := chain.MetadataDocument{Position: u.Position, Subject: u.Subject, Address: strings.ToLower(u.Address)}
	if s := jsonString(raw.Name); s != nil {
		doc.Name = *s
	}
	doc.Website = jsonString(raw.Website)
	doc.Description = jsonString(raw.Description)
	doc.Logo = jsonString(raw.Logo)
	doc.Twitter = jsonString(raw.Twitter)
	doc.Discord = jsonString(raw.Discord)
	doc.Telegram = jsonString(raw.Telegram)
	return doc, nil
}

func jsonString(raw json.RawMessage) *string {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil
	}
	s = strings.ToValidUTF8(strings.ReplaceAll(strings.TrimSpace(s), "\x00", ""), "")
	if len(s) > maxFieldLength {
		s = s[:maxFieldLength]
		s = strings.ToValidUTF8(s, "")
	}
	return &s
}
