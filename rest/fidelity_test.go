package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/apikey"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// TestMalformedQueryIsBadRequest checks that every route answers a query
// string that does not parse with 400 bad_request, before the key check and
// without running an operation, instead of reading the parameters that
// parse and dropping the rest.
func TestMalformedQueryIsBadRequest(t *testing.T) {
	doc, _ := loadAPIDoc(t)
	const addr = "0x0000000000000000000000000000000000000001"
	paths := []string{"/nope"}
	for path := range doc.Paths.Map() {
		paths = append(paths, strings.NewReplacer("{address}", addr, "{strategy}", addr, "{avs}", addr, "{id}", "1").Replace(path))
	}
	for _, path := range paths {
		for _, tc := range []struct{ query, words string }{
			{"stakerAddress=%zz", `"%zz"`},
			{"take=5&x=%", `"%"`},
			{"a%2=1", `"%2"`},
			{"take=5;skip=1", "semicolon"},
		} {
			target := path + "?" + tc.query
			for _, header := range []http.Header{withKey, nil} {
				exec := &fakeExecutor{}
				r := serveFake(t, exec, http.MethodGet, target, header)
				code, msg := errorBody(t, r)
				if r.Status != http.StatusBadRequest || code != "bad_request" || !strings.Contains(msg, tc.words) {
					t.Errorf("GET %s = %d %s; want 400 bad_request with %s", target, r.Status, r.Body, tc.words)
				}
				if len(exec.Calls()) != 0 {
					t.Errorf("GET %s ran an operation", target)
				}
				if path != "/nope" {
					validateResponse(t, target, r)
				}
			}
		}
	}
	// A well-formed query with an escaped percent sign is not an error.
	if r := serveFake(t, &fakeExecutor{}, http.MethodGet, "/health?x=%25zz", nil); r.Status != http.StatusOK {
		t.Errorf("GET /health?x=%%25zz = %d %s", r.Status, r.Body)
	}
}

func TestDropNullMembers(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"data":[{"a":1,"curatedMetadata":null,"b":2}]}`, `{"data":[{"a":1,"b":2}]}`},
		{`{"data":[{"a":1,"curatedMetadata":null}]}`, `{"data":[{"a":1}]}`},
		{`{"curatedMetadata":null,"a":1}`, `{"a":1}`},
		{`{"curatedMetadata":null}`, `{}`},
		{`[{"a":1,"curatedMetadata":null},{"a":2,"curatedMetadata":{"x":null}},{"curatedMetadata":null}]`, `[{"a":1},{"a":2,"curatedMetadata":{"x":null}},{}]`},
		{`{"a":"\"curatedMetadata\":null","curatedMetadata":null}`, `{"a":"\"curatedMetadata\":null"}`},
		{`{"a":"x,\"curatedMetadata\":null,"}`, `{"a":"x,\"curatedMetadata\":null,"}`},
		{`{"curatedMetadataX":null,"xcuratedMetadata":null}`, `{"curatedMetadataX":null,"xcuratedMetadata":null}`},
		{`{"a":1}`, `{"a":1}`},
	} {
		if got := string(dropNullMembers([]byte(tc.in), "curatedMetadata")); got != tc.want {
			t.Errorf("dropNullMembers(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// plainNumbers fails the test for any number of the JSON document body
// written in exponent form, and returns the largest magnitude among its
// numbers.
func plainNumbers(t testing.TB, what string, body []byte) float64 {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	largest := 0.0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return largest
		}
		if err != nil {
			t.Fatalf("%s: %v\n%.500s", what, err, body)
		}
		n, ok := tok.(json.Number)
		if !ok {
			continue
		}
		if strings.ContainsAny(n.String(), "eE") {
			t.Errorf("%s: number %s is in exponent form", what, n)
		}
		if f, err := strconv.ParseFloat(n.String(), 64); err == nil {
			largest = math.Max(largest, math.Abs(f))
		}
	}
}

// TestNumbersArePlainDecimals checks on the demo data that REST bodies
// write every number as a plain decimal, and a delegation event's
// args.shares with every digit of the integer on chain. Every body that
// client.get reads is checked for exponents as well.
func TestNumbersArePlainDecimals(t *testing.T) {
	db := demoDB(t)
	c := newClient(t, db, apikey.Options{})
	// The staker of the share event with the most shares in the last 29
	// days (the route's range is at most 30).
	from, to := demoNow.Add(-29*24*time.Hour), demoNow
	var staker string
	if err := storetest.SQL(t, db).Get(&staker, `
		SELECT staker_address FROM delegation_events
		WHERE shares IS NOT NULL AND block_time >= $1 AND block_time <= $2
		ORDER BY shares DESC, 1 LIMIT 1`, from, to); err != nil {
		t.Fatal(err)
	}
	largest := 0.0
	for _, target := range []string{
		"/metrics",
		"/metrics/tvl/restaking?withChange=true",
		"/avs?withTvl=true&take=1000",
		"/operators?withTvl=true&take=1000",
		"/avs/addresses?take=1000",
	} {
		r := c.get(t, target)
		if r.Status != http.StatusOK {
			t.Fatalf("GET %s = %d %s", target, r.Status, r.Body)
		}
		largest = math.Max(largest, plainNumbers(t, target, r.Body))
	}
	if largest < 1e6 {
		t.Errorf("largest number %v: nothing that %%g writes in exponent form was checked", largest)
	}

	target := "/stakers/" + staker + "/events/delegation?take=1000&startAt=" + url.QueryEscape(from.Format(time.RFC3339)) +
		"&endAt=" + url.QueryEscape(to.Format(time.RFC3339))
	r := c.get(t, target)
	if r.Status != http.StatusOK {
		t.Fatalf("GET %s = %d %s", target, r.Status, r.Body)
	}
	var events struct {
		Data []struct {
			Tx   string
			Args map[string]any
		}
	}
	if err := decode(r.Body, &events); err != nil {
		t.Fatal(err)
	}
	var onChain []string
	if err := storetest.SQL(t, db).Select(&onChain, `
		SELECT shares::text FROM delegation_events
		WHERE staker_address = $1 AND shares IS NOT NULL AND block_time >= $2 AND block_time <= $3`, staker, from, to); err != nil {
		t.Fatal(err)
	}
	exact := make(map[string]bool)
	for _, s := range onChain {
		exact[s] = true
	}
	shares := 0
	for _, e := range events.Data {
		n, ok := e.Args["shares"].(json.Number)
		if !ok {
			continue
		}
		shares++
		if !exact[n.String()] {
			t.Errorf("GET %s: event %s has shares %s, not an amount on chain (%v)", target, e.Tx, n, onChain)
		}
	}
	if shares == 0 || shares != len(onChain) {
		t.Errorf("GET %s: %d share events, want %d", target, shares, len(onChain))
	}
}
