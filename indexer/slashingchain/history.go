package slashingchain

import (
	"bytes"
	"math/big"
	"sort"
	"testing"

	"github.com/Layr-Labs/eigenlayer-contracts/pkg/bindings/AllocationManager"
	"github.com/Layr-Labs/eigenlayer-contracts/pkg/bindings/DelegationManager"
	"github.com/Layr-Labs/eigenlayer-contracts/pkg/bindings/RewardsCoordinator"
	bind "github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// The amounts of the history, in units of 1e18 (the token has 18 decimals,
// and the strategy gives one share per token while nothing has been burned
// from it).
const (
	// The deposits of Stakers[0], Stakers[1] and Stakers[2].
	staker1Deposit = 100
	staker2Deposit = 60
	staker3Deposit = 40
	// freshDeposit is what Stakers[0] deposits after the slash.
	freshDeposit = 20
	// partialWithdrawal is the deposit shares Stakers[0] queues for
	// withdrawal after the slash (40% of its deposit).
	partialWithdrawal = 40
)

// The magnitudes of the history, in WAD units.
const (
	operator1Magnitude = 500_000_000_000_000_000 // 0.5
	operator2Magnitude = 250_000_000_000_000_000 // 0.25
	wadToSlash         = 500_000_000_000_000_000 // 0.5
)

// OperatorSetID is the id of the AVS's operator set.
const OperatorSetID = 1

// History is what RunHistory did.
type History struct {
	// Txs are the history's transactions in order, one per block.
	Txs []Tx
	// FromBlock and ToBlock are the first and the last block of the
	// history (ToBlock may be followed by empty blocks no history
	// transaction is in).
	FromBlock, ToBlock uint64

	// OperatorSet is the AVS's operator set, with the strategy in it.
	OperatorSet OperatorSet

	// Deposits are the tokens (and deposit shares) Stakers[i] deposited
	// before the slash; FreshDeposit is what Stakers[0] deposited after
	// it.
	Deposits     [3]*big.Int
	FreshDeposit *big.Int
	// Magnitudes are the magnitudes Operators[i] allocated to the set.
	Magnitudes [2]uint64
	// WadToSlash is the fraction of Operators[0]'s allocated magnitude the
	// AVS slashed.
	WadToSlash *big.Int

	// AllocationDelayEffectBlock is the block from which both operators'
	// allocation delay of OperatorAllocationDelay blocks is in effect.
	AllocationDelayEffectBlock uint64
	// AllocationEffectBlocks are the blocks from which the operators'
	// allocations are in effect (slashable).
	AllocationEffectBlocks [2]uint64
	// SlashBlock is the block of the slash.
	SlashBlock uint64

	// PartialWithdrawal is Stakers[0]'s withdrawal of part of its deposit
	// shares, queued after the slash and completed as tokens.
	PartialWithdrawal QueuedWithdrawal
	// FullWithdrawal is Stakers[1]'s withdrawal of all its deposit shares,
	// queued after the slash and completed as shares (which re-adds them
	// to its deposit and to its operator).
	FullWithdrawal QueuedWithdrawal
	// FreshDepositBlock is the block of Stakers[0]'s deposit after the
	// withdrawals completed.
	FreshDepositBlock uint64

	// The rewards submissions' hashes, as their events report them.
	OperatorDirectedAVSSubmission         common.Hash
	OperatorDirectedOperatorSetSubmission common.Hash
	AVSSubmission                         common.Hash
	// OperatorDirectedAVSRewards and OperatorDirectedOperatorSetRewards
	// are the operator-directed submissions' amounts per operator.
	OperatorDirectedAVSRewards         map[common.Address]*big.Int
	OperatorDirectedOperatorSetRewards map[common.Address]*big.Int
	// AVSRewardsAmount is the plain AVS rewards submission's amount.
	AVSRewardsAmount *big.Int

	// DeregisterBlock is the block in which Operators[1] deregistered from
	// the set.
	DeregisterBlock uint64
	// UndelegationWithdrawal is the withdrawal Stakers[2]'s undelegation
	// from Operators[1] queued; it is left pending.
	UndelegationWithdrawal QueuedWithdrawal
}

// Tx is one transaction of the history.
type Tx struct {
	// Name says what the transaction does, e.g.
	// "AllocationManager.slashOperator".
	Name    string
	From    common.Address
	Receipt *types.Receipt
}

// QueuedWithdrawal is a withdrawal the history queued.
type QueuedWithdrawal struct {
	Root       common.Hash
	Withdrawal Withdrawal
	// SharesToWithdraw are the withdrawable shares the queueing event
	// reported (deposit shares scaled by the slashing at queueing time).
	SharesToWithdraw []*big.Int
	QueuedBlock      uint64
	// CompletedBlock is 0 while the withdrawal is pending.
	CompletedBlock  uint64
	ReceiveAsTokens bool
}

// Ether returns n·1e18.
func Ether(n int64) *big.Int { return new(big.Int).Mul(big.NewInt(n), WAD) }

// RunHistory scripts a restaking history on the deployment, one transaction
// per block, and returns what it did:
//
//  1. The deployer mints TEST to the stakers and the AVS, who approve the
//     StrategyManager and the RewardsCoordinator. Both operators register
//     (registerAsOperator, with a metadata URI and an allocation delay of
//     10 blocks); the AVS sets its metadata URI and its registrar in the
//     AllocationManager.
//  2. Stakers[0], [1] and [2] deposit 100, 60 and 40 TEST; [0] and [1]
//     delegate to Operators[0], [2] to Operators[1].
//  3. The AVS creates operator set 1 with the strategy. Both operators set
//     their allocation delay to OperatorAllocationDelay blocks, wait for it
//     to take effect, register for the set and allocate to it: Operators[0]
//     0.5 WAD, Operators[1] 0.25 WAD. Blocks are mined until the allocations
//     are in effect.
//  4. The AVS slashes Operators[0] by half its allocation (wadsToSlash 0.5):
//     its max magnitude falls from 1 to 0.75 WAD and its delegated shares
//     from 160 to 120.
//  5. Stakers[0] queues 40 of its 100 deposit shares (30 withdrawable);
//     Stakers[1] queues all its 60 (45 withdrawable). After the withdrawal
//     delay Stakers[0] completes as tokens (receives 30 TEST) and
//     Stakers[1] as shares (45 shares back, delegated to Operators[0]
//     again). Stakers[0] then deposits 20 TEST more.
//  6. The AVS submits rewards: an operator-directed AVS submission (10 TEST
//     to Operators[0], 5 to Operators[1]), an operator-directed operator set
//     submission (4 and 2) and a plain AVS submission of 30 TEST.
//  7. Operators[1] deregisters from the set and Stakers[2] undelegates from
//     it (queueing a withdrawal of its 40 shares, left pending).
func (c *Chain) RunHistory(t testing.TB) *History {
	t.Helper()
	h := &History{
		OperatorSet:  OperatorSet{Avs: c.AVS, Id: OperatorSetID},
		Deposits:     [3]*big.Int{Ether(staker1Deposit), Ether(staker2Deposit), Ether(staker3Deposit)},
		FreshDeposit: Ether(freshDeposit),
		Magnitudes:   [2]uint64{operator1Magnitude, operator2Magnitude},
		WadToSlash:   big.NewInt(wadToSlash),
		OperatorDirectedAVSRewards: map[common.Address]*big.Int{
			c.Operators[0]: Ether(10), c.Operators[1]: Ether(5),
		},
		OperatorDirectedOperatorSetRewards: map[common.Address]*big.Int{
			c.Operators[0]: Ether(4), c.Operators[1]: Ether(2),
		},
		AVSRewardsAmount: Ether(30),
	}
	b := c.Bindings
	strategies := []common.Address{c.Strategy}
	send := func(from common.Address, name string, f func(*bind.TransactOpts) (*types.Transaction, error)) *types.Receipt {
		t.Helper()
		r := c.Send(t, from, name, f)
		h.Txs = append(h.Txs, Tx{Name: name, From: from, Receipt: r})
		if h.FromBlock == 0 {
			h.FromBlock = r.BlockNumber.Uint64()
		}
		h.ToBlock = r.BlockNumber.Uint64()
		return r
	}
	token := func(from common.Address, method string, args ...any) {
		t.Helper()
		send(from, "TestToken."+method, func(o *bind.TransactOpts) (*types.Transaction, error) {
			return b.Token.Transact(o, method, args...)
		})
	}
	maxUint := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))

	// 1. Funds, operators and the AVS.
	for i, s := range c.Stakers {
		amount := new(big.Int).Set(h.Deposits[i])
		if i == 0 {
			amount.Add(amount, h.FreshDeposit)
		}
		token(c.Deployer, "mint", s, amount)
		token(s, "approve", c.Core.StrategyManager, maxUint)
	}
	token(c.Deployer, "mint", c.AVS, Ether(100))
	token(c.AVS, "approve", c.Core.RewardsCoordinator, maxUint)
	for i, op := range c.Operators {
		uri := "https://operators.example/" + []string{"one", "two"}[i] + ".json"
		send(op, "DelegationManager.registerAsOperator", func(o *bind.TransactOpts) (*types.Transaction, error) {
			return b.DelegationManager.RegisterAsOperator(o, common.Address{}, 10, uri)
		})
	}
	send(c.AVS, "AllocationManager.updateAVSMetadataURI", func(o *bind.TransactOpts) (*types.Transaction, error) {
		return b.AllocationManager.UpdateAVSMetadataURI(o, c.AVS, "https://avs.example/metadata.json")
	})
	send(c.AVS, "AllocationManager.setAVSRegistrar", func(o *bind.TransactOpts) (*types.Transaction, error) {
		return b.AllocationManager.SetAVSRegistrar(o, c.AVS, c.Registrar)
	})

	// 2. Deposits and delegations.
	for i, s := range c.Stakers {
		send(s, "StrategyManager.depositIntoStrategy", func(o *bind.TransactOpts) (*types.Transaction, error) {
			return b.StrategyManager.DepositIntoStrategy(o, c.Strategy, c.Token, h.Deposits[i])
		})
	}
	for i, s := range c.Stakers {
		op := c.Operators[0]
		if i == 2 {
			op = c.Operators[1]
		}
		send(s, "DelegationManager.delegateTo", func(o *bind.TransactOpts) (*types.Transaction, error) {
			return b.DelegationManager.DelegateTo(o, op, DelegationManager.ISignatureUtilsMixinTypesSignatureWithExpiry{Expiry: new(big.Int)}, [32]byte{})
		})
	}

	// 3. The operator set, allocation delays, registrations, allocations.
	send(c.AVS, "AllocationManager.createOperatorSets", func(o *bind.TransactOpts) (*types.Transaction, error) {
		return b.AllocationManager.CreateOperatorSets(o, c.AVS, []AllocationManager.IAllocationManagerTypesCreateSetParams{
			{OperatorSetId: OperatorSetID, Strategies: strategies},
		})
	})
	for _, op := range c.Operators {
		r := send(op, "AllocationManager.setAllocationDelay", func(o *bind.TransactOpts) (*types.Transaction, error) {
			return b.AllocationManager.SetAllocationDelay(o, op, OperatorAllocationDelay)
		})
		h.AllocationDelayEffectBlock = r.BlockNumber.Uint64() + AllocationConfigurationDelay + 1
	}
	// The next transaction is mined in the block after the head.
	c.MineUntil(t, h.AllocationDelayEffectBlock-1)
	for _, op := range c.Operators {
		send(op, "AllocationManager.registerForOperatorSets", func(o *bind.TransactOpts) (*types.Transaction, error) {
			return b.AllocationManager.RegisterForOperatorSets(o, op, AllocationManager.IAllocationManagerTypesRegisterParams{
				Avs: c.AVS, OperatorSetIds: []uint32{OperatorSetID}, Data: []byte("stakegraph"),
			})
		})
	}
	for i, op := range c.Operators {
		r := send(op, "AllocationManager.modifyAllocations", func(o *bind.TransactOpts) (*types.Transaction, error) {
			return b.AllocationManager.ModifyAllocations(o, op, []AllocationManager.IAllocationManagerTypesAllocateParams{
				{OperatorSet: h.OperatorSet, Strategies: strategies, NewMagnitudes: []uint64{h.Magnitudes[i]}},
			})
		})
		h.AllocationEffectBlocks[i] = r.BlockNumber.Uint64() + OperatorAllocationDelay
	}
	// One block more, so that the block before the slash has both
	// allocations in effect.
	c.MineUntil(t, h.AllocationEffectBlocks[1])

	// 4. The slash.
	r := send(c.AVS, "AllocationManager.slashOperator", func(o *bind.TransactOpts) (*types.Transaction, error) {
		return b.AllocationManager.SlashOperator(o, c.AVS, AllocationManager.IAllocationManagerTypesSlashingParams{
			Operator:      c.Operators[0],
			OperatorSetId: OperatorSetID,
			Strategies:    strategies,
			WadsToSlash:   []*big.Int{h.WadToSlash},
			Description:   "equivocation in epoch 7",
		})
	})
	h.SlashBlock = r.BlockNumber.Uint64()

	// 5. Withdrawals after the slash, and a fresh deposit.
	queue := func(staker common.Address, depositShares *big.Int) QueuedWithdrawal {
		t.Helper()
		r := send(staker, "DelegationManager.queueWithdrawals", func(o *bind.TransactOpts) (*types.Transaction, error) {
			return b.DelegationManager.QueueWithdrawals(o, []DelegationManager.IDelegationManagerTypesQueuedWithdrawalParams{
				{Strategies: strategies, DepositShares: []*big.Int{depositShares}, DeprecatedWithdrawer: staker},
			})
		})
		return c.queuedWithdrawal(t, r)
	}
	h.PartialWithdrawal = queue(c.Stakers[0], Ether(partialWithdrawal))
	h.FullWithdrawal = queue(c.Stakers[1], h.Deposits[1])
	c.MineUntil(t, h.FullWithdrawal.QueuedBlock+MinWithdrawalDelayBlocks)
	complete := func(staker common.Address, w *QueuedWithdrawal, asTokens bool) {
		t.Helper()
		r := send(staker, "DelegationManager.completeQueuedWithdrawal", func(o *bind.TransactOpts) (*types.Transaction, error) {
			return b.DelegationManager.CompleteQueuedWithdrawal(o, w.Withdrawal, []common.Address{c.Token}, asTokens)
		})
		w.CompletedBlock, w.ReceiveAsTokens = r.BlockNumber.Uint64(), asTokens
	}
	complete(c.Stakers[0], &h.PartialWithdrawal, true)
	complete(c.Stakers[1], &h.FullWithdrawal, false)
	r = send(c.Stakers[0], "StrategyManager.depositIntoStrategy", func(o *bind.TransactOpts) (*types.Transaction, error) {
		return b.StrategyManager.DepositIntoStrategy(o, c.Strategy, c.Token, h.FreshDeposit)
	})
	h.FreshDepositBlock = r.BlockNumber.Uint64()

	// 6. Rewards.
	multipliers := []RewardsCoordinator.IRewardsCoordinatorTypesStrategyAndMultiplier{{Strategy: c.Strategy, Multiplier: WAD}}
	day := uint32(CalculationIntervalSeconds)
	r = send(c.AVS, "RewardsCoordinator.createOperatorDirectedAVSRewardsSubmission", func(o *bind.TransactOpts) (*types.Transaction, error) {
		return b.RewardsCoordinator.CreateOperatorDirectedAVSRewardsSubmission(o, c.AVS, []RewardsCoordinator.IRewardsCoordinatorTypesOperatorDirectedRewardsSubmission{{
			StrategiesAndMultipliers: multipliers,
			Token:                    c.Token,
			OperatorRewards:          operatorRewards(h.OperatorDirectedAVSRewards),
			StartTimestamp:           c.GenesisRewardsTimestamp,
			Duration:                 day,
			Description:              "operator-directed AVS rewards",
		}})
	})
	for _, l := range r.Logs {
		if ev, err := b.RewardsCoordinator.ParseOperatorDirectedAVSRewardsSubmissionCreated(*l); err == nil {
			h.OperatorDirectedAVSSubmission = ev.OperatorDirectedRewardsSubmissionHash
		}
	}
	r = send(c.AVS, "RewardsCoordinator.createOperatorDirectedOperatorSetRewardsSubmission", func(o *bind.TransactOpts) (*types.Transaction, error) {
		return b.RewardsCoordinator.CreateOperatorDirectedOperatorSetRewardsSubmission(o,
			RewardsCoordinator.OperatorSet{Avs: c.AVS, Id: OperatorSetID},
			[]RewardsCoordinator.IRewardsCoordinatorTypesOperatorDirectedRewardsSubmission{{
				StrategiesAndMultipliers: multipliers,
				Token:                    c.Token,
				OperatorRewards:          operatorRewards(h.OperatorDirectedOperatorSetRewards),
				StartTimestamp:           c.GenesisRewardsTimestamp + day,
				Duration:                 2 * day,
				Description:              "operator-directed operator set rewards",
			}})
	})
	for _, l := range r.Logs {
		if ev, err := b.RewardsCoordinator.ParseOperatorDirectedOperatorSetRewardsSubmissionCreated(*l); err == nil {
			h.OperatorDirectedOperatorSetSubmission = ev.OperatorDirectedRewardsSubmissionHash
		}
	}
	r = send(c.AVS, "RewardsCoordinator.createAVSRewardsSubmission", func(o *bind.TransactOpts) (*types.Transaction, error) {
		return b.RewardsCoordinator.CreateAVSRewardsSubmission(o, []RewardsCoordinator.IRewardsCoordinatorTypesRewardsSubmission{{
			StrategiesAndMultipliers: multipliers,
			Token:                    c.Token,
			Amount:                   h.AVSRewardsAmount,
			StartTimestamp:           c.GenesisRewardsTimestamp + GenesisRewardsDaysBack*day,
			Duration:                 7 * day,
		}})
	})
	for _, l := range r.Logs {
		if ev, err := b.RewardsCoordinator.ParseAVSRewardsSubmissionCreated(*l); err == nil {
			h.AVSSubmission = ev.RewardsSubmissionHash
		}
	}

	// 7. A deregistration and an undelegation.
	r = send(c.Operators[1], "AllocationManager.deregisterFromOperatorSets", func(o *bind.TransactOpts) (*types.Transaction, error) {
		return b.AllocationManager.DeregisterFromOperatorSets(o, AllocationManager.IAllocationManagerTypesDeregisterParams{
			Operator: c.Operators[1], Avs: c.AVS, OperatorSetIds: []uint32{OperatorSetID},
		})
	})
	h.DeregisterBlock = r.BlockNumber.Uint64()
	r = send(c.Stakers[2], "DelegationManager.undelegate", func(o *bind.TransactOpts) (*types.Transaction, error) {
		return b.DelegationManager.Undelegate(o, c.Stakers[2])
	})
	h.UndelegationWithdrawal = c.queuedWithdrawal(t, r)
	return h
}

