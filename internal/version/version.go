// Package version holds the version of the stakegraph build, set at link
// time:
//
//	go build -ldflags "-X github.com/stakegraph/stakegraph/internal/version.Version=v1.2.3" ./cmd/stakegraph
package version

// Version is the version of this build; "dev" when not set at link time.
var Version = "dev"
