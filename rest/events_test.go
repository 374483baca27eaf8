package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// feedPage is a page of events as the event feeds answer it.
type feedPage struct {
	Data []map[string]any
	Meta meta
}

// validateEEItems checks each event of body against the 200 schema of
// target's route in EigenExplorer's document, which describes one event of
// the page rather than the page.
func validateEEItems(t *testing.T, target string, body []byte) {
	t.Helper()
	router := loadEigenExplorerDoc(t)
	u, err := url.Parse("http://stakegraph.test" + target)
	if err != nil {
		t.Fatal(err)
	}
	route, _, err := router.FindRoute(&http.Request{Method: http.MethodGet, URL: u})
	if err != nil {
		t.Fatalf("GET %s: no route in EigenExplorer's document: %v", target, err)
	}
	schema := route.Operation.Responses.Status(http.StatusOK).Value.Content.Get("application/json").Schema.Value
	var page struct{ Data []any }
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatal(err)
	}
	for i, item := range page.Data {
		if err := schema.VisitJSON(item); err != nil {
			t.Errorf("GET %s: event %d does not match EigenExplorer's document: %v", target, i, err)
			return
		}
	}
}

// feed fetches every event of target, a page of 1000 at a time, checks
// each answer against both documents, and requires the events newest
// first.
func (c *client) feed(t *testing.T, target string) feedPage {
	t.Helper()
	var all feedPage
	for skip := 0; ; skip += 1000 {
		page := withQuery(target, "take=1000&skip="+strconv.Itoa(skip))
		r := c.get(t, page)
		if r.Status != http.StatusOK {
			t.Fatalf("GET %s = %d %s", page, r.Status, r.Body)
		}
		validateEEItems(t, page, r.Body)
		var p feedPage
		d := json.NewDecoder(bytes.NewReader(r.Body))
		d.UseNumber()
		if err := d.Decode(&p); err != nil {
			t.Fatal(err)
		}
		all.Data = append(all.Data, p.Data...)
		all.Meta = p.Meta
		if len(p.Data) < 1000 {
			break
		}
	}
	if all.Meta.Total != len(all.Data) {
		t.Errorf("GET %s: total %d, %d events", target, all.Meta.Total, len(all.Data))
	}
	var last string
	for i, e := range all.Data {
		bt, _ := e["blockTime"].(string)
		if i > 0 && bt > last {
			t.Errorf("GET %s: event %d at %s is newer than the one before it", target, i, bt)
		}
		last = bt
	}
	return all
}

// argOf returns the event's argument name as text.
func argOf(e map[string]any, name string) string {
	args, _ := e["args"].(map[string]any)
	s, _ := args[name].(string)
	return s
}

// strategiesOf returns the strategies of an event's args.
func strategiesOf(e map[string]any) []map[string]any {
	args, _ := e["args"].(map[string]any)
	list, _ := args["strategies"].([]any)
	out := make([]map[string]any, len(list))
	for i, s := range list {
		out[i], _ = s.(map[string]any)
	}
	return out
}

// keyOf identifies an event within a feed.
func keyOf(e map[string]any) string {
	b, _ := json.Marshal(e)
	return string(b)
}

// requireSubset requires sub to be exactly the events of all for which
// keep is true, in the same order.
func requireSubset(t *testing.T, what string, all, sub feedPage, keep func(map[string]any) bool) {
	t.Helper()
	var want []string
	for _, e := range all.Data {
		if keep(e) {
			want = append(want, keyOf(e))
		}
	}
	var got []string
	for _, e := range sub.Data {
		got = append(got, keyOf(e))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s: %d events, want the %d of the global feed that match", what, len(got), len(want))
	}
	if len(want) == 0 {
		t.Errorf("%s: no events; the filter is not exercised", what)
	}
}

// busiest returns the value of column col with the most rows of table in
// [from, to] by time column tcol.
func busiest(t *testing.T, db *store.DB, table, col, tcol string, from, to time.Time) string {
	t.Helper()
	var v string
	if err := storetest.SQL(t, db).Get(&v, `SELECT `+col+` FROM `+table+` WHERE `+tcol+` BETWEEN $1 AND $2
		GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1`, from, to); err != nil {
		t.Fatalf("busiest %s.%s: %v", table, col, err)
	}
	return v
}

