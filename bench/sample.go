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
}

// Fetch sends req and decodes the JSON response into v; any status but 200
// is an error.
func (c *Client) Fetch(ctx context.Context, req Request, v any) error {
	var body io.Reader
	if req.Body != nil {
		body = bytes.NewReader(req.Body)
	}
	hr, err := http.NewRequestWithContext(ctx, req.Method, c.base+req.Target, body)
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

	switch {
	case len(s.AVS) == 0, len(s.Operators) == 0, len(s.Stakers) == 0, len(s.Strategies) == 0:
		return nil, fmt.Errorf("the server holds too little data to benchmark: %d AVS, %d operators, %d stakers, %d strategies",
			len(s.AVS), len(s.Operators), len(s.Stakers), len(s.Strategies))
	case s.Head.IsZero() || s.First.IsZero() || !s.First.Before(s.Head):
		return nil, errors.New("cannot tell the time span of the data from operators and withdrawals")
	}
	return s, nil
}
