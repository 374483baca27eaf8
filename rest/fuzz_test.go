package rest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/demo"
	"github.com/stakegraph/stakegraph/graph"
	"github.com/stakegraph/stakegraph/internal/derrors"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// The fuzz targets of this file check the REST parameter parsers and every
// route end to end: whatever the query string or path, the answer is 200 or
// one of the contract's 4xx errors with its JSON body, never a panic or a
// 5xx. Their seed corpora (testdata/fuzz) run as ordinary tests; run one
// for longer with, for example,
//
//	go test ./rest -run '^$' -fuzz '^FuzzRoutes$' -fuzztime 2m

// lowerAddressRE matches the form the parsers return addresses in.
var lowerAddressRE = regexp.MustCompile(`^0x[0-9a-f]{40}$`)

// FuzzParamParsers checks the contract of each typed parser on one
// parameter value: a success returns a value of the promised form and
// range, a failure is a ParamError naming the parameter.
func FuzzParamParsers(f *testing.F) {
	f.Fuzz(func(t *testing.T, value string) {
		const name = "p"
		parse := func(read func(*params)) error {
			p := newParams(url.Values{name: {value}})
			read(p)
			err := p.Err()
			if err == nil {
				return nil
			}
			var pe *ParamError
			if !errors.As(err, &pe) || pe.Name != name || pe.In != "query" || !errors.Is(err, derrors.InvalidArgument) {
				t.Fatalf("value %q: error %v is not a ParamError for %q wrapping InvalidArgument", value, err, name)
			}
			return err
		}
		absent := value == ""

		var b bool
		if err := parse(func(p *params) { b = p.Bool(name) }); err == nil && b != (value == "true") {
			t.Errorf("Bool(%q) = %v", value, b)
		} else if err != nil && (absent || value == "true" || value == "false") {
			t.Errorf("Bool(%q) failed: %v", value, err)
		}

		var sort *string
		if err := parse(func(p *params) { sort = p.Sort(name) }); err == nil {
			switch {
			case absent && sort != nil:
				t.Errorf("Sort(%q) = %q; want nil", value, *sort)
			case !absent && (sort == nil || *sort != value || value != "asc" && value != "desc"):
				t.Errorf("Sort(%q) = %v", value, sort)
			}
		}

		var n int
		if err := parse(func(p *params) { n = p.Int(name, 7, -3, 1000) }); err == nil {
			if n < -3 || n > 1000 || absent && n != 7 {
				t.Errorf("Int(%q) = %d, outside [-3, 1000] or not the default", value, n)
			}
			if m, err := strconv.Atoi(value); !absent && (err != nil || m != n || value[0] == '+') {
				t.Errorf("Int(%q) = %d", value, n)
			}
		}

		for _, pname := range []string{"skip", "take"} {
			p := newParams(url.Values{pname: {value}})
			skip, take := p.Page()
			if skip < 0 || skip > maxSkip || take < minTake || take > maxTake {
				t.Errorf("Page with %s=%q = (%d, %d), out of range", pname, value, skip, take)
			}
			var pe *ParamError
			if err := p.Err(); err != nil && (!errors.As(err, &pe) || pe.Name != pname) {
				t.Errorf("Page with %s=%q: error %v does not name %s", pname, value, err, pname)
			}
		}

		var addr *string
		if err := parse(func(p *params) { addr = p.Address(name) }); err == nil && addr != nil {
			if !lowerAddressRE.MatchString(*addr) || !strings.EqualFold(*addr, value) {
				t.Errorf("Address(%q) = %q", value, *addr)
			}
		} else if err == nil && !absent {
			t.Errorf("Address(%q) returned nothing and no error", value)
		}

		var hash *string
		if err := parse(func(p *params) { hash = p.Hash(name) }); err == nil && hash != nil {
			if len(*hash) != 66 || *hash != strings.ToLower(*hash) || !strings.EqualFold(*hash, value) {
				t.Errorf("Hash(%q) = %q", value, *hash)
			}
		}

		var tm *time.Time
		if err := parse(func(p *params) { tm = p.Time(name) }); err == nil && tm != nil {
			if tm.Location() != time.UTC {
				t.Errorf("Time(%q) = %v, not in UTC", value, *tm)
			}
			// What the handlers pass on parses again to the same instant.
			again, ok := parseTime(*formatTime(tm))
			if !ok || !again.Equal(*tm) {
				t.Errorf("Time(%q) = %v does not survive formatting: %v, %v", value, *tm, again, ok)
			}
		}

		if v, err := pathAddress("address", value); err == nil {
			if !lowerAddressRE.MatchString(v) {
				t.Errorf("pathAddress(%q) = %q", value, v)
			}
		} else if !errors.Is(err, derrors.InvalidArgument) {
			t.Errorf("pathAddress(%q): %v does not wrap InvalidArgument", value, err)
		}
	})
}

