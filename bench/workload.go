package bench

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Class groups operations by the targets that apply to them.
type Class string

// The operation classes.
const (
	// ClassList is a REST route answering records: lists, one AVS's
	// operators or rewards, a staker's events, the reward strategies.
	ClassList Class = "list"
	// ClassMetrics is a REST route under /metrics.
	ClassMetrics Class = "metrics"
	// ClassGraphQL is a GraphQL operation a frontend sends.
	ClassGraphQL Class = "graphql"
)

// Operation is one kind of request with its parameter mix.
type Operation struct {
	// Name is the route ("GET /avs") or the GraphQL operation's name.
	Name  string
	Class Class
	// Weight is the operation's share of the mixed workload.
	Weight int
	// Next makes a request.
	Next func(r *rand.Rand) Request
}

// Operations returns every documented REST route and the four GraphQL
// operations, with parameter mixes drawn from s. The slashing era's
// operations that need operator sets or allocations are left out when s has
// none (data from before the slashing upgrade).
func Operations(s *Sample) []Operation {
	w := workload{s}
	hasSets, hasAllocations := len(s.OperatorSets) > 0, len(s.AllocatingOperators) > 0
	return slices.DeleteFunc([]Operation{
		{"GET /avs", ClassList, 6, w.avsList},
		{"GET /avs/addresses", ClassList, 3, w.avsAddresses},
		{"GET /avs/{address}/operators", ClassList, 6, w.avsOperators},
		{"GET /avs/{address}/rewards", ClassList, 3, w.avsRewards},
		{"GET /operators", ClassList, 6, w.operatorList},
		{"GET /stakers/{address}/events/delegation", ClassList, 10, w.stakerEvents},
		{"GET /withdrawals", ClassList, 8, w.withdrawals},
		{"GET /rewards/strategies", ClassList, 2, w.rewardStrategies},
		{"GET /avs/{address}/operator-sets", ClassList, 3, w.avsOperatorSets},
		{"GET /operator-sets/{avs}/{id}", ClassList, 3, w.operatorSet},
		{"GET /operators/{address}/allocations", ClassList, 2, w.operatorAllocations},
		{"GET /slashings", ClassList, 3, w.slashings},
		{"GET /stakers", ClassList, 3, w.stakerList},
		{"GET /avs/{address}/stakers", ClassList, 3, w.avsStakers},
		{"GET /operators/addresses", ClassList, 2, w.operatorAddresses},
		{"GET /deposits", ClassList, 3, w.deposits},
		{"GET /stakers/{address}/deposits", ClassList, 2, w.stakerDeposits},
		{"GET /stakers/{address}/withdrawals", ClassList, 2, w.stakerWithdrawals},
		{"GET /events/delegation", ClassList, 2, w.eventFeed("/events/delegation")},
		{"GET /events/deposit", ClassList, 2, w.eventFeed("/events/deposit")},
		{"GET /events/withdrawal", ClassList, 2, w.eventFeed("/events/withdrawal")},
		{"GET /events/rewards", ClassList, 1, w.eventFeed("/events/rewards")},
		{"GET /events/registration-status", ClassList, 1, w.eventFeed("/events/registration-status")},
		{"GET /operators/{address}/events/delegation", ClassList, 2, w.operatorEvents},
		{"GET /metrics", ClassMetrics, 6, w.metrics},
		{"GET /metrics/tvl/restaking", ClassMetrics, 3, w.withChange("/metrics/tvl/restaking")},
		{"GET /metrics/tvl/restaking/{strategy}", ClassMetrics, 3, w.strategyTVL},
		{"GET /metrics/total-withdrawals", ClassMetrics, 2, w.withChange("/metrics/total-withdrawals")},
		{"GET /metrics/total-stakers", ClassMetrics, 2, w.withChange("/metrics/total-stakers")},
		{"GET /metrics/deployment-ratio", ClassMetrics, 2, w.withChange("/metrics/deployment-ratio")},
		{"GET /metrics/historical/count-stakers", ClassMetrics, 2, w.stakerHistory},
		{"GraphQL AvsPage", ClassGraphQL, 6, w.avsPage},
		{"GraphQL OperatorPage", ClassGraphQL, 6, w.operatorPage},
		{"GraphQL StakerPage", ClassGraphQL, 8, w.stakerPage},
		{"GraphQL OperatorSetPage", ClassGraphQL, 2, w.operatorSetPage},
	}, func(op Operation) bool {
		switch op.Name {
		case "GET /avs/{address}/operator-sets", "GET /operator-sets/{avs}/{id}", "GraphQL OperatorSetPage":
			return !hasSets
		case "GET /operators/{address}/allocations":
			return !hasAllocations
		}
		return false
	})
}

