package graph

// The executable schema (generated.go), the generated models
// (model/models_gen.go) and new resolver skeletons come from
// ../schema.graphqls and ../gqlgen.yml. inlinelists then has generated.go
// marshal lists through marshalList and writes inlinelists_gen.go.
//go:generate go -C .. tool gqlgen generate
//go:generate go run ./inlinelists
