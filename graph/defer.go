package graph

// The GraphQL parser declares @defer in every schema it loads, but the
// service does not serve incremental delivery: its transports answer one
// JSON document per request, so a deferred fragment would come back null
// with hasNext true and its rest would never arrive. init removes the
// directive from the executable schema instead, before any request is
// served: introspection no longer lists it, and a document that uses it
// fails validation with "Unknown directive" like any other unknown name.
func init() {
	delete(parsedSchema.Directives, "defer")
}
