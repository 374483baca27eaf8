package graph

// The executable schema (generated.go), the generated models
// (model/models_gen.go) and new resolver skeletons come from
// ../schema.graphqls and ../gqlgen.yml.
//go:generate go -C .. tool gqlgen generate
