package indexer

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"strings"

	"github.com/stakegraph/stakegraph/chain"
)

// PriceSource gives the price in ETH of one whole token. The indexer asks it
// whenever it refreshes reference data (at start and every
// Config.ReferenceInterval) and stores the answer with the tokens and
// strategies; TVL and APY in ETH are computed from the stored prices.
//
// The default source is a JSON file (PriceFile). To use a live source
// (an exchange API, a Chainlink feed read with eth_call, a price service of
// your own), implement this interface and set Config.Prices; return only
// the tokens you have a price for, as decimal strings, and an error when the
// source cannot answer at all, in which case the stored prices are kept.
type PriceSource interface {
	// ETHPrices returns prices by lowercase token address.
	ETHPrices(ctx context.Context) (map[string]string, error)
}

// PriceFile is a PriceSource reading a JSON object that maps token addresses
// (any case) to the price in ETH of one whole token, as a string or number:
//
//	{"0xae7ab96520de3a18e5e111b5eaab095312d7fe84": "0.9995",
//	 "0xae78736cd615f374d3085123a210448e74fc6393": "1.12"}
//
// The file is read on every call, so edits take effect at the next
// reference refresh.
type PriceFile struct {
	Path string
}

// ETHPrices reads and validates the file.
func (f PriceFile) ETHPrices(context.Context) (map[string]string, error) {
	raw, err := os.ReadFile(f.Path)
	if err != nil {
		return nil, fmt.Errorf("price file: %w", err)
	}
	return ParsePrices(raw)
}

// ParsePrices parses a price document (see PriceFile). Prices must be
// non-negative decimals; they are kept as exact decimal text, never floats.
func ParsePrices(raw []byte) (map[string]string, error) {
	var doc map[string]json.Number
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		// Accept quoted numbers too.
		var quoted map[string]string
		if err2 := json.Unmarshal(raw, &quoted); err2 != nil {
			return nil, fmt.Errorf("price file: want an object of address to price: %w", err)
		}
		doc = make(map[string]json.Number, len(quoted))
		for k, v := range quoted {
			doc[k] = json.Number(v)
		}
	}
	out := make(map[string]string, len(doc))
	for addr, price := range doc {
		if !chain.IsAddress(addr) {
			return nil, fmt.Errorf("price file: %q is not a token address", addr)
		}
		r, ok := new(big.Rat).SetString(price.String())
		if !ok || r.Sign() < 0 {
			return nil, fmt.Errorf("price file: price %q of %s is not a non-negative decimal", price, addr)
		}
		out[strings.ToLower(addr)] = price.String()
	}
	return out, nil
}

// StaticPrices is a PriceSource with fixed prices, for tests and for
// deployments whose tokens are all pegged.
type StaticPrices map[string]string

// ETHPrices returns the fixed prices.
func (s StaticPrices) ETHPrices(context.Context) (map[string]string, error) {
	out := make(map[string]string, len(s))
	for k, v := range s {
		out[strings.ToLower(k)] = v
	}
	return out, nil
}
