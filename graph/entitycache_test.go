package graph

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeVersion is a data version that a test sets.
type fakeVersion struct {
	mu      sync.Mutex
	v       int64
	unknown bool
}

func (f *fakeVersion) get() (int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.v, !f.unknown
}

func (f *fakeVersion) set(v int64, known bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.v, f.unknown = v, !known
}

// recordingFetch answers "value of k" for keys not starting with "x" (those
// are absent), and records the keys of each call.
type recordingFetch struct {
	calls [][]string
	err   error
}

func (r *recordingFetch) fetch(_ context.Context, keys []string) (map[string]string, error) {
	r.calls = append(r.calls, slices.Clone(keys))
	if r.err != nil {
		return nil, r.err
	}
	out := map[string]string{}
	for _, k := range keys {
		if k[0] != 'x' {
			out[k] = "value of " + k
		}
	}
	return out, nil
}

func TestEntityCacheFetchesOnlyWhatItLacks(t *testing.T) {
	ctx := context.Background()
	ver := &fakeVersion{v: 7}
	c := NewEntityCache(ver.get, 0)
	rec := &recordingFetch{}
	fetch := cachedFetch(c, "things", rec.fetch)

	check := func(keys []string, wantFetched []string, want map[string]string) {
		t.Helper()
		calls := len(rec.calls)
		got, err := fetch(ctx, keys)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got, want) {
			t.Errorf("fetch(%q) = %q, want %q", keys, got, want)
		}
		var fetched []string
		if len(rec.calls) > calls {
			fetched = rec.calls[len(rec.calls)-1]
		}
		if !slices.Equal(fetched, wantFetched) {
			t.Errorf("fetch(%q) asked the database for %q, want %q", keys, fetched, wantFetched)
		}
	}
	check([]string{"a", "b", "x1"}, []string{"a", "b", "x1"}, map[string]string{"a": "value of a", "b": "value of b"})
	// Known keys, absent ones included, are answered from memory.
	check([]string{"b", "x1", "c"}, []string{"c"}, map[string]string{"b": "value of b", "c": "value of c"})
	check([]string{"a", "b", "c", "x1"}, nil, map[string]string{"a": "value of a", "b": "value of b", "c": "value of c"})
	// Another relation does not see these keys.
	other := &recordingFetch{}
	if _, err := cachedFetch(c, "others", other.fetch)(ctx, []string{"a"}); err != nil || len(other.calls) != 1 {
		t.Errorf("another relation: %d calls, error %v; want 1 call", len(other.calls), err)
	}
	// A new data version empties the cache.
	ver.set(8, true)
	check([]string{"a", "b"}, []string{"a", "b"}, map[string]string{"a": "value of a", "b": "value of b"})
	check([]string{"a"}, nil, map[string]string{"a": "value of a"})
	// While the version is unknown, everything is fetched and nothing kept.
	ver.set(8, false)
	check([]string{"a"}, []string{"a"}, map[string]string{"a": "value of a"})
	ver.set(9, false)
	check([]string{"d"}, []string{"d"}, map[string]string{"d": "value of d"})
	ver.set(9, true)
	check([]string{"d"}, []string{"d"}, map[string]string{"d": "value of d"})
	check([]string{"d"}, nil, map[string]string{"d": "value of d"})
	// Errors are returned, and not cached.
	rec.err = errors.New("database down")
	if _, err := fetch(ctx, []string{"e"}); !errors.Is(err, rec.err) {
		t.Errorf("error %v, want %v", err, rec.err)
	}
	rec.err = nil
	check([]string{"e"}, []string{"e"}, map[string]string{"e": "value of e"})
}

