package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

var (
	eeDocOnce   sync.Once
	eeDocRouter routers.Router
	eeDocErr    error
)

// loadEigenExplorerDoc loads EigenExplorer's OpenAPI document
// (testdata/eigenexplorer-openapi.json) once, without its servers, so that
// its routes match requests to any host.
func loadEigenExplorerDoc(t testing.TB) routers.Router {
	t.Helper()
	eeDocOnce.Do(func() {
		doc, err := openapi3.NewLoader().LoadFromFile("testdata/eigenexplorer-openapi.json")
		if err != nil {
			eeDocErr = err
			return
		}
		doc.Servers = nil
		// Some of the document's examples do not match their schemas
		// (a number for a string); the schemas themselves are valid.
		eeDocRouter, eeDocErr = legacy.NewRouter(doc, openapi3.DisableExamplesValidation())
	})
	if eeDocErr != nil {
		t.Fatalf("eigenexplorer-openapi.json: %v", eeDocErr)
	}
	return eeDocRouter
}

// validateEigenExplorer checks that resp, the answer to a request for
// target, is one that EigenExplorer's document describes: the request's
// parameters are valid there, and the status is documented with a body
// matching its schema.
func validateEigenExplorer(t testing.TB, target string, resp *response) {
	t.Helper()
	router := loadEigenExplorerDoc(t)
	u, err := url.Parse("http://stakegraph.test" + target)
	if err != nil {
		t.Fatal(err)
	}
	req := &http.Request{Method: http.MethodGet, URL: u, Header: http.Header{"X-Api-Token": {"key"}}}
	route, pathParams, err := router.FindRoute(req)
	if err != nil {
		t.Fatalf("GET %s: no route in EigenExplorer's document: %v", target, err)
	}
	opts := &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}
	reqIn := &openapi3filter.RequestValidationInput{Request: req, PathParams: pathParams, Route: route, Options: opts}
	if resp.Status == http.StatusOK {
		if err := openapi3filter.ValidateRequest(context.Background(), reqIn); err != nil {
			t.Errorf("GET %s: request is not valid in EigenExplorer's document: %v", target, err)
		}
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: reqIn,
		Status:                 resp.Status,
		Header:                 resp.Header,
		Body:                   io.NopCloser(bytes.NewReader(resp.Body)),
		Options:                opts,
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Errorf("GET %s: %d response does not match EigenExplorer's document: %v\nbody: %.2000s", target, resp.Status, err, resp.Body)
	}
}

// getEE requests target, checks the response against both openapi.json
// and EigenExplorer's document, and returns it.
func (c *client) getEE(t *testing.T, target string) *response {
	t.Helper()
	r := c.get(t, target)
	validateEigenExplorer(t, target, r)
	return r
}

// okEE is ok with the response also checked against EigenExplorer's
// document.
func (c *client) okEE(t *testing.T, target string, v any) {
	t.Helper()
	r := c.getEE(t, target)
	if r.Status != http.StatusOK {
		t.Fatalf("GET %s = %d %s", target, r.Status, r.Body)
	}
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
}

// failsEE is fails with the response also checked against EigenExplorer's
// document.
func (c *client) failsEE(t *testing.T, target string, status int, code string, words ...string) {
	t.Helper()
	c.fails(t, target, status, code, words...)
	validateEigenExplorer(t, target, c.getUnchecked(t, target, c.key))
}

// listFields are the keys that a detail route shares with its list route
// and whose values must agree.
var (
	avsListFields = []string{"address", "metadataName", "metadataDescription", "metadataDiscord", "metadataLogo",
		"metadataTelegram", "metadataWebsite", "metadataX", "totalStakers", "totalOperators", "maxApy",
		"createdAtBlock", "updatedAtBlock", "createdAt", "updatedAt", "shares", "tvl", "curatedMetadata"}
	operatorListFields = []string{"address", "metadataName", "metadataDescription", "metadataDiscord", "metadataLogo",
		"metadataTelegram", "metadataWebsite", "metadataX", "totalStakers", "totalAvs", "maxApy",
		"createdAtBlock", "updatedAtBlock", "createdAt", "updatedAt", "shares", "tvl"}
)

// checkAgrees requires detail and listed, the same record from a detail
// route and its list route, to agree on keys.
func checkAgrees(t *testing.T, what string, detail, listed map[string]any, keys []string) {
	t.Helper()
	for _, k := range keys {
		if !reflect.DeepEqual(detail[k], listed[k]) {
			t.Errorf("%s: %s is %v in the detail route, %v in the list", what, k, detail[k], listed[k])
		}
	}
}

