package bench

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"
)

// Sample is what the workloads draw their parameters from: real addresses,
// names and the time span of the served data, discovered through the API
// itself (the bench speaks no SQL).
type Sample struct {
	AVS           []string // visible AVS addresses
	AVSNames      []string
	Operators     []string
	OperatorNames []string
	// Stakers are addresses of stakers delegated to operators, and of
	// stakers with withdrawals.
	Stakers []string
	// BusyOperators are the operators with the most stakers, whose
	// delegation event lists are the longest.
	BusyOperators []string
	Strategies    []string
	// Head is the time of the newest withdrawal, close to the end of the
	// data; First is the creation time of the oldest operator.
	First, Head time.Time

	// The slashing era, empty in data from before the slashing upgrade.
	// OperatorSetAVS are the AVS that created operator sets (N: how many),
	// OperatorSets the sets, AllocatingOperators the operators with
	// allocations to sets (N: how many).
	OperatorSetAVS      []Counted
	OperatorSets        []OperatorSet
	AllocatingOperators []Counted
	// SlashedOperators, SlashingAVS and SlashedStrategies are the
	// operators, AVS and strategies of the newest slashings (up to 1000 of
	// them); Slashings is the number of slashings.
	SlashedOperators  []string
	SlashingAVS       []string
	SlashedStrategies []string
	Slashings         int
	// SlashingStart is the creation time of the oldest operator set, close
	// to the slashing upgrade.
	SlashingStart time.Time
}

// Counted is an address with the length of one of its lists.
type Counted struct {
	Address string
	N       int
}

// OperatorSet names an operator set, with the number of its operators.
type OperatorSet struct {
	AVS       string
	ID        int
	Operators int
}

// Fetch sends req and decodes the JSON response into v; any status but 200
// is an error.
func (c *Client) Fetch(ctx context.Context, req Request, v any) error {
	var body io.Reader
	if req.Body != nil {
		body = bytes.NewReader(req.Body)
	}
	hr, err := http.NewRequestWithContext(ctx, req.Method, c.base()+req.Target, body)
	if err != nil {
		return err
	}
	hr.Header.Set("X-API-Token", c.key)
	if req.Body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	res, err := c.http.Do(hr)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	var r io.Reader = res.Body
	if res.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(res.Body)
		if err != nil {
			return fmt.Errorf("%s %s: %w", req.Method, req.Target, err)
		}
		r = zr
	}
	raw, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("%s %s: %w", req.Method, req.Target, err)
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s: %.300s", req.Method, req.Target, res.Status, raw)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s %s: %w", req.Method, req.Target, err)
	}
	return nil
}

// GraphQL makes the POST request of a GraphQL operation.
func GraphQL(query string, vars map[string]any) Request {
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		panic(err) // the variables are the bench's own
	}
	return Request{Method: http.MethodPost, Target: "/graphql", Body: body}
}

// discoveryQuery finds operators with many stakers, some of their stakers,
// and the strategies.
const discoveryQuery = `query Discover($take: Int!) {
  operators(sortByTotalStakers: desc, take: $take) {
    data { address stakers(take: 40) { data { address } } }
  }
  strategies { address }
}`

