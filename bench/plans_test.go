package bench_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/stakegraph/stakegraph/bench"
	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/demo"
	"github.com/stakegraph/stakegraph/graph"
	"github.com/stakegraph/stakegraph/rest"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// TestQueryPlans sends the bench workload's requests (every documented
// REST route and the four GraphQL operations, with their parameter mixes)
// to the API in process, with the requests of the worst parameters and a
// query of the slashing era's GraphQL fields that no operation asks for,
// records every SQL statement they run with its arguments, and checks the
// plan PostgreSQL chooses for each (EXPLAIN (FORMAT JSON), with the same
// arguments):
//
//   - no sequential scan of a large table (largeTableRows rows or more,
//     or bloatedTablePages pages or more with fewer rows than pages);
//   - no scan of a large table without an index condition unless a LIMIT
//     bounds it with nothing in between that reads its whole input;
//   - no sort of more than maxSortRows estimated rows outside such a
//     LIMIT, except a page sorted from one range of an index (at most
//     maxWindowSortRows estimated rows; see isWindowSort).
//
// By default it runs on a generated data set of moderate size (about a
// tenth of the bench set's stakers), big enough for the planner to prefer
// indexes where they matter. With STAKEGRAPH_PLANS_DATABASE_URL it runs on
// that database instead, read-only: `make bench` points it at the bench
// data, whose statistics are mainnet-shaped.
func TestQueryPlans(t *testing.T) {
	if testing.Short() {
		t.Skip("plans need a generated data set")
	}
	dbURL := os.Getenv("STAKEGRAPH_PLANS_DATABASE_URL")
	// With STAKEGRAPH_PLANS_ANALYZE set, every statement is also run with
	// EXPLAIN ANALYZE and its execution time logged, to find slow ones.
	analyze := os.Getenv("STAKEGRAPH_PLANS_ANALYZE") != ""
	if dbURL == "" {
		dbURL = storetest.TemplateURL(t, "plans_medium", fillMedium)
	}
	rec := &recorder{}
	db := openRecording(t, dbURL, rec)
	plain, err := sql.Open("postgres", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plain.Close() })

	now := dataNow(t, plain)
	large := largeTables(t, plain)
	if len(large) == 0 {
		t.Fatalf("no table has %d rows or more: the data set is too small to test plans on", largeTableRows)
	}
	t.Logf("large tables: %v", large)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	opts := graph.Options{Now: func() time.Time { return now }, Logger: logger}
	mux := http.NewServeMux()
	mux.Handle("/graphql", graph.NewHandler(db, opts))
	mux.Handle("/", rest.NewHandler(rest.Config{
		Executor:     graph.NewExecutor(db, opts),
		Authenticate: func(h http.Handler) http.Handler { return h },
		Version:      "plans",
	}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c := bench.NewClient(srv.URL, "unused", 4)
	defer c.Close()
	ctx := context.Background()
	sample, err := bench.Discover(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("slashing era: %d AVS with %d operator sets, %d operators with allocations, %d slashings",
		len(sample.OperatorSetAVS), len(sample.OperatorSets), len(sample.AllocatingOperators), sample.Slashings)
	if len(sample.OperatorSets) == 0 || len(sample.AllocatingOperators) == 0 || sample.Slashings == 0 {
		// Operations leaves the slashing era's routes out without them.
		t.Errorf("the data set has no operator sets, allocations or slashings: the slashing era's routes go unchecked")
	}

	// check sends the requests, then explains the statements they ran.
	check := func(t *testing.T, reqs []bench.Request) {
		t.Helper()
		rec.start()
		for _, req := range reqs {
			if o := c.Do(ctx, req); o.Err != nil || o.Status != http.StatusOK || o.GraphQLError {
				t.Fatalf("%s %s: %d %v %s", req.Method, req.Target, o.Status, o.Err, o.Snippet)
			}
		}
		statements := rec.stop()
		if len(statements) == 0 {
			t.Fatal("the requests ran no SQL statement")
		}
		for _, st := range statements {
			for _, args := range st.args {
				if analyze {
					t.Logf("%7.2f ms  %s  with %s", executionTime(t, plain, st.query, args), oneLine(st.query), describeArgs(args))
				}
				plan := explain(t, plain, st.query, args)
				for _, v := range planViolations(plan, large) {
					t.Errorf("%s\n  in %s\n  with %s\n  plan:\n%s", v, oneLine(st.query), describeArgs(args), indentPlan(plan))
				}
				if st.prepared {
					plan := explainGeneric(t, plain, st.query, args)
					for _, v := range planViolations(plan, large) {
						t.Errorf("%s in the generic plan\n  in %s\n  with %s\n  plan:\n%s", v, oneLine(st.query), describeArgs(args), indentPlan(plan))
					}
				}
			}
		}
	}
	for _, op := range bench.Operations(sample) {
		t.Run(op.Name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, 12))
			reqs := make([]bench.Request, requestsPerOperation)
			for i := range reqs {
				reqs[i] = op.Next(rng)
			}
			check(t, reqs)
		})
	}
	t.Run("worst parameters", func(t *testing.T) {
		check(t, worstRequests(t, plain, sample, now))
	})
	t.Run("slashing-era fields", func(t *testing.T) {
		check(t, slashingFieldRequests(t, plain))
	})
}

