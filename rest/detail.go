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
	//go:embed operations/avs_detail.graphql
	avsDetailOp string
	//go:embed operations/operator_detail.graphql
	operatorDetailOp string
)

// avsDetail serves GET /avs/{address}: one AVS record as in GET /avs, with
// the rewards object that EigenExplorer's document requires. withRewards
// and withTrailingApy are validated but change nothing: the rewards object
// is always present (the document requires it) and trailing APYs are not
// computed, so their optional keys are left out.
func (h *handlers) avsDetail(w http.ResponseWriter, r *http.Request) {
	addr, err := pathAddress("address", chi.URLParam(r, "address"))
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	p := newParams(r.URL.Query())
	vs := vars{
		"address":             addr,
		"withTvl":             p.Bool("withTvl"),
		"withCuratedMetadata": p.Bool("withCuratedMetadata"),
	}
	p.Bool("withRewards")
	p.Bool("withTrailingApy")
	if err := p.Err(); err != nil {
		respond.Error(w, r, err)
		return
	}
	raw, err := h.result(r.Context(), avsDetailOp, vs, "result")
	if err != nil {
		respond.Error(w, r, notFoundError(err, "no AVS has the address "+chi.URLParam(r, "address")))
		return
	}
	var avs map[string]any
	if err := decode(raw, &avs); err != nil {
		respond.Error(w, r, fmt.Errorf("decode AVS: %w", err))
		return
	}
	dropNulls(avs, "curatedMetadata")
	apys, err := strategyAPYs(avs["strategyApys"])
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	delete(avs, "strategyApys")
	avs["rewards"] = map[string]any{"strategyApys": apys}
	respond.JSON(w, r, http.StatusOK, avs)
}

// operatorDetail serves GET /operators/{address}: one operator record as
// in GET /operators, with each registration's AVS in detail and the
// rewards of the AVS the operator actively serves. withAvsData,
// withRewards and withTrailingApy are validated but change nothing: the
// document requires the detailed registrations and the rewards, and
// trailing APYs are not computed.
func (h *handlers) operatorDetail(w http.ResponseWriter, r *http.Request) {
	addr, err := pathAddress("address", chi.URLParam(r, "address"))
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	p := newParams(r.URL.Query())
	vs := vars{"address": addr, "withTvl": p.Bool("withTvl")}
	p.Bool("withAvsData")
	p.Bool("withRewards")
	p.Bool("withTrailingApy")
	if err := p.Err(); err != nil {
		respond.Error(w, r, err)
		return
	}
	raw, err := h.result(r.Context(), operatorDetailOp, vs, "result")
	if err != nil {
		respond.Error(w, r, notFoundError(err, "no operator has the address "+chi.URLParam(r, "address")))
		return
	}
	var op map[string]any
	if err := decode(raw, &op); err != nil {
		respond.Error(w, r, fmt.Errorf("decode operator: %w", err))
		return
	}
	regs, _ := op["avsRegistrations"].([]any)
	registrations := make([]any, 0, len(regs))
	rewards := make([]any, 0, len(regs))
	for _, x := range regs {
		reg, _ := x.(map[string]any)
		avs, ok := reg["avs"].(map[string]any)
		if !ok {
			// The AVS never published metadata: there is nothing to
			// describe it with, and GET /avs does not list it either.
			continue
		}
		item, err := registrationDetail(reg, avs)
		if err != nil {
			respond.Error(w, r, err)
			return
		}
		registrations = append(registrations, item)
		if reg["isActive"] != true {
			continue
		}
		apys, err := strategyAPYs(avs["strategyApys"])
		if err != nil {
			respond.Error(w, r, err)
			return
		}
		rewards = append(rewards, map[string]any{
			"avsAddress":   avs["address"],
			"maxApy":       avs["maxApyNumber"],
			"strategyApys": apys,
		})
	}
	op["avsRegistrations"] = registrations
	op["rewards"] = rewards
	respond.JSON(w, r, http.StatusOK, op)
}