// fuzzNow is the end of the fuzz targets' data and the executor's clock.
var fuzzNow = time.Date(2025, 3, 15, 12, 0, 0, 0, time.UTC)

// fuzzDB returns a database holding a small generated world: a few AVS,
// operators and stakers with every kind of event, so that the routes find
// records and not only 404s.
func fuzzDB(t testing.TB) *store.DB {
	t.Helper()
	return storetest.Template(t, "rest_fuzz", func(ctx context.Context, db *store.DB) error {
		sc := demo.BenchScale
		sc.Days, sc.AVS, sc.Operators, sc.Stakers, sc.RewardsSubmissions = 40, 4, 15, 300, 30
		opts := demo.BenchOptions{Options: demo.Options{Now: fuzzNow, Seed: 5, Network: chain.Networks["mainnet"]}, Scale: sc}
		return demo.SeedBench(ctx, db, opts, nil)
	})
}

// fuzzRoutes are the documented routes; %s stands for the path parameter.
var fuzzRoutes = []string{
	"/avs",
	"/avs/addresses",
	"/avs/%s/operators",
	"/avs/%s/rewards",
	"/operators",
	"/stakers/%s/events/delegation",
	"/withdrawals",
	"/metrics",
	"/metrics/tvl/restaking",
	"/metrics/tvl/restaking/%s",
	"/metrics/total-withdrawals",
	"/metrics/total-stakers",
	"/metrics/deployment-ratio",
	"/metrics/historical/count-stakers",
	"/rewards/strategies",
	"/avs/%s/operator-sets",
	"/operator-sets/%s",
	"/operators/%s/allocations",
	"/slashings",
}

// errorCodes are the codes of the statuses a route may answer a GET with.
var errorCodes = map[int]string{
	http.StatusBadRequest:          "bad_request",
	http.StatusNotFound:            "not_found",
	http.StatusUnprocessableEntity: "unprocessable_entity",
}

// FuzzRoutes sends GET requests with arbitrary query strings and path
// parameters to every route, through the real executor and a database. An
// empty path parameter stands for an address that exists (an AVS, a
// staker, a strategy, an operator) or, for an operator set, an AVS and id.
func FuzzRoutes(f *testing.F) {
	db := fuzzDB(f)
	ctx := context.Background()
	known := map[string]string{}
	avs, err := db.ListAVS(ctx, store.AVSFilter{}, store.Sort{}, store.Page{Take: 1})
	if err != nil || len(avs) == 0 {
		f.Fatalf("no AVS in the fuzz data: %v", err)
	}
	known["avs"] = avs[0].Address
	ws, err := db.ListWithdrawals(ctx, store.WithdrawalFilter{}, store.Page{Take: 1})
	if err != nil || len(ws) == 0 {
		f.Fatalf("no withdrawal in the fuzz data: %v", err)
	}
	known["stakers"] = ws[0].StakerAddress
	known["metrics"] = chain.BeaconStrategy
	known["operator-sets"] = avs[0].Address + "/0"
	ops, err := db.ListOperatorAddresses(ctx, store.OperatorFilter{}, store.Sort{}, store.Page{Take: 1})
	if err != nil || len(ops) == 0 {
		f.Fatalf("no operator in the fuzz data: %v", err)
	}
	known["operators"] = ops[0]
	exec := graph.NewExecutor(db, graph.Options{Now: func() time.Time { return fuzzNow }, Logger: discardLogger()})
	h := NewHandler(Config{Executor: exec, Authenticate: passThrough, Version: "fuzz"})

	f.Fuzz(func(t *testing.T, route uint8, pathParam, rawQuery string) {
		pattern := fuzzRoutes[int(route)%len(fuzzRoutes)]
		path := pattern
		if strings.Contains(pattern, "%s") {
			param := pathParam
			if param == "" {
				param = known[strings.Split(pattern, "/")[1]]
			}
			path = fmt.Sprintf(pattern, param)
		}
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.URL.Path = path
		req.URL.RawPath = ""
		req.URL.RawQuery = rawQuery
		req.RequestURI = req.URL.RequestURI()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req.WithContext(ctx))
		res := rec.Result()
		body, _ := io.ReadAll(res.Body)
		target := path + "?" + rawQuery
		if res.StatusCode == http.StatusOK {
			if !json.Valid(body) {
				t.Fatalf("GET %q: 200 with a body that is not JSON: %.200s", target, body)
			}
			return
		}
		code, ok := errorCodes[res.StatusCode]
		if !ok {
			t.Fatalf("GET %q: status %d, not 200 or a contract 4xx: %.300s", target, res.StatusCode, body)
		}
		var e struct {
			Error struct{ Code, Message string }
		}
		if err := json.Unmarshal(body, &e); err != nil || e.Error.Code != code || e.Error.Message == "" {
			t.Fatalf("GET %q: %d with body %.300s; want {\"error\": {\"code\": %q, \"message\": ...}}", target, res.StatusCode, body, code)
		}
	})
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
