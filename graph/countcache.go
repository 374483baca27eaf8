package graph

import (
	"context"
	"strconv"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/stakegraph/stakegraph/store"
)

// DefaultCountCacheEntries bounds the totals an EntityCache keeps: far more
// than the filters clients page through between two data versions.
const DefaultCountCacheEntries = 20_000

// countTable keeps the totals of paged lists (meta.total: the number of
// records matching a filter) at the data version of its EntityCache. A
// total is shared by every page of the same filter, so clients paging
// through a list, or reading the first pages of a popular one with other
// page sizes, have it counted once per data version instead of once per
// page.
//
// The totals are held in a 2Q cache: a total enters a list of recent ones
// and moves to a list of frequent ones when it is read again. Clients
// sending filters that never repeat (a date range ending now, a staker's
// events) only cycle through the recent list, a quarter of the table, and
// cannot push out the totals that others read again; a filter that becomes
// popular while the table is full still gets in. The table used to stop
// taking totals once full until the data version changed: with the data
// unchanged, a minute of one-off staker event filters filled it and every
// later page of /stakers counted its total again (0.68 statements per
// request instead of 0.42 in the bench).
//
// The same kind of table, with values of another type, keeps the counts of
// a list by address bucket (see cachedBuckets).
type countTable[V any] struct {
	mu         sync.RWMutex // guards at and the creation of values
	at         int64
	maxEntries int
	values     *lru.TwoQueueCache[any, V]
}

// countKey is the key of one total: the relation counted and the key of
// the counted records within it (a filter, or a parent with its filter).
type countKey[K comparable] struct {
	relation string
	key      K
}

// cachedCount returns count answering from the count cache of l's entity
// cache the total of relation for key, at the current data version; with
// no entity cache it returns count. Only a count read from the database is
// kept, and only while the version it was read at is the current one.
func cachedCount[K comparable](l *loaders, relation string, key K, count func(context.Context) (int, error)) func(context.Context) (int, error) {
	if l.entities == nil {
		return count
	}
	return cachedIn(l.entities, &l.entities.counts, relation, key, count)
}

// cachedIn returns read answering from table, one of c's tables, the value
// of relation for key at the current data version. Only a value read from
// the database is kept, and only while the version it was read at is the
// current one.
func cachedIn[K comparable, V any](c *EntityCache, table *countTable[V], relation string, key K, read func(context.Context) (V, error)) func(context.Context) (V, error) {
	k := countKey[K]{relation: relation, key: key}
	return func(ctx context.Context) (V, error) {
		version, ok := c.version()
		if !ok {
			return read(ctx)
		}
		if v, hit := table.get(version, k); hit {
			return v, nil
		}
		v, err := read(ctx)
		if err == nil {
			table.store(c, version, k, v)
		}
		return v, err
	}
}

// get returns the value held for key at version.
func (t *countTable[V]) get(version int64, key any) (V, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.at != version || t.values == nil {
		var zero V
		return zero, false
	}
	return t.values.Get(key)
}

// store keeps the value n of key, read at version, unless c's current
// version is another one by now. A new version empties the table.
func (t *countTable[V]) store(c *EntityCache, version int64, key any, n V) {
	if cur, ok := c.version(); !ok || cur != version {
		return
	}
	t.mu.RLock()
	current := t.at == version && t.values != nil
	if current {
		t.values.Add(key, n)
	}
	t.mu.RUnlock()
	if current {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if version < t.at {
		return
	}
	if version != t.at || t.values == nil {
		values, err := lru.New2Q[any, V](max(t.maxEntries, 1))
		if err != nil {
			return
		}
		t.at, t.values = version, values
	}
	t.values.Add(key, n)
}

// len returns the number of values held.
func (t *countTable[V]) len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.values == nil {
		return 0
	}
	return t.values.Len()
}

// DefaultBucketCacheEntries bounds the address bucket counts an
// EntityCache keeps: a list's bucket counts depend on its filter only (a
// date), not on the page, so clients paging through a few filters need
// only a few.
const DefaultBucketCacheEntries = 1_000

// DefaultWithdrawalBucketCacheEntries bounds the withdrawal lists whose
// creation block bucket counts an EntityCache keeps: a list's are a few
// hundred buckets (under 10 KB on the bench data), read for its deep pages,
// of the whole list, an operator's or a strategy's, by status.
const DefaultWithdrawalBucketCacheEntries = 256

// cachedWithdrawalBuckets returns read answering from the withdrawal
// bucket cache of l's entity cache the block bucket counts of the
// withdrawal list of a filter, as cachedBuckets does for address buckets.
func cachedWithdrawalBuckets(l *loaders, read func(context.Context, store.WithdrawalFilter) (store.WithdrawalBuckets, error)) func(context.Context, store.WithdrawalFilter) (store.WithdrawalBuckets, error) {
	if l.entities == nil {
		return read
	}
	return func(ctx context.Context, f store.WithdrawalFilter) (store.WithdrawalBuckets, error) {
		return cachedIn(l.entities, &l.entities.withdrawalBuckets, "withdrawal buckets", f, func(ctx context.Context) (store.WithdrawalBuckets, error) {
			return read(ctx, f)
		})(ctx)
	}
}

// cachedBuckets returns read answering from the bucket cache of l's entity
// cache the address bucket counts of relation for key, as cachedCount does
// for totals, and reading them at most once for the request: a page and
// its total both use them.
func cachedBuckets[K comparable](l *loaders, relation string, key K, read func(context.Context) (store.AddressBuckets, error)) func(context.Context) (store.AddressBuckets, error) {
	if l.entities != nil {
		read = cachedIn(l.entities, &l.entities.buckets, relation, key, read)
	}
	var once memo[store.AddressBuckets]
	return func(ctx context.Context) (store.AddressBuckets, error) {
		return once.get(func() (store.AddressBuckets, error) { return read(ctx) })
	}
}

// loadCount returns the count of parent's relation for args through the
// loader counts, answered from the count cache when it holds it: only the
// totals the cache misses are batched into a statement.
func loadCount[A comparable](ctx context.Context, relation string, counts *lazyLoader[pageKey[A], int], parent string, args A) func(context.Context) (int, error) {
	return cachedCount(loadersFor(ctx), relation, pageKey[A]{Parent: parent, Args: args}, func(ctx context.Context) (int, error) {
		return loadPage(ctx, counts, parent, args)
	})
}

// Count cache keys compare pointers by address, so a filter with pointer
// fields would never share its total between two requests. The filters
// below are keyed by what their pointers point to.

// registrationEventsKey is a RegistrationEventFilter by value.
type registrationEventsKey struct {
	filter     store.RegistrationEventFilter // Registered nil
	registered string                        // "", "true" or "false"
}

func registrationEventsKeyOf(f store.RegistrationEventFilter) registrationEventsKey {
	k := registrationEventsKey{filter: f}
	k.filter.Registered = nil
	if f.Registered != nil {
		k.registered = strconv.FormatBool(*f.Registered)
	}
	return k
}

// slashingsKey is a SlashingFilter by value.
type slashingsKey struct {
	filter     store.SlashingFilter // Start and End nil
	start, end string               // RFC 3339 with nanoseconds, "" when nil
}

func slashingsKeyOf(f store.SlashingFilter) slashingsKey {
	k := slashingsKey{filter: f}
	k.filter.Start, k.filter.End = nil, nil
	if f.Start != nil {
		k.start = f.Start.UTC().Format(time.RFC3339Nano)
	}
	if f.End != nil {
		k.end = f.End.UTC().Format(time.RFC3339Nano)
	}
	return k
}
