package rest

import (
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/apikey"
	"github.com/stakegraph/stakegraph/graph"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// TestShortPageTotals checks that a page holding the end of its list
// reports the list's total without a count statement, and that this total
// is the one a full page counts: on the lists of one staker, operator or
// AVS and on filtered feeds, a page at the start with room to spare, a
// page of the last row alone, a full page and an empty page past the end
// all report the same total, and only the last two count. Lists whose
// total is a kept figure (all the stakers, all an AVS's stakers) count
// whatever the page.
func TestShortPageTotals(t *testing.T) {
	db := demoDB(t)
	sql := storetest.SQL(t, db)
	from := demoNow.Add(-30 * 24 * time.Hour)
	window := "startAt=" + url.QueryEscape(from.Format(time.RFC3339)) + "&endAt=" + url.QueryEscape(demoNow.Format(time.RFC3339))
	// subject returns a value of col with between 2 and 60 rows of
	// table (where cond holds), the most such rows first.
	subject := func(table, col, cond string, args ...any) string {
		t.Helper()
		var v string
		if err := sql.Get(&v, `SELECT `+col+` FROM `+table+` WHERE `+cond+`
			GROUP BY 1 HAVING count(*) BETWEEN 2 AND 60 ORDER BY count(*) DESC, 1 LIMIT 1`, args...); err != nil {
			t.Fatalf("a subject of %s by %s: %v", table, col, err)
		}
		return v
	}
	eventStaker := subject("delegation_events", "staker_address", "block_time >= $1", from)
	eventOperator := subject("delegation_events", "operator_address", "block_time >= $1", from)
	eventTx := subject("delegation_events", "tx_hash", "block_time >= $1", from)
	withdrawer := subject("withdrawals", "staker_address", "TRUE")
	depositor := subject("deposits", "staker_address", "TRUE")
	avs := subject("avs_operators", "avs_address", "TRUE")
	var busyAVS string
	if err := sql.Get(&busyAVS, `SELECT address FROM avs WHERE total_stakers BETWEEN 2 AND 60 ORDER BY total_stakers DESC, address LIMIT 1`); err != nil {
		t.Fatalf("an AVS with a few stakers: %v", err)
	}

	lists := []struct {
		target string
		kept   bool // the total is a kept figure, always counted
	}{
		{target: "/stakers/" + eventStaker + "/events/delegation?" + window},
		{target: "/operators/" + eventOperator + "/events/delegation?" + window},
		{target: "/events/delegation?txHash=" + eventTx + "&" + window},
		{target: "/stakers/" + withdrawer + "/withdrawals"},
		{target: "/withdrawals?stakerAddress=" + withdrawer},
		{target: "/stakers/" + depositor + "/deposits"},
		{target: "/deposits?stakerAddress=" + depositor},
		{target: "/avs/" + avs + "/operators"},
		{target: "/avs/" + busyAVS + "/stakers", kept: true},
	}
	for _, list := range lists {
		t.Run(strings.SplitN(list.target, "?", 2)[0], func(t *testing.T) {
			// A client without caches of its own: every request reads
			// what it needs. A batch window generous enough that a loaded
			// machine (or the race detector) does not split a page's
			// batches, which would add statements to one request only.
			exec := graph.NewExecutor(db, graph.Options{Now: func() time.Time { return demoNow }, BatchWait: 20 * time.Millisecond})
			c := newClientOf(t, db, apikey.Options{}, exec)
			sep := "?"
			if strings.Contains(list.target, "?") {
				sep = "&"
			}
			// get returns the page at skip and take and the fewest
			// statements of three requests of it (the API key check
			// reads the database now and then too).
			get := func(skip, take int) (page, int64) {
				t.Helper()
				target := list.target + sep + "skip=" + strconv.Itoa(skip) + "&take=" + strconv.Itoa(take)
				var p page
				fewest := int64(-1)
				for range 3 {
					before := db.StatementCount()
					c.ok(t, target, &p)
					if n := db.StatementCount() - before; fewest < 0 || n < fewest {
						fewest = n
					}
				}
				return p, fewest
			}
			short, shortStatements := get(0, 100)
			total := short.Meta.Total
			if total < 2 || len(short.Data) != total {
				t.Fatalf("GET %s: %d rows of %d; the test needs between 2 and 99", list.target, len(short.Data), total)
			}
			last, lastStatements := get(total-1, 100)
			full, fullStatements := get(0, 1)
			past, _ := get(total+5, 100)
			for what, p := range map[string]page{"the last row's page": last, "a full page": full, "an empty page past the end": past} {
				if p.Meta.Total != total {
					t.Errorf("GET %s: %s says the total is %d, a page at the start %d", list.target, what, p.Meta.Total, total)
				}
			}
			if len(last.Data) != 1 || len(full.Data) != 1 || len(past.Data) != 0 {
				t.Errorf("GET %s: %d, %d and %d rows on the last row's page, a full page and past the end", list.target, len(last.Data), len(full.Data), len(past.Data))
			}
			wantShort := fullStatements - 1
			if list.kept {
				wantShort = fullStatements
			}
			if shortStatements != wantShort || lastStatements != wantShort {
				t.Errorf("GET %s: %d statements at the start and %d for the last row; %d for a full page (want %d for a page holding the end)",
					list.target, shortStatements, lastStatements, fullStatements, wantShort)
			}
		})
	}
}