// worstRequests are requests of the workload's operations with the
// parameters that read the most: the operator page of the operators with
// the most delegation events, on their first and deepest pages, the
// withdrawal list of the strategies with the most withdrawals and of a busy
// operator, with every status, deep, the whole list's deepest pages, and
// deep pages of the stakers updated in the last day, week and month. The statements they run are
// explained with their first argsPerStatement argument sets, so the worst
// come first.
func worstRequests(t *testing.T, db *sql.DB, sample *bench.Sample, now time.Time) []bench.Request {
	t.Helper()
	var operators, strategies []string
	for _, q := range []struct {
		dst   *[]string
		query string
	}{
		{&operators, `SELECT operator_address FROM delegation_events GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 2`},
		{&strategies, `SELECT s FROM withdrawals, unnest(strategies) s GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 2`},
	} {
		rows, err := db.Query(q.query)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var a string
			if err := rows.Scan(&a); err != nil {
				t.Fatal(err)
			}
			*q.dst = append(*q.dst, a)
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
	}
	var reqs []bench.Request
	for _, op := range operators {
		for _, skip := range []int{1990, 0} {
			reqs = append(reqs, bench.GraphQL(bench.OperatorPageQuery, map[string]any{
				"operator": op,
				"startAt":  now.AddDate(0, 0, -30).Format(time.RFC3339),
				"endAt":    now.Format(time.RFC3339),
				"skip":     skip,
			}))
		}
	}
	withdrawals := func(params string) {
		reqs = append(reqs, bench.Request{Method: http.MethodGet, Target: "/withdrawals?" + params})
	}
	for _, st := range []string{"&status=queued_withdrawable", "&status=completed", "&status=queued", ""} {
		for _, s := range strategies {
			withdrawals("strategyAddress=" + s + st + "&skip=4992&take=12")
		}
		withdrawals("take=12" + st)
	}
	// A busy operator's deepest pages, with every status (the index on
	// operator and status gives them in order, migration 00011), and the
	// whole list's deepest pages, found from the block bucket counts.
	if len(sample.BusyOperators) > 0 {
		for _, st := range []string{"&status=queued_withdrawable", "&status=completed", "&status=queued", ""} {
			withdrawals("delegatedTo=" + sample.BusyOperators[0] + st + "&skip=1992&take=12")
		}
	}
	reqs = append(reqs, worstSlashingRequests(t, db)...)
	var queued, completed int
	if err := db.QueryRow(`
		SELECT count(*) FILTER (WHERE NOT is_completed), count(*) FILTER (WHERE is_completed)
		FROM withdrawals`).Scan(&queued, &completed); err != nil {
		t.Fatal(err)
	}
	for st, n := range map[string]int{"&status=queued": queued, "&status=queued_withdrawable": queued / 2,
		"&status=completed": completed, "": queued + completed} {
		withdrawals(fmt.Sprintf("skip=%d&take=100%s", max(min(n-100, 200000), 0), st))
	}
	// The stakers updated in the last day, week and month, deep: these
	// pages start at the kept counts by address bucket and update day.
	for _, days := range []int{1, 7, 30} {
		since := now.AddDate(0, 0, -days).UTC().Format(time.RFC3339)
		reqs = append(reqs, bench.Request{Method: http.MethodGet,
			Target: fmt.Sprintf("/stakers?updatedSince=%s&skip=%d&take=12", since, 5000*days)})
	}
	return reqs
}

