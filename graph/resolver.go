package graph

import (
	"context"
	"slices"
	"time"

	"github.com/stakegraph/stakegraph/graph/model"
	"github.com/stakegraph/stakegraph/store"
)

// Resolver is the root resolver. It holds no state: the database and the
// dataloaders of each request travel in its context (see loadersFor).
type Resolver struct{}

// loadPage loads the value of a paged relation of parent with args.
func loadPage[A comparable, V any](ctx context.Context, l *lazyLoader[pageKey[A], V], parent string, args A) (V, error) {
	return l.Load(ctx, pageKey[A]{Parent: parent, Args: args})()
}

// spending returns read, a read of the store that a resolver makes itself,
// spending one unit of the request's statement budget before each call.
func spending[V any](l *loaders, read func(context.Context) (V, error)) func(context.Context) (V, error) {
	return func(ctx context.Context) (V, error) {
		if err := l.spend(); err != nil {
			var zero V
			return zero, err
		}
		return read(ctx)
	}
}

// pageMeta returns the paging information of a page of rows rows; total
// runs count when a query selects it, unless the page itself gives the
// total (see pageTotal).
func pageMeta(p store.Page, rows int, count func(context.Context) (int, error)) *model.PageMeta {
	if total, ok := pageTotal(p, rows); ok {
		count = func(context.Context) (int, error) { return total, nil }
	}
	return countedPageMeta(p, count)
}

// countedPageMeta returns the paging information of a page whose total
// always comes from count: for lists whose total is a kept figure rather
// than the number of rows their pages read.
func countedPageMeta(p store.Page, count func(context.Context) (int, error)) *model.PageMeta {
	return &model.PageMeta{Skip: p.Skip, Take: p.Take, Count: count}
}

// pageTotal returns the number of rows of a whole list, known from one
// page of it of rows rows when the page holds the list's end: a page with
// fewer rows than it could take that starts at the list's start or holds
// at least one row ends the list, so the list has skip+rows. Otherwise
// (a full page, or an empty one past the start) the total is unknown.
// The page and its list must be read with the same filter; a short page
// then saves the count statement, which most pages of one staker's or
// one operator's records are.
func pageTotal(p store.Page, rows int) (total int, ok bool) {
	if rows >= p.Take || (rows == 0 && p.Skip > 0) {
		return 0, false
	}
	return p.Skip + rows, true
}

// mapList converts each row with convert.
func mapList[T, M any](rows []T, convert func(T) M) []M {
	out := make([]M, len(rows))
	for i, r := range rows {
		out[i] = convert(r)
	}
	return out
}

// mapListErr converts each row with convert, stopping at the first error.
func mapListErr[T, M any](rows []T, convert func(T) (M, error)) ([]M, error) {
	out := make([]M, len(rows))
	for i, r := range rows {
		m, err := convert(r)
		if err != nil {
			return nil, err
		}
		out[i] = m
	}
	return out, nil
}

// avsByAddress returns the AVS at address, or nil when there is none.
func avsByAddress(ctx context.Context, address string) (*model.Avs, error) {
	a, err := loadersFor(ctx).avs.Load(ctx, address)()
	if err != nil || a == nil {
		return nil, err
	}
	return avsFromStore(a), nil
}

// operatorByAddress returns the operator at address, or nil when there is
// none.
func operatorByAddress(ctx context.Context, address string) (*model.Operator, error) {
	o, err := loadersFor(ctx).operators.Load(ctx, address)()
	if err != nil || o == nil {
		return nil, err
	}
	return operatorFromStore(o), nil
}

// stakerRecordFields are the fields of Staker read from the staker's own
// record or computed with it (rewards: the APYs of the operator it is
// delegated to); the others are its address or read by it.
var stakerRecordFields = []string{"operatorAddress", "delegatedTo", "createdAtBlock", "createdAt", "updatedAtBlock", "updatedAt", "rewards"}