// sqlCount runs a count statement.
func sqlCount(t *testing.T, db *store.DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := storetest.SQL(t, db).Get(&n, query, args...); err != nil {
		t.Fatal(err)
	}
	return n
}

func testEventFeeds(t *testing.T, c *client) {
	day := 24 * time.Hour
	from, to := demoNow.Add(-4*day), demoNow.Add(-day)
	window := "startAt=" + url.QueryEscape(from.Format(time.RFC3339)) + "&endAt=" + url.QueryEscape(to.Format(time.RFC3339))
	at := func(path, q string) string { return path + "?" + window + "&" + q }

	t.Run("delegation", func(t *testing.T) {
		all := c.feed(t, at("/events/delegation", "withTokenData=true&withEthValue=true"))
		if want := sqlCount(t, c.db, `SELECT count(*) FROM delegation_events WHERE block_time BETWEEN $1 AND $2`, from, to); all.Meta.Total != want {
			t.Errorf("/events/delegation: total %d, the database has %d", all.Meta.Total, want)
		}
		op := busiest(t, c.db, "delegation_events", "operator_address", "block_time", from, to)
		byOp := c.feed(t, at("/operators/"+op+"/events/delegation", "withTokenData=true&withEthValue=true"))
		requireSubset(t, "operator feed", all, byOp, func(e map[string]any) bool { return argOf(e, "operator") == op })
		staker := argOf(byOp.Data[0], "staker")
		requireSubset(t, "operator feed by staker", all, c.feed(t, at("/operators/"+op+"/events/delegation", "withTokenData=true&withEthValue=true&stakerAddress="+staker)),
			func(e map[string]any) bool { return argOf(e, "operator") == op && argOf(e, "staker") == staker })
		requireSubset(t, "type", all, c.feed(t, at("/events/delegation", "withTokenData=true&withEthValue=true&type=SHARES_DECREASED")),
			func(e map[string]any) bool { return e["type"] == "SHARES_DECREASED" })
		strategy := "0x93c4b944d05dfe6df7645a86cd2206016c51564d"
		requireSubset(t, "strategy", all, c.feed(t, at("/events/delegation", "withTokenData=true&withEthValue=true&strategyAddress="+strategy)),
			func(e map[string]any) bool { return argOf(e, "strategy") == strategy })
		tx, _ := all.Data[len(all.Data)/2]["tx"].(string)
		requireSubset(t, "txHash", all, c.feed(t, at("/events/delegation", "withTokenData=true&withEthValue=true&txHash="+tx)),
			func(e map[string]any) bool { return e["tx"] == tx })
		// The staker's own feed is the global feed's events of the staker.
		var own feedPage
		c.ok(t, at("/stakers/"+staker+"/events/delegation", "take=1000&withTokenData=true&withEthValue=true"), &own)
		for _, e := range own.Data {
			e["args"].(map[string]any)["staker"] = staker
		}
		requireSubset(t, "staker feed", all, own, func(e map[string]any) bool { return argOf(e, "staker") == staker })
		// Without flags the values are left out.
		plain := c.feed(t, at("/events/delegation", "strategyAddress=0x93c4b944d05dfe6df7645a86cd2206016c51564d"))
		for _, e := range plain.Data {
			for _, k := range []string{"underlyingToken", "underlyingValue", "ethValue"} {
				if _, ok := e[k]; ok {
					t.Errorf("/events/delegation: %s without its flag", k)
				}
			}
		}
		c.fails(t, "/operators/0x00000000000000000000000000000000000000ff/events/delegation", http.StatusNotFound, "not_found", "0x00000000000000000000000000000000000000ff")
	})

	t.Run("deposit", func(t *testing.T) {
		all := c.feed(t, at("/events/deposit", "withTokenData=true&withEthValue=true"))
		if want := sqlCount(t, c.db, `SELECT count(*) FROM deposits WHERE block_time BETWEEN $1 AND $2`, from, to); all.Meta.Total != want {
			t.Errorf("/events/deposit: total %d, the database has %d", all.Meta.Total, want)
		}
		for _, e := range all.Data {
			if e["type"] != "DEPOSIT" || argOf(e, "token") == "" || e["ethValue"] == nil {
				t.Fatalf("/events/deposit: %v", e)
			}
		}
		staker := busiest(t, c.db, "deposits", "staker_address", "block_time", from, to)
		requireSubset(t, "staker feed", all, c.feed(t, at("/stakers/"+staker+"/events/deposit", "withTokenData=true&withEthValue=true")),
			func(e map[string]any) bool { return argOf(e, "staker") == staker })
		token := argOf(all.Data[0], "token")
		requireSubset(t, "token", all, c.feed(t, at("/events/deposit", "withTokenData=true&withEthValue=true&tokenAddress="+token)),
			func(e map[string]any) bool { return argOf(e, "token") == token })
		strategy := argOf(all.Data[0], "strategy")
		requireSubset(t, "strategy", all, c.feed(t, at("/events/deposit", "withTokenData=true&withEthValue=true&strategyAddress="+strategy)),
			func(e map[string]any) bool { return argOf(e, "strategy") == strategy })
		// The staker's deposits route lists the same deposits.
		var deposits struct {
			Data []struct{ TransactionHash, StrategyAddress string }
		}
		c.ok(t, "/stakers/"+staker+"/deposits?take=1000", &deposits)
		own := c.feed(t, "/stakers/"+staker+"/events/deposit?startAt="+url.QueryEscape(time.Unix(0, 0).UTC().Format(time.RFC3339))+"&endAt="+url.QueryEscape(time.Unix(0, 0).UTC().Add(30*day).Format(time.RFC3339)))
		if len(own.Data) != 0 {
			t.Errorf("deposits in 1970: %d", len(own.Data))
		}
		if len(deposits.Data) == 0 {
			t.Errorf("staker %s has no deposits", staker)
		}
	})

	t.Run("withdrawal", func(t *testing.T) {
		all := c.feed(t, at("/events/withdrawal", "withTokenData=true&withEthValue=true"))
		want := sqlCount(t, c.db, `SELECT (SELECT count(*) FROM withdrawals WHERE created_at BETWEEN $1 AND $2)
			+ (SELECT count(*) FROM withdrawals WHERE is_completed AND completed_at BETWEEN $1 AND $2)`, from, to)
		if all.Meta.Total != want {
			t.Errorf("/events/withdrawal: total %d, the database has %d", all.Meta.Total, want)
		}
		kinds := map[any]int{}
		for _, e := range all.Data {
			kinds[e["type"]]++
		}
		if kinds["WITHDRAWAL_QUEUED"] == 0 || kinds["WITHDRAWAL_COMPLETED"] == 0 {
			t.Errorf("/events/withdrawal: kinds %v", kinds)
		}
		for _, typ := range []string{"WITHDRAWAL_QUEUED", "WITHDRAWAL_COMPLETED"} {
			requireSubset(t, typ, all, c.feed(t, at("/events/withdrawal", "withTokenData=true&withEthValue=true&type="+typ)),
				func(e map[string]any) bool { return e["type"] == typ })
		}
		staker := busiest(t, c.db, "withdrawals", "staker_address", "created_at", from, to)
		requireSubset(t, "staker feed", all, c.feed(t, at("/stakers/"+staker+"/events/withdrawal", "withTokenData=true&withEthValue=true")),
			func(e map[string]any) bool { return argOf(e, "staker") == staker })
		e := all.Data[0]
		for _, f := range []struct{ param, arg string }{{"withdrawalRoot", "withdrawalRoot"}, {"delegatedTo", "delegatedTo"}, {"withdrawer", "withdrawer"}} {
			v := argOf(e, f.arg)
			requireSubset(t, f.param, all, c.feed(t, at("/events/withdrawal", "withTokenData=true&withEthValue=true&"+f.param+"="+v)),
				func(e map[string]any) bool { return argOf(e, f.arg) == v })
		}
		// The strategies' underlying tokens and values are read only when
		// asked for; the amounts are the same either way.
		var tokens []struct{ Address, Token string }
		if err := storetest.SQL(t, c.db).SelectContext(context.Background(), &tokens,
			`SELECT address, COALESCE(underlying_token, '') AS token FROM strategies`); err != nil {
			t.Fatal(err)
		}
		tokenOf := map[string]string{}
		for _, s := range tokens {
			tokenOf[s.Address] = s.Token
		}
		plain := c.feed(t, at("/events/withdrawal", ""))
		if len(plain.Data) != len(all.Data) {
			t.Fatalf("/events/withdrawal: %d events without token data; want %d", len(plain.Data), len(all.Data))
		}
		valued := 0
		for i := range all.Data {
			with, without := strategiesOf(all.Data[i]), strategiesOf(plain.Data[i])
			if len(with) != len(without) || len(with) == 0 {
				t.Fatalf("event %d: %d strategies with token data, %d without", i, len(with), len(without))
			}
			for j, s := range with {
				o := without[j]
				if s["strategy"] != o["strategy"] || s["shares"] != o["shares"] {
					t.Errorf("event %d strategy %d: %v with token data, %v without", i, j, s, o)
				}
				for _, key := range []string{"underlyingToken", "underlyingValue", "ethValue"} {
					if _, ok := o[key]; ok {
						t.Errorf("event %d strategy %d has %s without token data: %v", i, j, key, o)
					}
				}
				if want := tokenOf[s["strategy"].(string)]; want != "" {
					if s["underlyingToken"] != want {
						t.Errorf("event %d strategy %d: underlyingToken %v; want %s", i, j, s["underlyingToken"], want)
					}
					if v, err := strconv.ParseFloat(fmt.Sprint(s["underlyingValue"]), 64); err == nil && v > 0 {
						valued++
					}
				}
			}
		}
		if valued == 0 {
			t.Error("no withdrawal event strategy has a positive underlyingValue")
		}
		// Each event agrees with its withdrawal.
		var w map[string]any
		c.ok(t, "/withdrawals/"+argOf(e, "withdrawalRoot"), &w)
		if w["stakerAddress"] != argOf(e, "staker") || w["delegatedTo"] != argOf(e, "delegatedTo") {
			t.Errorf("event %v disagrees with its withdrawal %v", e, w)
		}
	})

	t.Run("rewards", func(t *testing.T) {
		all := c.feed(t, at("/events/rewards", "withIndividualAmount=true&withEthValue=true"))
		if want := sqlCount(t, c.db, `SELECT count(*) FROM rewards_submissions WHERE block_time BETWEEN $1 AND $2`, from, to); all.Meta.Total != want {
			t.Errorf("/events/rewards: total %d, the database has %d", all.Meta.Total, want)
		}
		avs := busiest(t, c.db, "rewards_submissions", "avs_address", "block_time", from, to)
		requireSubset(t, "AVS feed", all, c.feed(t, at("/avs/"+avs+"/events/rewards", "withIndividualAmount=true&withEthValue=true")),
			func(e map[string]any) bool { return argOf(e, "avs") == avs })
		hash := argOf(all.Data[0], "rewardsSubmissionHash")
		requireSubset(t, "rewardsSubmissionHash", all, c.feed(t, at("/events/rewards", "withIndividualAmount=true&withEthValue=true&rewardsSubmissionHash="+hash)),
			func(e map[string]any) bool { return argOf(e, "rewardsSubmissionHash") == hash })
		token := argOf(all.Data[0], "rewardsSubmissionToken")
		requireSubset(t, "rewardsSubmissionToken", all, c.feed(t, at("/events/rewards", "withIndividualAmount=true&withEthValue=true&rewardsSubmissionToken="+token)),
			func(e map[string]any) bool { return argOf(e, "rewardsSubmissionToken") == token })
		// Each strategy's amounts add up to at most the submission's amount.
		for _, e := range all.Data {
			args := e["args"].(map[string]any)
			for _, s := range args["strategies"].([]any) {
				if _, ok := s.(map[string]any)["amount"]; !ok {
					t.Fatalf("strategy without amount: %v", s)
				}
			}
		}
		plain := c.feed(t, at("/events/rewards", ""))
		for _, e := range plain.Data {
			for _, s := range e["args"].(map[string]any)["strategies"].([]any) {
				if _, ok := s.(map[string]any)["amount"]; ok {
					t.Fatalf("amount without withIndividualAmount: %v", s)
				}
			}
			if _, ok := e["ethValue"]; ok {
				t.Fatalf("ethValue without withEthValue: %v", e)
			}
		}
		c.fails(t, "/avs/0x00000000000000000000000000000000000000ff/events/rewards", http.StatusNotFound, "not_found", "0x00000000000000000000000000000000000000ff")
	})

	t.Run("registration", func(t *testing.T) {
		all := c.feed(t, at("/events/registration-status", ""))
		if want := sqlCount(t, c.db, `SELECT count(*) FROM registration_events WHERE block_time BETWEEN $1 AND $2`, from, to); all.Meta.Total != want {
			t.Errorf("/events/registration-status: total %d, the database has %d", all.Meta.Total, want)
		}
		for _, status := range []string{"REGISTERED", "DEREGISTERED"} {
			requireSubset(t, status, all, c.feed(t, at("/events/registration-status", "status="+status)),
				func(e map[string]any) bool { return argOf(e, "status") == status })
		}
		avs := busiest(t, c.db, "registration_events", "avs_address", "block_time", from, to)
		byAVS := c.feed(t, at("/avs/"+avs+"/events/registration-status", ""))
		requireSubset(t, "AVS feed", all, byAVS, func(e map[string]any) bool { return argOf(e, "avs") == avs })
		op := argOf(byAVS.Data[0], "operator")
		requireSubset(t, "operator feed", all, c.feed(t, at("/operators/"+op+"/events/registration-status", "")),
			func(e map[string]any) bool { return argOf(e, "operator") == op })
		requireSubset(t, "AVS feed by operator", all, c.feed(t, at("/avs/"+avs+"/events/registration-status", "operatorAddress="+op)),
			func(e map[string]any) bool { return argOf(e, "operator") == op && argOf(e, "avs") == avs })
		requireSubset(t, "operator feed by AVS", all, c.feed(t, at("/operators/"+op+"/events/registration-status", "avsAddress="+avs)),
			func(e map[string]any) bool { return argOf(e, "operator") == op && argOf(e, "avs") == avs })
		c.fails(t, "/operators/0x00000000000000000000000000000000000000ff/events/registration-status", http.StatusNotFound, "not_found", "0x00000000000000000000000000000000000000ff")
		c.fails(t, "/avs/0x00000000000000000000000000000000000000ff/events/registration-status", http.StatusNotFound, "not_found", "0x00000000000000000000000000000000000000ff")
	})

	t.Run("defaults_and_errors", func(t *testing.T) {
		// Without dates, the 7 days ending now.
		var recent feedPage
		c.ok(t, "/events/delegation?take=1", &recent)
		if want := sqlCount(t, c.db, `SELECT count(*) FROM delegation_events WHERE block_time BETWEEN $1 AND $2`, demoNow.Add(-7*day), demoNow); recent.Meta.Total != want {
			t.Errorf("/events/delegation: total %d, the database has %d in the last 7 days", recent.Meta.Total, want)
		}
		bad := http.StatusUnprocessableEntity
		for _, target := range []string{"/events/delegation", "/events/deposit", "/events/withdrawal", "/events/rewards", "/events/registration-status"} {
			c.fails(t, target+"?startAt="+url.QueryEscape(demoNow.Add(-31*day).Format(time.RFC3339))+"&endAt="+url.QueryEscape(demoNow.Format(time.RFC3339)), bad, "unprocessable_entity", "30 days")
			c.fails(t, target+"?txHash=0x12", bad, "unprocessable_entity", "txHash")
			c.fails(t, target+"?take=1001", bad, "unprocessable_entity", "take")
		}
		c.fails(t, "/events/withdrawal?type=WITHDRAWAL", bad, "unprocessable_entity", "type")
		c.fails(t, "/events/registration-status?status=ACTIVE", bad, "unprocessable_entity", "status")
		c.fails(t, "/events/rewards?rewardsSubmissionToken=0x1", bad, "unprocessable_entity", "rewardsSubmissionToken")
		c.fails(t, "/stakers/0x12/events/deposit", bad, "unprocessable_entity", "address")
	})
}