// registrationDetail is one element of avsRegistrations in GET
// /operators/{address}: the registration and its AVS, with the AVS's
// rewards submissions one row per submission and strategy.
func registrationDetail(reg, avs map[string]any) (map[string]any, error) {
	item := map[string]any{
		"avsAddress":            reg["avsAddress"],
		"isActive":              reg["isActive"],
		"address":               avs["address"],
		"restakeableStrategies": avs["restakeableStrategies"],
		"totalStakers":          avs["totalStakers"],
		"totalOperators":        avs["totalOperators"],
		"createdAt":             avs["createdAt"],
		"updatedAt":             avs["updatedAt"],
		"maxApy":                avs["maxApy"],
	}
	for _, k := range []string{"metadataName", "metadataDescription", "metadataDiscord", "metadataLogo",
		"metadataTelegram", "metadataWebsite", "metadataX"} {
		item[k] = avs[k]
	}
	// The document types metadataUrl a non-null string.
	item["metadataUrl"] = avs["metadataUrl"]
	if item["metadataUrl"] == nil {
		item["metadataUrl"] = ""
	}
	if cm, ok := avs["curatedMetadata"].(map[string]any); ok {
		item["curatedMetadata"] = cm
	}
	// The document types tvlEth as text and the blocks as numbers.
	tvl, _ := avs["tvl"].(map[string]any)
	eth, ok := tvl["tvl"].(json.Number)
	if !ok {
		return nil, fmt.Errorf("AVS %v: tvl.tvl is %T", avs["address"], tvl["tvl"])
	}
	item["tvlEth"] = eth.String()
	for _, k := range []string{"createdAtBlock", "updatedAtBlock"} {
		n, err := decimalNumber(avs[k])
		if err != nil {
			return nil, fmt.Errorf("AVS %v: %s: %w", avs["address"], k, err)
		}
		item[k] = n
	}
	rs, _ := avs["rewards"].(map[string]any)
	subs, _ := rs["submissions"].([]any)
	rows := []any{}
	for _, x := range subs {
		s, _ := x.(map[string]any)
		nonce, err := decimalNumber(s["submissionNonce"])
		if err != nil {
			return nil, fmt.Errorf("rewards submission %v: submissionNonce: %w", s["rewardsSubmissionHash"], err)
		}
		strategies, _ := s["strategies"].([]any)
		for _, y := range strategies {
			st, _ := y.(map[string]any)
			rows = append(rows, map[string]any{
				// EigenExplorer's id is a key of its own database; here it
				// is the row's position in this list, from 1.
				"id":                    len(rows) + 1,
				"submissionNonce":       nonce,
				"rewardsSubmissionHash": s["rewardsSubmissionHash"],
				"avsAddress":            s["avsAddress"],
				"strategyAddress":       st["strategyAddress"],
				"multiplier":            st["multiplier"],
				"token":                 s["tokenAddress"],
				"amount":                st["amount"],
				"startTimestamp":        s["startTimestamp"],
				"duration":              s["duration"],
				"createdAtBlock":        s["blockNumber"],
				"createdAt":             s["blockTime"],
			})
		}
	}
	item["rewardsSubmissions"] = rows
	return item, nil
}

// strategyAPYs turns the strategyApys of an AVS (APYs in percent as
// decimal text) into the strategyApys of EigenExplorer's rewards object:
// numbers, with a baseApy of 0 (the yield of a liquid staking token is not
// on chain) and no per-token breakdown.
func strategyAPYs(v any) ([]any, error) {
	list, _ := v.([]any)
	out := make([]any, 0, len(list))
	for _, x := range list {
		a, _ := x.(map[string]any)
		apy, err := decimalNumber(a["apy"])
		if err != nil {
			return nil, fmt.Errorf("APY of strategy %v: %w", a["strategyAddress"], err)
		}
		out = append(out, map[string]any{
			"strategyAddress": a["strategyAddress"],
			"apy":             apy,
			"baseApy":         json.Number("0"),
			"tokens":          []any{},
		})
	}
	return out, nil
}

// decimalNumber turns decimal text such as a block number, a nonce or an
// APY into a JSON number written exactly as the text.
func decimalNumber(v any) (json.Number, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%v is not decimal text", v)
	}
	var n json.Number
	if err := json.Unmarshal([]byte(s), &n); err != nil {
		return "", fmt.Errorf("%q is not decimal text", s)
	}
	return n, nil
}