func testAVSDetail(t *testing.T, c *client) {
	all := c.all(t, "/avs?withTvl=true&withCuratedMetadata=true&take=1000")
	if len(all.Data) == 0 {
		t.Fatal("no AVS")
	}
	withRewards := 0
	for _, listed := range all.Data {
		addr := listed["address"].(string)
		var a map[string]any
		c.okEE(t, "/avs/"+addr+"?withTvl=true&withCuratedMetadata=true", &a)
		checkAgrees(t, "AVS "+addr, a, listed, avsListFields)
		rewards, _ := a["rewards"].(map[string]any)
		apys, _ := rewards["strategyApys"].([]any)
		if len(apys) > 0 {
			withRewards++
		}
		max := 0.0
		for _, x := range apys {
			if apy := number(t, x.(map[string]any)["apy"]); apy > max {
				max = apy
			}
		}
		if want := number(t, listed["maxApy"]); max != want {
			t.Errorf("AVS %s: the largest strategy APY is %v, maxApy %v", addr, max, want)
		}
	}
	if withRewards == 0 {
		t.Errorf("no AVS has strategy APYs; rewards is not exercised")
	}

	addr := all.Data[0]["address"].(string)
	var def map[string]any
	c.okEE(t, "/avs/"+addr, &def)
	for _, k := range []string{"tvl", "curatedMetadata"} {
		if _, ok := def[k]; ok {
			t.Errorf("GET /avs/%s: %s without its flag", addr, k)
		}
	}
	c.okEE(t, "/avs/"+addr+"?withTvl=false&withCuratedMetadata=false&withRewards=true&withTrailingApy=true", &def)
	var upper map[string]any
	c.okEE(t, "/avs/0x"+strings.ToUpper(addr[2:]), &upper)
	if upper["address"] != addr {
		t.Errorf("mixed-case address: got %v, want %s", upper["address"], addr)
	}

	c.failsEE(t, "/avs/0x00000000000000000000000000000000000000ff", http.StatusNotFound, "not_found", "0x00000000000000000000000000000000000000ff")
	c.failsEE(t, "/avs/0x123", http.StatusUnprocessableEntity, "unprocessable_entity", `"address"`)
	for _, q := range []string{"withTvl=yes", "withCuratedMetadata=1", "withRewards=TRUE", "withTrailingApy=no"} {
		c.fails(t, "/avs/"+addr+"?"+q, http.StatusUnprocessableEntity, "unprocessable_entity", q[:strings.IndexByte(q, '=')])
	}
}

func testOperatorDetail(t *testing.T, c *client) {
	all := c.all(t, "/operators?withTvl=true&take=1000")
	if len(all.Data) == 0 {
		t.Fatal("no operators")
	}
	var avs page
	c.ok(t, "/avs?take=1000", &avs)
	avsByAddress := map[string]map[string]any{}
	for _, a := range avs.Data {
		avsByAddress[a["address"].(string)] = a
	}
	// A sample keeps the test quick: the operators with the most AVS
	// (the largest answers) and the oldest ones.
	var busiest page
	c.ok(t, "/operators?sortByTotalAvs=desc&take=15", &busiest)
	sample := map[string]bool{}
	for _, op := range append(busiest.Data, all.Data[:min(15, len(all.Data))]...) {
		sample[op["address"].(string)] = true
	}
	submissions := 0
	for _, listed := range all.Data {
		addr := listed["address"].(string)
		if !sample[addr] {
			continue
		}
		var op map[string]any
		c.okEE(t, "/operators/"+addr+"?withTvl=true", &op)
		checkAgrees(t, "operator "+addr, op, listed, operatorListFields)

		// The registrations are those of the list route, in detail.
		regs := op["avsRegistrations"].([]any)
		listedRegs := listed["avsRegistrations"].([]any)
		if len(regs) != len(listedRegs) {
			t.Errorf("operator %s: %d registrations, %d in the list", addr, len(regs), len(listedRegs))
		}
		active := 0
		for i, x := range regs {
			reg := x.(map[string]any)
			if i < len(listedRegs) {
				lr := listedRegs[i].(map[string]any)
				if reg["avsAddress"] != lr["avsAddress"] || reg["isActive"] != lr["isActive"] {
					t.Errorf("operator %s: registration %d is %v %v, %v %v in the list", addr, i, reg["avsAddress"], reg["isActive"], lr["avsAddress"], lr["isActive"])
				}
			}
			if reg["isActive"] == true {
				active++
			}
			if a, ok := avsByAddress[reg["avsAddress"].(string)]; ok {
				for _, k := range []string{"metadataName", "totalStakers", "totalOperators", "maxApy", "createdAt"} {
					if !reflect.DeepEqual(reg[k], a[k]) {
						t.Errorf("operator %s, AVS %s: %s is %v, %v in GET /avs", addr, reg["avsAddress"], k, reg[k], a[k])
					}
				}
			}
			submissions += len(reg["rewardsSubmissions"].([]any))
		}
		if got := int(number(t, op["totalAvs"])); got != active {
			t.Errorf("operator %s: totalAvs %d, %d active registrations", addr, got, active)
		}
		if rewards := op["rewards"].([]any); len(rewards) != active {
			t.Errorf("operator %s: rewards for %d AVS, %d active registrations", addr, len(rewards), active)
		}
	}
	if submissions == 0 {
		t.Errorf("no registration has rewards submissions; rewardsSubmissions is not exercised")
	}

	addr := all.Data[0]["address"].(string)
	var def map[string]any
	c.okEE(t, "/operators/"+addr, &def)
	if _, ok := def["tvl"]; ok {
		t.Errorf("GET /operators/%s: tvl without withTvl", addr)
	}
	c.okEE(t, "/operators/"+addr+"?withAvsData=true&withRewards=true&withTrailingApy=false", &def)
	c.okEE(t, "/operators/0x"+strings.ToUpper(addr[2:]), &def)

	c.failsEE(t, "/operators/0x00000000000000000000000000000000000000ff", http.StatusNotFound, "not_found", "0x00000000000000000000000000000000000000ff")
	c.failsEE(t, "/operators/0xzz", http.StatusUnprocessableEntity, "unprocessable_entity", `"address"`)
	for _, q := range []string{"withTvl=yes", "withAvsData=1", "withRewards=TRUE", "withTrailingApy=no"} {
		c.fails(t, "/operators/"+addr+"?"+q, http.StatusUnprocessableEntity, "unprocessable_entity", q[:strings.IndexByte(q, '=')])
	}
}

