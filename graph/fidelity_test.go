package graph_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// plainNumbers fails the test for any number of the JSON document body
// written in exponent form, and returns the largest magnitude among its
// numbers.
func plainNumbers(t *testing.T, what string, body []byte) float64 {
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

// TestNumbersArePlainDecimals checks that GraphQL answers write every
// Float as a plain decimal, and sharesNumber with every digit of shares.
func TestNumbersArePlainDecimals(t *testing.T) {
	db := demoDB(t)
	c := newClient(t, db, testOptions())
	// The staker of the share event with the most shares.
	staker := sqlString(t, db, `SELECT staker_address FROM delegation_events WHERE shares IS NOT NULL ORDER BY shares DESC, 1 LIMIT 1`)
	const q = `query($s: Address!) {
		metrics { tvl tvlBeaconChain tvlRestaking tvlStrategies tvlStrategiesEth totalAVS totalOperators totalStakers }
		avsList(take: 1000) { data { address maxApyNumber tvl { tvl tvlBeaconChain tvlRestaking tvlWETH tvlStrategies tvlStrategiesEth } } }
		operators(take: 1000) { data { address maxApyNumber tvl { tvl tvlBeaconChain tvlRestaking tvlWETH tvlStrategies tvlStrategiesEth } } }
		staker(address: $s) { delegationEvents(take: 1000) { data { args { shares sharesNumber } underlyingValue ethValue } } }
	}`
	body, err := json.Marshal(map[string]any{"query": q, "variables": map[string]any{"s": staker}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Post(c.url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || bytes.Contains(raw, []byte(`"errors"`)) {
		t.Fatalf("query = %d %s", res.StatusCode, raw)
	}
	if largest := plainNumbers(t, "GraphQL", raw); largest < 1e6 {
		t.Errorf("largest number %v: nothing that %%g writes in exponent form was checked", largest)
	}

	// sharesNumber is shares as a number, digit for digit.
	var out struct {
		Data struct {
			Staker struct {
				DelegationEvents struct {
					Data []struct {
						Args struct {
							Shares       *string
							SharesNumber *json.Number
						}
					}
				}
			}
		}
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&out); err != nil {
		t.Fatal(err)
	}
	shareEvents := 0
	for _, e := range out.Data.Staker.DelegationEvents.Data {
		if e.Args.Shares == nil {
			continue
		}
		shareEvents++
		if e.Args.SharesNumber == nil || e.Args.SharesNumber.String() != *e.Args.Shares {
			t.Errorf("sharesNumber %v for shares %s", e.Args.SharesNumber, *e.Args.Shares)
		}
	}
	if shareEvents == 0 {
		t.Errorf("staker %s has no share events", staker)
	}
}
