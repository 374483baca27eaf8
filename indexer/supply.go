package indexer

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"strings"
)

// SupplySource gives the ETH supply in ETH, as decimal text. Ethereum's
// JSON-RPC interface has no call for it, so it comes from outside the
// chain; the restaking ratio divides the TVL by it. The indexer asks at
// each reference update and records the answer when it changed; a source
// that fails keeps the recorded supply.
//
// The default source is a JSON file (SupplyFile). A live source (a
// supply API, an ultrasound.money export, a beacon node's accounting) can
// implement this interface and be set as Config.ETHSupply.
type SupplySource interface {
	ETHSupply(ctx context.Context) (string, error)
}

// SupplyFile is a SupplySource reading a JSON object with the ETH supply
// in ETH, as a string or a number:
//
//	{"ethSupply": "120712345.68"}
//
// The file is read on every call, so edits take effect at the next
// reference update.
type SupplyFile struct {
	Path string
}

// ETHSupply reads and validates the file.
func (f SupplyFile) ETHSupply(context.Context) (string, error) {
	raw, err := os.ReadFile(f.Path)
	if err != nil {
		return "", fmt.Errorf("ETH supply file: %w", err)
	}
	return ParseSupply(raw)
}

// ParseSupply parses an ETH supply document (see SupplyFile). The supply
// must be a positive decimal; it is kept as exact decimal text.
func ParseSupply(raw []byte) (string, error) {
	var doc struct {
		ETHSupply json.Number `json:"ethSupply"`
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		var quoted struct {
			ETHSupply string `json:"ethSupply"`
		}
		if err2 := json.Unmarshal(raw, &quoted); err2 != nil {
			return "", fmt.Errorf(`ETH supply file: want {"ethSupply": "<ETH>"}: %w`, err)
		}
		doc.ETHSupply = json.Number(quoted.ETHSupply)
	}
	if doc.ETHSupply == "" {
		return "", fmt.Errorf(`ETH supply file: want {"ethSupply": "<ETH>"}`)
	}
	r, ok := new(big.Rat).SetString(doc.ETHSupply.String())
	if !ok || r.Sign() <= 0 {
		return "", fmt.Errorf("ETH supply file: supply %q is not a positive decimal", doc.ETHSupply)
	}
	return doc.ETHSupply.String(), nil
}

// StaticSupply is a SupplySource with a fixed supply, for tests and demos.
type StaticSupply string

// ETHSupply returns the fixed supply.
func (s StaticSupply) ETHSupply(context.Context) (string, error) {
	return string(s), nil
}