// Mixed returns a request maker that picks one of ops by weight for each
// request.
func Mixed(ops []Operation) func(*rand.Rand) Request {
	total := 0
	for _, op := range ops {
		total += op.Weight
	}
	return func(r *rand.Rand) Request {
		n := r.IntN(total)
		for _, op := range ops {
			if n < op.Weight {
				return op.Next(r)
			}
			n -= op.Weight
		}
		panic("unreachable")
	}
}

// workload makes the requests of each operation.
type workload struct{ s *Sample }

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

func chance(r *rand.Rand, p float64) bool { return r.Float64() < p }

// query builds a query string, leaving out empty values.
type query url.Values

func (q query) set(name, value string) {
	if value != "" {
		url.Values(q).Set(name, value)
	}
}

func (q query) setBool(name string, p float64, r *rand.Rand) {
	if chance(r, p) {
		q.set(name, "true")
	}
}

func get(path string, q query) Request {
	target := path
	if enc := url.Values(q).Encode(); enc != "" {
		target += "?" + enc
	}
	return Request{Method: http.MethodGet, Target: target}
}

// page sets skip and take: mostly the first page, sometimes a later one
// within total records, sometimes a deep one.
func page(r *rand.Rand, q query, total, deep int) {
	take := 12
	switch x := r.Float64(); {
	case x < 0.15:
		take = 50
	case x < 0.2:
		take = 100
	}
	q.set("take", strconv.Itoa(take))
	switch x := r.Float64(); {
	case x < 0.6:
	case x < 0.9:
		q.set("skip", strconv.Itoa(take*r.IntN(max(total/take, 1))))
	default:
		q.set("skip", strconv.Itoa(r.IntN(max(deep, 1))))
	}
}

// searchText returns text a user would type to find one of names: a
// prefix for startsWith, a piece of a word for contains, or the start of
// an address.
func searchText(r *rand.Rand, names, addresses []string) (text, mode string) {
	if chance(r, 0.2) || len(names) == 0 {
		return pick(r, addresses)[:2+2+r.IntN(4)], pick(r, []string{"contains", "startsWith"})
	}
	name := strings.ToLower(pick(r, names))
	n := min(len(name), 3+r.IntN(4))
	if chance(r, 0.5) {
		return name[:n], "startsWith"
	}
	at := r.IntN(len(name) - n + 1)
	return name[at : at+n], "contains"
}

func sortBy(r *rand.Rand, q query, p float64, names ...string) {
	if chance(r, p) {
		q.set(pick(r, names), pick(r, []string{"desc", "desc", "asc"}))
	}
}

func (w workload) avsList(r *rand.Rand) Request {
	q := query{}
	q.setBool("withTvl", 0.6, r)
	q.setBool("withCuratedMetadata", 0.5, r)
	sortBy(r, q, 0.7, "sortByTvl", "sortByTotalStakers", "sortByApy", "sortByTotalOperators")
	if chance(r, 0.2) {
		text, mode := searchText(r, w.s.AVSNames, w.s.AVS)
		q.set("searchByText", text)
		q.set("searchMode", mode)
	}
	page(r, q, len(w.s.AVS), len(w.s.AVS))
	return get("/avs", q)
}

func (w workload) avsAddresses(r *rand.Rand) Request {
	q := query{}
	if chance(r, 0.5) {
		text, mode := searchText(r, w.s.AVSNames, w.s.AVS)
		q.set("searchByText", text)
		q.set("searchMode", mode)
	}
	if chance(r, 0.3) {
		q.set("take", "1000") // a dropdown of every AVS
	} else {
		page(r, q, len(w.s.AVS), len(w.s.AVS))
	}
	return get("/avs/addresses", q)
}

