// Compiles TestContracts.sol with the solc version pinned in package.json and
// writes <Contract>.abi and <Contract>.bin for each contract in it. Run through
// `go generate` (see slashingchain.go); the outputs are committed so tests need
// no npm.
const fs = require("fs");
const path = require("path");
const solc = require("solc");

const source = "TestContracts.sol";
const contracts = ["TestToken", "TestAVSRegistrar"];
const input = {
  language: "Solidity",
  sources: { [source]: { content: fs.readFileSync(path.join(__dirname, source), "utf8") } },
  settings: {
    optimizer: { enabled: true, runs: 200 },
    outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } },
  },
};
const output = JSON.parse(solc.compile(JSON.stringify(input)));
let failed = false;
for (const e of output.errors || []) {
  console.error(e.formattedMessage);
  if (e.severity === "error") failed = true;
}
if (failed) process.exit(1);
for (const name of contracts) {
  const contract = output.contracts[source][name];
  fs.writeFileSync(path.join(__dirname, `${name}.abi`), JSON.stringify(contract.abi, null, 1) + "\n");
  fs.writeFileSync(path.join(__dirname, `${name}.bin`), contract.evm.bytecode.object + "\n");
}
console.log(`compiled with solc ${solc.version()}`);