// queryStrings returns the first column of the rows of query.
func queryStrings(t *testing.T, db *sql.DB, query string) []string {
	t.Helper()
	rows, err := db.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// worstSlashingRequests are the slashing era's routes with the parameters
// that read the most: the operator sets with the most operators, on their
// deepest pages with their TVL, the AVS with the most operator sets, the
// operators with the most allocations, and the slashings of the most
// slashed strategy and operator, and of the whole list, deep.
func worstSlashingRequests(t *testing.T, db *sql.DB) []bench.Request {
	t.Helper()
	var reqs []bench.Request
	add := func(target string) { reqs = append(reqs, bench.Request{Method: http.MethodGet, Target: target}) }
	for _, row := range queryStrings(t, db, `
		SELECT avs_address || '/' || operator_set_id || ' ' || GREATEST(total_operators - 100, 0)
		FROM operator_sets ORDER BY total_operators DESC, avs_address, operator_set_id LIMIT 2`) {
		set, n, _ := strings.Cut(row, " ")
		add(fmt.Sprintf("/operator-sets/%s?withTvl=true&take=100&skip=%s", set, n))
		add("/operator-sets/" + set + "?withTvl=true&take=100")
		avs, id, _ := strings.Cut(set, "/")
		reqs = append(reqs, bench.GraphQL(bench.OperatorSetPageQuery, map[string]any{"avs": avs, "id": json.Number(id), "skip": 0}))
	}
	for _, avs := range queryStrings(t, db, `
		SELECT avs_address FROM operator_sets GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 2`) {
		add("/avs/" + avs + "/operator-sets?withTvl=true&take=100")
	}
	for _, op := range queryStrings(t, db, `
		SELECT operator_address FROM allocations GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 2`) {
		add("/operators/" + op + "/allocations?take=100")
		add("/operators/" + op + "/allocations?take=12&skip=12")
	}
	for _, st := range queryStrings(t, db, `
		SELECT x FROM slashings, unnest(strategies) x GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1`) {
		add("/slashings?take=100&strategyAddress=" + st)
	}
	for _, op := range queryStrings(t, db, `
		SELECT operator_address FROM slashings GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1`) {
		add("/slashings?take=100&operatorAddress=" + op)
	}
	add("/slashings?take=100")
	add("/slashings?take=100&skip=1000")
	return reqs
}

// slashingEraFieldsQuery asks for the slashing era's GraphQL fields that
// no operation of the workload asks for: an operator's max magnitudes,
// allocations, operator sets and slashings, a staker's deposit and
// withdrawable shares, and the scaled and payout shares of withdrawals.
const slashingEraFieldsQuery = `query SlashingEraFields($operator: Address!, $staker: Address!) {
  operator(address: $operator) {
    maxMagnitudes { strategyAddress maxMagnitude }
    allocations(take: 50) {
      data { avsAddress operatorSetId strategyAddress magnitude maxMagnitude allocatedShares operatorSet { id totalOperators } }
      meta { total }
    }
    operatorSets(isActive: null, take: 50) {
      data { avsAddress operatorSetId isActive allocations { strategyAddress allocatedShares } }
      meta { total }
    }
    slashings(take: 20) {
      data { avsAddress operatorSetId blockNumber strategies { strategyAddress wadSlashed sharesSlashed sharesBurned } }
      meta { total }
    }
  }
  staker(address: $staker) {
    shares { strategyAddress shares depositShares withdrawableShares ethValue }
    withdrawals(take: 20) {
      data { withdrawalRoot scaledShares { strategyAddress scaledShares } payoutShares { strategyAddress shares ethValue } }
      meta { total }
    }
  }
  byOperator: withdrawals(delegatedTo: $operator, take: 50) {
    data { withdrawalRoot scaledShares { strategyAddress scaledShares } payoutShares { strategyAddress shares ethValue } }
  }
  newest: withdrawals(take: 100) {
    data { withdrawalRoot scaledShares { strategyAddress scaledShares } payoutShares { strategyAddress shares ethValue } }
  }
}`

// slashingFieldRequests are requests of slashingEraFieldsQuery for the most
// slashed operators, with the stakers with the most slashing-era
// withdrawals.
func slashingFieldRequests(t *testing.T, db *sql.DB) []bench.Request {
	t.Helper()
	operators := queryStrings(t, db, `
		SELECT operator_address FROM slashings GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 2`)
	operators = append(operators, queryStrings(t, db, `
		SELECT operator_address FROM allocations GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1`)...)
	stakers := queryStrings(t, db, `
		SELECT staker_address FROM withdrawals WHERE scaled_shares IS NOT NULL
		GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 3`)
	if len(operators) == 0 || len(stakers) == 0 {
		t.Fatal("the data set has no slashings, allocations or slashing-era withdrawals")
	}
	var reqs []bench.Request
	for i, op := range operators {
		reqs = append(reqs, bench.GraphQL(slashingEraFieldsQuery, map[string]any{
			"operator": op, "staker": stakers[i%len(stakers)],
		}))
	}
	return reqs
}

// requestsPerOperation is how many requests of each operation's mix are
// sent; argsPerStatement how many argument sets of each distinct statement
// are explained.
const (
	requestsPerOperation = 40
	argsPerStatement     = 6
)

// largeTableRows is the size from which a table is large: a scan of all of
// it costs milliseconds, and grows with the chain's history. At mainnet
// scale the event tables, stakers, staker shares and withdrawals are large;
// the tables bounded by the number of operators, AVS and strategies (AVS
// registrations, operator shares, rewards) are not.
const largeTableRows = 50000

// bloatedTablePages is the size from which a table of fewer rows than
// pages is large too: scanning it reads every page, however few its rows.
// service_state is one: its single row is rewritten by every commit of the
// indexer, and after a long transaction (a bulk load) it sat on the last
// of 63 pages of the bench data, so each statement that read it without
// its key read all 63.
const bloatedTablePages = 8

// maxSortRows is the largest estimated input of a sort that is not bounded
// by a LIMIT.
const maxSortRows = 10000

// fillMedium loads a generated world of moderate size, vacuums and analyzes
// it.
func fillMedium(ctx context.Context, db *store.DB) error {
	sc := demo.BenchScale
	sc.Days, sc.AVS, sc.Operators, sc.Stakers, sc.RewardsSubmissions = 300, 60, 600, 30000, 2000
	// Four times the withdrawals, so that withdrawals is a large table here
	// as it is at mainnet scale.
	sc.WithdrawalPPM *= 4
	opts := demo.BenchOptions{Options: demo.Options{Now: mediumNow, Seed: 9, Network: chain.Networks["mainnet"]}, Scale: sc}
	if err := demo.SeedBench(ctx, db, opts, nil); err != nil {
		return err
	}
	// A settled database: autovacuum has set the visibility map.
	return db.VacuumAnalyze(ctx)
}

var mediumNow = time.Date(2025, 3, 15, 12, 0, 0, 0, time.UTC)

// dataNow returns the time of the database's head block, the clock the API
// runs at in this test so that default date ranges fall on data.
func dataNow(t *testing.T, db *sql.DB) time.Time {
	t.Helper()
	var head sql.NullTime
	if err := db.QueryRow(`SELECT head_time FROM service_state`).Scan(&head); err != nil {
		t.Fatal(err)
	}
	if !head.Valid {
		t.Fatal("the database has no head time")
	}
	return head.Time
}

// recordedStatement is a distinct statement text with up to
// argsPerStatement of the argument sets it ran with. A prepared statement
// may run with the generic plan PostgreSQL makes for any arguments, which
// is checked too.
type recordedStatement struct {
	query    string
	args     [][]any
	prepared bool
}

// recorder collects the statements sent through a recording connection
// while it is started.
type recorder struct {
	mu      sync.Mutex
	on      bool
	byQuery map[string]*recordedStatement
	order   []string
}

func (r *recorder) start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on, r.byQuery, r.order = true, map[string]*recordedStatement{}, nil
}