// stakerByAddress returns the staker at address; an address never seen is
// a staker with nothing. When the operation selects no field of a staker
// read from its record, the staker is its address alone and is not read:
// an operator's events naming their stakers (staker { address }) had read
// ten stakers' records per page for nothing.
func stakerByAddress(ctx context.Context, address string) (*model.Staker, error) {
	l := loadersFor(ctx)
	needed, _ := l.stakerRecords.get(func() (bool, error) {
		return operationSelectsAny(ctx, func(object, field string) bool {
			return object == "Staker" && slices.Contains(stakerRecordFields, field)
		}, true), nil
	})
	if !needed {
		return unseenStaker(address), nil
	}
	s, err := l.stakers.Load(ctx, address)()
	if err != nil {
		return nil, err
	}
	return stakerOrUnseen(s, address), nil
}

// rootStaker is stakerByAddress for a root field, which has no siblings to
// batch with: it reads the staker at once instead of after the batch
// window, and primes the loader with it for the rest of the request.
func rootStaker(ctx context.Context, address string) (*model.Staker, error) {
	l := loadersFor(ctx)
	if err := l.spend(); err != nil {
		return nil, err
	}
	rows, err := l.db.StakersByAddresses(ctx, []string{address})
	if err != nil {
		return nil, err
	}
	var s *store.Staker
	if len(rows) > 0 {
		s = &rows[0]
	}
	l.stakers.Prime(ctx, address, s)
	return stakerOrUnseen(s, address), nil
}

// stakersUpdatedSince returns the reads of a page of the stakers updated
// since a time and of their total, both from the stakers' address bucket
// counts for that time, which the entity cache keeps: clients paging
// through the stakers of a date have them read once per data version, and
// a page then reads only its bucket.
func stakersUpdatedSince(ctx context.Context, since time.Time, page store.Page) (
	list func(context.Context, *store.DB) ([]store.Staker, error),
	count func(context.Context, *store.DB) (int, error),
) {
	l := loadersFor(ctx)
	buckets := cachedBuckets(l, "stakers updated", since.UnixNano(), spending(l, func(ctx context.Context) (store.AddressBuckets, error) {
		return l.db.StakerUpdateBuckets(ctx, since)
	}))
	list = func(ctx context.Context, db *store.DB) ([]store.Staker, error) {
		b, err := buckets(ctx)
		if err != nil {
			return nil, err
		}
		return db.ListStakersUpdatedSince(ctx, since, b, page)
	}
	count = func(ctx context.Context, _ *store.DB) (int, error) {
		b, err := buckets(ctx)
		return b.Total(), err
	}
	return list, count
}

// stakerOrUnseen converts s, the staker at address, or nil for an address
// never seen: a staker with nothing.
func stakerOrUnseen(s *store.Staker, address string) *model.Staker {
	if s == nil {
		return unseenStaker(address)
	}
	return stakerFromStore(s)
}

// strategyByAddress returns the strategy at address, or nil when there is
// none.
func strategyByAddress(ctx context.Context, address string) (*model.Strategy, error) {
	s, err := loadersFor(ctx).strategies.Load(ctx, address)()
	if err != nil || s == nil {
		return nil, err
	}
	return strategyFromStore(s), nil
}

// operatorRegistrations returns the AVS registrations of an operator.
func operatorRegistrations(ctx context.Context, operator string) ([]*model.AvsRegistration, error) {
	rows, err := loadersFor(ctx).registrations.Load(ctx, operator)()
	return mapList(rows, registrationFromStore), err
}

// avsOperatorShares returns the operator's shares in the strategies it
// restakes for the AVS: its shares, filtered by the registration.
func avsOperatorShares(ctx context.Context, x *model.AvsOperator) (*shareSet, error) {
	set, err := loadersFor(ctx).operatorShares.Load(ctx, x.Address)()
	if err != nil {
		return nil, err
	}
	return set.restakedFor(x.RestakedStrategies), nil
}

// snapshots returns the latest daily snapshots, read once per request.
func snapshots(ctx context.Context) (store.SnapshotTrio, error) {
	return loadersFor(ctx).snapshotTrio(ctx)
}

