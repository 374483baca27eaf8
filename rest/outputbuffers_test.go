package rest

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/graph"
)

// TestOutputBuffersKeepEachAnswer runs compiled operations through a
// context that lends pooled output buffers, as the routes do, and checks
// that each answer stays intact until the buffers are returned, however
// many operations a request runs and however many requests run at once
// (run with -race, a buffer shared by two requests would also be
// reported).
func TestOutputBuffersKeepEachAnswer(t *testing.T) {
	exec := graph.NewExecutor(demoDB(t), graph.Options{Now: func() time.Time { return demoNow }})
	ctx := context.Background()
	type run struct {
		op   string
		vars map[string]any
	}
	runs := []run{
		{embeddedOperations["metrics"], nil},
		{embeddedOperations["avs_addresses"], map[string]any{"searchMode": "contains", "skip": 0, "take": 12}},
		{embeddedOperations["total_stakers"], map[string]any{"withChange": true}},
		{embeddedOperations["avs_addresses"], map[string]any{"searchMode": "contains", "skip": 1, "take": 3}},
	}
	want := make([][]byte, len(runs))
	for i, r := range runs {
		data, err := exec.Execute(ctx, r.op, r.vars)
		if err != nil {
			t.Fatalf("%s: %v", r.op, err)
		}
		want[i] = bytes.Clone(data)
	}
	request := func() error {
		lctx, release := graph.WithOutputBuffers(ctx)
		defer release()
		got := make([][]byte, len(runs))
		for i, r := range runs {
			data, err := exec.Execute(lctx, r.op, r.vars)
			if err != nil {
				return err
			}
			got[i] = data
		}
		for i := range runs {
			if !bytes.Equal(got[i], want[i]) {
				return fmt.Errorf("answer %d after the request's %d operations:\n%s\nwant\n%s", i, len(runs), got[i], want[i])
			}
		}
		return nil
	}
	before := graph.ReadFastPathRuns().CompiledAnswered
	if err := request(); err != nil {
		t.Fatal(err)
	}
	if n := graph.ReadFastPathRuns().CompiledAnswered - before; n < int64(len(runs)) {
		t.Fatalf("%d operations answered by compiled code, want %d: the lent buffers were not used", n, len(runs))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for range 10 {
				if err := request(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	for len(errs) > 0 {
		t.Error(<-errs)
	}
}
