package slashingchain

import (
	"math/big"

	bind "github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
)

// View reads the contracts' view functions with eth_call, at the head block
// or at a past one (the chain keeps the state of every block).
type View struct {
	c    *Chain
	opts *bind.CallOpts
}

// View returns a View of the head block.
func (c *Chain) View() *View { return &View{c: c, opts: &bind.CallOpts{}} }

// ViewAt returns a View of the state after block n.
func (c *Chain) ViewAt(n uint64) *View {
	return &View{c: c, opts: &bind.CallOpts{BlockNumber: new(big.Int).SetUint64(n)}}
}

// GetOperatorShares is DelegationManager.getOperatorShares: the shares
// delegated to operator in each strategy.
func (v *View) GetOperatorShares(operator common.Address, strategies []common.Address) ([]*big.Int, error) {
	return v.c.Bindings.DelegationManager.GetOperatorShares(v.opts, operator, strategies)
}

// StakerDepositShares is StrategyManager.stakerDepositShares: the deposit
// shares (unscaled by slashing) that staker holds in strategy.
func (v *View) StakerDepositShares(staker, strategy common.Address) (*big.Int, error) {
	return v.c.Bindings.StrategyManager.StakerDepositShares(v.opts, staker, strategy)
}

// GetWithdrawableShares is DelegationManager.getWithdrawableShares: for each
// strategy, the shares staker could withdraw now (its deposit shares scaled
// by its deposit scaling factor and its operator's slashing) and its
// deposit shares.
func (v *View) GetWithdrawableShares(staker common.Address, strategies []common.Address) (withdrawable, deposit []*big.Int, err error) {
	out, err := v.c.Bindings.DelegationManager.GetWithdrawableShares(v.opts, staker, strategies)
	if err != nil {
		return nil, nil, err
	}
	return out.WithdrawableShares, out.DepositShares, nil
}

// DepositScalingFactor is DelegationManager.depositScalingFactor.
func (v *View) DepositScalingFactor(staker, strategy common.Address) (*big.Int, error) {
	return v.c.Bindings.DelegationManager.DepositScalingFactor(v.opts, staker, strategy)
}

// GetQueuedWithdrawal is DelegationManager.getQueuedWithdrawal: the queued
// withdrawal with the given root and the shares it would pay out if
// completed now (its scaled shares times the slashing factor of the
// operator it was queued from). A completed withdrawal reads as the zero
// Withdrawal.
func (v *View) GetQueuedWithdrawal(root common.Hash) (Withdrawal, []*big.Int, error) {
	out, err := v.c.Bindings.DelegationManager.GetQueuedWithdrawal(v.opts, root)
	if err != nil {
		return Withdrawal{}, nil, err
	}
	return out.Withdrawal, out.Shares, nil
}

// IsPendingWithdrawal is DelegationManager.pendingWithdrawals.
func (v *View) IsPendingWithdrawal(root common.Hash) (bool, error) {
	return v.c.Bindings.DelegationManager.PendingWithdrawals(v.opts, root)
}

// GetMaxMagnitudes is AllocationManager.getMaxMagnitudes(operator,
// strategies): the operator's max magnitude in each strategy (WAD until it
// is first slashed).
func (v *View) GetMaxMagnitudes(operator common.Address, strategies []common.Address) ([]uint64, error) {
	return v.c.Bindings.AllocationManager.GetMaxMagnitudes0(v.opts, operator, strategies)
}

// GetAllocation is AllocationManager.getAllocation: the magnitude operator
// allocates to set in strategy, with any pending change that has taken
// effect applied.
func (v *View) GetAllocation(operator common.Address, set OperatorSet, strategy common.Address) (Allocation, error) {
	return v.c.Bindings.AllocationManager.GetAllocation(v.opts, operator, set, strategy)
}

// GetEncumberedMagnitude is AllocationManager.getEncumberedMagnitude: the
// part of operator's max magnitude in strategy that is allocated or pending
// allocation.
func (v *View) GetEncumberedMagnitude(operator, strategy common.Address) (uint64, error) {
	return v.c.Bindings.AllocationManager.GetEncumberedMagnitude(v.opts, operator, strategy)
}

// GetAllocationDelay is AllocationManager.getAllocationDelay: whether the
// operator's allocation delay is set (in effect) and its value in blocks.
func (v *View) GetAllocationDelay(operator common.Address) (bool, uint32, error) {
	return v.c.Bindings.AllocationManager.GetAllocationDelay(v.opts, operator)
}

// IsMemberOfOperatorSet is AllocationManager.isMemberOfOperatorSet.
func (v *View) IsMemberOfOperatorSet(operator common.Address, set OperatorSet) (bool, error) {
	return v.c.Bindings.AllocationManager.IsMemberOfOperatorSet(v.opts, operator, set)
}

// GetMembers is AllocationManager.getMembers.
func (v *View) GetMembers(set OperatorSet) ([]common.Address, error) {
	return v.c.Bindings.AllocationManager.GetMembers(v.opts, set)
}

// GetStrategiesInOperatorSet is AllocationManager.getStrategiesInOperatorSet.
func (v *View) GetStrategiesInOperatorSet(set OperatorSet) ([]common.Address, error) {
	return v.c.Bindings.AllocationManager.GetStrategiesInOperatorSet(v.opts, set)
}

// DelegatedTo is DelegationManager.delegatedTo: the operator staker is
// delegated to (the zero address if none).
func (v *View) DelegatedTo(staker common.Address) (common.Address, error) {
	return v.c.Bindings.DelegationManager.DelegatedTo(v.opts, staker)
}

// TotalShares is StrategyBase.totalShares of the chain's strategy. Slashed
// shares stay in it until the StrategyManager burns them.
func (v *View) TotalShares() (*big.Int, error) {
	return v.c.Bindings.Strategy.TotalShares(v.opts)
}

// TokenBalance is TestToken.balanceOf.
func (v *View) TokenBalance(owner common.Address) (*big.Int, error) {
	var out []any
	if err := v.c.Bindings.Token.Call(v.opts, &out, "balanceOf", owner); err != nil {
		return nil, err
	}
	return out[0].(*big.Int), nil
}
