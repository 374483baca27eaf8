package rest

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

var testNullPaths = nullPaths{"data.*.ethValue", "data.*.args.strategy", "data.*.args.list.*.value", "top"}

func TestLeaveOutNulls(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		// Members named by a path go where null, wherever they stand.
		{`{"data":[{"ethValue":null,"tx":"0x1"}],"meta":{"total":1}}`, `{"data":[{"tx":"0x1"}],"meta":{"total":1}}`},
		{`{"data":[{"tx":"0x1","ethValue":null}]}`, `{"data":[{"tx":"0x1"}]}`},
		{`{"data":[{"a":1,"ethValue":null,"b":2}]}`, `{"data":[{"a":1,"b":2}]}`},
		{`{"data":[{"ethValue":null}]}`, `{"data":[{}]}`},
		{`{"top":null}`, `{}`},
		{`{"data":[{"args":{"strategy":null,"shares":null}},{"args":{"strategy":"0xs","shares":null}}]}`,
			`{"data":[{"args":{"shares":null}},{"args":{"strategy":"0xs","shares":null}}]}`},
		{`{"data":[{"args":{"list":[{"value":null,"k":1},{"value":2}]}}]}`, `{"data":[{"args":{"list":[{"k":1},{"value":2}]}}]}`},
		// Values that are not null stay, whatever they hold.
		{`{"data":[{"ethValue":"0","args":{"strategy":{"x":null}}}]}`, `{"data":[{"ethValue":"0","args":{"strategy":{"x":null}}}]}`},
		{`{"data":[{"ethValue":nullish}]}`, `{"data":[{"ethValue":nullish}]}`},
		// Nulls elsewhere stay: another depth, another name, the meta.
		{`{"ethValue":null,"data":[{"x":{"ethValue":null}}],"meta":{"top":null}}`, `{"ethValue":null,"data":[{"x":{"ethValue":null}}],"meta":{"top":null}}`},
		{`{"data":{"ethValue":null}}`, `{"data":{"ethValue":null}}`},
		// Strings are copied as written, escapes and brackets included.
		{`{"data":[{"tx":"a\"},{\\","ethValue":null,"n":-1.5e+3}]}`, `{"data":[{"tx":"a\"},{\\","n":-1.5e+3}]}`},
		// White space between tokens is dropped, never inside strings.
		{" {\n \"data\" : [ { \"ethValue\" : null , \"tx\" : \" a \" } ] } ", `{"data":[{"tx":" a "}]}`},
		{`[]`, `[]`},
		{`{}`, `{}`},
	} {
		checkRewrite(t, func(in []byte) ([]byte, error) { return leaveOutNulls(in, testNullPaths) }, c.in, c.want)
	}
	for _, bad := range []string{``, `{`, `{"data":[`, `{"a" 1}`, `{"a":1 "b":2}`, `[1 2]`, `{"a":"x}`, `{1:2}`, `{"a":}`, `{} {}`, `{"a":1,}`} {
		if got, err := leaveOutNulls([]byte(bad), testNullPaths); err == nil {
			t.Errorf("%q: %s; want an error", bad, got)
		}
	}
}

// checkRewrite checks that rewrite turns in into want.
func checkRewrite(t *testing.T, rewrite func([]byte) ([]byte, error), in, want string) {
	t.Helper()
	got, err := rewrite([]byte(in))
	if err != nil {
		t.Errorf("%s: %v", in, err)
		return
	}
	if string(got) != want {
		t.Errorf("%s:\n got %s\nwant %s", in, got, want)
	}
}

// FuzzLeaveOutNulls checks leaveOutNulls against decoding the document and
// deleting the null members that the paths name: on a JSON document both
// give the same value, and the output is JSON; on anything else it fails
// without panicking.
func FuzzLeaveOutNulls(f *testing.F) {
	for _, seed := range []string{
		`{"data":[{"ethValue":null,"tx":"0x1","args":{"strategy":null,"list":[{"value":null},{"value":1}]}}],"meta":{"total":1}}`,
		`{"top":null,"data":[]}`,
		`{"data":[{"args":{"strategy":"\u0041"}}]}`,
		`[null,{"top":null}]`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := leaveOutNulls([]byte(in), testNullPaths)
		if !json.Valid([]byte(in)) {
			return // not one JSON document: an error or any output will do
		}
		var want any
		d := json.NewDecoder(strings.NewReader(in))
		d.UseNumber()
		if err := d.Decode(&want); err != nil {
			t.Fatal(err)
		}
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		deleteNulls(want, nil)
		var value any
		d = json.NewDecoder(bytes.NewReader(got))
		d.UseNumber()
		if err := d.Decode(&value); err != nil {
			t.Fatalf("%q gave %q, not JSON: %v", in, got, err)
		}
		if !reflect.DeepEqual(value, want) {
			t.Fatalf("%q gave %q; want the value %v", in, got, want)
		}
	})
}

