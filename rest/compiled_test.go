package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"sync"
	"testing"

	"github.com/stakegraph/stakegraph/graph"
)

// differentialExecutor runs every operation three times: as compiled code
// alone, with /graphql's interpreter alone and through gqlgen's executor
// alone, and records any difference. The
// route tests run through it, so that each route's operation is compared
// over the spread of parameters those tests send. It answers with the
// general executor's result.
type differentialExecutor struct {
	exec *graph.Executor

	mu       sync.Mutex
	seen     map[string]bool // the operations and variables compared
	compared map[string]int  // compiled answers compared, by query
	declined []string        // operations the compiled code declined though gqlgen answered them
	differ   []string        // operations whose two answers differ
}

func (d *differentialExecutor) Execute(ctx context.Context, query string, vars map[string]any) (json.RawMessage, error) {
	// The route tests send many requests more than once (paging through
	// a list, checking a detail against it): each operation and set of
	// variables is compared once, the three runs side by side.
	key, _ := json.Marshal(vars)
	d.mu.Lock()
	seen := d.seen[query+"\x00"+string(key)]
	d.seen[query+"\x00"+string(key)] = true
	d.mu.Unlock()
	if seen {
		return d.exec.ExecuteUncompiled(ctx, query, vars)
	}
	var compiled, interpreted json.RawMessage
	var ok, interpretedOK bool
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		compiled, ok = d.exec.ExecuteCompiled(ctx, query, vars)
	}()
	go func() {
		defer wg.Done()
		interpreted, interpretedOK = d.exec.ExecuteInterpreted(ctx, query, vars)
	}()
	general, err := d.exec.ExecuteUncompiled(ctx, query, vars)
	wg.Wait()
	d.mu.Lock()
	defer d.mu.Unlock()
	name := operationName(query)
	d.record(name, vars, "interpreted", interpreted, interpretedOK, general, err)
	if d.record(name, vars, "compiled", compiled, ok, general, err) {
		d.compared[query]++
	}
	return general, err
}

// record records the comparison of one fast path's answer (data, or
// !answered when it declined) with gqlgen's (general, err), and reports
// whether the fast path answered alike. It runs with d.mu held.
func (d *differentialExecutor) record(name string, vars map[string]any, path string, data json.RawMessage, answered bool, general json.RawMessage, err error) bool {
	switch {
	case answered && err != nil:
		d.differ = append(d.differ, fmt.Sprintf("%s with %v: %s answered, gqlgen's executor failed: %v", name, vars, path, err))
	case answered && !bytes.Equal(data, general):
		d.differ = append(d.differ, fmt.Sprintf("%s with %v:\n%s %s\ngqlgen %s", name, vars, path, data, general))
	case answered:
		return true
	case err == nil:
		d.declined = append(d.declined, fmt.Sprintf("%s with %v (%s)", name, vars, path))
	}
	return false
}

// check fails t for every difference and decline recorded, and for every
// operation of ops (names of embeddedOperations) never compared.
func (d *differentialExecutor) check(t testing.TB, ops []string) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, s := range d.differ {
		t.Errorf("compiled and general execution differ: %s", s)
	}
	for _, s := range d.declined {
		t.Errorf("the compiled code declined an operation that gqlgen's executor answered: %s", s)
	}
	for _, name := range ops {
		if d.compared[embeddedOperations[name]] == 0 {
			t.Errorf("the operation of %s was never compared", name)
		}
	}
}

// slashingOperations are the operations whose routes need the slashing
// era's data, compared by TestSlashingRoutes; restakingRatioOperations
// are compared by TestRestakingRatio. TestRoutesAgainstDemoData compares
// every other.
var (
	slashingOperations       = []string{"avs_operator_sets", "operator_allocations", "operator_set", "slashings"}
	restakingRatioOperations = []string{"restaking_ratio"}
)

// operationsBut returns the names of embeddedOperations but those of
// others, sorted.
func operationsBut(others ...[]string) []string {
	skip := map[string]bool{}
	for _, names := range others {
		for _, name := range names {
			skip[name] = true
		}
	}
	var out []string
	for name := range embeddedOperations {
		if !skip[name] {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// operationName returns the name of the operation a query defines.
func operationName(query string) string {
	for name, q := range embeddedOperations {
		if q == query {
			return name
		}
	}
	return "an operation"
}

// TestDifferentialExecutorCatchesDifferences makes sure the comparison can
// fail: an executor whose compiled answer differs is reported.
func TestDifferentialExecutorCatchesDifferences(t *testing.T) {
	all := operationsBut()
	for _, name := range append(slashingOperations, restakingRatioOperations...) {
		if embeddedOperations[name] == "" {
			t.Errorf("%s is not a route operation", name)
		}
	}
	d := &differentialExecutor{compared: map[string]int{}}
	for _, name := range all {
		d.compared[embeddedOperations[name]] = 1
	}
	d.check(t, all)
	for _, tc := range []struct {
		name   string
		record func(d *differentialExecutor)
	}{
		{"difference", func(d *differentialExecutor) { d.differ = append(d.differ, "x") }},
		{"decline", func(d *differentialExecutor) { d.declined = append(d.declined, "x") }},
		{"never compared", func(d *differentialExecutor) { delete(d.compared, embeddedOperations["stakers"]) }},
	} {
		d := &differentialExecutor{compared: maps.Clone(d.compared)}
		tc.record(d)
		rec := &failureRecorder{TB: t}
		d.check(rec, all)
		if !rec.failed {
			t.Errorf("a recorded %s did not fail the check", tc.name)
		}
	}
}