// Discover reads a Sample from the server.
func Discover(ctx context.Context, c *Client) (*Sample, error) {
	s := &Sample{}
	type named struct {
		Address      string
		MetadataName string
		CreatedAt    time.Time
	}
	var avs struct{ Data []named }
	if err := c.Fetch(ctx, Request{Method: http.MethodGet, Target: "/avs?take=1000"}, &avs); err != nil {
		return nil, err
	}
	for _, a := range avs.Data {
		s.AVS = append(s.AVS, a.Address)
		if a.MetadataName != "" {
			s.AVSNames = append(s.AVSNames, a.MetadataName)
		}
	}
	for skip := 0; ; skip += 1000 {
		var ops struct {
			Data []named
			Meta struct{ Total int }
		}
		if err := c.Fetch(ctx, Request{Method: http.MethodGet, Target: fmt.Sprintf("/operators?take=1000&skip=%d", skip)}, &ops); err != nil {
			return nil, err
		}
		for _, o := range ops.Data {
			s.Operators = append(s.Operators, o.Address)
			if o.MetadataName != "" {
				s.OperatorNames = append(s.OperatorNames, o.MetadataName)
			}
			if s.First.IsZero() || o.CreatedAt.Before(s.First) {
				s.First = o.CreatedAt
			}
		}
		if len(ops.Data) < 1000 || skip+1000 >= ops.Meta.Total || skip >= 9000 {
			break
		}
	}

	var d struct {
		Data struct {
			Operators struct {
				Data []struct {
					Address string
					Stakers struct{ Data []struct{ Address string } }
				}
			}
			Strategies []struct{ Address string }
		}
		Errors []struct{ Message string }
	}
	if err := c.Fetch(ctx, GraphQL(discoveryQuery, map[string]any{"take": 100}), &d); err != nil {
		return nil, err
	}
	if len(d.Errors) > 0 {
		return nil, fmt.Errorf("discovery query: %s", d.Errors[0].Message)
	}
	for i, o := range d.Data.Operators.Data {
		if i < 20 {
			s.BusyOperators = append(s.BusyOperators, o.Address)
		}
		for _, st := range o.Stakers.Data {
			s.Stakers = append(s.Stakers, st.Address)
		}
	}
	for _, st := range d.Data.Strategies {
		s.Strategies = append(s.Strategies, st.Address)
	}

	// Stakers with withdrawals, from pages spread over the list; the first
	// page's newest withdrawal dates the end of the data.
	for _, skip := range []int{0, 1000, 5000, 20000, 100000} {
		var ws struct {
			Data []struct {
				StakerAddress string
				CreatedAt     time.Time
			}
		}
		if err := c.Fetch(ctx, Request{Method: http.MethodGet, Target: fmt.Sprintf("/withdrawals?take=500&skip=%d", skip)}, &ws); err != nil {
			return nil, err
		}
		for _, w := range ws.Data {
			s.Stakers = append(s.Stakers, w.StakerAddress)
			if w.CreatedAt.After(s.Head) {
				s.Head = w.CreatedAt
			}
		}
	}
	slices.Sort(s.Stakers)
	s.Stakers = slices.Compact(s.Stakers)

	if err := discoverSlashing(ctx, c, s); err != nil {
		return nil, err
	}

	switch {
	case len(s.AVS) == 0, len(s.Operators) == 0, len(s.Stakers) == 0, len(s.Strategies) == 0:
		return nil, fmt.Errorf("the server holds too little data to benchmark: %d AVS, %d operators, %d stakers, %d strategies",
			len(s.AVS), len(s.Operators), len(s.Stakers), len(s.Strategies))
	case s.Head.IsZero() || s.First.IsZero() || !s.First.Before(s.Head):
		return nil, errors.New("cannot tell the time span of the data from operators and withdrawals")
	}
	return s, nil
}

// The queries that find the slashing era's operator sets, the operators
// with allocations (from every operator's allocation count) and the newest
// slashings.
const (
	operatorSetsQuery = `query DiscoverOperatorSets($skip: Int!) {
  operatorSets(skip: $skip, take: 1000) {
    data { avsAddress id totalOperators createdAt }
    meta { total }
  }
}`
	allocatingOperatorsQuery = `query DiscoverAllocations($skip: Int!) {
  operators(skip: $skip, take: 1000) {
    data { address allocations(take: 1) { meta { total } } }
    meta { total }
  }
}`
	slashingsQuery = `query DiscoverSlashings {
  slashings(take: 1000) {
    data { operatorAddress avsAddress strategies { strategyAddress } }
    meta { total }
  }
}`
)

