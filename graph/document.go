package graph

import (
	"context"
	"errors"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"
)

// documentLimitExceeded is the gqlgen-style code of a document rejected for
// its size before validation; the error presenter reports it as
// unprocessable_entity.
const documentLimitExceeded = "DOCUMENT_LIMIT_EXCEEDED"

// documentLimits is a handler extension that rejects a query document whose
// validation or execution would be costly, before the executor validates it:
// validation cannot be stopped once started, and some of its rules take
// time quadratic in the fields of a selection set. It parses the document
// (bounded by tokens, the parser's token limit) and rejects it when
//
//   - its operations select more than fields fields in all, counting every
//     field, aliased or not, and counting a fragment's fields at each of
//     its spreads;
//   - its operations and fragment definitions together select more than
//     documentFieldsFactor times fields (which bounds the work of
//     validating fragments that no operation uses, and of these checks);
//     or
//   - one response name is selected more than duplicates times in one
//     selection set, counting the fields that inline fragments and
//     fragment spreads bring into it, and with the selection sets of
//     fields of the same response name merged into one, as execution
//     merges them (validation compares such fields pairwise, and the pairs
//     of their children).
//
// A document the executor's query cache holds has passed these checks and
// validation before and is not parsed again.
type documentLimits struct {
	tokens     int
	fields     int
	duplicates int
	validated  graphql.Cache[*ast.QueryDocument]
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationParameterMutator
} = documentLimits{}

func (d documentLimits) ExtensionName() string { return "DocumentLimits" }

func (d documentLimits) Validate(graphql.ExecutableSchema) error { return nil }

func (d documentLimits) MutateOperationParameters(ctx context.Context, params *graphql.RawParams) *gqlerror.Error {
	if params.Query == "" {
		return nil // the executor answers that there is no operation
	}
	if d.validated != nil {
		if _, ok := d.validated.Get(ctx, params.Query); ok {
			return nil
		}
	}
	doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: params.Query}, d.tokens)
	if err != nil {
		var gerr *gqlerror.Error
		if !errors.As(err, &gerr) {
			gerr = gqlerror.Wrap(err)
		}
		if strings.HasPrefix(gerr.Message, "exceeded token limit") {
			return limitError("the document has more than %d tokens, the limit", d.tokens)
		}
		errcode.Set(gerr, errcode.ParseFailed)
		return gerr
	}
	return checkDocument(doc, d.fields, d.duplicates)
}

// limitError returns the error of a document over one of its limits.
func limitError(format string, args ...any) *gqlerror.Error {
	err := gqlerror.Errorf(format, args...)
	errcode.Set(err, documentLimitExceeded)
	return err
}

// documentFieldsFactor bounds the fields of a whole document, operations
// and fragment definitions, as a multiple of the fields of its operations.
const documentFieldsFactor = 10

// checkDocument checks doc, a parsed but not validated document, against
// the field and duplicate limits of documentLimits. Nothing is known to be
// valid yet: fragments may be undefined, defined twice or cyclic; the
// checks do not fail on these (validation does) and do not loop.
func checkDocument(doc *ast.QueryDocument, maxFields, maxDuplicates int) *gqlerror.Error {
	c := docCounter{
		fragments: make(map[string]*ast.FragmentDefinition, len(doc.Fragments)),
		sizes:     make(map[string]int, len(doc.Fragments)),
		visiting:  make(map[string]bool),
		cap:       documentFieldsFactor*maxFields + 1,
	}
	for _, f := range doc.Fragments {
		if _, ok := c.fragments[f.Name]; !ok {
			c.fragments[f.Name] = f
		}
	}
	// Sizes first: they bound the work of the duplicate check.
	operations := 0
	for _, op := range doc.Operations {
		operations = min(operations+c.size(op.SelectionSet), c.cap)
	}
	if operations > maxFields {
		return limitError("the document selects more than %d fields, the limit "+
			"(every field and alias counts, and a fragment's fields count at each of its spreads)", maxFields)
	}
	all := operations
	for _, f := range doc.Fragments {
		all = min(all+c.size(f.SelectionSet), c.cap)
	}
	if all > documentFieldsFactor*maxFields {
		return limitError("the document's operations and fragments select more than %d fields, the limit", documentFieldsFactor*maxFields)
	}
	for _, f := range doc.Fragments {
		if name, n := c.duplicates(f.SelectionSet); n > maxDuplicates {
			return duplicateError(name, n, maxDuplicates)
		}
	}
	for _, op := range doc.Operations {
		if name, n := c.duplicates(op.SelectionSet); n > maxDuplicates {
			return duplicateError(name, n, maxDuplicates)
		}
	}
	return nil
}

