package replicas

import (
	"context"
	"testing"
)

func TestPickPrefersTheLeastBusyHealthyReplica(t *testing.T) {
	r := New(Database{}, []Database{{}, {}, {}}, 0, nil)
	one, two, three := r.replicas[0], r.replicas[1], r.replicas[2]

	// Equally busy replicas take turns.
	seen := map[*Target]int{}
	for range 30 {
		seen[r.Pick()]++
	}
	if seen[one] != 10 || seen[two] != 10 || seen[three] != 10 {
		t.Errorf("picks of idle replicas: %d, %d, %d; want 10 each", seen[one], seen[two], seen[three])
	}

	// The least busy is picked.
	one.inFlight.Store(3)
	two.inFlight.Store(1)
	three.inFlight.Store(2)
	for range 5 {
		if got := r.Pick(); got != two {
			t.Fatalf("picked %s; want the least busy, replica2", got.Name)
		}
	}

	// A replica that is down is not, and without replicas the primary is.
	two.up.Store(false)
	if got := r.Pick(); got != three {
		t.Errorf("picked %s with replica2 down; want replica3", got.Name)
	}
	one.up.Store(false)
	three.up.Store(false)
	if got := r.Pick(); got != r.primary {
		t.Errorf("picked %s with every replica down; want the primary", got.Name)
	}
}

func TestVersionOfTheDatabasesServingReads(t *testing.T) {
	r := New(Database{}, []Database{{}, {}}, 0, nil)
	if _, err := r.DataVersion(context.Background()); err == nil {
		t.Error("a data version before any poll")
	}
	set := func(tg *Target, v int64, up bool) {
		tg.version.Store(v)
		tg.known.Store(true)
		tg.up.Store(up)
	}
	set(r.primary, 9, true)
	set(r.replicas[0], 8, true)
	set(r.replicas[1], 7, true)
	r.updateVersion()
	if v, err := r.DataVersion(context.Background()); err != nil || v != 8 {
		t.Errorf("with both replicas up: %d, %v; want the newest replica's, 8", v, err)
	}
	r.replicas[0].up.Store(false)
	r.updateVersion()
	if v, _ := r.DataVersion(context.Background()); v != 7 {
		t.Errorf("with replica1 down: %d; want replica2's, 7", v)
	}
	r.replicas[1].up.Store(false)
	r.updateVersion()
	if v, _ := r.DataVersion(context.Background()); v != 9 {
		t.Errorf("with no replica up: %d; want the primary's, 9", v)
	}
}