func (w workload) avsOperators(r *rand.Rand) Request {
	q := query{}
	q.setBool("withTvl", 0.6, r)
	if chance(r, 0.5) {
		q.set("sortOperatorsByTvl", pick(r, []string{"desc", "desc", "asc"}))
	}
	if chance(r, 0.1) {
		text, mode := searchText(r, w.s.OperatorNames, w.s.Operators)
		q.set("searchByText", text)
		q.set("searchMode", mode)
	}
	page(r, q, 200, 500)
	return get("/avs/"+pick(r, w.s.AVS)+"/operators", q)
}

func (w workload) avsRewards(r *rand.Rand) Request {
	return get("/avs/"+pick(r, w.s.AVS)+"/rewards", nil)
}

func (w workload) operatorList(r *rand.Rand) Request {
	q := query{}
	q.setBool("withTvl", 0.6, r)
	sortBy(r, q, 0.7, "sortByTvl", "sortByTotalStakers", "sortByApy", "sortByTotalAvs")
	if chance(r, 0.2) {
		text, _ := searchText(r, w.s.OperatorNames, w.s.Operators)
		q.set("searchByText", text)
	}
	page(r, q, len(w.s.Operators), len(w.s.Operators))
	return get("/operators", q)
}

// dateFormats are the ISO 8601 forms clients send.
var dateFormats = []string{"2006-01-02", time.RFC3339, "2006-01-02T15:04:05.000Z", "2006-01-02T15:04:05.000"}

// formatDate formats the end of a date range in one of dateFormats; a
// plain date is the midnight before t.
func formatDate(r *rand.Rand, t time.Time) string {
	return t.UTC().Truncate(time.Second).Format(pick(r, dateFormats))
}

// formatStart formats the start of a date range in one of dateFormats; a
// plain date is the midnight after t, so that the range does not grow.
func formatStart(r *rand.Rand, t time.Time) string {
	layout := pick(r, dateFormats)
	if layout == "2006-01-02" {
		if day := t.UTC().Truncate(24 * time.Hour); !day.Equal(t) {
			t = day.Add(24 * time.Hour)
		}
	}
	return t.UTC().Truncate(time.Second).Format(layout)
}

// window returns a date range of days days (1 to 30) ending at the end of
// the data, or anywhere in it.
func (w workload) window(r *rand.Rand, days int, latest bool) (start, end time.Time) {
	end = w.s.Head
	if !latest {
		span := w.s.Head.Sub(w.s.First) - time.Duration(days)*24*time.Hour
		if span > 0 {
			end = w.s.First.Add(time.Duration(days)*24*time.Hour + time.Duration(r.Int64N(int64(span))))
		}
	}
	return end.Add(-time.Duration(days) * 24 * time.Hour), end
}

var delegationTypes = []string{"DELEGATION", "UNDELEGATION", "SHARES_INCREASED", "SHARES_DECREASED"}

func (w workload) stakerEvents(r *rand.Rand) Request {
	q := query{}
	switch x := r.Float64(); {
	case x < 0.25: // the default: the 7 days ending now
	case x < 0.7:
		start, end := w.window(r, pick(r, []int{7, 14, 30}), true)
		q.set("startAt", formatStart(r, start))
		q.set("endAt", formatDate(r, end))
	default:
		start, end := w.window(r, 2+r.IntN(29), false)
		q.set("startAt", formatStart(r, start))
		if chance(r, 0.8) {
			q.set("endAt", formatDate(r, end))
		}
	}
	if chance(r, 0.2) {
		q.set("type", pick(r, delegationTypes))
	}
	if chance(r, 0.1) {
		q.set("strategyAddress", pick(r, w.s.Strategies))
	}
	if chance(r, 0.05) {
		q.set("operatorAddress", pick(r, w.s.Operators))
	}
	q.setBool("withTokenData", 0.5, r)
	q.setBool("withEthValue", 0.5, r)
	if chance(r, 0.2) {
		q.set("take", "50")
	}
	if chance(r, 0.1) {
		q.set("skip", "12")
	}
	return get("/stakers/"+pick(r, w.s.Stakers)+"/events/delegation", q)
}

func (w workload) stakerList(r *rand.Rand) Request {
	q := query{}
	q.setBool("withTvl", 0.5, r)
	if chance(r, 0.2) {
		start, _ := w.window(r, pick(r, []int{1, 7, 30}), true)
		q.set("updatedSince", formatDate(r, start))
	}
	page(r, q, 10000, 100000)
	return get("/stakers", q)
}