func duplicateError(name string, n, limit int) *gqlerror.Error {
	return limitError("%q is selected %d times in one selection set, more than the limit of %d", name, n, limit)
}

// docCounter counts the fields of a document's selection sets, expanding
// fragment spreads, with each fragment's counts computed once.
type docCounter struct {
	fragments map[string]*ast.FragmentDefinition
	// sizes holds the number of fields of each fragment, spreads expanded,
	// saturated at cap.
	sizes map[string]int
	// visiting holds the fragments being expanded, so that a cycle (which
	// validation rejects) adds nothing instead of looping.
	visiting map[string]bool
	cap      int
}

// size returns the number of fields of set, fragment spreads expanded,
// saturated at c.cap.
func (c *docCounter) size(set ast.SelectionSet) int {
	n := 0
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			n += 1 + c.size(s.SelectionSet)
		case *ast.InlineFragment:
			n += c.size(s.SelectionSet)
		case *ast.FragmentSpread:
			n += c.fragmentSize(s.Name)
		}
		if n >= c.cap {
			return c.cap
		}
	}
	return n
}

// fragmentSize returns the size of the fragment name, 0 for an unknown
// fragment or one that spreads itself.
func (c *docCounter) fragmentSize(name string) int {
	if n, ok := c.sizes[name]; ok {
		return n
	}
	f := c.fragments[name]
	if f == nil || c.visiting[name] {
		return 0
	}
	c.visiting[name] = true
	n := c.size(f.SelectionSet)
	delete(c.visiting, name)
	c.sizes[name] = n
	return n
}

// duplicates returns the response name selected most often in one
// selection set of the fields of sets, merged as the executor merges them,
// and how often. The fields of sets (and those that inline fragments and
// fragment spreads bring into them) are one set; the fields with the same
// response name in it have their selection sets merged into one in turn,
// since validation compares each pair of them, and the pairs of their
// children. Each field of the expanded document is visited once.
func (c *docCounter) duplicates(sets ...ast.SelectionSet) (string, int) {
	counts := make(map[string]int)
	children := make(map[string][]ast.SelectionSet)
	var order []string
	var add func(set ast.SelectionSet)
	add = func(set ast.SelectionSet) {
		for _, sel := range set {
			switch s := sel.(type) {
			case *ast.Field:
				name := responseName(s)
				if counts[name] == 0 {
					order = append(order, name)
				}
				counts[name]++
				if len(s.SelectionSet) > 0 {
					children[name] = append(children[name], s.SelectionSet)
				}
			case *ast.InlineFragment:
				add(s.SelectionSet)
			case *ast.FragmentSpread:
				f := c.fragments[s.Name]
				if f == nil || c.visiting[s.Name] {
					continue
				}
				c.visiting[s.Name] = true
				add(f.SelectionSet)
				delete(c.visiting, s.Name)
			}
		}
	}
	for _, set := range sets {
		add(set)
	}
	name, most := "", 0
	for _, k := range order {
		if counts[k] > most {
			name, most = k, counts[k]
		}
	}
	for _, k := range order {
		if sub, n := c.duplicates(children[k]...); n > most {
			name, most = sub, n
		}
	}
	return name, most
}

func responseName(f *ast.Field) string {
	if f.Alias != "" {
		return f.Alias
	}
	return f.Name
}