// fetchGraphQL sends a GraphQL operation and decodes its data into v; an
// error in the answer is an error.
func fetchGraphQL(ctx context.Context, c *Client, query string, vars map[string]any, v any) error {
	var res struct {
		Data   json.RawMessage
		Errors []struct{ Message string }
	}
	if err := c.Fetch(ctx, GraphQL(query, vars), &res); err != nil {
		return err
	}
	if len(res.Errors) > 0 {
		return fmt.Errorf("discovery query: %s", res.Errors[0].Message)
	}
	return json.Unmarshal(res.Data, v)
}

// discoverSlashing fills the slashing-era fields of s. Data from before the
// slashing upgrade leaves them empty.
func discoverSlashing(ctx context.Context, c *Client, s *Sample) error {
	setsOf := map[string]int{}
	for skip := 0; skip < 10000; skip += 1000 {
		var d struct {
			OperatorSets struct {
				Data []struct {
					AvsAddress     string
					ID             int
					TotalOperators int
					CreatedAt      time.Time
				}
				Meta struct{ Total int }
			}
		}
		if err := fetchGraphQL(ctx, c, operatorSetsQuery, map[string]any{"skip": skip}, &d); err != nil {
			return err
		}
		for _, set := range d.OperatorSets.Data {
			s.OperatorSets = append(s.OperatorSets, OperatorSet{AVS: set.AvsAddress, ID: set.ID, Operators: set.TotalOperators})
			if setsOf[set.AvsAddress] == 0 {
				s.OperatorSetAVS = append(s.OperatorSetAVS, Counted{Address: set.AvsAddress})
			}
			setsOf[set.AvsAddress]++
			if s.SlashingStart.IsZero() || set.CreatedAt.Before(s.SlashingStart) {
				s.SlashingStart = set.CreatedAt
			}
		}
		if len(d.OperatorSets.Data) < 1000 || skip+1000 >= d.OperatorSets.Meta.Total {
			break
		}
	}
	for i, a := range s.OperatorSetAVS {
		s.OperatorSetAVS[i].N = setsOf[a.Address]
	}
	if len(s.OperatorSets) == 0 {
		return nil // no slashing era: no allocations or slashings either
	}

	for skip := 0; skip < 10000; skip += 1000 {
		var d struct {
			Operators struct {
				Data []struct {
					Address     string
					Allocations struct{ Meta struct{ Total int } }
				}
				Meta struct{ Total int }
			}
		}
		if err := fetchGraphQL(ctx, c, allocatingOperatorsQuery, map[string]any{"skip": skip}, &d); err != nil {
			return err
		}
		for _, o := range d.Operators.Data {
			if n := o.Allocations.Meta.Total; n > 0 {
				s.AllocatingOperators = append(s.AllocatingOperators, Counted{Address: o.Address, N: n})
			}
		}
		if len(d.Operators.Data) < 1000 || skip+1000 >= d.Operators.Meta.Total {
			break
		}
	}

	var d struct {
		Slashings struct {
			Data []struct {
				OperatorAddress string
				AvsAddress      string
				Strategies      []struct{ StrategyAddress string }
			}
			Meta struct{ Total int }
		}
	}
	if err := fetchGraphQL(ctx, c, slashingsQuery, nil, &d); err != nil {
		return err
	}
	s.Slashings = d.Slashings.Meta.Total
	for _, sl := range d.Slashings.Data {
		s.SlashedOperators = append(s.SlashedOperators, sl.OperatorAddress)
		s.SlashingAVS = append(s.SlashingAVS, sl.AvsAddress)
		for _, st := range sl.Strategies {
			s.SlashedStrategies = append(s.SlashedStrategies, st.StrategyAddress)
		}
	}
	for _, xs := range []*[]string{&s.SlashedOperators, &s.SlashingAVS, &s.SlashedStrategies} {
		slices.Sort(*xs)
		*xs = slices.Compact(*xs)
	}
	return nil
}
