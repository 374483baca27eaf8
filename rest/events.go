package rest

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/stakegraph/stakegraph/internal/respond"
)

var (
	//go:embed operations/events_delegation.graphql
	delegationEventsOp string
	//go:embed operations/events_deposit.graphql
	depositEventsOp string
	//go:embed operations/events_withdrawal.graphql
	withdrawalEventsOp string
	//go:embed operations/events_rewards.graphql
	rewardsEventsOp string
	//go:embed operations/events_registration.graphql
	registrationEventsOp string
)

// The values of the event feeds' enumerated parameters.
var (
	withdrawalEventTypes = []string{"WITHDRAWAL_QUEUED", "WITHDRAWAL_COMPLETED"}
	registrationStatuses = []string{"REGISTERED", "DEREGISTERED"}
)

// zeroAddress stands for the subject of a feed operation run without one.
const zeroAddress = "0x0000000000000000000000000000000000000000"

// eventFeed describes an event feed route: one page of events, newest
// first, within a date range whose rules are the resolvers' (with neither
// date the 7 days ending now, at most 30 days). The global feed and its
// per-subject variants run the same operation; a per-AVS or per-operator
// route also looks the subject up and answers 404 when it is unknown,
// while any address is a staker.
type eventFeed struct {
	// op is the operation. When it can look a subject up, it declares
	// $subject and a Boolean $check<Subject> for each kind of subject
	// (listed in checks) that includes the lookup aliased as the subject's
	// kind ("avs" or "operator").
	op     string
	checks []string
	// subject is "avs", "operator" or "staker" for a per-subject route,
	// "" for the global feed; filter is the variable that the path's
	// address sets.
	subject, filter string
	// params reads the route's own parameters.
	params func(p *params, vs vars)
	// absent names the members of the answer ({"data": [events], "meta"})
	// that are left out where null, rather than written as null; none
	// answers as executed.
	absent nullPaths
}

// serveFeed serves the route that f describes.
func (h *handlers) serveFeed(f eventFeed) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		vs := vars{}
		check := ""
		if f.subject != "" {
			addr, err := pathAddress("address", chi.URLParam(r, "address"))
			if err != nil {
				respond.Error(w, r, err)
				return
			}
			vs[f.filter] = addr
			if f.subject != "staker" {
				check = f.subject
			}
		}
		if len(f.checks) > 0 {
			vs["subject"] = zeroAddress
			if check != "" {
				vs["subject"] = vs[f.filter]
			}
			for _, c := range f.checks {
				vs["check"+checkName[c]] = c == check
			}
		}
		p := newParams(r.URL.Query())
		f.params(p, vs)
		setOptional(vs, "txHash", p.Hash("txHash"))
		setOptional(vs, "startAt", formatTime(p.Time("startAt")))
		setOptional(vs, "endAt", formatTime(p.Time("endAt")))
		vs["skip"], vs["take"] = p.Page()
		if err := p.Err(); err != nil {
			respond.Error(w, r, err)
			return
		}
		raw, err := h.feedResult(r, f.op, vs, check)
		if err != nil {
			respond.Error(w, r, notFoundError(err, "no "+subjectName[check]+" has the address "+chi.URLParam(r, "address")))
			return
		}
		if len(f.absent) > 0 {
			if raw, err = leaveOutNulls(raw, f.absent); err != nil {
				respond.Error(w, r, fmt.Errorf("events: %w", err))
				return
			}
		}
		respond.RawJSON(w, r, http.StatusOK, raw)
	}
}

// checkName and subjectName name a kind of subject in a variable and in a
// message.
var (
	checkName   = map[string]string{"avs": "Avs", "operator": "Operator"}
	subjectName = map[string]string{"avs": "AVS", "operator": "operator"}
)

// feedResult runs a feed operation and returns its result. With a subject
// to check, the operation's answer also holds the subject's lookup under
// its kind, and a null subject is errNull.
func (h *handlers) feedResult(r *http.Request, op string, vs vars, check string) (json.RawMessage, error) {
	if check == "" {
		return h.result(r.Context(), op, vs, "result")
	}
	data, err := h.exec.Execute(r.Context(), op, vs)
	if err != nil {
		return nil, presentOperationError(err)
	}
	var root map[string]json.RawMessage
	if err := json.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("operation data: %w", err)
	}
	if isNull(root[check]) {
		return nil, errNull
	}
	if isNull(root["result"]) {
		return nil, fmt.Errorf("operation data has no result")
	}
	return root["result"], nil
}

