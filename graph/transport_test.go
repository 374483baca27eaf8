package graph_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
)

// TestGraphQLOverHTTP checks the media types and statuses of the answers
// as GraphQL over HTTP asks for them: the media type the Accept header
// prefers, application/json by default; with application/json, 200 for
// the errors GraphQL defines (syntax, validation, variables), with
// application/graphql-response+json 400; 422 for a document over a limit
// of the service with either; and no data entry in an answer that is not
// 2xx or whose operation did not run.
func TestGraphQLOverHTTP(t *testing.T) {
	db := demoDB(t)
	opts := testOptions()
	opts.FieldLimit = 10
	srv := newProbeServer(t, db, opts)

	do := func(t *testing.T, accept string, body []byte) (int, string, map[string]json.RawMessage, []gqlError) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var entries map[string]json.RawMessage
		if err := json.NewDecoder(res.Body).Decode(&entries); err != nil {
			t.Fatalf("status %d: the body is not JSON: %v", res.StatusCode, err)
		}
		var errs []gqlError
		if raw, ok := entries["errors"]; ok {
			if err := json.Unmarshal(raw, &errs); err != nil {
				t.Fatalf("errors %s: %v", raw, err)
			}
		}
		return res.StatusCode, res.Header.Get("Content-Type"), entries, errs
	}

	const (
		mediaJSON     = "application/json"
		mediaResponse = "application/graphql-response+json"
	)
	t.Run("media types", func(t *testing.T) {
		for _, tc := range []struct{ accept, media string }{
			{"", mediaJSON},
			{"*/*", mediaJSON},
			{"application/*", mediaJSON},
			{"application/json", mediaJSON},
			{"application/json; charset=utf-8", mediaJSON},
			{"application/graphql-response+json", mediaResponse},
			{"application/graphql-response+json, application/json;q=0.9", mediaResponse},
			{"application/json, application/graphql-response+json", mediaJSON},
			{"application/graphql-response+json;q=0.5, */*", mediaJSON},
			{"application/graphql-response+json;q=0, application/json", mediaJSON},
			{"text/html, application/graphql-response+json;q=0.8, application/json;q=0.7", mediaResponse},
			{"text/plain", mediaResponse},
		} {
			status, media, entries, errs := do(t, tc.accept, graphQLBody(`{ __typename }`))
			if status != http.StatusOK || media != tc.media || len(errs) > 0 || string(entries["data"]) != `{"__typename":"Query"}` {
				t.Errorf("Accept %q: %d %s %v, want 200 %s", tc.accept, status, media, entries, tc.media)
			}
		}
	})

	for _, tc := range []struct {
		name string
		body []byte
		// jsonStatus and responseStatus are the statuses with
		// application/json and application/graphql-response+json.
		jsonStatus, responseStatus int
		code                       string
		// data: the answer has a data entry.
		data bool
	}{
		{"syntax", graphQLBody(`{`), 200, 400, "bad_request", false},
		{"validation", graphQLBody(`{ nothing }`), 200, 400, "bad_request", false},
		{"mutation", graphQLBody(`mutation { __typename }`), 200, 400, "bad_request", false},
		// The service answers one document per request, so @defer is not
		// in its schema.
		{"deferred fragment", graphQLBody(`{ ... @defer { __typename } }`), 200, 400, "bad_request", false},
		{"unknown operation", []byte(`{"query": "query A { __typename }", "operationName": "B"}`), 200, 400, "bad_request", false},
		{"variable of the wrong type", []byte(`{"query": "query($n: Int) { avsList(take: $n) { meta { total } } }", "variables": {"n": "twelve"}}`),
			200, 400, "bad_request", false},
		{"null variable", []byte(`{"query": "query($a: Address!) { avs(address: $a) { address } }", "variables": {"a": null}}`),
			200, 400, "bad_request", false},
		{"missing variable", graphQLBody(`query($a: Address!) { avs(address: $a) { address } }`), 200, 400, "bad_request", false},
		{"no query", []byte(`{"qeury": "{ __typename }"}`), 400, 400, "bad_request", false},
		{"variables not an object", []byte(`{"query": "{ __typename }", "variables": "x"}`), 400, 400, "bad_request", false},
		{"over the field limit", graphQLBody(aliases(11, fixed("__typename"), "")), 422, 422, "unprocessable_entity", false},
		// An argument a resolver rejects is a field error: the operation
		// ran, and the answer has its data.
		{"field error", graphQLBody(`{ avs(address: "0x1234") { address } }`), 200, 200, "unprocessable_entity", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, media := range []string{mediaJSON, mediaResponse} {
				want := tc.jsonStatus
				if media == mediaResponse {
					want = tc.responseStatus
				}
				status, ct, entries, errs := do(t, media, tc.body)
				_, hasData := entries["data"]
				if status != want || ct != media || len(errs) == 0 || errs[0].Extensions.Code != tc.code || hasData != tc.data {
					t.Errorf("Accept %s: %d %s %v, want %d, code %s, data %v", media, status, ct, entries, want, tc.code, tc.data)
				}
			}
		})
	}
}
