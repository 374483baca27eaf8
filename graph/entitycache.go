package graph

import (
	"context"
	"fmt"
	"maps"
	"sync"

	"github.com/stakegraph/stakegraph/store"
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

	mu     sync.RWMutex
	at     int64 // the data version of the tables' values
	size   int   // values held in all tables
	tables map[string]entityStore

	// counts holds the totals of paged lists, bounded apart from the
	// records, buckets the counts by address bucket of the lists that
	// start a page in its bucket, and withdrawalBuckets the creation block
	// bucket counts of the withdrawal lists' deep pages.
	counts            countTable[int]
	buckets           countTable[store.AddressBuckets]
	withdrawalBuckets countTable[store.WithdrawalBuckets]
}

// entityStore is a table of one relation as the cache sees it, whatever
// the type of its values.
type entityStore interface {
	// clear drops every value. The cache's mutex is held.
	clear()
}

// entityTable holds the cached values of one relation (a loader's name),
// all of type V, by key. Its map is guarded by its cache's mutex.
type entityTable[V any] struct {
	cache  *EntityCache
	values map[string]entityValue[V]
}

// entityValue is a cached value; found is false for a key the database
// does not have, which is cached too, so that it is not asked for again.
type entityValue[V any] struct {
	value V
	found bool
}

func (t *entityTable[V]) clear() { clear(t.values) }

// forVersion returns c when its entries are those of data version v (known
// false: unknown), and nil, which caches nothing, otherwise.
func (c *EntityCache) forVersion(v int64, known bool) *EntityCache {
	if c == nil || !known {
		return nil
	}
	if at, ok := c.version(); !ok || at != v {
		return nil
	}
	return c
}

// DefaultEntityCacheEntries bounds an EntityCache when NewEntityCache is
// given no bound: far more than the AVS, operators, strategies and their
// relations of mainnet (a few thousand records each), and a few tens of
// megabytes at most.
const DefaultEntityCacheEntries = 200_000

// NewEntityCache returns an empty cache whose entries are valid at the data
// version that version reports (ok false: unknown, cache nothing). It holds
// at most maxEntries values (DefaultEntityCacheEntries when 0 or less); when
// it is full, it starts again empty. Apart from them, it holds the totals of
// up to DefaultCountCacheEntries filters of paged lists and the address
// bucket counts of up to DefaultBucketCacheEntries, and the block bucket
// counts of up to DefaultWithdrawalBucketCacheEntries withdrawal lists.
func NewEntityCache(version func() (v int64, ok bool), maxEntries int) *EntityCache {
	if maxEntries <= 0 {
		maxEntries = DefaultEntityCacheEntries
	}
	return &EntityCache{
		version:           version,
		maxEntries:        maxEntries,
		tables:            make(map[string]entityStore),
		counts:            countTable[int]{maxEntries: DefaultCountCacheEntries},
		buckets:           countTable[store.AddressBuckets]{maxEntries: DefaultBucketCacheEntries},
		withdrawalBuckets: countTable[store.WithdrawalBuckets]{maxEntries: DefaultWithdrawalBucketCacheEntries},
	}
}

// entityTableOf returns c's table of relation, made on first use (nil for
// a nil c). A relation holds values of one type: asking for it with
// another is a programming error, and panics naming both types.
func entityTableOf[V any](c *EntityCache, relation string) *entityTable[V] {
	if c == nil {
		return nil
	}
	c.mu.RLock()
	s, ok := c.tables[relation]
	c.mu.RUnlock()
	if !ok {
		c.mu.Lock()
		if s, ok = c.tables[relation]; !ok {
			s = &entityTable[V]{cache: c, values: make(map[string]entityValue[V])}
			c.tables[relation] = s
		}
		c.mu.Unlock()
	}
	t, ok := s.(*entityTable[V])
	if !ok {
		panic(fmt.Sprintf("entity cache: relation %q holds %T, not %T", relation, s, t))
	}
	return t
}

// lookup returns the cached values of keys at the current data version,
// the keys t does not hold, and that version (ok false when it is unknown
// and nothing may be cached).
func (t *entityTable[V]) lookup(keys []string) (hits map[string]entityValue[V], missing []string, version int64, ok bool) {
	c := t.cache
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
		if v, found := t.values[k]; found {
			if hits == nil {
				hits = make(map[string]entityValue[V], len(keys))
			}
			hits[k] = v
		} else {
			missing = append(missing, k)
		}
	}
	return hits, missing, version, true
}

// get returns the cached value of key at the current data version, if the
// table holds it (a nil t holds nothing).
func (t *entityTable[V]) get(key string) (entityValue[V], bool) {
	if t == nil {
		return entityValue[V]{}, false
	}
	c := t.cache
	version, ok := c.version()
	if !ok {
		return entityValue[V]{}, false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.at != version {
		return entityValue[V]{}, false
	}
	v, found := t.values[key]
	return v, found
}

// store keeps the values read at version unless a newer version has been
// seen since; a newer version than the entries' replaces every table's.
func (t *entityTable[V]) store(version int64, values map[string]entityValue[V]) {
	c := t.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur, ok := c.version(); !ok || cur != version || version < c.at {
		return
	}
	added := 0
	if version == c.at {
		for k := range values {
			if _, had := t.values[k]; !had {
				added++
			}
		}
	}
	if version != c.at || c.size+added > c.maxEntries {
		for _, s := range c.tables {
			s.clear()
		}
		c.size, c.at, added = 0, version, len(values)
	}
	maps.Copy(t.values, values)
	c.size += added
}

// Len returns the number of cached values.
func (c *EntityCache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.size
}

// cachedFetch returns fetch answering from c what it holds: only the keys c
// does not hold at the current data version are fetched, and what the
// database answers for them, absent keys included, is kept for the next
// requests. With a nil c it returns fetch.
func cachedFetch[V any](c *EntityCache, relation string, fetch func(ctx context.Context, keys []string) (map[string]V, error)) func(ctx context.Context, keys []string) (map[string]V, error) {
	if c == nil {
		return fetch
	}
	t := entityTableOf[V](c, relation)
	return func(ctx context.Context, keys []string) (map[string]V, error) {
		hits, missing, version, ok := t.lookup(keys)
		out := make(map[string]V, len(keys))
		for k, v := range hits {
			if v.found {
				out[k] = v.value
			}
		}
		if len(missing) == 0 {
			return out, nil
		}
		fetched, err := fetch(ctx, missing)
		if err != nil {
			return nil, err
		}
		keep := make(map[string]entityValue[V], len(missing))
		for _, k := range missing {
			v, found := fetched[k]
			if found {
				out[k] = v
			}
			keep[k] = entityValue[V]{value: v, found: found}
		}
		if ok {
			t.store(version, keep)
		}
		return out, nil
	}
}