func (r *recorder) stop() []*recordedStatement {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on = false
	out := make([]*recordedStatement, 0, len(r.order))
	for _, q := range r.order {
		out = append(out, r.byQuery[q])
	}
	return out
}

func (r *recorder) record(query string, named []driver.NamedValue, prepared bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.on {
		return
	}
	st, ok := r.byQuery[query]
	if !ok {
		st = &recordedStatement{query: query}
		r.byQuery[query] = st
		r.order = append(r.order, query)
	}
	st.prepared = st.prepared || prepared
	if len(st.args) >= argsPerStatement {
		return
	}
	args := make([]any, len(named))
	for i, nv := range named {
		args[i] = nv.Value
	}
	key := fmt.Sprint(args...)
	for _, prev := range st.args {
		if fmt.Sprint(prev...) == key {
			return
		}
	}
	st.args = append(st.args, args)
}

// recordingConnector opens lib/pq connections whose statements rec
// records.
type recordingConnector struct {
	pq  *pq.Connector
	rec *recorder
}

func (c recordingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.pq.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &recordingConn{Conn: conn, rec: c.rec}, nil
}

func (c recordingConnector) Driver() driver.Driver { return c.pq.Driver() }

type recordingConn struct {
	driver.Conn
	rec *recorder
}

func (c *recordingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	c.rec.record(query, args, false)
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
}