func (w workload) avsStakers(r *rand.Rand) Request {
	q := query{}
	q.setBool("withTvl", 0.5, r)
	page(r, q, 1000, 10000)
	return get("/avs/"+pick(r, w.s.AVS)+"/stakers", q)
}

func (w workload) operatorAddresses(r *rand.Rand) Request {
	q := query{}
	if chance(r, 0.5) {
		text, mode := searchText(r, w.s.OperatorNames, w.s.Operators)
		q.set("searchByText", text)
		q.set("searchMode", mode)
	}
	page(r, q, len(w.s.Operators), len(w.s.Operators))
	return get("/operators/addresses", q)
}

func (w workload) deposits(r *rand.Rand) Request {
	q := query{}
	switch x := r.Float64(); {
	case x < 0.4:
		page(r, q, 10000, 200000)
	case x < 0.7:
		q.set("stakerAddress", pick(r, w.s.Stakers))
	default:
		q.set("strategyAddress", pick(r, w.s.Strategies))
		page(r, q, 1000, 5000)
	}
	return get("/deposits", q)
}

func (w workload) stakerDeposits(r *rand.Rand) Request {
	q := query{}
	page(r, q, 20, 20)
	return get("/stakers/"+pick(r, w.s.Stakers)+"/deposits", q)
}

func (w workload) stakerWithdrawals(r *rand.Rand) Request {
	q := query{}
	page(r, q, 20, 20)
	return get("/stakers/"+pick(r, w.s.Stakers)+"/withdrawals", q)
}

// eventFeed returns the request maker of a global event feed: the
// default week, or a window of 1 to 30 days, mostly the latest.
func (w workload) eventFeed(path string) func(*rand.Rand) Request {
	return func(r *rand.Rand) Request {
		q := query{}
		if chance(r, 0.6) {
			start, end := w.window(r, pick(r, []int{1, 7, 30}), chance(r, 0.7))
			q.set("startAt", formatStart(r, start))
			q.set("endAt", formatDate(r, end))
		}
		q.setBool("withEthValue", 0.3, r)
		page(r, q, 1000, 10000)
		return get(path, q)
	}
}

func (w workload) operatorEvents(r *rand.Rand) Request {
	q := query{}
	if chance(r, 0.6) {
		start, end := w.window(r, pick(r, []int{7, 30}), true)
		q.set("startAt", formatStart(r, start))
		q.set("endAt", formatDate(r, end))
	}
	if chance(r, 0.2) {
		q.set("type", pick(r, delegationTypes))
	}
	page(r, q, 500, 2000)
	return get("/operators/"+pick(r, w.s.BusyOperators)+"/events/delegation", q)
}

func (w workload) withdrawals(r *rand.Rand) Request {
	q := query{}
	status := func(p float64) {
		if chance(r, p) {
			q.set("status", pick(r, []string{"queued", "queued_withdrawable", "completed"}))
		}
	}
	switch x := r.Float64(); {
	case x < 0.35: // the whole list, sometimes very deep
		status(0.6)
		page(r, q, 10000, 200000)
	case x < 0.65:
		q.set("stakerAddress", pick(r, w.s.Stakers))
		status(0.3)
	case x < 0.85:
		ops := w.s.Operators
		if chance(r, 0.5) {
			ops = w.s.BusyOperators
		}
		q.set("delegatedTo", pick(r, ops))
		status(0.4)
		page(r, q, 500, 2000)
	default:
		q.set("strategyAddress", pick(r, w.s.Strategies))
		status(0.5)
		page(r, q, 1000, 5000)
	}
	return get("/withdrawals", q)
}

func (w workload) rewardStrategies(*rand.Rand) Request { return get("/rewards/strategies", nil) }

func (w workload) metrics(*rand.Rand) Request { return get("/metrics", nil) }

func (w workload) withChange(path string) func(*rand.Rand) Request {
	return func(r *rand.Rand) Request {
		q := query{}
		q.setBool("withChange", 0.5, r)
		return get(path, q)
	}
}

func (w workload) strategyTVL(r *rand.Rand) Request {
	q := query{}
	q.setBool("withChange", 0.5, r)
	return get("/metrics/tvl/restaking/"+pick(r, w.s.Strategies), q)
}