// queuedWithdrawal reads the withdrawal a receipt's SlashingWithdrawalQueued
// event reports.
func (c *Chain) queuedWithdrawal(t testing.TB, r *types.Receipt) QueuedWithdrawal {
	t.Helper()
	for _, l := range r.Logs {
		ev, err := c.Bindings.DelegationManager.ParseSlashingWithdrawalQueued(*l)
		if err != nil {
			continue
		}
		return QueuedWithdrawal{
			Root:             ev.WithdrawalRoot,
			Withdrawal:       ev.Withdrawal,
			SharesToWithdraw: ev.SharesToWithdraw,
			QueuedBlock:      r.BlockNumber.Uint64(),
		}
	}
	t.Fatalf("transaction %s queued no withdrawal", r.TxHash.Hex())
	return QueuedWithdrawal{}
}

// operatorRewards lists amounts by operator in ascending address order, as
// the RewardsCoordinator requires.
func operatorRewards(amounts map[common.Address]*big.Int) []RewardsCoordinator.IRewardsCoordinatorTypesOperatorReward {
	out := make([]RewardsCoordinator.IRewardsCoordinatorTypesOperatorReward, 0, len(amounts))
	for op, amount := range amounts {
		out = append(out, RewardsCoordinator.IRewardsCoordinatorTypesOperatorReward{Operator: op, Amount: amount})
	}
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i].Operator[:], out[j].Operator[:]) < 0 })
	return out
}
