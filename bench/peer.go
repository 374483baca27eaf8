package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// The peer comparison measures one nested page on stakegraph's /graphql
// and on PostGraphile 4, a generic GraphQL engine over PostgreSQL, in the
// same run on the same database: the 50 operators with the most stakers,
// each with its shares by strategy and its AVS registrations with the
// AVS's address and name. PostGraphile follows the relations by the smart
// tags of bench/postgraphile/postgraphile.tags.json5 (the tables have no
// foreign keys).

// NestedPageQuery is the page on stakegraph.
const NestedPageQuery = `query NestedPage {
  operators(take: 50, sortByTotalStakers: desc) {
    data {
      address
      totalStakers
      shares { strategyAddress shares }
      avsRegistrations { avsAddress avs { address metadataName } }
    }
  }
}`

// PostGraphilePageQuery is the same page on PostGraphile: operators by
// total stakers, ties by address descending as stakegraph breaks them.
const PostGraphilePageQuery = `query NestedPage {
  allOperators(first: 50, orderBy: [TOTAL_STAKERS_DESC, ADDRESS_DESC]) {
    nodes {
      address
      totalStakers
      operatorSharesByOperatorAddress { nodes { strategyAddress shares } }
      avsOperatorsByOperatorAddress { nodes { avsAddress avByAvsAddress { address metadataName } } }
    }
  }
}`

// Peer is a PostGraphile process started by the bench.
type Peer struct {
	// URL is its base URL; GraphQL is served at /graphql.
	URL string

	cmd  *exec.Cmd
	done chan error
}

// StartPostGraphile starts PostGraphile 4 from dir (bench/postgraphile,
// with its node_modules installed) over databaseURL, listening on addr,
// and waits until it answers a query.
func StartPostGraphile(ctx context.Context, dir, databaseURL, addr string, log io.Writer) (*Peer, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, "node_modules", ".bin", "postgraphile")
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s: %w (run npm ci in %s)", bin, err, dir)
	}
	cmd := exec.Command(filepath.Join("node_modules", ".bin", "postgraphile"),
		"-c", databaseURL, "--schema", "public", "--disable-default-mutations", "--disable-query-log",
		"--host", host, "--port", port)
	cmd.Dir = dir // where it reads postgraphile.tags.json5
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start postgraphile: %w", err)
	}
	p := &Peer{URL: "http://" + addr, cmd: cmd, done: make(chan error, 1)}
	client := NewClient(p.URL, "", 1)
	defer client.Close()
	go func() { p.done <- cmd.Wait() }()
	if err := waitReady(ctx, "postgraphile", p.done, time.Minute, func() bool {
		var typename struct {
			Typename string `json:"__typename"`
		}
		return fetchGraphQL(ctx, client, `{ __typename }`, nil, &typename) == nil
	}); err != nil {
		if !errors.Is(err, errExitedEarly) {
			p.Stop()
		}
		return nil, err
	}
	return p, nil
}

// PID returns the process id of PostGraphile.
func (p *Peer) PID() int { return p.cmd.Process.Pid }

// Stop ends PostGraphile and waits for it.
func (p *Peer) Stop() error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		return nil
	}
}

// PageShape is what one engine's answer to the nested page holds.
type PageShape struct {
	Operators     []string // in order
	Shares        int      // share rows over all operators
	Registrations int      // registrations over all operators
	AVSNames      int      // registrations whose AVS (and its name) came back
}

// CheckSamePage fetches the nested page from stakegraph and from the peer
// and checks that both return the same operators in the same order, with
// as many shares, registrations and AVS.
func CheckSamePage(ctx context.Context, stakegraph, peer *Client) (ours, theirs PageShape, err error) {
	var o struct {
		Operators struct {
			Data []struct {
				Address          string
				Shares           []json.RawMessage
				AvsRegistrations []struct {
					Avs *struct{ MetadataName string }
				}
			}
		}
	}
	if err := fetchGraphQL(ctx, stakegraph, NestedPageQuery, nil, &o); err != nil {
		return ours, theirs, fmt.Errorf("stakegraph: %w", err)
	}
	for _, op := range o.Operators.Data {
		ours.Operators = append(ours.Operators, op.Address)
		ours.Shares += len(op.Shares)
		ours.Registrations += len(op.AvsRegistrations)
		for _, r := range op.AvsRegistrations {
			if r.Avs != nil {
				ours.AVSNames++
			}
		}
	}
	var p struct {
		AllOperators struct {
			Nodes []struct {
				Address                         string
				OperatorSharesByOperatorAddress struct{ Nodes []json.RawMessage }
				AvsOperatorsByOperatorAddress   struct {
					Nodes []struct {
						AvByAvsAddress *struct{ MetadataName string }
					}
				}
			}
		}
	}
	if err := fetchGraphQL(ctx, peer, PostGraphilePageQuery, nil, &p); err != nil {
		return ours, theirs, fmt.Errorf("postgraphile: %w", err)
	}
	for _, op := range p.AllOperators.Nodes {
		theirs.Operators = append(theirs.Operators, op.Address)
		theirs.Shares += len(op.OperatorSharesByOperatorAddress.Nodes)
		theirs.Registrations += len(op.AvsOperatorsByOperatorAddress.Nodes)
		for _, r := range op.AvsOperatorsByOperatorAddress.Nodes {
			if r.AvByAvsAddress != nil {
				theirs.AVSNames++
			}
		}
	}
	switch {
	case len(ours.Operators) != 50:
		return ours, theirs, fmt.Errorf("stakegraph returned %d operators, not 50", len(ours.Operators))
	case !slices.Equal(ours.Operators, theirs.Operators):
		return ours, theirs, fmt.Errorf("the engines returned different operators: stakegraph %v, postgraphile %v", ours.Operators, theirs.Operators)
	case ours.Shares != theirs.Shares || ours.Registrations != theirs.Registrations || ours.AVSNames != theirs.AVSNames:
		return ours, theirs, fmt.Errorf("the engines returned different pages: stakegraph %d shares, %d registrations, %d AVS; postgraphile %d, %d, %d",
			ours.Shares, ours.Registrations, ours.AVSNames, theirs.Shares, theirs.Registrations, theirs.AVSNames)
	}
	return ours, theirs, nil
}

