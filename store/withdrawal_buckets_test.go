package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// TestWithdrawalPagesFromGivenBuckets checks that ListWithdrawalsWith
// asks for a list's bucket counts for its deep pages only, and that the
// counts read once serve every deep page of the list: each page is the
// plain ordering's, with every status, for the whole list, an operator's
// and a strategy's, up to and past the end.
func TestWithdrawalPagesFromGivenBuckets(t *testing.T) {
	db := maintainedWorld(t)
	ctx := context.Background()
	defer store.SetBucketSkip(100)()
	for _, f := range listFilters(t, db) {
		kept, err := db.WithdrawalBucketCounts(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		asked := 0
		given := func(_ context.Context, g store.WithdrawalFilter) (store.WithdrawalBuckets, error) {
			if g != f {
				t.Fatalf("asked for the buckets of %+v reading %+v", g, f)
			}
			asked++
			return kept, nil
		}
		var total int
		if err := storetest.SQL(t, db).GetContext(ctx, &total, `SELECT count(*) FROM (`+strings.TrimSuffix(plainPage, "LIMIT 12 OFFSET $4")+`) x`, f.DelegatedTo, f.Strategy, string(f.Status)); err != nil {
			t.Fatal(err)
		}
		skips := []int{0, 99, 100, 101, total / 2, total - 12, total - 1, total, total + 5}
		deep := 0
		for _, skip := range skips {
			if skip < 0 {
				continue
			}
			if skip >= 100 {
				deep++
			}
			got, err := db.ListWithdrawalsWith(ctx, f, store.Page{Skip: skip, Take: 12}, given)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			if err := storetest.SQL(t, db).SelectContext(ctx, &want, plainPage, f.DelegatedTo, f.Strategy, string(f.Status), skip); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%+v skip %d: %d rows; want %d", f, skip, len(got), len(want))
			}
			for i := range got {
				if got[i].WithdrawalRoot != want[i] {
					t.Fatalf("%+v skip %d: row %d is %s; want %s", f, skip, i, got[i].WithdrawalRoot, want[i])
				}
			}
		}
		if asked != deep {
			t.Errorf("%+v: buckets asked for %d times; want once per deep page, %d", f, asked, deep)
		}
	}
}
