// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title TestToken
/// @notice A minimal ERC20 whose mint is open to anyone. It is the underlying
/// token of the strategy that the slashingchain tests deposit into, and the
/// token AVSs pay rewards in.
contract TestToken {
    string public name;
    string public symbol;
    uint8 public constant decimals = 18;
    uint256 public totalSupply;
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);

    constructor(string memory name_, string memory symbol_) {
        name = name_;
        symbol = symbol_;
    }

    /// @notice Creates `amount` tokens for `to`; anyone may call it.
    function mint(address to, uint256 amount) external {
        totalSupply += amount;
        balanceOf[to] += amount;
        emit Transfer(address(0), to, amount);
    }

    function approve(address spender, uint256 amount) external returns (bool) {
        allowance[msg.sender][spender] = amount;
        emit Approval(msg.sender, spender, amount);
        return true;
    }

    function transfer(address to, uint256 amount) external returns (bool) {
        _transfer(msg.sender, to, amount);
        return true;
    }

    function transferFrom(address from, address to, uint256 amount) external returns (bool) {
        uint256 allowed = allowance[from][msg.sender];
        if (allowed != type(uint256).max) {
            require(allowed >= amount, "TestToken: insufficient allowance");
            allowance[from][msg.sender] = allowed - amount;
        }
        _transfer(from, to, amount);
        return true;
    }

    function _transfer(address from, address to, uint256 amount) internal {
        require(to != address(0), "TestToken: transfer to the zero address");
        uint256 balance = balanceOf[from];
        require(balance >= amount, "TestToken: insufficient balance");
        balanceOf[from] = balance - amount;
        balanceOf[to] += amount;
        emit Transfer(from, to, amount);
    }
}

/// @title TestAVSRegistrar
/// @notice An AVS registrar (the contract the AllocationManager calls when an
/// operator registers for or deregisters from an AVS's operator sets) that
/// supports every AVS and accepts every operator.
contract TestAVSRegistrar {
    event OperatorRegistered(address indexed operator, address indexed avs, uint32[] operatorSetIds, bytes data);
    event OperatorDeregistered(address indexed operator, address indexed avs, uint32[] operatorSetIds);

    function registerOperator(address operator, address avs, uint32[] calldata operatorSetIds, bytes calldata data)
        external
    {
        emit OperatorRegistered(operator, avs, operatorSetIds, data);
    }

    function deregisterOperator(address operator, address avs, uint32[] calldata operatorSetIds) external {
        emit OperatorDeregistered(operator, avs, operatorSetIds);
    }

    function supportsAVS(address) external pure returns (bool) {
        return true;
    }
}