// valueFlags reads withTokenData and withEthValue.
func valueFlags(p *params, vs vars) {
	vs["withTokenData"], vs["withEthValue"] = p.Bool("withTokenData"), p.Bool("withEthValue")
}

// delegationFeed is GET /events/delegation, and for subject "operator"
// GET /operators/{address}/events/delegation. Fields that do not apply to
// an event are left out rather than null, as on a staker's feed.
func delegationFeed(subject string) eventFeed {
	return eventFeed{
		op: delegationEventsOp, checks: []string{"operator"},
		subject: subject, filter: "operatorAddress",
		params: func(p *params, vs vars) {
			valueFlags(p, vs)
			setOptional(vs, "type", p.OptionalEnum("type", delegationTypes...))
			setOptional(vs, "strategyAddress", p.Address("strategyAddress"))
			if subject != "" {
				setOptional(vs, "stakerAddress", p.Address("stakerAddress"))
			}
		},
		absent: delegationEventNulls,
	}
}

// delegationEventNulls are the fields of a page of delegation events that
// do not apply to an event where null: the strategy and shares of a
// DELEGATION and the token values of beacon-chain ETH.
var delegationEventNulls = nullPaths{
	"data.*.underlyingToken", "data.*.underlyingValue", "data.*.ethValue",
	"data.*.args.strategy", "data.*.args.shares",
}

// depositFeed is GET /events/deposit, and for subject "staker"
// GET /stakers/{address}/events/deposit.
func depositFeed(subject string) eventFeed {
	return eventFeed{
		op: depositEventsOp, subject: subject, filter: "stakerAddress",
		params: func(p *params, vs vars) {
			valueFlags(p, vs)
			setOptional(vs, "tokenAddress", p.Address("tokenAddress"))
			setOptional(vs, "strategyAddress", p.Address("strategyAddress"))
		},
		absent: nullPaths{
			"data.*.underlyingToken", "data.*.underlyingValue", "data.*.ethValue",
			"data.*.args.token",
		},
	}
}

// withdrawalFeed is GET /events/withdrawal, and for subject "staker"
// GET /stakers/{address}/events/withdrawal.
func withdrawalFeed(subject string) eventFeed {
	return eventFeed{
		op: withdrawalEventsOp, subject: subject, filter: "stakerAddress",
		params: func(p *params, vs vars) {
			valueFlags(p, vs)
			setOptional(vs, "type", p.OptionalEnum("type", withdrawalEventTypes...))
			setOptional(vs, "withdrawalRoot", p.Hash("withdrawalRoot"))
			setOptional(vs, "delegatedTo", p.Address("delegatedTo"))
			setOptional(vs, "withdrawer", p.Address("withdrawer"))
		},
		absent: nullPaths{
			"data.*.args.strategies.*.underlyingToken",
			"data.*.args.strategies.*.underlyingValue",
			"data.*.args.strategies.*.ethValue",
		},
	}
}

// rewardsFeed is GET /events/rewards, and for subject "avs"
// GET /avs/{address}/events/rewards. A strategy's amountEthValue needs both
// withIndividualAmount and withEthValue.
func rewardsFeed(subject string) eventFeed {
	return eventFeed{
		op: rewardsEventsOp, checks: []string{"avs"}, subject: subject, filter: "avsAddress",
		params: func(p *params, vs vars) {
			individual, eth := p.Bool("withIndividualAmount"), p.Bool("withEthValue")
			vs["withIndividualAmount"], vs["withEthValue"], vs["withAmountEthValue"] = individual, eth, individual && eth
			setOptional(vs, "rewardsSubmissionHash", p.Hash("rewardsSubmissionHash"))
			setOptional(vs, "rewardsSubmissionToken", p.Address("rewardsSubmissionToken"))
		},
		absent: nullPaths{"data.*.ethValue", "data.*.args.strategies.*.amountEthValue"},
	}
}

// registrationFeed is GET /events/registration-status, and for subject
// "avs" or "operator" the AVS's or the operator's feed, which may be
// narrowed to one operator or AVS.
func registrationFeed(subject string) eventFeed {
	filter := map[string]string{"": "", "avs": "avsAddress", "operator": "operatorAddress"}[subject]
	return eventFeed{
		op: registrationEventsOp, checks: []string{"avs", "operator"}, subject: subject, filter: filter,
		params: func(p *params, vs vars) {
			setOptional(vs, "status", p.OptionalEnum("status", registrationStatuses...))
			switch subject {
			case "avs":
				setOptional(vs, "operatorAddress", p.Address("operatorAddress"))
			case "operator":
				setOptional(vs, "avsAddress", p.Address("avsAddress"))
			}
		},
	}
}
