package election_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/election"
	"github.com/stakegraph/stakegraph/internal/syncbuffer"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// waitFor waits until ok holds, failing the test after a minute: the
// conditions are met within a few intervals, and a minute only bounds a
// broken run.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// candidate is one process's elector in a test, with its work: the work
// counts how many candidates run it at once.
type candidate struct {
	e      *election.Elector
	cancel context.CancelFunc
	done   chan error
	// working is 1 while this candidate's work runs.
	working atomic.Int32
	log     syncbuffer.Buffer
}

func start(t *testing.T, db *store.DB, name string, running *atomic.Int32, overlaps *atomic.Int32, work func(context.Context) error) *candidate {
	t.Helper()
	c := &candidate{done: make(chan error, 1)}
	c.e = election.New(election.Config{
		DB: db, Key: 42, Role: "test", Name: name,
		RetryInterval: 10 * time.Millisecond, CheckInterval: 10 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&c.log, nil)),
	})
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go func() {
		c.done <- c.e.Run(ctx, func(ctx context.Context) error {
			if running.Add(1) > 1 && overlaps != nil {
				overlaps.Add(1)
			}
			c.working.Store(1)
			defer func() { c.working.Store(0); running.Add(-1) }()
			if work != nil {
				return work(ctx)
			}
			<-ctx.Done()
			return nil
		})
	}()
	t.Cleanup(func() { cancel(); <-c.done })
	return c
}

func TestOneLeaderAtATimeAndTakeOver(t *testing.T) {
	db := storetest.New(t)
	var running, overlaps atomic.Int32
	a := start(t, db, "candidate a", &running, &overlaps, nil)
	b := start(t, db, "candidate b", &running, &overlaps, nil)
	c := start(t, db, "candidate c", &running, &overlaps, nil)
	all := []*candidate{a, b, c}
	leader := func() *candidate {
		for _, x := range all {
			if x.e.Leading() && x.working.Load() == 1 {
				return x
			}
		}
		return nil
	}
	waitFor(t, "a candidate leads", func() bool { return leader() != nil })
	first := leader()
	holder, held, err := db.LockHolder(context.Background(), 42)
	if err != nil || !held {
		t.Fatalf("LockHolder = %q, %v, %v; want the leader", holder, held, err)
	}
	// The others campaign while it leads, and stand by.
	for _, x := range all {
		if x != first {
			waitFor(t, x.e.Name()+" stands by", func() bool { return strings.Contains(x.log.String(), "standing by") })
		}
	}
	if n := running.Load(); n != 1 {
		t.Fatalf("%d candidates work at once", n)
	}

	// The leader stops: another takes over.
	first.cancel()
	if err := <-first.done; err != nil {
		t.Fatalf("Run of the stopped leader: %v", err)
	}
	first.done <- nil // for the cleanup
	waitFor(t, "another candidate leads", func() bool { x := leader(); return x != nil && x != first })
	second := leader()
	if got, _, _ := db.LockHolder(context.Background(), 42); got == holder {
		t.Errorf("the lock holder is still %q", got)
	}
	if second.e.Terms() != 1 || first.e.Terms() != 1 {
		t.Errorf("terms: first %d, second %d; want 1 each", first.e.Terms(), second.e.Terms())
	}
	if n := overlaps.Load(); n != 0 {
		t.Errorf("%d times two candidates worked at once", n)
	}
	for _, x := range all {
		if log := x.log.String(); strings.Contains(log, "level=WARN") || strings.Contains(log, "level=ERROR") {
			t.Errorf("a candidate logged a failure:\n%s", log)
		}
	}
	if log := second.log.String(); !strings.Contains(log, `msg="standing by: another process leads" election.role=test election.name="`+second.e.Name()+`" leader="`+holder+`"`) {
		t.Errorf("the second leader's log does not name the first while it stood by:\n%s", log)
	}
}

func TestLeaderCutOffStopsAndAnotherTakesOver(t *testing.T) {
	db := storetest.New(t)
	proxy, viaProxy := storetest.NewDBProxy(t, db.URL())
	cutOff, err := store.Open(context.Background(), viaProxy)
	if err != nil {
		t.Fatal(err)
	}
	defer cutOff.Close()

	var running atomic.Int32
	stopped := make(chan struct{})
	var once sync.Once
	a := start(t, cutOff, "candidate a", &running, nil, func(ctx context.Context) error {
		<-ctx.Done()
		once.Do(func() { close(stopped) })
		return nil
	})
	waitFor(t, "a leads", func() bool { return a.working.Load() == 1 })
	b := start(t, db, "candidate b", &running, nil, nil)
	time.Sleep(50 * time.Millisecond)
	if b.e.Leading() {
		t.Fatal("b leads while a holds the lock")
	}

	// a's connections break: its session ends, the server releases the
	// lock, a stops its work and b takes over.
	proxy.Cut(true)
	<-stopped
	waitFor(t, "b leads", func() bool { return b.working.Load() == 1 })
	waitFor(t, "a knows it does not lead", func() bool { return !a.e.Leading() })

	// a campaigns again once the database is back, and stands by.
	proxy.Cut(false)
	time.Sleep(50 * time.Millisecond)
	if a.e.Leading() || !b.e.Leading() || a.e.Terms() != 1 || b.e.Terms() != 1 {
		t.Errorf("after the outage: a leads %v (%d terms), b leads %v (%d terms); want b, one term each\na:\n%s\nb:\n%s",
			a.e.Leading(), a.e.Terms(), b.e.Leading(), b.e.Terms(), a.log.String(), b.log.String())
	}
}

func TestFailedWorkReleasesTheLock(t *testing.T) {
	db := storetest.New(t)
	var running atomic.Int32
	failure := errors.New("the node serves another chain")
	a := start(t, db, "candidate a", &running, nil, func(context.Context) error { return failure })
	if err := <-a.done; !errors.Is(err, failure) {
		t.Fatalf("Run = %v, want the work's error", err)
	}
	a.done <- nil
	if a.e.Leading() {
		t.Error("a still leads after its work failed")
	}
	b := start(t, db, "candidate b", &running, nil, nil)
	waitFor(t, "b leads", func() bool { return b.working.Load() == 1 })
}