// strategySnapshots returns the latest per-strategy snapshots, read once per
// request.
func strategySnapshots(ctx context.Context) (store.StrategySnapshotTrio, error) {
	return loadersFor(ctx).strategySnapshotTrio(ctx)
}

// eventArgsFrom validates the arguments shared by the delegation event
// relations and applies the date rules at the request's time.
func eventArgsFrom(ctx context.Context, txHash *string, typeArg *model.DelegationEventType, strategy, startAt, endAt *string, skip, take *int) (eventArgs, error) {
	page, err := pageFrom(skip, take)
	if err != nil {
		return eventArgs{}, err
	}
	start, end, err := eventRange(startAt, endAt, loadersFor(ctx).now)
	if err != nil {
		return eventArgs{}, err
	}
	tx, err := hashFrom("txHash", txHash)
	if err != nil {
		return eventArgs{}, err
	}
	f := store.DelegationEventFilter{Start: start, End: end, TxHash: tx, Strategy: stringValue(strategy)}
	if typeArg != nil {
		f.Type = string(*typeArg)
	}
	return eventArgs{Filter: f, Page: page}, nil
}

// delegationEventPage loads one page of the delegation events of owner (a
// staker or an operator) through the given loaders; relation names the
// counts in the count cache.
func delegationEventPage(ctx context.Context, relation, owner string, args eventArgs,
	events *lazyLoader[pageKey[eventArgs], []store.DelegationEvent],
	counts *lazyLoader[pageKey[store.DelegationEventFilter], int],
) (*model.DelegationEventPage, error) {
	rows, err := loadPage(ctx, events, owner, args)
	if err != nil {
		return nil, err
	}
	return &model.DelegationEventPage{
		Data: mapList(rows, delegationEventFromStore),
		Meta: pageMeta(args.Page, len(rows), loadCount(ctx, relation, counts, owner, args.Filter)),
	}, nil
}

// setKey returns the key of an operator set (store.OperatorSetRef.Key),
// by which its relations are loaded.
func setKey(s *model.OperatorSet) string {
	return store.OperatorSetRef{AVS: s.AvsAddress, ID: int64(s.ID)}.Key()
}

// operatorSetByRef returns the operator set id of the AVS avs, or nil when
// there is none.
func operatorSetByRef(ctx context.Context, avs string, id int) (*model.OperatorSet, error) {
	key := store.OperatorSetRef{AVS: avs, ID: int64(id)}.Key()
	s, err := loadersFor(ctx).operatorSets.Load(ctx, key)()
	if err != nil || s == nil {
		return nil, err
	}
	return operatorSetFromStore(s), nil
}

// memberPage loads one page of the operator set memberships of parent (an
// operator set's key or an operator's address) through the given loaders;
// relation names the counts in the count cache.
func memberPage(ctx context.Context, relation, parent string, args memberArgs,
	members *lazyLoader[pageKey[memberArgs], []store.OperatorSetMember],
	counts *lazyLoader[pageKey[store.RegistrationStatus], int],
) (*model.OperatorSetMemberPage, error) {
	rows, err := loadPage(ctx, members, parent, args)
	if err != nil {
		return nil, err
	}
	return &model.OperatorSetMemberPage{
		Data: mapList(rows, operatorSetMemberFromStore),
		Meta: pageMeta(args.Page, len(rows), loadCount(ctx, relation, counts, parent, args.Status)),
	}, nil
}

// slashingPage loads one page of the slashings of parent (an operator's
// address or an operator set's key) through the given loaders; relation
// names the counts in the count cache.
func slashingPage(ctx context.Context, relation, parent string, page store.Page,
	slashings *lazyLoader[pageKey[store.Page], []store.Slashing],
	counts *lazyLoader[pageKey[struct{}], int],
) (*model.SlashingPage, error) {
	rows, err := loadPage(ctx, slashings, parent, page)
	if err != nil {
		return nil, err
	}
	return &model.SlashingPage{
		Data: mapList(rows, slashingFromStore),
		Meta: pageMeta(page, len(rows), loadCount(ctx, relation, counts, parent, struct{}{})),
	}, nil
}