func (c *recordingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	c.rec.record(query, args, false)
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
}

func (c *recordingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	stmt, err := c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &recordingStmt{Stmt: stmt, query: query, rec: c.rec}, nil
}

// recordingStmt is a prepared statement whose runs rec records.
type recordingStmt struct {
	driver.Stmt
	query string
	rec   *recorder
}

func (s *recordingStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.rec.record(s.query, args, true)
	return s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
}

func (s *recordingStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.rec.record(s.query, args, true)
	return s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (c *recordingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c *recordingConn) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := c.Conn.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

// openRecording opens dbURL as a store whose statements rec records.
func openRecording(t *testing.T, dbURL string, rec *recorder) *store.DB {
	t.Helper()
	connector, err := pq.NewConnector(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	raw := sql.OpenDB(recordingConnector{pq: connector, rec: rec})
	raw.SetMaxOpenConns(4)
	t.Cleanup(func() { raw.Close() })
	return store.Wrap(raw)
}

// executionTime runs the statement under EXPLAIN ANALYZE and returns the
// execution time PostgreSQL reports, in milliseconds.
func executionTime(t *testing.T, db *sql.DB, query string, args []any) float64 {
	t.Helper()
	var out string
	if err := db.QueryRow("EXPLAIN (ANALYZE, FORMAT JSON) "+query, args...).Scan(&out); err != nil {
		t.Fatalf("explain analyze %s: %v", oneLine(query), err)
	}
	var plans []struct {
		ExecutionTime float64 `json:"Execution Time"`
	}
	if err := json.Unmarshal([]byte(out), &plans); err != nil || len(plans) != 1 {
		t.Fatalf("explain analyze output %s: %v", out, err)
	}
	return plans[0].ExecutionTime
}

// planNode is a node of an EXPLAIN (FORMAT JSON) plan.
type planNode struct {
	NodeType    string  `json:"Node Type"`
	Relation    string  `json:"Relation Name"`
	IndexName   string  `json:"Index Name"`
	IndexCond   string  `json:"Index Cond"`
	RecheckCond string  `json:"Recheck Cond"`
	Filter      string  `json:"Filter"`
	PlanRows    float64 `json:"Plan Rows"`
	// Parent is how the node feeds its parent: "Outer" or "Inner" for
	// its input, "InitPlan" or "SubPlan" for a subquery.
	Parent string     `json:"Parent Relationship"`
	Plans  []planNode `json:"Plans"`
}

func explain(t *testing.T, db *sql.DB, query string, args []any) planNode {
	t.Helper()
	var out string
	if err := db.QueryRow("EXPLAIN (FORMAT JSON) "+query, args...).Scan(&out); err != nil {
		t.Fatalf("explain %s: %v", oneLine(query), err)
	}
	return parsePlan(t, out)
}

// parsePlan returns the plan of the output of EXPLAIN (FORMAT JSON).
func parsePlan(t *testing.T, out string) planNode {
	t.Helper()
	var plans []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal([]byte(out), &plans); err != nil || len(plans) != 1 {
		t.Fatalf("explain output %s: %v", out, err)
	}
	return plans[0].Plan
}

// explainGeneric returns the generic plan of query, the one PostgreSQL may
// keep for a prepared statement whatever its arguments, as it runs with
// args.
func explainGeneric(t *testing.T, db *sql.DB, query string, args []any) planNode {
	t.Helper()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// EXECUTE takes no bound parameters: the arguments are written as
	// literals, whose types the prepared statement gives them.
	literals := make([]string, len(args))
	for i, a := range args {
		literals[i] = sqlLiteral(t, a)
	}
	// A statement without parameters is executed without parentheses.
	execute := "EXECUTE generic_plan_check"
	if len(literals) > 0 {
		execute += "(" + strings.Join(literals, ", ") + ")"
	}
	var out string
	for _, stmt := range []string{
		"DEALLOCATE ALL",
		"SET plan_cache_mode = force_generic_plan",
		"PREPARE generic_plan_check AS " + query,
		"EXPLAIN (FORMAT JSON) " + execute,
		"DEALLOCATE generic_plan_check",
		"RESET plan_cache_mode",
	} {
		if strings.HasPrefix(stmt, "EXPLAIN") {
			err = conn.QueryRowContext(ctx, stmt).Scan(&out)
		} else {
			_, err = conn.ExecContext(ctx, stmt)
		}
		if err != nil {
			t.Fatalf("%s: %v\n  in %s", oneLine(stmt), err, oneLine(query))
		}
	}
	return parsePlan(t, out)
}

// sqlLiteral writes a statement argument, as the driver passes it, as an
// SQL literal.
func sqlLiteral(t *testing.T, v any) string {
	t.Helper()
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	switch v := v.(type) {
	case nil:
		return "NULL"
	case string:
		return quote(v)
	case []byte:
		return quote(`\x` + hex.EncodeToString(v))
	case int64, float64:
		return fmt.Sprint(v)
	case bool:
		return strconv.FormatBool(v)
	case time.Time:
		return quote(v.Format(time.RFC3339Nano))
	}
	t.Fatalf("no SQL literal for the argument %#v", v)
	return ""
}

// blocking are the nodes that read their whole input before they return a
// row, so a LIMIT above them does not bound what they read.
var blocking = map[string]bool{"Sort": true, "Aggregate": true, "Hash": true, "Materialize": true, "SetOp": true}

// largeTables returns the tables with largeTableRows rows or more, and
// those of bloatedTablePages pages or more with fewer rows than pages, by
// the planner's statistics.
func largeTables(t *testing.T, db *sql.DB) map[string]bool {
	t.Helper()
	rows, err := db.Query(`
		SELECT relname FROM pg_class
		WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace
		  AND (reltuples >= $1 OR (relpages >= $2 AND reltuples < relpages))`, largeTableRows, bloatedTablePages)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		out[name] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// planViolations returns what is wrong with a plan, given the large tables.
func planViolations(root planNode, largeTables map[string]bool) []string {
	var out []string
	var walk func(n planNode, bounded bool)
	walk = func(n planNode, bounded bool) {
		if n.NodeType == "Limit" {
			// A page whose rows are sorted from a range of an index is
			// allowed; what lies below the sort, and the LIMIT's
			// subqueries, are still checked.
			var input *planNode
			for i, c := range n.Plans {
				if c.Parent == "Outer" {
					input = &n.Plans[i]
				}
			}
			if input != nil && isWindowSort(*input) {
				for _, c := range n.Plans {
					if c.Parent != "Outer" {
						walk(c, false)
					}
				}
				for _, c := range input.Plans {
					walk(c, true)
				}
				return
			}
		}
		switch {
		case n.NodeType == "Limit":
			bounded = true
		case blocking[n.NodeType]:
			bounded = false
		}
		if largeTables[n.Relation] {
			switch n.NodeType {
			case "Seq Scan":
				out = append(out, fmt.Sprintf("sequential scan of %s", n.Relation))
			case "Index Scan", "Index Only Scan", "Bitmap Heap Scan":
				if n.IndexCond == "" && n.RecheckCond == "" && !bounded {
					out = append(out, fmt.Sprintf("%s of all of %s (%s) without a LIMIT bounding it", n.NodeType, n.Relation, n.IndexName))
				}
			}
		}
		if n.NodeType == "Sort" && !bounded {
			if rows := inputRows(n); rows > maxSortRows {
				out = append(out, fmt.Sprintf("sort of %.0f estimated rows without a LIMIT", rows))
			}
		}
		for _, c := range n.Plans {
			walk(c, bounded)
		}
	}
	walk(root, false)
	return out
}

// maxWindowSortRows is the largest estimated input of a window sort (see
// isWindowSort).
const maxWindowSortRows = 50000

// isWindowSort tells whether n sorts, for a page, the rows of one range of
// an index, such as the stakers updated since a time put in address order:
// the planner chooses it over walking the order's index when the range
// holds few of the table's rows, so its size is the range's (recent
// activity), not the table's, up to maxWindowSortRows estimated rows.
func isWindowSort(n planNode) bool {
	if n.NodeType != "Sort" || len(n.Plans) != 1 || inputRows(n) > maxWindowSortRows {
		return false
	}
	in := n.Plans[0]
	for in.NodeType == "Result" && len(in.Plans) == 1 {
		in = in.Plans[0]
	}
	switch in.NodeType {
	case "Index Scan", "Index Only Scan":
		return in.IndexCond != ""
	case "Bitmap Heap Scan":
		return in.RecheckCond != ""
	}
	return false
}

func inputRows(n planNode) float64 {
	if len(n.Plans) == 0 {
		return n.PlanRows
	}
	return n.Plans[0].PlanRows
}

func indentPlan(n planNode) string {
	var b strings.Builder
	var walk func(n planNode, depth int)
	walk = func(n planNode, depth int) {
		fmt.Fprintf(&b, "    %s%s", strings.Repeat("  ", depth), n.NodeType)
		if n.Relation != "" {
			fmt.Fprintf(&b, " on %s", n.Relation)
		}
		if n.IndexName != "" {
			fmt.Fprintf(&b, " using %s", n.IndexName)
		}
		fmt.Fprintf(&b, " (rows %.0f)", n.PlanRows)
		for _, cond := range []string{n.IndexCond, n.RecheckCond, n.Filter} {
			if cond != "" {
				fmt.Fprintf(&b, " [%s]", cond)
			}
		}
		b.WriteString("\n")
		for _, c := range n.Plans {
			walk(c, depth+1)
		}
	}
	walk(n, 0)
	return b.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func describeArgs(args []any) string {
	parts := make([]string, len(args))
	for i, a := range args {
		s := fmt.Sprint(a)
		if len(s) > 60 {
			s = s[:60] + "..."
		}
		parts[i] = fmt.Sprintf("$%d=%s", i+1, s)
	}
	return strings.Join(parts, " ")
}