// PeerRound is one round of the comparison: each engine under load, then
// alone.
type PeerRound struct {
	Ours, Theirs           *Stats
	OursAlone, TheirsAlone *Stats
}

// Ratio is stakegraph's requests/s over PostGraphile's.
func (r PeerRound) Ratio() float64 { return r.Ours.RPS() / max(r.Theirs.RPS(), 1e-9) }

// TargetPeerRatio is how many times PostGraphile's requests/s stakegraph
// must serve on the nested page.
const TargetPeerRatio = 3.0

// ComparePeer measures the nested page on both engines, rounds times,
// alternating them so that a change of the machine's load falls on both:
// each under cfg's load after its warm-up, then with one client for
// alone.
func ComparePeer(ctx context.Context, ours, theirs *Client, cfg LoadConfig, alone time.Duration, rounds int) []PeerRound {
	page := func(q string) func(*rand.Rand) Request {
		req := GraphQL(q, nil)
		return func(*rand.Rand) Request { return req }
	}
	run := func(c *Client, q string, clients int, d time.Duration, seed uint64) *Stats {
		if cfg.Warmup > 0 {
			Load(ctx, c, clients, cfg.Warmup, seed, page(q), nil)
		}
		return Load(ctx, c, clients, d, seed+1, page(q), nil)
	}
	var out []PeerRound
	for i := range rounds {
		seed := cfg.Seed + uint64(10*i)
		var r PeerRound
		r.Ours = run(ours, NestedPageQuery, cfg.Clients, cfg.Duration, seed)
		r.Theirs = run(theirs, PostGraphilePageQuery, cfg.Clients, cfg.Duration, seed)
		r.OursAlone = run(ours, NestedPageQuery, 1, alone, seed+2)
		r.TheirsAlone = run(theirs, PostGraphilePageQuery, 1, alone, seed+2)
		out = append(out, r)
		if ctx.Err() != nil {
			break
		}
	}
	return out
}

// PeerReport renders the comparison.
func PeerReport(rounds []PeerRound, ours PageShape, cfg LoadConfig, alone time.Duration, version string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s by `stakebench peer`: the nested page (the 50 operators with the most stakers, each with its shares by strategy and its AVS registrations with the AVS's address and name) on stakegraph's `/graphql` (`serve --response-cache=false`) and on PostGraphile %s over the same database, %d closed-loop clients, %s warm-up then %s per engine and round, alternating, then %s with one client (\"alone\").\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), version, cfg.Clients, cfg.Warmup, cfg.Duration, alone)
	fmt.Fprintf(&b, "Both returned the same %d operators in the same order, with %d share rows and %d registrations (%d with their AVS).\n\n",
		len(ours.Operators), ours.Shares, ours.Registrations, ours.AVSNames)
	b.WriteString("| Round | stakegraph requests/s | p99 ms | PostGraphile requests/s | p99 ms | Ratio | stakegraph alone p50 ms | PostGraphile alone p50 ms | Failed |\n")
	b.WriteString("|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	worst := 0.0
	for i, r := range rounds {
		failed := r.Ours.CountFailed() + r.Theirs.CountFailed() + r.OursAlone.CountFailed() + r.TheirsAlone.CountFailed()
		fmt.Fprintf(&b, "| %d | %.0f | %s | %.0f | %s | %.2f× | %s | %s | %d |\n", i+1,
			r.Ours.RPS(), ms(r.Ours.Percentile(0.99)), r.Theirs.RPS(), ms(r.Theirs.Percentile(0.99)), r.Ratio(),
			ms(r.OursAlone.Percentile(0.5)), ms(r.TheirsAlone.Percentile(0.5)), failed)
		if i == 0 || r.Ratio() < worst {
			worst = r.Ratio()
		}
		if failed > 0 {
			worst = 0
		}
	}
	fmt.Fprintf(&b, "\nTarget: stakegraph ≥ %.0f× PostGraphile's requests/s in every round: %s (lowest %.2f×).\n", TargetPeerRatio, mark(len(rounds) > 0 && worst >= TargetPeerRatio), worst)
	return b.String()
}