// historyPresets are the ranges, in days up to the end of the data, of a
// chart's preset buttons.
var historyPresets = []int{30, 90, 365}

func (w workload) stakerHistory(r *rand.Rand) Request {
	q := query{}
	freq := pick(r, []string{"1d", "7d"})
	q.set("frequency", freq)
	q.set("variant", pick(r, []string{"discrete", "cumulative"}))
	switch x := r.Float64(); {
	case x < 0.4: // the default range
		return get("/metrics/historical/count-stakers", q)
	case x < 0.75: // a preset: the same dates for every client that day
		end := w.s.Head.UTC().Truncate(24 * time.Hour)
		q.set("startAt", end.AddDate(0, 0, -pick(r, historyPresets)+1).Format(time.DateOnly))
		q.set("endAt", end.Format(time.DateOnly))
		return get("/metrics/historical/count-stakers", q)
	}
	// A custom range.
	days := 30 + r.IntN(330)
	if freq == "7d" {
		days = 90 + r.IntN(600)
	}
	end := w.s.Head.Add(-time.Duration(r.IntN(60)) * 24 * time.Hour)
	q.set("startAt", formatStart(r, end.Add(-time.Duration(days-1)*24*time.Hour)))
	q.set("endAt", formatDate(r, end))
	return get("/metrics/historical/count-stakers", q)
}

// The slashing era's REST routes.

func (w workload) avsOperatorSets(r *rand.Rand) Request {
	q := query{}
	q.setBool("withTvl", 0.5, r)
	// Mostly an AVS with operator sets; sometimes one without, whose page
	// shows an empty list.
	avs, sets := pick(r, w.s.AVS), 0
	if chance(r, 0.85) {
		a := pick(r, w.s.OperatorSetAVS)
		avs, sets = a.Address, a.N
	}
	page(r, q, sets, sets)
	return get("/avs/"+avs+"/operator-sets", q)
}

func (w workload) operatorSet(r *rand.Rand) Request {
	q := query{}
	q.setBool("withTvl", 0.5, r)
	set := pick(r, w.s.OperatorSets)
	page(r, q, set.Operators, set.Operators)
	return get("/operator-sets/"+set.AVS+"/"+strconv.Itoa(set.ID), q)
}

func (w workload) operatorAllocations(r *rand.Rand) Request {
	q := query{}
	op := pick(r, w.s.AllocatingOperators)
	page(r, q, op.N, op.N)
	return get("/operators/"+op.Address+"/allocations", q)
}

// pickOr picks one of xs, or of or when xs is empty.
func pickOr(r *rand.Rand, xs, or []string) string {
	if len(xs) == 0 {
		return pick(r, or)
	}
	return pick(r, xs)
}

func (w workload) slashings(r *rand.Rand) Request {
	q := query{}
	if chance(r, 0.25) {
		avs := w.s.SlashingAVS
		if chance(r, 0.3) {
			avs = nil // an AVS with no slashing, or with no operator set
		}
		q.set("avsAddress", pickOr(r, avs, w.s.AVS))
	}
	if chance(r, 0.2) {
		ops := w.s.SlashedOperators
		if chance(r, 0.3) {
			ops = nil
		}
		q.set("operatorAddress", pickOr(r, ops, w.s.Operators))
	}
	if chance(r, 0.15) {
		q.set("strategyAddress", pickOr(r, w.s.SlashedStrategies, w.s.Strategies))
	}
	if chance(r, 0.3) {
		start, end := w.slashingWindow(r)
		if chance(r, 0.8) {
			q.set("startAt", formatStart(r, start))
		}
		if chance(r, 0.7) {
			q.set("endAt", formatDate(r, end))
		}
	}
	page(r, q, w.s.Slashings, w.s.Slashings)
	return get("/slashings", q)
}

// slashingWindow returns a date range of the slashing era: the last 7 or
// 30 days of the data, or 2 to 30 days anywhere since the upgrade.
func (w workload) slashingWindow(r *rand.Rand) (start, end time.Time) {
	if chance(r, 0.5) || w.s.SlashingStart.IsZero() {
		return w.window(r, pick(r, []int{7, 30}), true)
	}
	days := time.Duration(2+r.IntN(29)) * 24 * time.Hour
	end = w.s.Head
	if span := w.s.Head.Sub(w.s.SlashingStart) - days; span > 0 {
		end = w.s.SlashingStart.Add(days + time.Duration(r.Int64N(int64(span))))
	}
	return end.Add(-days), end
}

