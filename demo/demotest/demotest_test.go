package demotest_test

import (
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/demo/demotest"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// TestDB checks that a copy of the shared demo data set holds a history
// that ends at Now, and that copies are independent: a change to one is
// not seen by the next. `make test` runs it first, without the race
// detector, so that the shared template is built before the raced packages
// ask for it.
func TestDB(t *testing.T) {
	first := storetest.SQL(t, demotest.DB(t))
	var operators, stakers int
	var last time.Time
	if err := first.QueryRow(`SELECT (SELECT count(*) FROM operators), (SELECT count(*) FROM stakers), (SELECT max(block_time) FROM delegation_events)`).Scan(&operators, &stakers, &last); err != nil {
		t.Fatal(err)
	}
	if operators == 0 || stakers == 0 {
		t.Fatalf("the demo data set has %d operators and %d stakers", operators, stakers)
	}
	if last.After(demotest.Now) || last.Before(demotest.Now.Add(-48*time.Hour)) {
		t.Errorf("the last delegation event is at %s; want within two days before %s", last, demotest.Now)
	}
	if _, err := first.Exec(`CREATE TABLE demotest_marker ()`); err != nil {
		t.Fatal(err)
	}

	second := storetest.SQL(t, demotest.DB(t))
	var marked bool
	if err := second.Get(&marked, `SELECT to_regclass('demotest_marker') IS NOT NULL`); err != nil {
		t.Fatal(err)
	}
	if marked {
		t.Error("a change to one copy of the demo data set shows in the next")
	}
}
