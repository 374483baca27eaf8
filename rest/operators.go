package rest

import (
	_ "embed"
	"net/http"

	"github.com/stakegraph/stakegraph/internal/respond"
)

//go:embed operations/operator_list.graphql
var operatorListOp string

// operatorList serves GET /operators.
func (h *handlers) operatorList(w http.ResponseWriter, r *http.Request) {
	p := newParams(r.URL.Query())
	vs := vars{"withTvl": p.Bool("withTvl")}
	setOptional(vs, "searchByText", p.Text("searchByText"))
	for _, s := range []string{"sortByApy", "sortByTvl", "sortByTotalAvs", "sortByTotalStakers"} {
		setOptional(vs, s, p.Sort(s))
	}
	vs["skip"], vs["take"] = p.Page()
	if err := p.Err(); err != nil {
		respond.Error(w, r, err)
		return
	}
	h.serve(w, r, operatorListOp, vs, "", "result")
}