// The four GraphQL operations a frontend sends.
const (
	// AVSPageQuery is an AVS page: the AVS with its TVL and rewards, and
	// its operators by TVL with theirs.
	AVSPageQuery = `query AvsPage($avs: Address!, $skip: Int) {
  avs(address: $avs) {
    address metadataName metadataDescription metadataLogo metadataWebsite metadataX
    totalStakers totalOperators maxApy createdAt
    curatedMetadata { metadataName tags isVerified }
    tvl { tvl tvlBeaconChain tvlRestaking tvlStrategiesEth }
    shares { strategyAddress shares ethValue }
    operators(sortByTvl: desc, skip: $skip, take: 12) {
      data { address metadataName metadataLogo totalStakers restakedStrategies tvl { tvl tvlStrategiesEth } }
      meta { total skip take }
    }
    rewards { totalRewards totalSubmissions rewardTokens rewardStrategies }
  }
}`

	// OperatorPageQuery is an operator page: the operator with its TVL,
	// its AVS registrations and its recent delegation events.
	OperatorPageQuery = `query OperatorPage($operator: Address!, $startAt: String, $endAt: String, $skip: Int) {
  operator(address: $operator) {
    address metadataName metadataDescription metadataLogo metadataWebsite
    totalStakers totalAvs maxApy createdAt
    tvl { tvl tvlBeaconChain tvlRestaking tvlStrategiesEth }
    shares { strategyAddress shares underlyingValue ethValue }
    avsRegistrations { isActive createdAt avs { address metadataName metadataLogo } }
    delegationEvents(startAt: $startAt, endAt: $endAt, skip: $skip, take: 10) {
      data { tx blockNumber blockTime type args { strategy shares } ethValue staker { address } }
      meta { total }
    }
  }
}`

	// StakerPageQuery is a staker page: delegation, shares with their
	// value, delegation events of a date range and withdrawals.
	StakerPageQuery = `query StakerPage($staker: Address!, $startAt: String, $endAt: String) {
  staker(address: $staker) {
    address createdAt
    delegatedTo { address metadataName metadataLogo totalStakers }
    shares { strategyAddress shares underlyingValue ethValue strategy { symbol } }
    tvl { tvl tvlBeaconChain tvlRestaking }
    delegationEvents(startAt: $startAt, endAt: $endAt, take: 20) {
      data { tx blockTime type args { operator strategy shares } ethValue }
      meta { total }
    }
    withdrawals(take: 10) {
      data { withdrawalRoot createdAt isCompleted isWithdrawable shares { strategyAddress shares strategy { symbol } } }
      meta { total }
    }
  }
}`

	// OperatorSetPage is an operator set page: the set with its allocated
	// stake, its operators with their allocations to it, its slashings and
	// the rewards submitted to it.
	OperatorSetPageQuery = `query OperatorSetPage($avs: Address!, $id: Int!, $skip: Int) {
  operatorSet(avs: $avs, id: $id) {
    avsAddress id strategies totalOperators createdAt
    avs { address metadataName metadataLogo }
    allocatedStake { strategyAddress shares ethValue strategy { symbol } }
    allocatedTvl { tvl tvlStrategiesEth }
    operators(skip: $skip, take: 12) {
      data {
        operatorAddress isActive createdAt
        operator { metadataName metadataLogo }
        allocations { strategyAddress magnitude pendingMagnitude effectBlock maxMagnitude allocatedShares }
      }
      meta { total }
    }
    slashings(take: 10) {
      data { operatorAddress blockNumber createdAt description strategies { strategyAddress wadSlashed sharesSlashed sharesBurned } }
      meta { total }
    }
    rewardsSubmissions(take: 5) {
      data { rewardsSubmissionHash startTimestamp duration totalAmount tokenAddress operators { operatorAddress amount } }
      meta { total }
    }
  }
}`
)

func (w workload) avsPage(r *rand.Rand) Request {
	vars := map[string]any{"avs": pick(r, w.s.AVS)}
	if chance(r, 0.2) {
		vars["skip"] = 12 * (1 + r.IntN(5))
	}
	return GraphQL(AVSPageQuery, vars)
}

