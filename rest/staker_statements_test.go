package rest

import (
	"strconv"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/apikey"
	"github.com/stakegraph/stakegraph/graph"
)

// TestStakerListStatements checks that a page of stakers with their
// shares, and their TVL, takes as many SQL statements with fifty stakers
// as with five, on both routes that list stakers: their shares are read
// for the whole page in one batch. The compiled operations write such a page's
// stakers one after the other, so a page whose shares were not loaded
// for it at once would read them with a statement per staker.
func TestStakerListStatements(t *testing.T) {
	db := demoDB(t)
	// A batch window generous enough that a loaded machine does not
	// split the page's batch.
	exec := graph.NewExecutor(db, graph.Options{Now: func() time.Time { return demoNow }, BatchWait: 20 * time.Millisecond})
	c := newClientOf(t, db, apikey.Options{}, exec)
	var avs page
	c.okEE(t, "/avs?sortByTotalStakers=desc&take=1", &avs)
	for _, list := range []string{"/stakers", "/avs/" + avs.Data[0]["address"].(string) + "/stakers"} {
		for _, tvl := range []string{"false", "true"} {
			statements := map[int]int64{}
			for _, take := range []int{5, 50} {
				target := list + "?withTvl=" + tvl + "&take=" + strconv.Itoa(take)
				// The fewest of a few requests: the API key check reads
				// the database now and then too.
				for range 3 {
					var p page
					before := db.StatementCount()
					c.okEE(t, target, &p)
					n := db.StatementCount() - before
					if len(p.Data) != take {
						t.Fatalf("GET %s: %d stakers; the test needs %d", target, len(p.Data), take)
					}
					if old, ok := statements[take]; !ok || n < old {
						statements[take] = n
					}
				}
			}
			if statements[50] != statements[5] {
				t.Errorf("GET %s?withTvl=%s: %d statements for 50 stakers, %d for 5", list, tvl, statements[50], statements[5])
			}
		}
	}
}
