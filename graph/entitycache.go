package graph

import (
	"context"
	"sync"
)

// EntityCache keeps, between requests, the records of the small tables that
// nearly every page reads by key: AVS, operators, strategies, their shares,
// registrations, APYs, curated metadata, reward totals, operator sets with
// their allocated stake, operators' max magnitudes and the TVL computed from
// the shares. With it, a request the response cache misses reaches
// PostgreSQL only for what is particular to it (the page of a list, its
// count, a staker's history), not for the records the page shows.
//
// Entries belong to one data version (service_state.data_version, which
// every commit of the indexer or the seeder increments), read through the
// version function, for example that of the response cache's poller: a new
// version empties the cache, and a value read from the database is kept
// only while the version it was read at is still the current one. So a
// cached record is at most as old as the poller's last reading, the same
// freshness the response cache gives. While the version is unknown (the
// database cannot be read), the cache steps aside.
//
// Cached values are shared by concurrent requests and must not be modified.
// A nil *EntityCache caches nothing.
type EntityCache struct {
	version    func() (int64, bool)
	maxEntries int

	mu      sync.RWMutex
	at      int64 // the data version of entries
	entries map[entityKey]entityValue
}

// entityKey names a cached value: the relation it belongs to (a loader's
// name) and its key there.
type entityKey struct {
	relation string
	key      string
}

// entityValue is a cached value; found is false for a key the database
// does not have, which is cached too, so that it is not asked for again.
type entityValue struct {
	value any
	found bool
}

// DefaultEntityCacheEntries bounds an EntityCache when NewEntityCache is
// given no bound: far more than the AVS, operators, strategies and their
// relations of mainnet (a few thousand records each), and a few tens of
// megabytes at most.
const DefaultEntityCacheEntries = 200_000

// NewEntityCache returns an empty cache whose entries are valid at the data
// version that version reports (ok false: unknown, cache nothing). It holds
// at most maxEntries values (DefaultEntityCacheEntries when 0 or less); when
// it is full, it starts again empty.
func NewEntityCache(version func() (v int64, ok bool), maxEntries int) *EntityCache {
	if maxEntries <= 0 {
		maxEntries = DefaultEntityCacheEntries
	}
	return &EntityCache{version: version, maxEntries: maxEntries, entries: make(map[entityKey]entityValue)}
}

// lookup returns the cached values of keys of relation at the current data
// version, the keys it does not hold, and that version (ok false when it is
// unknown and nothing may be cached).
func (c *EntityCache) lookup(relation string, keys []string) (hits map[string]entityValue, missing []string, version int64, ok bool) {
	version, ok = c.version()
	if !ok {
		return nil, keys, 0, false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.at != version {
		return nil, keys, version, true
	}
	for _, k := range keys {
		if v, found := c.entries[entityKey{relation, k}]; found {
			if hits == nil {
				hits = make(map[string]entityValue, len(keys))
			}
			hits[k] = v
		} else {
			missing = append(missing, k)
		}
	}
	return hits, missing, version, true
}

// get returns the cached value of key of relation at the current data
// version, if the cache holds it (a nil c holds nothing).
func (c *EntityCache) get(relation, key string) (entityValue, bool) {
	if c == nil {
		return entityValue{}, false
	}
	version, ok := c.version()
	if !ok {
		return entityValue{}, false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.at != version {
		return entityValue{}, false
	}
	v, found := c.entries[entityKey{relation, key}]
	return v, found
}

// store keeps the values read at version unless a newer version has been
// seen since; a newer version than the entries' replaces them.
func (c *EntityCache) store(version int64, relation string, values map[string]entityValue) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur, ok := c.version(); !ok || cur != version || version < c.at {
		return
	}
	if version != c.at || len(c.entries)+len(values) > c.maxEntries {
		c.entries = make(map[entityKey]entityValue)
		c.at = version
	}
	for k, v := range values {
		c.entries[entityKey{relation, k}] = v
	}
}

// Len returns the number of cached values.
func (c *EntityCache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}

// cachedFetch returns fetch answering from c what it holds: only the keys c
// does not hold at the current data version are fetched, and what the
// database answers for them, absent keys included, is kept for the next
// requests. With a nil c it returns fetch.
func cachedFetch[V any](c *EntityCache, relation string, fetch func(ctx context.Context, keys []string) (map[string]V, error)) func(ctx context.Context, keys []string) (map[string]V, error) {
	if c == nil {
		return fetch
	}
	return func(ctx context.Context, keys []string) (map[string]V, error) {
		hits, missing, version, ok := c.lookup(relation, keys)
		out := make(map[string]V, len(keys))
		for k, v := range hits {
			if v.found {
				out[k] = v.value.(V)
			}
		}
		if len(missing) == 0 {
			return out, nil
		}
		fetched, err := fetch(ctx, missing)
		if err != nil {
			return nil, err
		}
		keep := make(map[string]entityValue, len(missing))
		for _, k := range missing {
			v, found := fetched[k]
			if found {
				out[k] = v
			}
			keep[k] = entityValue{value: v, found: found}
		}
		if ok {
			c.store(version, relation, keep)
		}
		return out, nil
	}
}
