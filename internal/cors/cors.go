// Package cors lets web pages of any origin call the API, as the
// Cross-Origin Resource Sharing rules of the Fetch standard describe.
//
// The REST API and the GraphQL endpoint are both wrapped with Middleware,
// so that they answer browsers alike. The API needs no cookies: a page
// sends its API key in the X-API-Token header, so every origin is allowed
// and no credentials are.
package cors

import "net/http"

// AllowedHeaders are the request headers a page may send besides the ones
// the Fetch standard always allows: the API key, and the Content-Type of a
// GraphQL POST request (application/json, which needs a preflight).
const AllowedHeaders = "X-API-Token, Content-Type"

// ExposedHeaders are the response headers a page may read besides the ones
// the Fetch standard always exposes: the rate limits of its key
// (Retry-After on a 429), the response cache's ETag and X-Cache, and the
// request ID that the server's log lines carry.
const ExposedHeaders = "Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, ETag, X-Cache, X-Request-Id"

// MaxAge is how long, in seconds, a browser may keep a preflight's answer.
const MaxAge = "86400"

// Middleware returns a middleware that marks every response readable by
// any origin and answers every OPTIONS request itself, with 204 No Content
// and allowedMethods (such as "GET, HEAD, OPTIONS") as its Allow and
// Access-Control-Allow-Methods headers. A browser's preflight carries no
// API key, so the middleware must run before the key check: the handler it
// wraps never sees an OPTIONS request.
func Middleware(allowedMethods string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", "*")
			h.Set("Access-Control-Expose-Headers", ExposedHeaders)
			if r.Method == http.MethodOptions {
				h.Set("Allow", allowedMethods)
				h.Set("Access-Control-Allow-Methods", allowedMethods)
				h.Set("Access-Control-Allow-Headers", AllowedHeaders)
				h.Set("Access-Control-Max-Age", MaxAge)
				w.WriteHeader(http.StatusNoContent)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