// deleteNulls deletes from v, a decoded document, the null members that
// testNullPaths name.
func deleteNulls(v any, path []string) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			p := append(path[:len(path):len(path)], k)
			if e == nil {
				for _, d := range testNullPaths {
					if d == strings.Join(p, ".") {
						delete(v, k)
					}
				}
				continue
			}
			deleteNulls(e, p)
		}
	case []any:
		for _, e := range v {
			deleteNulls(e, append(path[:len(path):len(path)], "*"))
		}
	}
}

func TestWriteNullsAs(t *testing.T) {
	defaults := map[string]string{"data.*.logo": `""`, "data.*.args.n": `0`}
	for _, c := range []struct{ in, want string }{
		// Members named by a path are written as their default where
		// null, in their place.
		{`{"data":[{"address":"0x1","logo":null,"name":"a"},{"logo":"x"}],"meta":{"total":2}}`,
			`{"data":[{"address":"0x1","logo":"","name":"a"},{"logo":"x"}],"meta":{"total":2}}`},
		{`{"data":[{"logo":null}]}`, `{"data":[{"logo":""}]}`},
		{`{"data":[{"a":null,"logo":null,"args":{"n":null,"m":null}}]}`, `{"data":[{"a":null,"logo":"","args":{"n":0,"m":null}}]}`},
		// Elsewhere, or not null, they stay.
		{`{"logo":null,"data":[{"x":{"logo":null}}],"meta":{"logo":null}}`, `{"logo":null,"data":[{"x":{"logo":null}}],"meta":{"logo":null}}`},
		{`{"data":[{"logo":{"a":null}}]}`, `{"data":[{"logo":{"a":null}}]}`},
		{" {\"data\" : [ {\"logo\" : null } ] } ", `{"data":[{"logo":""}]}`},
	} {
		checkRewrite(t, func(in []byte) ([]byte, error) { return writeNullsAs(in, defaults) }, c.in, c.want)
	}
	for _, bad := range []string{`{"data":[{"logo":null}`, `{"data":[{"logo":}]}`, `{} x`} {
		if got, err := writeNullsAs([]byte(bad), defaults); err == nil {
			t.Errorf("%s gave %s, no error", bad, got)
		}
	}
}

func TestStakersInRESTShape(t *testing.T) {
	zero := `"` + zeroAddress + `"`
	page := func(in []byte) ([]byte, error) { return stakersInRESTShape(in, "data", "*") }
	for _, c := range []struct{ in, want string }{
		// An undelegated staker has the zero address, unknown blocks are
		// "0", block numbers are strings, and each share names its staker.
		{`{"data":[{"address":"0xa","operatorAddress":null,"createdAtBlock":null,"updatedAtBlock":7,"shares":[{"strategyAddress":"0xs","shares":"5"},{"strategyAddress":"0xt","shares":"6"}]}],"meta":{"total":1}}`,
			`{"data":[{"address":"0xa","operatorAddress":` + zero + `,"createdAtBlock":"0","updatedAtBlock":"7","shares":[{"stakerAddress":"0xa","strategyAddress":"0xs","shares":"5"},{"stakerAddress":"0xa","strategyAddress":"0xt","shares":"6"}]}],"meta":{"total":1}}`},
		// Each staker's shares name that staker; nothing else changes.
		{`{"data":[{"address":"0xa","operatorAddress":"0xo","createdAtBlock":1,"shares":[]},{"address":"0xb","shares":[{"shares":"1"}],"tvl":{"tvl":1.5,"createdAtBlock":2}}],"meta":{"total":2,"createdAtBlock":3}}`,
			`{"data":[{"address":"0xa","operatorAddress":"0xo","createdAtBlock":"1","shares":[]},{"address":"0xb","shares":[{"stakerAddress":"0xb","shares":"1"}],"tvl":{"tvl":1.5,"createdAtBlock":2}}],"meta":{"total":2,"createdAtBlock":3}}`},
		{`{"data":[]}`, `{"data":[]}`},
	} {
		checkRewrite(t, page, c.in, c.want)
	}
	// One staker at the root, as GET /stakers/{address} has it.
	checkRewrite(t, func(in []byte) ([]byte, error) { return stakersInRESTShape(in) },
		`{"address":"0xa","operatorAddress":null,"createdAtBlock":-1,"shares":[{"shares":"1"}],"rewards":{"address":null,"shares":[{}]}}`,
		`{"address":"0xa","operatorAddress":`+zero+`,"createdAtBlock":"-1","shares":[{"stakerAddress":"0xa","shares":"1"}],"rewards":{"address":null,"shares":[{}]}}`)
	// A share before its staker's address, or of a staker without one,
	// cannot be named.
	for _, bad := range []string{
		`{"data":[{"shares":[{"shares":"1"}],"address":"0xa"}]}`,
		`{"data":[{"address":"0xa","shares":[]},{"shares":[{"shares":"1"}]}]}`,
		`{"data":[{"address":"0xa"`,
	} {
		if got, err := page([]byte(bad)); err == nil {
			t.Errorf("%s gave %s, no error", bad, got)
		}
	}
}