func (w workload) operatorPage(r *rand.Rand) Request {
	ops := w.s.Operators
	if chance(r, 0.4) {
		ops = w.s.BusyOperators
	}
	start, end := w.window(r, pick(r, []int{7, 30}), chance(r, 0.7))
	vars := map[string]any{
		"operator": pick(r, ops),
		"startAt":  start.Format(time.RFC3339),
		"endAt":    end.Format(time.RFC3339),
	}
	if chance(r, 0.15) {
		vars["skip"] = 10 * r.IntN(200) // deep in a busy operator's events
	}
	return GraphQL(OperatorPageQuery, vars)
}

func (w workload) stakerPage(r *rand.Rand) Request {
	start, end := w.window(r, 30, chance(r, 0.6))
	return GraphQL(StakerPageQuery, map[string]any{
		"staker":  pick(r, w.s.Stakers),
		"startAt": start.Format(time.RFC3339),
		"endAt":   end.Format(time.RFC3339),
	})
}

func (w workload) operatorSetPage(r *rand.Rand) Request {
	set := pick(r, w.s.OperatorSets)
	vars := map[string]any{"avs": set.AVS, "id": set.ID}
	if chance(r, 0.2) && set.Operators > 12 {
		vars["skip"] = 12 * (1 + r.IntN((set.Operators-1)/12))
	}
	return GraphQL(OperatorSetPageQuery, vars)
}

// Describe returns a one-line description of an operation's parameter mix,
// for the report.
func Describe(name string) string {
	if d, ok := mixDescriptions[name]; ok {
		return d
	}
	return fmt.Sprintf("(%s)", name)
}

var mixDescriptions = map[string]string{
	"GET /avs":                                 "withTvl 60%, withCuratedMetadata 50%, one of 4 sorts 70%, search 20%, take 12/50/100, later or deep pages 40%",
	"GET /avs/addresses":                       "search 50%, take=1000 30%, pages",
	"GET /avs/{address}/operators":             "random AVS, withTvl 60%, sortOperatorsByTvl 50%, search 10%, pages",
	"GET /avs/{address}/rewards":               "random AVS",
	"GET /operators":                           "withTvl 60%, one of 4 sorts 70%, search 20%, pages up to the last",
	"GET /stakers/{address}/events/delegation": "random staker; default 7 days 25%, 7-30 days to the end of the data 45%, 1-30 days anywhere 30%; type 20%, strategy 10%, operator 5%, token/ETH values 50%",
	"GET /withdrawals":                         "all (skip up to 200,000) 35%, by staker 30%, by operator 20%, by strategy 15%; status filters",
	"GET /rewards/strategies":                  "no parameters",
	"GET /metrics":                             "no parameters",
	"GET /metrics/tvl/restaking":               "withChange 50%",
	"GET /metrics/tvl/restaking/{strategy}":    "random strategy, withChange 50%",
	"GET /metrics/total-withdrawals":           "withChange 50%",
	"GET /metrics/total-stakers":               "withChange 50%",
	"GET /metrics/deployment-ratio":            "withChange 50%",
	"GET /metrics/historical/count-stakers":    "1d/7d, discrete/cumulative; default range 40%, preset 30/90/365 days 35%, custom 30-690-day range 25%",
	"GraphQL AvsPage":                          "random AVS with TVL, shares, rewards and 12 operators by TVL (later page 20%)",
	"GraphQL OperatorPage":                     "random or busiest operator with TVL, registrations and 10 events of 7/30 days (deep page 15%)",
	"GraphQL StakerPage":                       "random staker with shares, 20 events of 30 days and 10 withdrawals",
	"GET /avs/{address}/operator-sets":         "AVS with operator sets 85% (any AVS 15%), withTvl 50%, pages",
	"GET /operator-sets/{avs}/{id}":            "random operator set, withTvl 50%, pages of its operators",
	"GET /operators/{address}/allocations":     "random operator with allocations, pages",
	"GET /slashings":                           "AVS filter 25%, operator 20%, strategy 15% (mostly ones with slashings), date range 30% (7/30 days to the end of the data or 2-30 days since the upgrade), pages",
	"GraphQL OperatorSetPage":                  "random operator set with allocated stake and TVL, 12 operators with allocations (a later page 20% when it has more), 10 slashings and 5 rewards submissions",
}