// TestEntityCacheKeepsNothingReadAtAnOldVersion: a value read while the
// version was v is not kept once the version has moved on, and an older
// reading never replaces newer entries.
func TestEntityCacheKeepsNothingReadAtAnOldVersion(t *testing.T) {
	ctx := context.Background()
	ver := &fakeVersion{v: 1}
	c := NewEntityCache(ver.get, 0)
	n := 0
	fetch := cachedFetch(c, "things", func(_ context.Context, keys []string) (map[string]int, error) {
		n++
		ver.set(2, true) // a commit lands while the batch reads
		return map[string]int{keys[0]: n}, nil
	})
	if _, err := fetch(ctx, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if c.Len() != 0 {
		t.Errorf("%d entries kept from a read at an old version", c.Len())
	}
	things := entityTableOf[int](c, "things")
	things.store(2, map[string]entityValue[int]{"b": {value: 1, found: true}})
	things.store(1, map[string]entityValue[int]{"c": {value: 1, found: true}})
	if hits, _, _, _ := things.lookup([]string{"b", "c"}); len(hits) != 1 || !hits["b"].found {
		t.Errorf("hits %v, want only b", hits)
	}
}

func TestEntityCacheBound(t *testing.T) {
	ver := &fakeVersion{v: 1}
	c := NewEntityCache(ver.get, 3)
	r, q := entityTableOf[string](c, "r"), entityTableOf[int](c, "q")
	r.store(1, map[string]entityValue[string]{"a": {}, "b": {}})
	q.store(1, map[string]entityValue[int]{"c": {}})
	r.store(1, map[string]entityValue[string]{"a": {value: "again"}})
	if c.Len() != 3 {
		t.Fatalf("%d entries, want 3", c.Len())
	}
	r.store(1, map[string]entityValue[string]{"d": {}})
	if _, ok := q.get("c"); c.Len() != 1 || ok {
		t.Errorf("%d entries after overflowing the bound (c kept: %v), want 1 (every table started again)", c.Len(), ok)
	}
}

// A relation holds values of one type: asking for it with another panics
// at once, naming both, instead of failing a type assertion later.
func TestEntityTableOfOneType(t *testing.T) {
	c := NewEntityCache((&fakeVersion{v: 1}).get, 0)
	if entityTableOf[int](c, "r") != entityTableOf[int](c, "r") {
		t.Error("two tables of one relation")
	}
	defer func() {
		if msg := fmt.Sprint(recover()); !strings.Contains(msg, `relation "r"`) || !strings.Contains(msg, "entityTable[int]") || !strings.Contains(msg, "entityTable[string]") {
			t.Errorf("panic %q", msg)
		}
	}()
	entityTableOf[string](c, "r")
}

func TestNilEntityCacheFetchesEverything(t *testing.T) {
	rec := &recordingFetch{}
	fetch := cachedFetch[string](nil, "things", rec.fetch)
	for range 2 {
		if _, err := fetch(context.Background(), []string{"a"}); err != nil {
			t.Fatal(err)
		}
	}
	if len(rec.calls) != 2 {
		t.Errorf("%d fetches, want 2", len(rec.calls))
	}
}

// A key the cache holds is answered without the loader's batch: with a
// batch window of an hour, only such answers come back at all.
func TestEntityLoaderAnswersCachedKeysAtOnce(t *testing.T) {
	ctx := context.Background()
	ver := &fakeVersion{v: 3}
	c := NewEntityCache(ver.get, 0)
	rec := &recordingFetch{}
	if _, err := cachedFetch(c, "things", rec.fetch)(ctx, []string{"a", "xb"}); err != nil {
		t.Fatal(err)
	}
	l := newEntityLoader(batching{wait: time.Hour}, c, "things", rec.fetch)
	done := make(chan [2]string)
	go func() {
		a, _ := l.Load(ctx, "a")()
		b, _ := l.Load(ctx, "xb")()
		done <- [2]string{a, b}
	}()
	select {
	case got := <-done:
		if got != [2]string{"value of a", ""} {
			t.Errorf("cached keys: %q, want the value of a and nothing for xb", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("cached keys waited for the batch window")
	}
	if len(rec.calls) != 1 {
		t.Errorf("fetches %v, want only the one that filled the cache", rec.calls)
	}

	// A key it does not hold goes through the batch (here a short one).
	l = newEntityLoader(batching{wait: time.Millisecond}, c, "things", rec.fetch)
	if v, err := l.Load(ctx, "c")(); err != nil || v != "value of c" {
		t.Errorf("uncached key: %q %v", v, err)
	}
	if len(rec.calls) != 2 || !slices.Equal(rec.calls[1], []string{"c"}) {
		t.Errorf("fetches %v, want a second one for c", rec.calls)
	}
}
