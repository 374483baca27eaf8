package rest

import (
	"bytes"
	_ "embed"
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/stakegraph/stakegraph/internal/respond"
)

var (
	//go:embed operations/avs_list.graphql
	avsListOp string
	//go:embed operations/avs_addresses.graphql
	avsAddressesOp string
	//go:embed operations/avs_operators.graphql
	avsOperatorsOp string
	//go:embed operations/avs_rewards.graphql
	avsRewardsOp string
)

// searchModes are the values of searchMode; the first is the default.
var searchModes = []string{"contains", "startsWith"}

// avsList serves GET /avs.
func (h *handlers) avsList(w http.ResponseWriter, r *http.Request) {
	p := newParams(r.URL.Query())
	vs := vars{
		"withTvl":             p.Bool("withTvl"),
		"withCuratedMetadata": p.Bool("withCuratedMetadata"),
		"searchMode":          p.Enum("searchMode", searchModes[0], searchModes...),
	}
	setOptional(vs, "searchByText", p.Text("searchByText"))
	for _, s := range []string{"sortByApy", "sortByTvl", "sortByTotalStakers", "sortByTotalOperators"} {
		setOptional(vs, s, p.Sort(s))
	}
	vs["skip"], vs["take"] = p.Page()
	if err := p.Err(); err != nil {
		respond.Error(w, r, err)
		return
	}
	v, err := h.result(r.Context(), avsListOp, vs, "result")
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	respond.RawJSON(w, r, http.StatusOK, dropNullMembers(v, "curatedMetadata"))
}

// dropNullMembers removes from raw, compact JSON as the executor writes it,
// every object member named key whose value is null. EigenExplorer's
// document declares curatedMetadata an optional object that is not
// nullable, so an AVS without curated metadata leaves the key out.
//
// In compact JSON a quote right after a comma or an opening brace always
// begins a member name or a string element (a quote inside a string is
// escaped), and a string element is never followed by a colon, so the
// member is found without decoding the document.
func dropNullMembers(raw []byte, key string) []byte {
	member := `"` + key + `":null`
	if !bytes.Contains(raw, []byte(member)) {
		return raw
	}
	out := make([]byte, 0, len(raw))
	for {
		i := bytes.Index(raw, []byte(member))
		if i < 0 {
			return append(out, raw...)
		}
		end := i + len(member)
		switch {
		case i > 0 && raw[i-1] == ',' && end < len(raw) && (raw[end] == ',' || raw[end] == '}'):
			// ,"key":null followed by another member or the end: cut the
			// comma before it.
			out = append(out, raw[:i-1]...)
		case i > 0 && raw[i-1] == '{' && end < len(raw) && raw[end] == ',':
			// {"key":null,...: cut the comma after it.
			out = append(out, raw[:i]...)
			end++
		case i > 0 && raw[i-1] == '{' && end < len(raw) && raw[end] == '}':
			// {"key":null}: the object becomes empty.
			out = append(out, raw[:i]...)
		default:
			out = append(out, raw[:end]...)
		}
		raw = raw[end:]
	}
}

// avsAddresses serves GET /avs/addresses. An AVS without a logo has an
// empty logo, as the contract types it a string.
func (h *handlers) avsAddresses(w http.ResponseWriter, r *http.Request) {
	p := newParams(r.URL.Query())
	vs := vars{"searchMode": p.Enum("searchMode", searchModes[0], searchModes...)}
	setOptional(vs, "searchByText", p.Text("searchByText"))
	vs["skip"], vs["take"] = p.Page()
	if err := p.Err(); err != nil {
		respond.Error(w, r, err)
		return
	}
	raw, err := h.result(r.Context(), avsAddressesOp, vs, "result")
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	if raw, err = writeNullsAs(raw, addressListNulls); err != nil {
		respond.Error(w, r, fmt.Errorf("AVS addresses: %w", err))
		return
	}
	respond.RawJSON(w, r, http.StatusOK, raw)
}

// avsOperators serves GET /avs/{address}/operators.
func (h *handlers) avsOperators(w http.ResponseWriter, r *http.Request) {
	addr, err := pathAddress("address", chi.URLParam(r, "address"))
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	p := newParams(r.URL.Query())
	vs := vars{
		"address":    addr,
		"withTvl":    p.Bool("withTvl"),
		"searchMode": p.Enum("searchMode", searchModes[0], searchModes...),
	}
	setOptional(vs, "searchByText", p.Text("searchByText"))
	setOptional(vs, "sortByTvl", p.Sort("sortOperatorsByTvl"))
	vs["skip"], vs["take"] = p.Page()
	if err := p.Err(); err != nil {
		respond.Error(w, r, err)
		return
	}
	h.serve(w, r, avsOperatorsOp, vs, "no AVS has the address "+chi.URLParam(r, "address"), "avs", "result")
}

// rewardsPageSize is how many rewards submissions one run of the rewards
// operation fetches; the route answers with all of them.
const rewardsPageSize = 1000

// avsRewards serves GET /avs/{address}/rewards with every submission of
// the AVS, fetching them a page at a time.
func (h *handlers) avsRewards(w http.ResponseWriter, r *http.Request) {
	addr, err := pathAddress("address", chi.URLParam(r, "address"))
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	var rewards map[string]any
	var submissions []any
	for {
		vs := vars{"address": addr, "skip": len(submissions), "take": rewardsPageSize}
		raw, err := h.result(r.Context(), avsRewardsOp, vs, "avs", "result")
		if err != nil {
			respond.Error(w, r, notFoundError(err, "no AVS has the address "+chi.URLParam(r, "address")))
			return
		}
		rewards = nil
		if err := decode(raw, &rewards); err != nil {
			respond.Error(w, r, fmt.Errorf("decode AVS rewards: %w", err))
			return
		}
		page, _ := rewards["submissions"].([]any)
		submissions = append(submissions, page...)
		if len(page) < rewardsPageSize {
			break
		}
	}
	rewards["submissions"] = submissions
	if submissions == nil {
		rewards["submissions"] = []any{}
	}
	respond.JSON(w, r, http.StatusOK, rewards)
}