// TestEigenExplorerValidatorRejectsDrift makes sure validateEigenExplorer
// can fail: a detail body without the rewards that EigenExplorer's
// document requires, or with a malformed address, is caught.
func TestEigenExplorerValidatorRejectsDrift(t *testing.T) {
	json := http.Header{"Content-Type": {"application/json"}}
	const avs = `{"address":"0x870679e138bcdf293b7ff14dd44b70fc97e12fc0","metadataName":"a","metadataDescription":null,` +
		`"metadataDiscord":null,"metadataLogo":null,"metadataTelegram":null,"metadataWebsite":null,"metadataX":null,` +
		`"totalStakers":1,"totalOperators":1,"maxApy":"1","createdAtBlock":"1","updatedAtBlock":"1",` +
		`"createdAt":"2024-04-11T08:31:11.000Z","updatedAt":"2024-04-11T08:31:11.000Z","shares":[]`
	const target = "/avs/0x870679e138bcdf293b7ff14dd44b70fc97e12fc0"
	rec := &failureRecorder{TB: t}
	validateEigenExplorer(rec, target, &response{Status: 200, Header: json, Body: []byte(avs + `,"rewards":{"strategyApys":[]}}`)})
	if rec.failed {
		t.Fatalf("a valid body failed validation")
	}
	for _, body := range []string{avs + `}`, strings.Replace(avs, "0x87", "0x", 1) + `,"rewards":{"strategyApys":[]}}`} {
		rec := &failureRecorder{TB: t}
		validateEigenExplorer(rec, target, &response{Status: 200, Header: json, Body: []byte(body)})
		if !rec.failed {
			t.Errorf("GET %s: %s passed validation", target, body)
		}
	}
}

func testOperatorAddresses(t *testing.T, c *client) {
	const target = "/operators/addresses"
	var def page
	c.okEE(t, target, &def)
	all := c.all(t, target)
	ops := c.all(t, "/operators")
	if all.Meta.Total != ops.Meta.Total || len(all.Data) != len(ops.Data) {
		t.Fatalf("/operators/addresses has %d, /operators %d", all.Meta.Total, ops.Meta.Total)
	}
	for i, item := range all.Data {
		op := ops.Data[i]
		logo, _ := op["metadataLogo"].(string)
		if len(item) != 3 || item["address"] != op["address"] || item["name"] != op["metadataName"] || item["logo"] != logo {
			t.Errorf("item %v: want the address, name and logo of %v", item, op)
		}
	}
	checkPaging(t, c, target, "address")
	checkSearch(t, c, target, "name", all.strings("name"), true)
	c.okEE(t, target+"?searchMode=startsWith&searchByText=a&skip=1&take=5", &def)
	c.fails(t, target+"?searchMode=exact", http.StatusUnprocessableEntity, "unprocessable_entity", "searchMode")
	c.fails(t, target+"?take=0", http.StatusUnprocessableEntity, "unprocessable_entity", "take")
}
