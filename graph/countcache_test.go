package graph

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/store"
)

// A total read while a commit lands is not kept, a full count table keeps
// the totals read again over those read once and still takes a total that
// becomes popular, and a new version empties it.
func TestCountCacheVersionsAndBound(t *testing.T) {
	ctx := context.Background()
	ver := &fakeVersion{v: 1}
	c := NewEntityCache(ver.get, 0)
	c.counts.maxEntries = 8
	l := &loaders{entities: c}
	reads := 0
	counter := func(commit bool) func(context.Context) (int, error) {
		return func(context.Context) (int, error) {
			reads++
			if commit {
				ver.set(2, true)
			}
			return reads, nil
		}
	}
	if _, err := cachedCount(l, "things", "a", counter(true))(ctx); err != nil {
		t.Fatal(err)
	}
	if n := c.counts.len(); n != 0 {
		t.Errorf("%d totals kept from a read at an old version", n)
	}
	count := func(key string) int {
		t.Helper()
		n, err := cachedCount(l, "things", key, counter(false))(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	a, b := count("a"), count("b")
	if count("a") != a || count("b") != b {
		t.Errorf("totals of a and b were read again")
	}
	// A burst of totals read once each, many more than the table holds,
	// leaves the totals read again in it.
	for i := range 100 {
		count(fmt.Sprint("once", i))
	}
	if count("a") != a || count("b") != b {
		t.Errorf("totals read once pushed out a and b")
	}
	if n := c.counts.len(); n > 8 {
		t.Errorf("%d totals held, more than the bound of 8", n)
	}
	// A total that becomes popular once the table is full gets in.
	p := count("popular")
	if count("popular") != p || count("popular") != p {
		t.Errorf("a full table did not take a total read again")
	}
	// Another relation with the same key is another total.
	if n, _ := cachedCount(l, "others", "a", counter(false))(ctx); n == a {
		t.Errorf("relation others answered relation things' total")
	}
	ver.set(3, true)
	if count("a") == a {
		t.Errorf("a new version answered the old total")
	}
	if n := c.counts.len(); n != 1 {
		t.Errorf("%d totals held after a new version and one read, want 1", n)
	}
	// With the version unknown nothing is kept.
	ver.set(3, false)
	if count("z") == count("z") {
		t.Errorf("a total was kept while the version was unknown")
	}
}

// Filters with pointer fields are keyed by what they point to: the same
// filter from two requests shares its total, and another value does not.
func TestCountKeysOfFiltersWithPointers(t *testing.T) {
	yes, yesAgain, no := true, true, false
	reg := func(b *bool) store.RegistrationEventFilter {
		return store.RegistrationEventFilter{AVS: "0xa", Registered: b}
	}
	if registrationEventsKeyOf(reg(&yes)) != registrationEventsKeyOf(reg(&yesAgain)) {
		t.Error("two requests' equal registration filters have different keys")
	}
	if registrationEventsKeyOf(reg(&yes)) == registrationEventsKeyOf(reg(&no)) ||
		registrationEventsKeyOf(reg(&yes)) == registrationEventsKeyOf(reg(nil)) {
		t.Error("registration filters for other statuses share a key")
	}
	day := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	dayAgain, later := day, day.Add(time.Nanosecond)
	sl := func(start, end *time.Time) store.SlashingFilter {
		return store.SlashingFilter{Operator: "0xb", Start: start, End: end}
	}
	if slashingsKeyOf(sl(&day, nil)) != slashingsKeyOf(sl(&dayAgain, nil)) {
		t.Error("two requests' equal slashing filters have different keys")
	}
	if slashingsKeyOf(sl(&day, nil)) == slashingsKeyOf(sl(&later, nil)) ||
		slashingsKeyOf(sl(&day, nil)) == slashingsKeyOf(sl(nil, &day)) {
		t.Error("other slashing ranges share a key")
	}
}
