package rest

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/go-chi/chi/v5"
)

var (
	apiDocOnce   sync.Once
	apiDocRouter routers.Router
	apiDocErr    error
	apiDoc       *openapi3.T
)

// loadAPIDoc loads and validates the embedded OpenAPI document once.
func loadAPIDoc(t testing.TB) (*openapi3.T, routers.Router) {
	t.Helper()
	apiDocOnce.Do(func() {
		doc, err := openapi3.NewLoader().LoadFromData(openAPIDocument)
		if err != nil {
			apiDocErr = err
			return
		}
		if err := doc.Validate(context.Background()); err != nil {
			apiDocErr = err
			return
		}
		apiDoc = doc
		apiDocRouter, apiDocErr = legacy.NewRouter(doc)
	})
	if apiDocErr != nil {
		t.Fatalf("openapi.json: %v", apiDocErr)
	}
	return apiDoc, apiDocRouter
}

// response is a received response with its body read (and gunzipped).
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// validateResponse checks that resp, the answer to a request for target
// (path and query), is one the OpenAPI document describes: a documented
// status of the route, with a body matching its schema.
func validateResponse(t testing.TB, target string, resp *response) {
	t.Helper()
	_, router := loadAPIDoc(t)
	u, err := url.Parse("http://stakegraph.test" + target)
	if err != nil {
		t.Fatal(err)
	}
	req := &http.Request{Method: http.MethodGet, URL: u, Header: http.Header{}}
	route, pathParams, err := router.FindRoute(req)
	if err != nil {
		t.Fatalf("GET %s: no route in openapi.json: %v", target, err)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: pathParams, Route: route},
		Status:                 resp.Status,
		Header:                 resp.Header,
		Body:                   io.NopCloser(bytes.NewReader(resp.Body)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Errorf("GET %s: %d response does not match openapi.json: %v\nbody: %.2000s", target, resp.Status, err, resp.Body)
	}
}

// readResponse reads res's body, gunzipping it when it is compressed.
func readResponse(t testing.TB, res *http.Response) *response {
	t.Helper()
	defer res.Body.Close()
	var body io.Reader = res.Body
	if res.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(res.Body)
		if err != nil {
			t.Fatalf("gzip: %v", err)
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	return &response{Status: res.StatusCode, Header: res.Header, Body: b}
}

func TestOpenAPIDocumentIsValid(t *testing.T) {
	loadAPIDoc(t)
}

// TestOpenAPIDocumentsExactlyTheRoutes compares the router's routes with the
// document's paths, so that neither can gain a route the other lacks.
func TestOpenAPIDocumentsExactlyTheRoutes(t *testing.T) {
	doc, _ := loadAPIDoc(t)
	var documented []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented = append(documented, method+" "+path)
		}
	}
	var served []string
	h := NewHandler(Config{Executor: &fakeExecutor{}, Authenticate: passThrough, Version: "test"})
	err := chi.Walk(h.(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		served = append(served, method+" "+route)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(documented)
	sort.Strings(served)
	if strings.Join(documented, "\n") != strings.Join(served, "\n") {
		t.Errorf("routes differ\nopenapi.json:\n%s\n\nrouter:\n%s", strings.Join(documented, "\n"), strings.Join(served, "\n"))
	}
}

// TestEveryEigenExplorerPathIsServed checks that each path of
// EigenExplorer's document is a route of ours with the same methods, so a
// client moving over finds every path it used.
func TestEveryEigenExplorerPathIsServed(t *testing.T) {
	ours, _ := loadAPIDoc(t)
	theirs, err := openapi3.NewLoader().LoadFromFile("testdata/eigenexplorer-openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for path, item := range theirs.Paths.Map() {
		for method := range item.Operations() {
			n++
			if our := ours.Paths.Find(path); our == nil || our.GetOperation(method) == nil {
				t.Errorf("EigenExplorer's %s %s is not served", method, path)
			}
		}
	}
	if n < 60 {
		t.Errorf("EigenExplorer's document has only %d operations", n)
	}
}

// failureRecorder is a testing.TB that records failures instead of failing.
type failureRecorder struct {
	testing.TB
	failed bool
}

func (f *failureRecorder) Errorf(string, ...any) { f.failed = true }
func (f *failureRecorder) Fatalf(string, ...any) { f.failed = true }
func (f *failureRecorder) Helper()               {}

// TestValidatorRejectsDrift makes sure validateResponse can fail: responses
// that break the document are caught.
func TestValidatorRejectsDrift(t *testing.T) {
	json := http.Header{"Content-Type": {"application/json"}}
	for _, tc := range []struct {
		target string
		resp   *response
	}{
		{"/health", &response{Status: 200, Header: json, Body: []byte(`{"status":"ok","extra":1}`)}},
		{"/health", &response{Status: 418, Header: json, Body: []byte(`{"status":"ok"}`)}},
		{"/avs/addresses", &response{Status: 200, Header: json, Body: []byte(`{"data":[{"address":"0x1","name":"a","logo":""}],"meta":{"total":1,"skip":0,"take":12}}`)}},
		{"/metrics/total-stakers", &response{Status: 200, Header: json, Body: []byte(`{"total":"5"}`)}},
		{"/metrics/total-stakers", &response{Status: 200, Header: json, Body: []byte(`{"total":5,"change24h":{"value":1}}`)}},
		{"/avs", &response{Status: 422, Header: json, Body: []byte(`{"error":{"code":"bogus","message":"x"}}`)}},
	} {
		rec := &failureRecorder{TB: t}
		validateResponse(rec, tc.target, tc.resp)
		if !rec.failed {
			t.Errorf("GET %s: %d %s passed validation", tc.target, tc.resp.Status, tc.resp.Body)
		}
	}
}
